//! Error classes, their strings, the conversion of runtime errors, error handlers
//! (`MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_RETURN`, `MPI_ERRORS_ABORT`, user handlers) and
//! aborting the job.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

use sf::CommError;

use crate::consts::*;
use crate::state::NO_OBJECT;
use crate::state::{call, FtMode, Handler};
use crate::util::{out, write_str};

/// An error on its way to the program: its class and what happened.
#[derive(Debug)]
pub(crate) struct Fail {
    pub class: c_int,
    pub message: String,
    /// The communicator whose error handler gets it, when not the call's argument (a
    /// request's communicator).
    pub comm: Option<Handle>,
    /// The code a user error handler is called with, when not `class`: the failed
    /// request's error for `MPI_ERR_IN_STATUS` (see `request::report_all`).
    pub handler_code: Option<c_int>,
}

pub(crate) type R<T> = Result<T, Fail>;

impl Fail {
    pub fn new(class: c_int, message: impl Into<String>) -> Self {
        Fail {
            class,
            message: message.into(),
            comm: None,
            handler_code: None,
        }
    }

    /// A user error handler gets `code` instead of the class the call returns.
    pub fn handler_gets(mut self, code: c_int) -> Self {
        self.handler_code = Some(code);
        self
    }

    /// Raised on `comm`'s error handler.
    pub fn on(mut self, comm: Handle) -> Self {
        self.comm = Some(comm);
        self
    }
}

/// Set when a call learnt that the other processes declared this one dead
/// (`CommError::Excluded`, raised as `MPI_ERR_OTHER`); cleared when the runtime comes
/// up (`init::bring_up`). Relaxed: it publishes no memory, and a thread that reads it
/// stale ends the job as before.
static EXCLUDED: AtomicBool = AtomicBool::new(false);

/// Forgets an exclusion of an earlier runtime (a new bring-up).
pub(crate) fn clear_excluded() {
    EXCLUDED.store(false, Ordering::Relaxed);
}

/// The class of a runtime error.
pub(crate) fn class_of(e: &CommError) -> c_int {
    if matches!(e, CommError::Excluded) {
        EXCLUDED.store(true, Ordering::Relaxed);
    }
    match e {
        CommError::ProcFailed { .. } => MPI_ERR_PROC_FAILED,
        CommError::ProcFailedPending { .. } => MPI_ERR_PROC_FAILED_PENDING,
        CommError::Revoked => MPI_ERR_REVOKED,
        CommError::Truncated { .. } => MPI_ERR_TRUNCATE,
        CommError::InvalidArgument(_) => MPI_ERR_ARG,
        CommError::Unsupported(_) => MPI_ERR_UNSUPPORTED_OPERATION,
        CommError::Spawn(_) => MPI_ERR_SPAWN,
        // Excluded (the others declared this process dead), transport, protocol.
        _ => MPI_ERR_OTHER,
    }
}

impl From<CommError> for Fail {
    fn from(e: CommError) -> Self {
        Fail::new(class_of(&e), e.to_string())
    }
}

/// The classes of failures (ULFM).
pub(crate) fn is_failure(class: c_int) -> bool {
    matches!(
        class,
        MPI_ERR_PROC_FAILED | MPI_ERR_PROC_FAILED_PENDING | MPI_ERR_REVOKED
    )
}

/// Hands `fail` (raised on `comm`) to its handler; the code the call returns.
pub(crate) fn raise(comm: Handle, fail: Fail, handler: Handler, ft: FtMode) -> c_int {
    log::debug!("MPI error {} on {comm:#x}: {}", fail.class, fail.message);
    if ft == FtMode::Off && is_failure(fail.class) {
        abort_job(
            fail.class,
            &format!(
                "{} (the job runs without fault tolerance: --with-ft no)",
                fail.message
            ),
        );
    }
    match handler {
        Handler::Return => fail.class,
        Handler::Fatal => abort_job(fail.class, &fail.message),
        Handler::User(f) => {
            let mut c = comm;
            let mut code = fail.handler_code.unwrap_or(fail.class);
            // SAFETY: `f` was registered by the program as an MPI_Comm_errhandler_function,
            // which takes a communicator pointer and an error code pointer (then any
            // arguments, here none); both point to live locals.
            unsafe { f(&mut c, &mut code) };
            fail.class
        }
    }
}

/// Ends the job: `MPI_Abort`, and what `MPI_ERRORS_ARE_FATAL` does (only this process
/// once the others excluded it, `EXCLUDED`). Under
/// `steadfast-run` the launcher is asked (SIGTERM) to end every rank; this process
/// exits with `code` at once, without running exit handlers (the job is going down,
/// and another rank's state must not keep it alive).
pub(crate) fn abort_job(code: c_int, why: &str) -> ! {
    if EXCLUDED.load(Ordering::Relaxed) {
        // The others declared this process dead and went on without it (a process
        // suspected while alive, ULFM's fail-stop model): ending the job from here would
        // take them down with the one process they had already written off.
        log::error!(
            "MPI abort (code {code}) in a process the others excluded: it ends alone: {why}"
        );
        exit_now(code);
    }
    log::error!("MPI job aborted by this process (code {code}): {why}");
    if launched_by_steadfast_run() {
        // SAFETY: ignoring SIGTERM (the process ends just below) keeps the launcher's
        // relayed SIGTERM from replacing this exit status; getppid has no
        // preconditions; kill signals our parent, the launcher (checked just above).
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            libc::kill(libc::getppid(), libc::SIGTERM);
        }
    }
    exit_now(code)
}

/// Ends this process at once with `code` as its status, without running exit handlers
/// (the state may be half built, or held by another thread). An exit status keeps the
/// code's low 8 bits; a code that has none set (a code the program added, from 0x4000)
/// still ends the process with a failure.
pub(crate) fn exit_now(code: c_int) -> ! {
    let status = match code & 0xff {
        0 if code != 0 => 1,
        s => s,
    };
    // SAFETY: _exit ends the process at once; nothing after it runs.
    unsafe { libc::_exit(status) }
}

fn launched_by_steadfast_run() -> bool {
    if std::env::var_os("STEADFAST_RUN_ADDR").is_none() {
        return false;
    }
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    std::fs::read_to_string(format!("/proc/{ppid}/comm"))
        .map(|s| s.trim() == "steadfast-run")
        .unwrap_or(false)
}

/// The description of each class.
pub(crate) fn class_string(class: c_int) -> Option<&'static str> {
    Some(match class {
        MPI_SUCCESS => "MPI_SUCCESS: no error",
        MPI_ERR_BUFFER => "MPI_ERR_BUFFER: invalid buffer pointer",
        MPI_ERR_COUNT => "MPI_ERR_COUNT: invalid count argument",
        MPI_ERR_TYPE => "MPI_ERR_TYPE: invalid datatype",
        MPI_ERR_TAG => "MPI_ERR_TAG: invalid tag",
        MPI_ERR_COMM => "MPI_ERR_COMM: invalid communicator",
        MPI_ERR_RANK => "MPI_ERR_RANK: invalid rank",
        MPI_ERR_REQUEST => "MPI_ERR_REQUEST: invalid request",
        MPI_ERR_ROOT => "MPI_ERR_ROOT: invalid root",
        MPI_ERR_GROUP => "MPI_ERR_GROUP: invalid group",
        MPI_ERR_OP => "MPI_ERR_OP: invalid reduce operation (or not defined on this datatype)",
        MPI_ERR_ARG => "MPI_ERR_ARG: invalid argument of some other kind",
        MPI_ERR_UNKNOWN => "MPI_ERR_UNKNOWN: unknown error",
        MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE: message truncated",
        MPI_ERR_OTHER => "MPI_ERR_OTHER: known error not in this list",
        MPI_ERR_INTERN => "MPI_ERR_INTERN: internal error",
        MPI_ERR_PENDING => "MPI_ERR_PENDING: pending request",
        MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS: error code is in status",
        MPI_ERR_TOPOLOGY => "MPI_ERR_TOPOLOGY: invalid topology",
        MPI_ERR_DIMS => "MPI_ERR_DIMS: invalid dimension argument",
        20 => "MPI_ERR_ACCESS: permission denied",
        21 => "MPI_ERR_AMODE: invalid file access mode",
        22 => "MPI_ERR_ASSERT: invalid assertion argument",
        23 => "MPI_ERR_BAD_FILE: invalid file name",
        24 => "MPI_ERR_BASE: invalid base address",
        25 => "MPI_ERR_CONVERSION: data conversion failed",
        26 => "MPI_ERR_DISP: invalid displacement",
        27 => "MPI_ERR_DUP_DATAREP: data representation already defined",
        28 => "MPI_ERR_FILE_EXISTS: file exists",
        29 => "MPI_ERR_FILE_IN_USE: file in use",
        30 => "MPI_ERR_FILE: invalid file handle",
        35 => "MPI_ERR_IO: input/output error",
        37 => "MPI_ERR_LOCKTYPE: invalid lock type",
        38 => "MPI_ERR_NAME: invalid service name",
        40 => "MPI_ERR_NOT_SAME: collective arguments differ between processes",
        41 => "MPI_ERR_NO_SPACE: no space left",
        42 => "MPI_ERR_NO_SUCH_FILE: no such file",
        43 => "MPI_ERR_PORT: invalid port name",
        45 => "MPI_ERR_QUOTA: quota exceeded",
        46 => "MPI_ERR_READ_ONLY: read-only file or file system",
        47 => "MPI_ERR_RMA_ATTACH: memory cannot be attached",
        48 => "MPI_ERR_RMA_CONFLICT: conflicting accesses to a window",
        49 => "MPI_ERR_RMA_RANGE: target memory outside the window",
        50 => "MPI_ERR_RMA_SHARED: memory cannot be shared",
        51 => "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
        52 => "MPI_ERR_RMA_FLAVOR: wrong kind of window",
        53 => "MPI_ERR_SERVICE: invalid service name",
        MPI_ERR_SESSION => "MPI_ERR_SESSION: invalid session",
        55 => "MPI_ERR_SIZE: invalid size argument",
        57 => "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
        60 => "MPI_ERR_WIN: invalid window",
        MPI_ERR_INFO_KEY => "MPI_ERR_INFO_KEY: key longer than MPI_MAX_INFO_KEY",
        MPI_ERR_INFO_NOKEY => "MPI_ERR_INFO_NOKEY: invalid key passed to MPI_INFO_DELETE",
        MPI_ERR_INFO_VALUE => "MPI_ERR_INFO_VALUE: value longer than MPI_MAX_INFO_VAL",
        MPI_ERR_INFO => "MPI_ERR_INFO: invalid info object",
        MPI_ERR_KEYVAL => "MPI_ERR_KEYVAL: invalid attribute key",
        MPI_ERR_NO_MEM => "MPI_ERR_NO_MEM: out of memory",
        MPI_ERR_PROC_ABORTED => "MPI_ERR_PROC_ABORTED: a process aborted",
        MPI_ERR_SPAWN => {
            "MPI_ERR_SPAWN: could not spawn processes (the command was not found, the \
             universe has no free slot, the launcher cannot start processes, or the \
             process ended before it joined; the root's log says which)"
        }
        MPI_ERR_UNSUPPORTED_OPERATION => {
            "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported by libsteadfast-mpi"
        }
        MPI_ERR_VALUE_TOO_LARGE => "MPI_ERR_VALUE_TOO_LARGE: value too large to store",
        MPI_ERR_ERRHANDLER => "MPI_ERR_ERRHANDLER: invalid error handler",
        MPI_ERR_PROC_FAILED => "MPI_ERR_PROC_FAILED: a process involved has failed",
        MPI_ERR_PROC_FAILED_PENDING => {
            "MPI_ERR_PROC_FAILED_PENDING: a wildcard operation cannot proceed while a \
             process failure is not acknowledged"
        }
        MPI_ERR_REVOKED => "MPI_ERR_REVOKED: the communicator was revoked",
        MPI_T_ERR_CANNOT_INIT => "MPI_T_ERR_CANNOT_INIT: MPI_T cannot be initialized",
        MPI_T_ERR_NOT_ACCESSIBLE => "MPI_T_ERR_NOT_ACCESSIBLE: the variable cannot be accessed",
        MPI_T_ERR_NOT_INITIALIZED => "MPI_T_ERR_NOT_INITIALIZED: MPI_T is not initialized",
        MPI_T_ERR_NOT_SUPPORTED => "MPI_T_ERR_NOT_SUPPORTED: not supported",
        MPI_T_ERR_MEMORY => "MPI_T_ERR_MEMORY: out of memory",
        MPI_T_ERR_INVALID => "MPI_T_ERR_INVALID: invalid use of the tool interface",
        MPI_T_ERR_INVALID_INDEX => "MPI_T_ERR_INVALID_INDEX: invalid index",
        MPI_T_ERR_INVALID_ITEM => "MPI_T_ERR_INVALID_ITEM: invalid enumeration item",
        MPI_T_ERR_INVALID_SESSION => "MPI_T_ERR_INVALID_SESSION: invalid session",
        MPI_T_ERR_INVALID_HANDLE => "MPI_T_ERR_INVALID_HANDLE: invalid handle",
        MPI_T_ERR_INVALID_NAME => "MPI_T_ERR_INVALID_NAME: no variable of that name",
        MPI_T_ERR_OUT_OF_HANDLES => "MPI_T_ERR_OUT_OF_HANDLES: no more handles",
        MPI_T_ERR_OUT_OF_SESSIONS => "MPI_T_ERR_OUT_OF_SESSIONS: no more sessions",
        MPI_T_ERR_CVAR_SET_NOT_NOW => "MPI_T_ERR_CVAR_SET_NOT_NOW: cannot be set now",
        MPI_T_ERR_CVAR_SET_NEVER => "MPI_T_ERR_CVAR_SET_NEVER: the variable is never set",
        MPI_T_ERR_PVAR_NO_WRITE => "MPI_T_ERR_PVAR_NO_WRITE: the variable cannot be written",
        MPI_T_ERR_PVAR_NO_STARTSTOP => "MPI_T_ERR_PVAR_NO_STARTSTOP: cannot be started",
        MPI_T_ERR_PVAR_NO_ATOMIC => "MPI_T_ERR_PVAR_NO_ATOMIC: cannot be read and reset at once",
        _ => return None,
    })
}

crate::mpi_fn! {
    /// `MPI_Error_class`: every code of this library is its own class; a code the
    /// program added has the class it was added to.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        call(NO_OBJECT, |_| {
            let class = match crate::user_errors::class_of(errorcode) {
                Some(c) => c,
                None if class_string(errorcode).is_some() => errorcode,
                None => {
                    return Err(Fail::new(MPI_ERR_ARG, format!("{errorcode} is not an error code")))
                }
            };
            // SAFETY: MPI's contract: `errorclass` is valid for a write.
            *unsafe { out(errorclass) }? = class;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Error_string`: at most `MPI_MAX_ERROR_STRING` bytes with the NUL.
    fn MPI_Error_string / PMPI_Error_string(
        errorcode: c_int,
        string: *mut c_char,
        resultlen: *mut c_int
    ) {
        call(NO_OBJECT, |_| {
            let added = crate::user_errors::string_of(errorcode);
            let text = added
                .as_deref()
                .or_else(|| class_string(errorcode))
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, format!("{errorcode} is not an error code")))?;
            // SAFETY: MPI's contract: `string` holds MPI_MAX_ERROR_STRING bytes and
            // `resultlen` is valid for a write.
            unsafe { write_str(text, string, MAX_ERROR_STRING, resultlen) }
        })
    }
}
