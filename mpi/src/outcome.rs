//! What a completed request, receive or probe reports: [`Outcome`], and the C
//! `MPI_Status` it is written into (`status.rs` writes it).

use std::ffi::c_int;

use crate::consts::*;

/// `MPI_Status`: three public fields, five internal ones (the byte count in two, the
/// cancelled flag in one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MPI_Status {
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
    pub internal: [c_int; 5],
}

const _: () = assert!(std::mem::size_of::<MPI_Status>() == 32);

/// How a request ended (or, with `keep`, an error that leaves it pending).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    pub bytes: usize,
    pub cancelled: bool,
    /// The request stays active (a wildcard receive that met an unacknowledged
    /// failure: ULFM's `MPI_ERR_PROC_FAILED_PENDING`).
    pub keep: bool,
}

impl Outcome {
    /// An empty status (MPI 4.1, 3.7.3: `MPI_ANY_SOURCE`, `MPI_ANY_TAG`, no bytes):
    /// that of a null or inactive request, and of a completed send.
    pub fn empty() -> Self {
        Outcome {
            source: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            error: MPI_SUCCESS,
            bytes: 0,
            cancelled: false,
            keep: false,
        }
    }

    /// The status of a receive or probe from `MPI_PROC_NULL` (MPI 4.1, 3.10): source
    /// `MPI_PROC_NULL`, tag `MPI_ANY_TAG`, no bytes.
    pub fn proc_null() -> Self {
        Outcome {
            source: MPI_PROC_NULL,
            ..Outcome::empty()
        }
    }

    pub fn ok(source: c_int, tag: c_int, bytes: usize) -> Self {
        Outcome {
            source,
            tag,
            bytes,
            ..Outcome::empty()
        }
    }

    pub fn failed(error: c_int) -> Self {
        Outcome {
            error,
            ..Outcome::empty()
        }
    }
}
