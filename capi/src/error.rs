//! Error codes, their messages, the per-thread last error, and the guard every entry
//! point runs in (no panic crosses into C: it becomes [`SF_ERR_INTERNAL`]).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use sf::CommError;

/// Success.
pub const SF_OK: c_int = 0;
/// A bad argument: a null pointer, a rank or tag out of range, an offset past a
/// window's end (the last error message names the value and its bound).
pub const SF_ERR_INVALID_ARG: c_int = 1;
/// A peer the operation involves has failed (`MPIX_ERR_PROC_FAILED`).
pub const SF_ERR_PROC_FAILED: c_int = 2;
/// A wildcard receive cannot proceed while a failure is not acknowledged
/// (`MPIX_ERR_PROC_FAILED_PENDING`); see `sf_comm_ack_failed`.
pub const SF_ERR_PROC_FAILED_PENDING: c_int = 3;
/// The communicator was revoked (`MPIX_ERR_REVOKED`).
pub const SF_ERR_REVOKED: c_int = 4;
/// The message was longer than the receive buffer (the message is consumed; the
/// buffer holds its first bytes).
pub const SF_ERR_TRUNCATED: c_int = 5;
/// The other processes declared this one failed: it must stop communicating.
pub const SF_ERR_EXCLUDED: c_int = 6;
/// A transport (libfabric or shared memory) error not known to be a peer's failure.
pub const SF_ERR_TRANSPORT: c_int = 7;
/// The world this handle belongs to was finalized.
pub const SF_ERR_NOT_INITIALIZED: c_int = 8;
/// The call came from a thread other than the one that called `sf_init`: every
/// handle of a world is used from that thread only.
pub const SF_ERR_WRONG_THREAD: c_int = 9;
/// A peer broke a protocol (a malformed message or window descriptor).
pub const SF_ERR_PROTOCOL: c_int = 10;
/// `sf_init` failed: no launcher environment, a bad parameter, a transport that would
/// not open (the last error message says which).
pub const SF_ERR_INIT: c_int = 11;
/// A bug in the library (a panic, caught at the boundary); the message says where.
pub const SF_ERR_INTERNAL: c_int = 12;

/// An error on its way to C: the code, and the message kept as the thread's last error.
#[derive(Debug)]
pub(crate) struct Error {
    pub code: c_int,
    pub message: String,
}

impl Error {
    pub fn new(code: c_int, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(SF_ERR_INVALID_ARG, message)
    }

    pub fn null(what: &str) -> Self {
        Self::invalid(format!("{what} is a null pointer"))
    }
}

impl From<CommError> for Error {
    fn from(e: CommError) -> Self {
        let code = match &e {
            CommError::ProcFailed { .. } => SF_ERR_PROC_FAILED,
            CommError::ProcFailedPending { .. } => SF_ERR_PROC_FAILED_PENDING,
            CommError::Revoked => SF_ERR_REVOKED,
            CommError::Truncated { .. } => SF_ERR_TRUNCATED,
            CommError::InvalidArgument(_) => SF_ERR_INVALID_ARG,
            CommError::Excluded => SF_ERR_EXCLUDED,
            CommError::Protocol { .. } | CommError::WindowDescriptor { .. } => SF_ERR_PROTOCOL,
            // Fabric, Shm, WindowAccess, NoFabricEndpoint, and variants added later.
            _ => SF_ERR_TRANSPORT,
        };
        Error::new(code, e.to_string())
    }
}

/// What an entry point returns inside the guard.
pub(crate) type Result<T> = std::result::Result<T, Error>;

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // A message with an interior NUL (from a peer's data, say) is cut there.
    let end = message.find('\0').unwrap_or(message.len());
    let text = CString::new(&message[..end]).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// Runs an entry point: a panic becomes [`SF_ERR_INTERNAL`], an error its code, and
/// either one this thread's last error message.
pub(crate) fn guard(f: impl FnOnce() -> Result<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        log::error!("steadfast C ABI: panic caught at the boundary: {what}");
        Err(Error::new(
            SF_ERR_INTERNAL,
            format!("internal error: {what}"),
        ))
    });
    match outcome {
        Ok(()) => SF_OK,
        Err(e) => {
            set_last_error(&e.message);
            e.code
        }
    }
}

/// The fixed description of an error code (a static string; never null).
///
/// ```c
/// int rc = sf_comm_barrier(comm);
/// if (rc != SF_OK) fprintf(stderr, "%s: %s\n", sf_error_string(rc), sf_last_error_message());
/// ```
#[no_mangle]
pub extern "C" fn sf_error_string(code: c_int) -> *const c_char {
    let text: &'static CStr = match code {
        SF_OK => c"success",
        SF_ERR_INVALID_ARG => c"invalid argument",
        SF_ERR_PROC_FAILED => c"process failed",
        SF_ERR_PROC_FAILED_PENDING => c"process failure pending acknowledgement",
        SF_ERR_REVOKED => c"communicator revoked",
        SF_ERR_TRUNCATED => c"message truncated",
        SF_ERR_EXCLUDED => c"this process was declared failed by the others",
        SF_ERR_TRANSPORT => c"transport error",
        SF_ERR_NOT_INITIALIZED => c"the world was finalized",
        SF_ERR_WRONG_THREAD => c"called from a thread other than the world's",
        SF_ERR_PROTOCOL => c"a peer broke the protocol",
        SF_ERR_INIT => c"initialization failed",
        SF_ERR_INTERNAL => c"internal error",
        _ => c"unknown error code",
    };
    text.as_ptr()
}

/// The message of the last call that failed on the calling thread (with the values
/// and bounds involved), or an empty string. The pointer stays valid until the next
/// failing `sf_*` call on this thread. Never null.
#[no_mangle]
pub extern "C" fn sf_last_error_message() -> *const c_char {
    // The CString's heap buffer does not move until the next `set_last_error` on this
    // thread replaces it, which is the documented lifetime.
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: sf_last_error_message returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(sf_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_keep_their_code_and_message() {
        let rc = guard(|| Err(Error::invalid("rank 7 outside a communicator of 3")));
        assert_eq!(rc, SF_ERR_INVALID_ARG);
        assert_eq!(last(), "rank 7 outside a communicator of 3");
        assert_eq!(guard(|| Ok(())), SF_OK);
        // A success leaves the last error as it was.
        assert_eq!(last(), "rank 7 outside a communicator of 3");
    }

    #[test]
    fn a_panic_becomes_an_internal_error() {
        let rc = guard(|| panic!("boom {}", 42));
        assert_eq!(rc, SF_ERR_INTERNAL);
        assert!(last().contains("boom 42"), "{}", last());
    }

    #[test]
    fn comm_errors_map_to_their_codes() {
        let cases = [
            (CommError::ProcFailed { ranks: vec![2] }, SF_ERR_PROC_FAILED),
            (
                CommError::ProcFailedPending { ranks: vec![2] },
                SF_ERR_PROC_FAILED_PENDING,
            ),
            (CommError::Revoked, SF_ERR_REVOKED),
            (
                CommError::Truncated {
                    len: Some(8),
                    capacity: 4,
                    sender: Some(1),
                    tag: Some(3),
                },
                SF_ERR_TRUNCATED,
            ),
            (CommError::Excluded, SF_ERR_EXCLUDED),
            (CommError::NoFabricEndpoint, SF_ERR_TRANSPORT),
            (
                CommError::Protocol {
                    rank: 1,
                    problem: "x",
                },
                SF_ERR_PROTOCOL,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(Error::from(e.clone()).code, code, "{e:?}");
        }
    }

    #[test]
    fn every_code_has_its_own_string() {
        let strings: Vec<String> = (SF_OK..=SF_ERR_INTERNAL)
            .map(|c| {
                // SAFETY: sf_error_string returns a static NUL-terminated string.
                unsafe { CStr::from_ptr(sf_error_string(c)) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let mut unique = strings.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), strings.len(), "{strings:?}");
        assert!(!strings.iter().any(|s| s == "unknown error code"));
    }

    #[test]
    fn a_message_with_a_nul_is_cut_there() {
        guard(|| Err(Error::invalid("before\0after")));
        assert_eq!(last(), "before");
    }
}
