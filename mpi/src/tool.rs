//! The MPI tool information interface (`MPI_T`, MPI 4.1 chapter 15): its own state,
//! `MPI_T_init_thread`/`MPI_T_finalize` and the helpers every `MPI_T` call shares.
//!
//! MPI_T lives beside MPI, not inside it: it may be initialized before `MPI_Init`, after
//! `MPI_Finalize` and several times (reference counted), from any thread. Its state is
//! one mutex-guarded [`Tool`], never the library's MPI state. The control variables'
//! values are read once, when the count goes from 0 to 1, through the same function
//! `MPI_Init` uses (`init::mpi_params`), so they are the values this process's runtime
//! runs (or would run) with. `tool_cvars` holds the variables, `tool_categories` the
//! category, `tool_pvars` and `tool_events` the (empty) performance variables and events.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

use crate::consts::*;

/// The thread level MPI_T provides: every call takes [`TOOL`]'s mutex.
const MPI_THREAD_MULTIPLE_LEVEL: c_int = MPI_THREAD_MULTIPLE;

/// The first value handed out for a handle or session (0 is the `_NULL` handles and 1
/// `MPI_T_PVAR_ALL_HANDLES`; these never name anything).
const FIRST_TOOL_HANDLE: usize = 16;

/// MPI_T's state, shared by every thread.
pub(crate) struct Tool {
    /// How many `MPI_T_init_thread` calls are not yet finalized.
    refs: u32,
    /// Each control variable's canonical text (in `PARAMS` order), or why the
    /// parameters could not be read.
    pub values: Result<Vec<String>, String>,
    /// Live control-variable handles, each naming its variable's index.
    pub cvar_handles: BTreeMap<usize, usize>,
    /// Live performance-variable sessions.
    pub sessions: BTreeSet<usize>,
    /// The next handle or session value.
    next: usize,
}

impl Tool {
    /// A fresh handle or session value, never equal to a live one.
    pub fn new_handle(&mut self) -> usize {
        let h = self.next;
        self.next = self.next.wrapping_add(1).max(FIRST_TOOL_HANDLE);
        h
    }
}

/// The one MPI_T state.
static TOOL: Mutex<Tool> = Mutex::new(Tool {
    refs: 0,
    values: Ok(Vec::new()),
    cvar_handles: BTreeMap::new(),
    sessions: BTreeSet::new(),
    next: FIRST_TOOL_HANDLE,
});

/// The state, locked; a panic while it was held left it consistent (each call changes it
/// only once nothing can fail), so a poisoned lock is used as is.
fn tool() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on the state if MPI_T is initialized (else `MPI_T_ERR_NOT_INITIALIZED`);
/// returns its error class or `MPI_SUCCESS`. A panic becomes `MPI_ERR_INTERN`.
pub(crate) fn tool_call(f: impl FnOnce(&mut Tool) -> Result<(), c_int>) -> c_int {
    let mut t = tool();
    if t.refs == 0 {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    match catch_unwind(AssertUnwindSafe(|| f(&mut t))) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(class)) => class,
        Err(_) => {
            log::error!("an MPI_T call panicked");
            MPI_ERR_INTERN
        }
    }
}

/// Writes `v` through `p` if `p` is not null (MPI_T lets tools pass NULL for an output
/// they do not want).
///
/// # Safety
/// `p` is null or valid for a write of a `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) {
    // SAFETY: the caller's contract; null is skipped.
    if let Some(slot) = unsafe { p.as_mut() } {
        *slot = v;
    }
}

/// Writes `v` through `p`, which must not be null (`MPI_T_ERR_INVALID` if it is).
///
/// # Safety
/// `p` is null or valid for a write of a `T`.
pub(crate) unsafe fn put_required<T>(p: *mut T, v: T) -> Result<(), c_int> {
    // SAFETY: the caller's contract.
    let slot = unsafe { p.as_mut() }.ok_or(MPI_T_ERR_INVALID)?;
    *slot = v;
    Ok(())
}

/// Returns string `s` by MPI_T's convention (MPI 4.1 section 15.3.3): nothing if `len`
/// is null; if `buf` is null or `*len` is 0, only `*len` = the length needed
/// (characters + 1 for the null); else at most `*len - 1` characters and a null are
/// copied into `buf` and `*len` is set to the number stored, null included.
///
/// # Safety
/// `len` is null or valid for reads and writes; `buf` is null or valid for writes of
/// `*len` bytes.
pub(crate) unsafe fn put_str(s: &str, buf: *mut c_char, len: *mut c_int) {
    // SAFETY: the caller's contract.
    let Some(len) = (unsafe { len.as_mut() }) else {
        return;
    };
    let bytes = s.as_bytes();
    let need = c_int::try_from(bytes.len() + 1).unwrap_or(c_int::MAX);
    if buf.is_null() || *len <= 0 {
        *len = need;
        return;
    }
    let room = usize::try_from(*len).unwrap_or(0);
    let n = bytes.len().min(room - 1);
    // SAFETY: `buf` holds `*len` = `room` bytes, and `n + 1 <= room`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    *len = c_int::try_from(n + 1).unwrap_or(c_int::MAX);
}

/// Reads a C string argument (`MPI_T_ERR_INVALID` when null).
///
/// # Safety
/// `p` is null or a valid null-terminated string.
pub(crate) unsafe fn name_arg(p: *const c_char) -> Result<String, c_int> {
    if p.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}

/// An index argument checked against a count (`MPI_T_ERR_INVALID_INDEX` outside it).
pub(crate) fn index_arg(i: c_int, count: usize) -> Result<usize, c_int> {
    usize::try_from(i)
        .ok()
        .filter(|&i| i < count)
        .ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// Counts one initialization; the first reads the parameters.
fn init(t: &mut Tool) {
    if t.refs == 0 {
        t.values = crate::init::mpi_params()
            .map(|p| p.listing().into_iter().map(|(_, v, _)| v).collect())
            .map_err(|e| {
                log::warn!("MPI_T: the runtime's parameters cannot be read: {e}");
                e.to_string()
            });
    }
    t.refs = t.refs.saturating_add(1);
}

/// Counts one finalization; the last frees every handle and session.
fn finalize(t: &mut Tool) -> Result<(), c_int> {
    if t.refs == 0 {
        return Err(MPI_T_ERR_NOT_INITIALIZED);
    }
    t.refs -= 1;
    if t.refs == 0 {
        t.cvar_handles.clear();
        t.sessions.clear();
        t.values = Ok(Vec::new());
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_T_init_thread`: counts one more initialization; provides
    /// `MPI_THREAD_MULTIPLE` (every MPI_T call takes MPI_T's own mutex).
    fn MPI_T_init_thread / PMPI_T_init_thread(required: c_int, provided: *mut c_int) {
        let _ = required;
        let mut t = tool();
        init(&mut t);
        // SAFETY: MPI's contract: `provided` is valid for a write (or null).
        unsafe { put(provided, MPI_THREAD_MULTIPLE_LEVEL) };
        MPI_SUCCESS
    }
}

crate::mpi_fn! {
    /// `MPI_T_finalize`: undoes one `MPI_T_init_thread`; the last one ends MPI_T.
    fn MPI_T_finalize / PMPI_T_finalize() {
        match finalize(&mut tool()) {
            Ok(()) => MPI_SUCCESS,
            Err(c) => c,
        }
    }
}

/// Serializes the tests that initialize MPI_T (its state is process-wide).
#[cfg(test)]
pub(crate) static TEST_SERIAL: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_follow_the_mpi_t_convention() {
        let mut buf = [0x55 as c_char; 8];
        let mut len: c_int = 0;
        // SAFETY: valid pointers.
        unsafe { put_str("steadfast", buf.as_mut_ptr(), &mut len) };
        assert_eq!(len, 10, "length query");
        assert_eq!(buf[0], 0x55, "nothing written on a length query");
        len = 8;
        // SAFETY: `buf` holds 8 bytes.
        unsafe { put_str("steadfast", buf.as_mut_ptr(), &mut len) };
        assert_eq!(len, 8);
        let got: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
        assert_eq!(&got, b"steadfa\0");
        len = 8;
        // SAFETY: as above.
        unsafe { put_str("abc", buf.as_mut_ptr(), &mut len) };
        assert_eq!(len, 4);
        // SAFETY: null `len`: nothing happens; null `buf`: length only.
        unsafe { put_str("abc", buf.as_mut_ptr(), std::ptr::null_mut()) };
        len = 3;
        // SAFETY: null buffer.
        unsafe { put_str("abc", std::ptr::null_mut(), &mut len) };
        assert_eq!(len, 4);
    }

    #[test]
    fn init_and_finalize_are_counted() {
        let _s = TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let mut provided = 0;
        // SAFETY: valid pointers.
        unsafe {
            assert_eq!(PMPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
            assert_eq!(tool_call(|_| Ok(())), MPI_T_ERR_NOT_INITIALIZED);
            assert_eq!(PMPI_T_init_thread(0, &mut provided), MPI_SUCCESS);
            assert_eq!(provided, MPI_THREAD_MULTIPLE);
            assert_eq!(MPI_T_init_thread(0, std::ptr::null_mut()), MPI_SUCCESS);
            assert_eq!(PMPI_T_finalize(), MPI_SUCCESS);
            assert_eq!(tool_call(|_| Ok(())), MPI_SUCCESS, "still initialized once");
            assert_eq!(MPI_T_finalize(), MPI_SUCCESS);
            assert_eq!(tool_call(|_| Ok(())), MPI_T_ERR_NOT_INITIALIZED);
            assert_eq!(PMPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
        }
    }

    #[test]
    fn index_arguments_are_bounded() {
        assert_eq!(index_arg(0, 1), Ok(0));
        assert_eq!(index_arg(1, 1), Err(MPI_T_ERR_INVALID_INDEX));
        assert_eq!(index_arg(-1, 5), Err(MPI_T_ERR_INVALID_INDEX));
    }
}
