//! The handle conversions between C and Fortran (MPI 4.1 §19.3.4): `MPI_Comm_c2f`,
//! `MPI_Comm_f2c` and their kin for datatypes, groups, operations, infos, error
//! handlers, messages, sessions and requests, and `MPI_Status_c2f`/`MPI_Status_f2c`.
//!
//! Every handle but a request's is a small integer (the ABI's predefined values, or
//! one of the counter's from 0x10000), so its Fortran integer is the same number. A
//! request's handle carries its slot's generation above 32 bits; its Fortran integer
//! is 0x10000 plus the slot's index, and `MPI_Request_f2c` gives that slot's handle as
//! it stands (a stale integer gives a stale handle, which calls refuse with
//! `MPI_ERR_REQUEST`). A value that fits no `MPI_Fint` converts to -1, which no handle
//! is.

use std::ffi::c_int;

use crate::consts::*;
use crate::reqtable::Requests;
use crate::request::MPI_Status;
use crate::state::NO_OBJECT;
use crate::state::{call, Guard};
use crate::util::out;

/// `MPI_Fint`.
type Fint = c_int;

/// Where the Fortran integers of requests start.
const REQUEST_BASE: Fint = 0x10000;

fn to_fint(h: Handle) -> Fint {
    Fint::try_from(h).unwrap_or(-1)
}

fn from_fint(f: Fint) -> Handle {
    Handle::try_from(f).unwrap_or(Handle::MAX)
}

/// Defines `MPI_<kind>_c2f` / `MPI_<kind>_f2c` and their `PMPI_` forms, the same
/// number both ways.
macro_rules! same_number {
    ($($c2f:ident / $pc2f:ident, $f2c:ident / $pf2c:ident;)*) => {$(
        /// The Fortran integer of a C handle (the same number).
        #[no_mangle]
        pub extern "C" fn $pc2f(h: Handle) -> Fint {
            to_fint(h)
        }

        /// As the `PMPI_` form.
        #[no_mangle]
        pub extern "C" fn $c2f(h: Handle) -> Fint {
            $pc2f(h)
        }

        /// The C handle of a Fortran integer (the same number).
        #[no_mangle]
        pub extern "C" fn $pf2c(f: Fint) -> Handle {
            from_fint(f)
        }

        /// As the `PMPI_` form.
        #[no_mangle]
        pub extern "C" fn $f2c(f: Fint) -> Handle {
            $pf2c(f)
        }
    )*};
}

same_number! {
    MPI_Comm_c2f / PMPI_Comm_c2f, MPI_Comm_f2c / PMPI_Comm_f2c;
    MPI_Type_c2f / PMPI_Type_c2f, MPI_Type_f2c / PMPI_Type_f2c;
    MPI_Group_c2f / PMPI_Group_c2f, MPI_Group_f2c / PMPI_Group_f2c;
    MPI_Op_c2f / PMPI_Op_c2f, MPI_Op_f2c / PMPI_Op_f2c;
    MPI_Info_c2f / PMPI_Info_c2f, MPI_Info_f2c / PMPI_Info_f2c;
    MPI_Errhandler_c2f / PMPI_Errhandler_c2f, MPI_Errhandler_f2c / PMPI_Errhandler_f2c;
    MPI_Message_c2f / PMPI_Message_c2f, MPI_Message_f2c / PMPI_Message_f2c;
    MPI_Session_c2f / PMPI_Session_c2f, MPI_Session_f2c / PMPI_Session_f2c;
    MPI_File_c2f / PMPI_File_c2f, MPI_File_f2c / PMPI_File_f2c;
}

/// `MPI_Request_c2f`: `MPI_REQUEST_NULL` as itself, a request as 0x10000 plus its slot.
#[no_mangle]
pub extern "C" fn PMPI_Request_c2f(h: Handle) -> Fint {
    match Requests::index_of(h) {
        Some(i) => Fint::try_from(i)
            .ok()
            .and_then(|i| i.checked_add(REQUEST_BASE))
            .unwrap_or(-1),
        None => to_fint(h),
    }
}

/// As `PMPI_Request_c2f`.
#[no_mangle]
pub extern "C" fn MPI_Request_c2f(h: Handle) -> Fint {
    PMPI_Request_c2f(h)
}

/// `MPI_Request_f2c`: the handle of the slot the integer names, as it stands.
#[no_mangle]
pub extern "C" fn PMPI_Request_f2c(f: Fint) -> Handle {
    let Some(index) = f
        .checked_sub(REQUEST_BASE)
        .and_then(|i| u32::try_from(i).ok())
    else {
        return from_fint(f);
    };
    match Guard::lock() {
        Some(mut g) => match g.lib() {
            Ok(lib) => lib.requests.handle_at(index),
            Err(_) => Handle::MAX,
        },
        None => Handle::MAX,
    }
}

/// As `PMPI_Request_f2c`.
#[no_mangle]
pub extern "C" fn MPI_Request_f2c(f: Fint) -> Handle {
    PMPI_Request_f2c(f)
}

/// The ints of a status (`MPI_F_STATUS_SIZE`).
const STATUS_INTS: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();

crate::mpi_fn! {
    /// `MPI_Status_c2f`: the status's `MPI_F_STATUS_SIZE` ints, in order.
    fn MPI_Status_c2f / PMPI_Status_c2f(c_status: *const MPI_Status, f_status: *mut Fint) {
        call(NO_OBJECT, |_| {
            if c_status.is_null() || f_status.is_null() {
                return Err(crate::error::Fail::new(MPI_ERR_ARG, "a null status"));
            }
            // SAFETY: MPI's contract: `c_status` is a status and `f_status` holds
            // `MPI_F_STATUS_SIZE` ints; they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(c_status.cast::<Fint>(), f_status, STATUS_INTS) };
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Status_f2c`: a status from its `MPI_F_STATUS_SIZE` ints.
    fn MPI_Status_f2c / PMPI_Status_f2c(f_status: *const Fint, c_status: *mut MPI_Status) {
        call(NO_OBJECT, |_| {
            if f_status.is_null() {
                return Err(crate::error::Fail::new(MPI_ERR_ARG, "a null status"));
            }
            // SAFETY: MPI's contract: `c_status` is valid for a write.
            let slot = unsafe { out(c_status) }?;
            // SAFETY: MPI's contract: `f_status` holds `MPI_F_STATUS_SIZE` ints, apart
            // from `c_status`.
            unsafe { std::ptr::copy_nonoverlapping(f_status, (slot as *mut MPI_Status).cast::<Fint>(), STATUS_INTS) };
            Ok(())
        })
    }
}
