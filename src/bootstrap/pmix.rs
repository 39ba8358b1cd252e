//! PMIx through the system's libpmix (Open MPI's `mpirun`, `srun --mpi=pmix`).
//!
//! The library is loaded at run time (`dlopen("libpmix.so.2")`), so steadfast builds
//! and runs where PMIx is absent; only a process launched by a PMIx server needs it.
//! Six calls are used (Init, Put, Commit, Fence, Get, Finalize), with the PMIx 4
//! layouts written out below; values travel as byte objects.

use super::{Bootstrap, BootstrapError, FailureEvent};
use std::ffi::{c_char, c_void, CStr, CString};
use std::time::Duration;

/// `PMIX_MAX_NSLEN + 1`.
const NSPACE_LEN: usize = 256;
const PMIX_SUCCESS: i32 = 0;
const PMIX_UINT32: u16 = 14;
const PMIX_BYTE_OBJECT: u16 = 27;
const PMIX_GLOBAL: u8 = 3;
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
/// Largest value accepted from the server.
const MAX_VALUE: usize = 1 << 20;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; NSPACE_LEN],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// `pmix_value_t`: a 16-bit type, then a union whose largest members are three words
/// (`pmix_envar_t`); we only touch the byte object and the u32.
#[repr(C)]
struct Value {
    kind: u16,
    data: ValueData,
}

#[repr(C)]
union ValueData {
    bo: ByteObject,
    uint32: u32,
    _envar: [usize; 3],
}

type InitFn = unsafe extern "C" fn(*mut Proc, *mut c_void, usize) -> i32;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> i32;
type CommitFn = unsafe extern "C" fn() -> i32;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const c_void, usize) -> i32;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const c_void, usize, *mut *mut Value) -> i32;
type FinalizeFn = unsafe extern "C" fn(*const c_void, usize) -> i32;
type DestructFn = unsafe extern "C" fn(*mut Value);

struct Api {
    init: InitFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    finalize: FinalizeFn,
    destruct: DestructFn,
}

fn refused(what: impl Into<String>) -> BootstrapError {
    BootstrapError::Refused(what.into())
}

/// Resolves `name` in `lib` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the C signature of the symbol.
unsafe fn symbol<T: Copy>(lib: *mut c_void, name: &CStr) -> Result<T, BootstrapError> {
    // SAFETY: `lib` is a live handle from dlopen and `name` a C string.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(refused(format!("libpmix lacks {name:?}")));
    }
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a non-null symbol of the C signature `T` (caller's contract); function
    // pointers and data pointers have one size on every platform we build for.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

impl Api {
    fn load() -> Result<Api, BootstrapError> {
        let mut lib = std::ptr::null_mut();
        for name in [c"libpmix.so.2", c"libpmix.so"] {
            // SAFETY: dlopen with a C string; the handle is kept for the process's life.
            lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !lib.is_null() {
                break;
            }
        }
        if lib.is_null() {
            return Err(refused(
                "launched by a PMIx launcher, but libpmix.so.2 cannot be loaded (install libpmix2 or libpmix-dev)",
            ));
        }
        // SAFETY: each type is the PMIx 4 C signature of the named function.
        unsafe {
            Ok(Api {
                init: symbol(lib, c"PMIx_Init")?,
                put: symbol(lib, c"PMIx_Put")?,
                commit: symbol(lib, c"PMIx_Commit")?,
                fence: symbol(lib, c"PMIx_Fence")?,
                get: symbol(lib, c"PMIx_Get")?,
                finalize: symbol(lib, c"PMIx_Finalize")?,
                destruct: symbol(lib, c"PMIx_Value_destruct")?,
            })
        }
    }
}

/// A PMIx client connection.
pub struct Pmix {
    api: Api,
    me: Proc,
    size: u32,
    pending_commit: bool,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmix")
            .field("rank", &self.me.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

// SAFETY: the PMIx client library is thread-safe; the handle holds only the process's
// own identity and function pointers.
unsafe impl Send for Pmix {}

fn key_of(key: &str) -> Result<CString, BootstrapError> {
    CString::new(format!("steadfast.{key}"))
        .map_err(|_| refused(format!("key {key:?} holds a NUL")))
}

impl Pmix {
    /// Loads libpmix and initialises the client.
    ///
    /// # Errors
    /// `Refused` when the library is missing or the server refuses.
    pub fn from_env() -> Result<Self, BootstrapError> {
        let api = Api::load()?;
        let mut me = Proc {
            nspace: [0; NSPACE_LEN],
            rank: 0,
        };
        // SAFETY: `me` is a valid pmix_proc_t to fill; no info array.
        let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Init failed with status {rc}")));
        }
        let mut p = Pmix {
            api,
            me,
            size: 0,
            pending_commit: false,
        };
        let mut job = p.me;
        job.rank = PMIX_RANK_WILDCARD;
        let v = p.get_value(&job, c"pmix.job.size")?;
        // SAFETY: `v` is a value returned by PMIx_Get, live until destructed below.
        let size = unsafe {
            let size = ((*v).kind == PMIX_UINT32).then(|| (*v).data.uint32);
            p.release(v);
            size
        };
        p.size = size.ok_or_else(|| refused("PMIx job size is not a uint32"))?;
        if p.me.rank >= p.size {
            return Err(refused(format!(
                "PMIx rank {} not below size {}",
                p.me.rank, p.size
            )));
        }
        Ok(p)
    }

    fn get_value(&self, proc_: &Proc, key: &CStr) -> Result<*mut Value, BootstrapError> {
        let mut v: *mut Value = std::ptr::null_mut();
        // SAFETY: valid proc and key; PMIx allocates the value and hands it to us.
        let rc = unsafe { (self.api.get)(proc_, key.as_ptr(), std::ptr::null(), 0, &mut v) };
        if rc != PMIX_SUCCESS || v.is_null() {
            return Err(refused(format!(
                "PMIx_Get({key:?}) from rank {} failed with status {rc}",
                proc_.rank
            )));
        }
        Ok(v)
    }

    /// Frees a value returned by PMIx_Get.
    ///
    /// # Safety
    /// `v` came from PMIx_Get and is not used afterwards.
    unsafe fn release(&self, v: *mut Value) {
        // SAFETY: per the contract, `v` is PMIx's heap allocation (PMIX_VALUE_RELEASE).
        unsafe {
            (self.api.destruct)(v);
            libc::free(v.cast());
        }
    }
}

impl Bootstrap for Pmix {
    fn rank(&self) -> u32 {
        self.me.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        let k = key_of(key)?;
        let mut v = Value {
            kind: PMIX_BYTE_OBJECT,
            data: ValueData {
                bo: ByteObject {
                    bytes: value.as_ptr() as *mut c_char,
                    size: value.len(),
                },
            },
        };
        // SAFETY: PMIx_Put copies the value; `value` outlives the call.
        let rc = unsafe { (self.api.put)(PMIX_GLOBAL, k.as_ptr(), &mut v) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Put({key}) failed with status {rc}")));
        }
        self.pending_commit = true;
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        let k = key_of(key)?;
        let mut p = self.me;
        p.rank = rank;
        let v = self.get_value(&p, &k)?;
        // SAFETY: `v` is a live value from PMIx_Get; a byte object's bytes are `size`
        // bytes long; released right after copying.
        unsafe {
            let out = if (*v).kind == PMIX_BYTE_OBJECT && (*v).data.bo.size <= MAX_VALUE {
                let bo = (*v).data.bo;
                if bo.size == 0 {
                    Some(Vec::new())
                } else if bo.bytes.is_null() {
                    None
                } else {
                    Some(std::slice::from_raw_parts(bo.bytes as *const u8, bo.size).to_vec())
                }
            } else {
                None
            };
            self.release(v);
            out.ok_or_else(|| {
                refused(format!(
                    "PMIx value {key} of rank {rank} is not a byte object"
                ))
            })
        }
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        if self.pending_commit {
            // SAFETY: no arguments.
            let rc = unsafe { (self.api.commit)() };
            if rc != PMIX_SUCCESS {
                return Err(refused(format!("PMIx_Commit failed with status {rc}")));
            }
            self.pending_commit = false;
        }
        // SAFETY: NULL procs means every process of our namespace; no info.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, std::ptr::null(), 0) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Fence failed with status {rc}")));
        }
        Ok(())
    }

    fn failures(&mut self, _wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        // PMIx event notification is not wired yet: detection relies on pidfds,
        // transport errors and heartbeats.
        Ok(Vec::new())
    }

    fn restart_begin(&mut self, rank: u32, _generation: u32) -> Result<(), BootstrapError> {
        Err(BootstrapError::NoSpawner {
            rank,
            why: "restarting under PMIx (mpirun, srun --mpi=pmix: PMIx_Spawn into the running job) is not implemented yet; to restart ranks, run the job under steadfast-run (on one node; under Slurm, inside the allocation)".into(),
        })
    }
}

impl Drop for Pmix {
    fn drop(&mut self) {
        // SAFETY: initialised in from_env; no info array.
        unsafe { (self.api.finalize)(std::ptr::null(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_pmix_4() {
        assert_eq!(std::mem::size_of::<Proc>(), 260);
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::offset_of!(Value, data), 8);
    }
}
