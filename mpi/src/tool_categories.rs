//! MPI_T categories: one, `steadfast`, holding every control variable in index order,
//! no performance variable, subcategory or event. It never changes.

use std::ffi::{c_char, c_int};

use sf::params::PARAMS;

use crate::consts::*;
use crate::tool::{index_arg, name_arg, put, put_required, put_str, tool_call};

/// The category's name.
const NAME: &str = "steadfast";

/// Fills `indices[..len]` with the first `len` of `0..n`.
///
/// # Safety
/// `indices` is valid for writes of `len` ints (or `len` <= 0).
unsafe fn fill(len: c_int, n: usize, indices: *mut c_int) -> Result<(), c_int> {
    let len = usize::try_from(len).map_err(|_| MPI_T_ERR_INVALID)?;
    if len > 0 && indices.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    for i in 0..len.min(n) {
        // SAFETY: `i < len`, within the caller's array.
        unsafe { *indices.add(i) = c_int::try_from(i).unwrap_or(0) };
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_T_category_get_num`: 1.
    fn MPI_T_category_get_num / PMPI_T_category_get_num(num_cat: *mut c_int) {
        // SAFETY: MPI's contract: a valid output pointer.
        tool_call(|_| unsafe { put_required(num_cat, 1) })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_info`.
    fn MPI_T_category_get_info / PMPI_T_category_get_info(
        cat_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char,
        desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int,
        num_categories: *mut c_int,
    ) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: null or valid pointers.
            unsafe {
                put_str(NAME, name, name_len);
                put_str("the steadfast runtime's parameters (STEADFAST_* variables, steadfast-run options)", desc, desc_len);
                put(num_cvars, c_int::try_from(PARAMS.len()).unwrap_or(0));
                put(num_pvars, 0);
                put(num_categories, 0);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_num_events`: 0.
    fn MPI_T_category_get_num_events / PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: a valid output pointer.
            unsafe { put_required(num_events, 0) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_index`.
    fn MPI_T_category_get_index / PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) {
        tool_call(|_| {
            // SAFETY: MPI's contract: a C string.
            if unsafe { name_arg(name) }? != NAME {
                return Err(MPI_T_ERR_INVALID_NAME);
            }
            // SAFETY: MPI's contract: a valid output pointer.
            unsafe { put_required(cat_index, 0) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_cvars`: every control variable.
    fn MPI_T_category_get_cvars / PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: `indices` holds `len` ints.
            unsafe { fill(len, PARAMS.len(), indices) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_pvars`: none.
    fn MPI_T_category_get_pvars / PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: `indices` holds `len` ints.
            unsafe { fill(len, 0, indices) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_categories`: none.
    fn MPI_T_category_get_categories / PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: `indices` holds `len` ints.
            unsafe { fill(len, 0, indices) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_get_events`: none.
    fn MPI_T_category_get_events / PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) {
        tool_call(|_| {
            index_arg(cat_index, 1)?;
            // SAFETY: MPI's contract: `indices` holds `len` ints.
            unsafe { fill(len, 0, indices) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_category_changed`: 0, always (the categories are fixed).
    fn MPI_T_category_changed / PMPI_T_category_changed(update_number: *mut c_int) {
        // SAFETY: MPI's contract: a valid output pointer.
        tool_call(|_| unsafe { put_required(update_number, 0) })
    }
}
