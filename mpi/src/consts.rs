//! The values of `include/mpi.h` (the MPI 5.0 ABI's table), seen from Rust. A handle is
//! a pointer-sized integer: the predefined ones are the ABI's small values, the ones this
//! library creates come from one counter starting at [`FIRST_HANDLE`] (requests: a
//! slot and generation with bit 62 set, `reqtable`), so no two live handles of any
//! kinds are equal and a handle of the wrong kind is an error, not a crash (no handle
//! is ever dereferenced).

use std::ffi::c_int;

/// Any handle in the C interface (`MPI_Comm`, `MPI_Request`...): a pointer-sized value.
pub type Handle = usize;

pub const MPI_SUCCESS: c_int = 0;
pub const MPI_ERR_BUFFER: c_int = 1;
pub const MPI_ERR_COUNT: c_int = 2;
pub const MPI_ERR_TYPE: c_int = 3;
pub const MPI_ERR_TAG: c_int = 4;
pub const MPI_ERR_COMM: c_int = 5;
pub const MPI_ERR_RANK: c_int = 6;
pub const MPI_ERR_REQUEST: c_int = 7;
pub const MPI_ERR_ROOT: c_int = 8;
pub const MPI_ERR_GROUP: c_int = 9;
pub const MPI_ERR_OP: c_int = 10;
pub const MPI_ERR_TOPOLOGY: c_int = 11;
pub const MPI_ERR_DIMS: c_int = 12;
pub const MPI_ERR_ARG: c_int = 13;
pub const MPI_ERR_UNKNOWN: c_int = 14;
pub const MPI_ERR_TRUNCATE: c_int = 15;
pub const MPI_ERR_OTHER: c_int = 16;
pub const MPI_ERR_INTERN: c_int = 17;
pub const MPI_ERR_PENDING: c_int = 18;
pub const MPI_ERR_IN_STATUS: c_int = 19;
pub const MPI_ERR_INFO_KEY: c_int = 31;
pub const MPI_ERR_INFO_NOKEY: c_int = 32;
pub const MPI_ERR_INFO_VALUE: c_int = 33;
pub const MPI_ERR_INFO: c_int = 34;
pub const MPI_ERR_KEYVAL: c_int = 36;
pub const MPI_ERR_NAME: c_int = 38;
pub const MPI_ERR_NO_MEM: c_int = 39;
pub const MPI_ERR_PORT: c_int = 43;
pub const MPI_ERR_PROC_ABORTED: c_int = 44;
pub const MPI_ERR_SERVICE: c_int = 53;
pub const MPI_ERR_SESSION: c_int = 54;
pub const MPI_ERR_SPAWN: c_int = 56;
pub const MPI_ERR_UNSUPPORTED_OPERATION: c_int = 58;
pub const MPI_ERR_VALUE_TOO_LARGE: c_int = 59;
pub const MPI_ERR_ERRHANDLER: c_int = 61;
pub const MPI_ERR_PROC_FAILED: c_int = 75;
pub const MPI_ERR_PROC_FAILED_PENDING: c_int = 76;
pub const MPI_ERR_REVOKED: c_int = 77;

// The tool interface's error classes (`MPI_T_ERR_*`, MPI 5.0 ABI values).
pub const MPI_T_ERR_CANNOT_INIT: c_int = 1001;
pub const MPI_T_ERR_NOT_ACCESSIBLE: c_int = 1002;
pub const MPI_T_ERR_NOT_INITIALIZED: c_int = 1003;
pub const MPI_T_ERR_NOT_SUPPORTED: c_int = 1004;
pub const MPI_T_ERR_MEMORY: c_int = 1005;
pub const MPI_T_ERR_INVALID: c_int = 1006;
pub const MPI_T_ERR_INVALID_INDEX: c_int = 1007;
pub const MPI_T_ERR_INVALID_ITEM: c_int = 1008;
pub const MPI_T_ERR_INVALID_SESSION: c_int = 1009;
pub const MPI_T_ERR_INVALID_HANDLE: c_int = 1010;
pub const MPI_T_ERR_INVALID_NAME: c_int = 1011;
pub const MPI_T_ERR_OUT_OF_HANDLES: c_int = 1012;
pub const MPI_T_ERR_OUT_OF_SESSIONS: c_int = 1013;
pub const MPI_T_ERR_CVAR_SET_NOT_NOW: c_int = 1014;
pub const MPI_T_ERR_CVAR_SET_NEVER: c_int = 1015;
pub const MPI_T_ERR_PVAR_NO_WRITE: c_int = 1016;
pub const MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = 1017;
pub const MPI_T_ERR_PVAR_NO_ATOMIC: c_int = 1018;

pub const MPI_ANY_SOURCE: c_int = -1;
pub const MPI_PROC_NULL: c_int = -2;
pub const MPI_ROOT: c_int = -3;
pub const MPI_ANY_TAG: c_int = -31;
pub const MPI_UNDEFINED: c_int = -32766;

pub const MPI_COMM_TYPE_SHARED: c_int = 221;
pub const MPI_COMM_TYPE_HW_UNGUIDED: c_int = 222;
pub const MPI_COMM_TYPE_HW_GUIDED: c_int = 223;
pub const MPI_COMM_TYPE_RESOURCE_GUIDED: c_int = 224;

pub const MPI_THREAD_SINGLE: c_int = 0;
pub const MPI_THREAD_FUNNELED: c_int = 1;
pub const MPI_THREAD_SERIALIZED: c_int = 2;
pub const MPI_THREAD_MULTIPLE: c_int = 7;

pub const MPI_IDENT: c_int = 101;
pub const MPI_CONGRUENT: c_int = 102;
pub const MPI_SIMILAR: c_int = 103;
pub const MPI_UNEQUAL: c_int = 104;

pub const MPI_TAG_UB: c_int = 10001;
pub const MPI_HOST: c_int = 10003;
pub const MPI_IO: c_int = 10002;
pub const MPI_WTIME_IS_GLOBAL: c_int = 10004;
pub const MPI_APPNUM: c_int = 10005;
pub const MPI_LASTUSEDCODE: c_int = 10006;
pub const MPI_UNIVERSE_SIZE: c_int = 10007;
pub const MPI_FT: c_int = 10008;

pub const MPI_COMM_NULL: Handle = 0x100;
pub const MPI_COMM_WORLD: Handle = 0x101;
pub const MPI_COMM_SELF: Handle = 0x102;
pub const MPI_GROUP_NULL: Handle = 0x108;
pub const MPI_GROUP_EMPTY: Handle = 0x109;
pub const MPI_SESSION_NULL: Handle = 0x120;
pub const MPI_INFO_NULL: Handle = 0x130;
pub const MPI_INFO_ENV: Handle = 0x131;
pub const MPI_ERRHANDLER_NULL: Handle = 0x140;
pub const MPI_ERRORS_ARE_FATAL: Handle = 0x141;
pub const MPI_ERRORS_RETURN: Handle = 0x142;
pub const MPI_ERRORS_ABORT: Handle = 0x143;
pub const MPI_REQUEST_NULL: Handle = 0x180;
pub const MPI_MESSAGE_NULL: Handle = 0x128;
pub const MPI_MESSAGE_NO_PROC: Handle = 0x129;
pub const MPI_DATATYPE_NULL: Handle = 0x200;

/// `MPI_IN_PLACE`.
pub const IN_PLACE: usize = 1;

/// The first handle this library hands out (above every predefined value).
pub const FIRST_HANDLE: Handle = 0x10000;

/// The largest tag (`MPI_TAG_UB`): the runtime's user tags are 23 bits and it keeps the
/// top three for its own collectives.
pub const TAG_UB: c_int = (1 << 23) - 1 - 3;

/// `MPI_MAX_PROCESSOR_NAME`, `MPI_MAX_ERROR_STRING`, `MPI_MAX_INFO_VAL`,
/// `MPI_MAX_INFO_KEY`, `MPI_MAX_OBJECT_NAME`, `MPI_MAX_LIBRARY_VERSION_STRING`.
pub const MAX_PROCESSOR_NAME: usize = 256;
pub const MAX_ERROR_STRING: usize = 512;
pub const MAX_INFO_KEY: usize = 256;
pub const MAX_OBJECT_NAME: usize = 128;
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;
