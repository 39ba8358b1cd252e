//! The program's own error classes, codes and strings (MPI 4.1 §9.5):
//! `MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string` and their
//! `MPI_Remove_error_*` counterparts. New values are taken above `MPI_ERR_LASTCODE`
//! from one counter (a class is also a code: its own class), never reused, and
//! `MPI_LASTUSEDCODE` reads the last one taken. `MPI_Error_class` and
//! `MPI_Error_string` look them up here; a value without a string has the empty one.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::call;
use crate::state::NO_OBJECT;
use crate::util::{out, read_cstr};

/// `MPI_ERR_LASTCODE` (the header's value): the largest predefined code.
pub(crate) const LASTCODE: c_int = 0x3fff;

/// The value `MPI_LASTUSEDCODE` reads (an attribute of `MPI_COMM_WORLD`).
pub(crate) static LAST_USED: AtomicI32 = AtomicI32::new(LASTCODE);

#[derive(Default)]
struct Table {
    /// Each added value's class (a class maps to itself).
    class_of: HashMap<c_int, c_int>,
    /// The strings set by `MPI_Add_error_string`.
    strings: HashMap<c_int, String>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The table (a panic elsewhere cannot poison it for good: its data stays
/// consistent, each change being one insert or remove).
fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The class of an added value, `None` when the program did not add it.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    table().as_ref()?.class_of.get(&code).copied()
}

/// The string of an added value (empty when none was set), `None` when the program did
/// not add it.
pub(crate) fn string_of(code: c_int) -> Option<String> {
    let t = table();
    let t = t.as_ref()?;
    t.class_of
        .contains_key(&code)
        .then(|| t.strings.get(&code).cloned().unwrap_or_default())
}

/// Takes the next value for class `class` (`None`: a new class, its own class).
fn add(class: Option<c_int>) -> R<c_int> {
    let mut t = table();
    let t = t.get_or_insert_with(Table::default);
    if let Some(c) = class {
        let predefined = crate::error::class_string(c).is_some();
        if !predefined && t.class_of.get(&c) != Some(&c) {
            return Err(Fail::new(MPI_ERR_ARG, format!("{c} is not an error class")));
        }
    }
    // ORDERING: Relaxed; the table's mutex orders the updates, the atomic only lets
    // MPI_Comm_get_attr hand out a pointer to the value.
    let last = LAST_USED.load(Ordering::Relaxed);
    let code = last
        .checked_add(1)
        .ok_or_else(|| Fail::new(MPI_ERR_OTHER, "no error code left"))?;
    LAST_USED.store(code, Ordering::Relaxed);
    t.class_of.insert(code, class.unwrap_or(code));
    Ok(code)
}

crate::mpi_fn! {
    /// `MPI_Add_error_class`: a new error class.
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `errorclass` is valid for a write.
            let slot = unsafe { out(errorclass) }?;
            *slot = add(None)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Add_error_code`: a new error code of class `errorclass` (predefined or
    /// added).
    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `errorcode` is valid for a write.
            let slot = unsafe { out(errorcode) }?;
            *slot = add(Some(errorclass))?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Add_error_string`: the string of an added class or code (replacing any
    /// earlier one; at most `MPI_MAX_ERROR_STRING - 1` bytes are kept).
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) {
        call(NO_OBJECT, |_| {
            // SAFETY: MPI's contract: `string` is a C string.
            let mut s = unsafe { read_cstr(string) }?;
            let mut cut = s.len().min(MAX_ERROR_STRING - 1);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            let mut t = table();
            match t.as_mut() {
                Some(t) if t.class_of.contains_key(&errorcode) => {
                    t.strings.insert(errorcode, s);
                    Ok(())
                }
                _ => Err(not_added(errorcode)),
            }
        })
    }
}

fn not_added(code: c_int) -> Fail {
    Fail::new(
        MPI_ERR_ARG,
        format!("{code} is not an error class or code the program added"),
    )
}

/// Removes added value `code`: a class (`class` true) once it has no codes left, a code
/// once its string is removed.
fn remove(code: c_int, class: bool) -> R<()> {
    let mut t = table();
    let t = t.as_mut().ok_or_else(|| not_added(code))?;
    let is_class = match t.class_of.get(&code) {
        Some(&c) => c == code,
        None => return Err(not_added(code)),
    };
    if is_class != class {
        let what = if class {
            "a code, not a class"
        } else {
            "a class, not a code"
        };
        return Err(Fail::new(MPI_ERR_ARG, format!("{code} is {what}")));
    }
    if class && t.class_of.iter().any(|(&k, &c)| c == code && k != code) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("error class {code} still has codes: remove them first"),
        ));
    }
    if t.strings.contains_key(&code) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("{code} still has a string: remove it first"),
        ));
    }
    t.class_of.remove(&code);
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Remove_error_class` (MPI 4.1): after its codes and its string.
    fn MPI_Remove_error_class / PMPI_Remove_error_class(errorclass: c_int) {
        call(NO_OBJECT, |_| remove(errorclass, true))
    }
}

crate::mpi_fn! {
    /// `MPI_Remove_error_code` (MPI 4.1): after its string.
    fn MPI_Remove_error_code / PMPI_Remove_error_code(errorcode: c_int) {
        call(NO_OBJECT, |_| remove(errorcode, false))
    }
}

crate::mpi_fn! {
    /// `MPI_Remove_error_string` (MPI 4.1): of an added class or code that has one.
    fn MPI_Remove_error_string / PMPI_Remove_error_string(errorcode: c_int) {
        call(NO_OBJECT, |_| {
            let mut t = table();
            match t.as_mut().and_then(|t| t.strings.remove(&errorcode)) {
                Some(_) => Ok(()),
                None => Err(Fail::new(
                    MPI_ERR_ARG,
                    format!("{errorcode} has no string added by the program"),
                )),
            }
        })
    }
}
