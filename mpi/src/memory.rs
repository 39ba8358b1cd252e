//! Memory and addresses: `MPI_Alloc_mem` / `MPI_Free_mem` (the C allocator: nothing is
//! registered ahead, the transports register what they send when they need to),
//! `MPI_Get_address`, `MPI_Aint_add`, `MPI_Aint_diff`.

use std::ffi::c_void;

use crate::consts::*;
use crate::error::Fail;
use crate::state::call;
use crate::state::NO_OBJECT;
use crate::util::out;

/// `MPI_Aint`: an address-sized signed integer.
#[allow(non_camel_case_types)]
type MPI_Aint = isize;

crate::mpi_fn! {
    /// `MPI_Alloc_mem`: `size` bytes from the C allocator into `*(void **)baseptr`
    /// (`MPI_ERR_NO_MEM` when it has none); `info` is not read.
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: MPI_Aint, _info: Handle, baseptr: *mut c_void) {
        call(NO_OBJECT, |_| {
            let n = usize::try_from(size)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("a size of {size}")))?;
            // SAFETY: MPI's contract: `baseptr` points to a `void *` to write.
            let slot = unsafe { out(baseptr.cast::<*mut c_void>()) }?;
            // SAFETY: malloc of any size; a null result (none left) is checked. One byte
            // at least, so that a zero size still gives a pointer MPI_Free_mem takes.
            let p = unsafe { libc::malloc(n.max(1)) };
            if p.is_null() {
                return Err(Fail::new(MPI_ERR_NO_MEM, format!("no memory for {n} bytes")));
            }
            *slot = p;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Free_mem`: gives back memory from `MPI_Alloc_mem`.
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `base` came from MPI_Alloc_mem (malloc) and is not
            // used after this call; free(NULL) does nothing.
            unsafe { libc::free(base) };
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Get_address`: the address of `location` as an `MPI_Aint`.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut MPI_Aint) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `address` is valid for a write.
            *unsafe { out(address) }? = location as MPI_Aint;
            Ok(())
        })
    }
}

/// `MPI_Aint_add`: `base + disp` as addresses (wrapping: addresses, not numbers).
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

/// `MPI_Aint_add`.
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    PMPI_Aint_add(base, disp)
}

/// `MPI_Aint_diff`: `addr1 - addr2` as addresses.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

/// `MPI_Aint_diff`.
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    PMPI_Aint_diff(addr1, addr2)
}
