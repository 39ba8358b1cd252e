//! The PMIx 4 C layouts and functions steadfast uses, written out by hand (checked
//! against `pmix_common.h` of PMIx 4.2 by the tests below), and the loading of
//! libpmix at run time (`dlopen`), so steadfast builds and runs where PMIx is absent.

use super::BootstrapError;
use std::ffi::{c_char, c_int, c_void, CStr};

/// `PMIX_MAX_NSLEN + 1`.
pub(super) const NSPACE_LEN: usize = 256;
/// `PMIX_MAX_KEYLEN + 1`.
pub(super) const KEY_LEN: usize = 512;
pub(super) const PMIX_SUCCESS: i32 = 0;
pub(super) const PMIX_ERR_NOT_FOUND: i32 = -46;
/// Some of the keys asked for were found (PRRTE's answer to a lookup of several).
pub(super) const PMIX_ERR_PARTIAL_SUCCESS: i32 = -52;
pub(super) const PMIX_BOOL: u16 = 1;
pub(super) const PMIX_STRING: u16 = 3;
pub(super) const PMIX_UINT32: u16 = 14;
pub(super) const PMIX_BYTE_OBJECT: u16 = 27;
pub(super) const PMIX_INFO: u16 = 24;
pub(super) const PMIX_PERSIST: u16 = 30;
pub(super) const PMIX_PROC_INFO: u16 = 38;
pub(super) const PMIX_DATA_ARRAY: u16 = 39;
pub(super) const PMIX_GLOBAL: u8 = 3;
pub(super) const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
/// `PMIX_PERSIST_FIRST_READ`: the data server deletes a published value when it is
/// first looked up, so exactly one of several lookups gets it.
pub(super) const PMIX_PERSIST_FIRST_READ: u8 = 1;
/// `PMIX_PERSIST_SESSION`: kept until the session ends (PRRTE drops a value published
/// with the default persistence when its publisher's job ends).
pub(super) const PMIX_PERSIST_SESSION: u8 = 4;
/// `PMIX_PROC_STATE_TERMINATED`: process states from this one up are ended ones.
pub(super) const PMIX_PROC_STATE_TERMINATED: u8 = 20;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Proc {
    pub nspace: [c_char; NSPACE_LEN],
    pub rank: u32,
}

impl Proc {
    /// `rank` of namespace `nspace` (cut at `NSPACE_LEN - 1` bytes).
    pub fn new(nspace: &str, rank: u32) -> Proc {
        let mut p = Proc {
            nspace: [0; NSPACE_LEN],
            rank,
        };
        for (d, s) in p.nspace.iter_mut().zip(nspace.bytes().take(NSPACE_LEN - 1)) {
            *d = s as c_char;
        }
        p
    }

    /// The namespace as a string (up to its NUL).
    pub fn nspace(&self) -> String {
        let bytes: Vec<u8> = self
            .nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct ByteObject {
    pub bytes: *mut c_char,
    pub size: usize,
}

/// `pmix_data_array_t`.
#[repr(C)]
pub(super) struct DataArray {
    pub kind: u16,
    pub size: usize,
    pub array: *mut c_void,
}

/// `pmix_value_t`: a 16-bit type, then a union whose largest members are three words
/// (`pmix_envar_t`); only the members below are touched.
#[repr(C)]
pub(super) struct Value {
    pub kind: u16,
    pub data: ValueData,
}

/// The members of `pmix_value_t`'s union that steadfast reads or writes.
#[repr(C)]
pub(super) union ValueData {
    pub bo: ByteObject,
    pub uint32: u32,
    pub flag: bool,
    pub uint8: u8,
    pub string: *mut c_char,
    pub darray: *mut DataArray,
    pub pinfo: *mut ProcInfo,
    pub _envar: [usize; 3],
}

impl Value {
    /// A value of no type (`PMIX_UNDEF`).
    pub fn undef() -> Value {
        Value {
            kind: 0,
            data: ValueData { _envar: [0; 3] },
        }
    }

    /// The string this value holds, if it is one.
    pub fn string(&self) -> Option<String> {
        if self.kind != PMIX_STRING {
            return None;
        }
        // SAFETY: a PMIX_STRING value's member is `string`, NULL or a C string that
        // PMIx owns for the value's life.
        unsafe {
            let s = self.data.string;
            (!s.is_null()).then(|| CStr::from_ptr(s).to_string_lossy().into_owned())
        }
    }
}

/// `pmix_info_t`: a key, directives, a value.
#[repr(C)]
pub(super) struct Info {
    pub key: [c_char; KEY_LEN],
    pub flags: u32,
    pub value: Value,
}

/// Copies `key` (cut at `KEY_LEN - 1` bytes) into a NUL-terminated key array.
pub(super) fn key_array(key: &[u8]) -> [c_char; KEY_LEN] {
    let mut k = [0 as c_char; KEY_LEN];
    for (d, &s) in k.iter_mut().zip(key.iter().take(KEY_LEN - 1)) {
        *d = s as c_char;
    }
    k
}

impl Info {
    /// An info of `key` holding the C string `value` (borrowed: `value` must outlive
    /// every use of this info; PMIx copies what it keeps).
    pub fn string(key: &CStr, value: &CStr) -> Info {
        Info {
            key: key_array(key.to_bytes()),
            flags: 0,
            value: Value {
                kind: PMIX_STRING,
                data: ValueData {
                    string: value.as_ptr() as *mut c_char,
                },
            },
        }
    }

    /// An info of `key` holding a `pmix_persistence_t`.
    pub fn persistence(key: &CStr, value: u8) -> Info {
        Info {
            key: key_array(key.to_bytes()),
            flags: 0,
            value: Value {
                kind: PMIX_PERSIST,
                data: ValueData { uint8: value },
            },
        }
    }

    /// An info of `key` holding a bool.
    pub fn flag(key: &CStr, value: bool) -> Info {
        Info {
            key: key_array(key.to_bytes()),
            flags: 0,
            value: Value {
                kind: PMIX_BOOL,
                data: ValueData { flag: value },
            },
        }
    }
}

/// `pmix_app_t`: one application of a spawn.
#[repr(C)]
pub(super) struct App {
    pub cmd: *mut c_char,
    pub argv: *mut *mut c_char,
    pub env: *mut *mut c_char,
    pub cwd: *mut c_char,
    pub maxprocs: c_int,
    pub info: *mut Info,
    pub ninfo: usize,
}

/// `pmix_pdata_t`: a published value and its publisher.
#[repr(C)]
pub(super) struct PData {
    pub proc_: Proc,
    pub key: [c_char; KEY_LEN],
    pub value: Value,
}

/// `pmix_query_t`.
#[repr(C)]
pub(super) struct Query {
    pub keys: *mut *mut c_char,
    pub qualifiers: *mut Info,
    pub nqual: usize,
}

/// `pmix_proc_info_t`: a process as a query of the process table describes it.
#[repr(C)]
pub(super) struct ProcInfo {
    pub proc_: Proc,
    pub hostname: *mut c_char,
    pub executable_name: *mut c_char,
    pub pid: libc::pid_t,
    pub exit_code: c_int,
    pub state: u8,
}

pub(super) type InitFn = unsafe extern "C" fn(*mut Proc, *mut c_void, usize) -> i32;
pub(super) type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> i32;
pub(super) type CommitFn = unsafe extern "C" fn() -> i32;
pub(super) type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const c_void, usize) -> i32;
pub(super) type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> i32;
pub(super) type FinalizeFn = unsafe extern "C" fn(*const c_void, usize) -> i32;
pub(super) type DestructFn = unsafe extern "C" fn(*mut Value);
pub(super) type PublishFn = unsafe extern "C" fn(*const Info, usize) -> i32;
pub(super) type LookupFn = unsafe extern "C" fn(*mut PData, usize, *const Info, usize) -> i32;
pub(super) type QueryFn =
    unsafe extern "C" fn(*mut Query, usize, *mut *mut Info, *mut usize) -> i32;
/// `pmix_spawn_cbfunc_t`: status, the new namespace, the caller's data.
pub(super) type SpawnCb = unsafe extern "C" fn(i32, *mut c_char, *mut c_void);
pub(super) type SpawnNbFn =
    unsafe extern "C" fn(*const Info, usize, *const App, usize, SpawnCb, *mut c_void) -> i32;

/// The functions of libpmix steadfast calls.
pub(super) struct Api {
    pub init: InitFn,
    pub put: PutFn,
    pub commit: CommitFn,
    pub fence: FenceFn,
    pub get: GetFn,
    pub finalize: FinalizeFn,
    pub destruct: DestructFn,
    pub publish: PublishFn,
    pub lookup: LookupFn,
    pub query: QueryFn,
    pub spawn_nb: SpawnNbFn,
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
    /// Loads libpmix (kept loaded for the process's life) and its functions.
    pub fn load() -> Result<Api, BootstrapError> {
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
                publish: symbol(lib, c"PMIx_Publish")?,
                lookup: symbol(lib, c"PMIx_Lookup")?,
                query: symbol(lib, c"PMIx_Query_info")?,
                spawn_nb: symbol(lib, c"PMIx_Spawn_nb")?,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The numbers `sizeof`/`offsetof` give for PMIx 4.2's `pmix_common.h` on x86_64.
    #[test]
    fn layouts_match_pmix_4() {
        assert_eq!(size_of::<Proc>(), 260);
        assert_eq!(size_of::<Value>(), 32);
        assert_eq!(offset_of!(Value, data), 8);
        assert_eq!(size_of::<Info>(), 552);
        assert_eq!(offset_of!(Info, flags), 512);
        assert_eq!(offset_of!(Info, value), 520);
        assert_eq!(size_of::<App>(), 56);
        assert_eq!(offset_of!(App, maxprocs), 32);
        assert_eq!(offset_of!(App, info), 40);
        assert_eq!(offset_of!(App, ninfo), 48);
        assert_eq!(size_of::<PData>(), 808);
        assert_eq!(offset_of!(PData, key), 260);
        assert_eq!(offset_of!(PData, value), 776);
        assert_eq!(size_of::<Query>(), 24);
        assert_eq!(offset_of!(Query, qualifiers), 8);
        assert_eq!(offset_of!(Query, nqual), 16);
        assert_eq!(size_of::<ProcInfo>(), 296);
        assert_eq!(offset_of!(ProcInfo, hostname), 264);
        assert_eq!(offset_of!(ProcInfo, pid), 280);
        assert_eq!(offset_of!(ProcInfo, exit_code), 284);
        assert_eq!(offset_of!(ProcInfo, state), 288);
        assert_eq!(size_of::<DataArray>(), 24);
        assert_eq!(offset_of!(DataArray, size), 8);
        assert_eq!(offset_of!(DataArray, array), 16);
    }

    #[test]
    fn names_are_cut_and_read_back() {
        let p = Proc::new("job@1", 3);
        assert_eq!((p.nspace().as_str(), p.rank), ("job@1", 3));
        let long = "x".repeat(400);
        assert_eq!(Proc::new(&long, 0).nspace().len(), NSPACE_LEN - 1);
        let k = key_array("k".repeat(600).as_bytes());
        assert_eq!(k[KEY_LEN - 1], 0);
        assert_eq!(k[KEY_LEN - 2], b'k' as c_char);
    }
}
