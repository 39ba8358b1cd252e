//! `MPI_Type_set_name` and `MPI_Type_get_name`. A predefined type's default name is
//! the one `mpi.h` defines it under (the first, where several names share a value:
//! `MPI_LONG_LONG_INT` and `MPI_LONG_LONG`...), read from the header built into the
//! library, so the two cannot disagree; a derived type's is empty until named. A name
//! set replaces the default (predefined types too, as MPI allows) and goes with
//! `MPI_Type_free`; `MPI_Type_dup` does not copy it.

use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::call;
use crate::state::NO_OBJECT;
use crate::util::{read_cstr, write_str};

/// `(handle, name)` of every datatype `mpi.h` defines, in its order.
fn predefined() -> &'static [(Handle, &'static str)] {
    static TABLE: OnceLock<Vec<(Handle, &'static str)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let header: &'static str = include_str!("../include/mpi.h");
        header
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("#define ")?;
                let (name, value) = rest.split_once(char::is_whitespace)?;
                let hex = value
                    .trim()
                    .strip_prefix("((MPI_Datatype)0x")?
                    .strip_suffix(')')?;
                Some((Handle::from_str_radix(hex, 16).ok()?, name))
            })
            .collect()
    })
}

/// Checks that `h` is a datatype, committed or not.
fn known(lib: &crate::state::Lib, h: Handle) -> R<()> {
    if lib.types.contains_key(&h) || lib.datatype(h).is_ok() {
        Ok(())
    } else {
        Err(Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype")))
    }
}

/// The default name of `h`: its `mpi.h` name, or empty.
fn default_name(h: Handle) -> &'static str {
    predefined()
        .iter()
        .find(|(v, _)| *v == h)
        .map_or("", |(_, n)| n)
}

crate::mpi_fn! {
    /// `MPI_Type_set_name` (truncated to `MPI_MAX_OBJECT_NAME - 1` bytes).
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: Handle, type_name: *const c_char) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            known(lib, datatype)?;
            // SAFETY: MPI's contract: `type_name` is a C string.
            let mut n = unsafe { read_cstr(type_name) }?;
            n.truncate(MAX_OBJECT_NAME - 1);
            lib.type_names.insert(datatype, n);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_name`: the name set, else the default (see the module doc).
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: Handle, type_name: *mut c_char, resultlen: *mut c_int) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            known(lib, datatype)?;
            let n = lib.type_names.get(&datatype).cloned().unwrap_or_else(|| default_name(datatype).to_owned());
            // SAFETY: MPI's contract: `type_name` holds MPI_MAX_OBJECT_NAME bytes.
            unsafe { write_str(&n, type_name, MAX_OBJECT_NAME, resultlen) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_the_basic_types() {
        assert_eq!(default_name(0x209), "MPI_INT");
        assert_eq!(default_name(0x214), "MPI_DOUBLE");
        assert_eq!(default_name(0x228), "MPI_FLOAT_INT");
        assert!(predefined().len() > 40, "{}", predefined().len());
        assert_eq!(default_name(0x10_0000), "");
    }
}
