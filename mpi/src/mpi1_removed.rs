//! The functions MPI 3.0 removed, kept for old programs (MPICH's test suite still
//! calls some; MPICH and Open MPI's compatibility mode still provide them), each the
//! call that replaced it: `MPI_Address` (`MPI_Get_address`), `MPI_Type_extent`,
//! `MPI_Type_lb`, `MPI_Type_ub` (`MPI_Type_get_extent`), `MPI_Type_hvector`,
//! `MPI_Type_hindexed`, `MPI_Type_struct` (their `MPI_Type_create_` forms),
//! `MPI_Errhandler_create`, `MPI_Errhandler_set`, `MPI_Errhandler_get` (their
//! `MPI_Comm_` forms).

use std::ffi::{c_int, c_void};

use crate::consts::Handle;
use crate::state::ErrFn;

crate::mpi_fn! {
    /// `MPI_Address`: `MPI_Get_address`.
    fn MPI_Address / PMPI_Address(location: *const c_void, address: *mut isize) {
        // SAFETY: the same contract.
        unsafe { crate::memory::PMPI_Get_address(location, address) }
    }
}

/// `MPI_Type_get_extent` with one of its results written to `out`.
///
/// # Safety
/// `out` is valid for a write.
unsafe fn extent_part(datatype: Handle, out: *mut isize, pick: fn(isize, isize) -> isize) -> c_int {
    let (mut lb, mut extent) = (0isize, 0isize);
    // SAFETY: both are locals.
    let rc = unsafe { crate::datatype::PMPI_Type_get_extent(datatype, &mut lb, &mut extent) };
    if rc == crate::consts::MPI_SUCCESS {
        if out.is_null() {
            return crate::state::call(crate::state::NO_OBJECT, |_| {
                Err(crate::error::Fail::new(
                    crate::consts::MPI_ERR_ARG,
                    "a null output pointer",
                ))
            });
        }
        // SAFETY: the caller's contract.
        unsafe { *out = pick(lb, extent) };
    }
    rc
}

crate::mpi_fn! {
    /// `MPI_Type_extent`: the extent `MPI_Type_get_extent` gives.
    fn MPI_Type_extent / PMPI_Type_extent(datatype: Handle, extent: *mut isize) {
        // SAFETY: MPI's contract: `extent` is valid for a write.
        unsafe { extent_part(datatype, extent, |_, e| e) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_lb`: the lower bound.
    fn MPI_Type_lb / PMPI_Type_lb(datatype: Handle, displacement: *mut isize) {
        // SAFETY: MPI's contract: `displacement` is valid for a write.
        unsafe { extent_part(datatype, displacement, |lb, _| lb) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_ub`: the lower bound plus the extent.
    fn MPI_Type_ub / PMPI_Type_ub(datatype: Handle, displacement: *mut isize) {
        // SAFETY: MPI's contract: `displacement` is valid for a write.
        unsafe { extent_part(datatype, displacement, |lb, e| lb + e) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_hvector`: `MPI_Type_create_hvector`.
    fn MPI_Type_hvector / PMPI_Type_hvector(
        count: c_int,
        blocklength: c_int,
        stride: isize,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        // SAFETY: the same contract.
        unsafe { crate::typemap::PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype) }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_hindexed`: `MPI_Type_create_hindexed`.
    fn MPI_Type_hindexed / PMPI_Type_hindexed(
        count: c_int,
        blocklengths: *const c_int,
        displacements: *const isize,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        // SAFETY: the same contract.
        unsafe {
            crate::typemap::PMPI_Type_create_hindexed(count, blocklengths, displacements, oldtype, newtype)
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Type_struct`: `MPI_Type_create_struct`.
    fn MPI_Type_struct / PMPI_Type_struct(
        count: c_int,
        blocklengths: *const c_int,
        displacements: *const isize,
        types: *const Handle,
        newtype: *mut Handle
    ) {
        // SAFETY: the same contract.
        unsafe {
            crate::typemap::PMPI_Type_create_struct(count, blocklengths, displacements, types, newtype)
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Errhandler_create`: `MPI_Comm_create_errhandler`.
    fn MPI_Errhandler_create / PMPI_Errhandler_create(function: Option<ErrFn>, errhandler: *mut Handle) {
        // SAFETY: the same contract.
        unsafe { crate::comm::PMPI_Comm_create_errhandler(function, errhandler) }
    }
}

crate::mpi_fn! {
    /// `MPI_Errhandler_set`: `MPI_Comm_set_errhandler`.
    fn MPI_Errhandler_set / PMPI_Errhandler_set(comm: Handle, errhandler: Handle) {
        // SAFETY: the same contract.
        unsafe { crate::comm::PMPI_Comm_set_errhandler(comm, errhandler) }
    }
}

crate::mpi_fn! {
    /// `MPI_Errhandler_get`: `MPI_Comm_get_errhandler`.
    fn MPI_Errhandler_get / PMPI_Errhandler_get(comm: Handle, errhandler: *mut Handle) {
        // SAFETY: the same contract.
        unsafe { crate::comm::PMPI_Comm_get_errhandler(comm, errhandler) }
    }
}
