//! MPI_T control variables: one per runtime parameter (`steadfast::params::PARAMS`),
//! named `steadfast_<parameter>`, read-only (`MPI_T_SCOPE_CONSTANT`: the runtime reads
//! its parameters once, at start), and the enumerations of the choice parameters.
//!
//! Types: numbers are `MPI_UNSIGNED_LONG`; `0`/`1` switches `MPI_INT`; other choices
//! `MPI_INT` holding the position of the word in the parameter's enumeration; text
//! `MPI_CHAR`, whose count is the value's length + 1.

use std::ffi::{c_char, c_int, c_ulong, c_void};

use sf::params::{Kind, ParamSpec, PARAMS};

use crate::consts::*;
use crate::tool::{index_arg, name_arg, put, put_required, put_str, tool_call, Tool};

/// `MPI_INT` (the header's value).
const MPI_INT: Handle = 0x209;
/// `MPI_UNSIGNED_LONG` (the header's value).
const MPI_UNSIGNED_LONG: Handle = 0x20e;
/// `MPI_CHAR` (the header's value).
const MPI_CHAR: Handle = 0x243;
/// `MPI_T_ENUM_NULL`.
pub(crate) const MPI_T_ENUM_NULL: Handle = 0;
/// `MPI_T_VERBOSITY_USER_BASIC`, `_TUNER_BASIC`, `_TUNER_DETAIL` (header values).
const USER_BASIC: c_int = 0x09;
/// See [`USER_BASIC`].
const TUNER_BASIC: c_int = 0x11;
/// See [`USER_BASIC`].
const TUNER_DETAIL: c_int = 0x12;
/// `MPI_T_BIND_NO_OBJECT` (header value).
pub(crate) const MPI_T_BIND_NO_OBJECT: c_int = 0;
/// `MPI_T_SCOPE_CONSTANT` (header value).
const MPI_T_SCOPE_CONSTANT: c_int = 0;
/// The prefix of every control variable's name.
const PREFIX: &str = "steadfast_";

/// How a parameter is shown as a control variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `MPI_UNSIGNED_LONG`.
    Number,
    /// `MPI_INT`, 0 or 1.
    Switch,
    /// `MPI_INT` with enumeration `enum_index`.
    Choice {
        /// The enumeration's index among [`enums`].
        enum_index: usize,
    },
    /// `MPI_CHAR` string.
    Text,
}

/// Whether `kind` is a `0`/`1` switch.
fn is_switch(kind: &Kind) -> bool {
    matches!(kind, Kind::Choice(w) if *w == ["0", "1"])
}

/// The choice parameters other than switches: each has an enumeration, in this order.
fn enums() -> impl Iterator<Item = &'static ParamSpec> {
    PARAMS
        .iter()
        .filter(|p| matches!(p.kind, Kind::Choice(_)) && !is_switch(&p.kind))
}

/// The shape of parameter `p`.
fn shape(p: &ParamSpec) -> Shape {
    match p.kind {
        Kind::Number { .. } => Shape::Number,
        Kind::Choice(_) if is_switch(&p.kind) => Shape::Switch,
        Kind::Choice(_) => Shape::Choice {
            enum_index: enums().position(|e| e.name == p.name).unwrap_or(0),
        },
        _ => Shape::Text,
    }
}

/// The verbosity of a parameter: what every user may want to see, what a tuner does,
/// and the launcher's plumbing.
fn verbosity(p: &ParamSpec) -> c_int {
    match p.name {
        "provider" | "domain" | "route" | "bind" | "progress_thread" => USER_BASIC,
        "node_id" | "provider_environment" | "pmi_failure_signal" => TUNER_DETAIL,
        _ => TUNER_BASIC,
    }
}

/// The description of a control variable: the parameter's doc, its environment
/// variable, and whether the job's ranks must agree.
fn description(p: &ParamSpec) -> String {
    let agree = if p.must_agree {
        "; every rank must hold the same value"
    } else {
        ""
    };
    format!(
        "{} (set by {} or steadfast-run; default {:?}{agree})",
        p.doc,
        p.env_var(),
        p.default
    )
}

/// The index of control variable `name`, if any.
pub(crate) fn cvar_index(name: &str) -> Option<usize> {
    let bare = name.strip_prefix(PREFIX)?;
    PARAMS.iter().position(|p| p.name == bare)
}

/// The value of variable `i`, as text (`MPI_T_ERR_NOT_ACCESSIBLE` when the parameters
/// could not be read).
fn text(t: &Tool, i: usize) -> Result<&str, c_int> {
    match &t.values {
        Ok(v) => v.get(i).map(String::as_str).ok_or(MPI_T_ERR_NOT_ACCESSIBLE),
        Err(_) => Err(MPI_T_ERR_NOT_ACCESSIBLE),
    }
}

/// The number of elements of variable `i`.
fn count(t: &Tool, i: usize) -> Result<c_int, c_int> {
    Ok(match shape(&PARAMS[i]) {
        Shape::Text => c_int::try_from(text(t, i)?.len() + 1).map_err(|_| MPI_T_ERR_INVALID)?,
        _ => 1,
    })
}

/// Writes variable `i`'s value into `buf`.
///
/// # Safety
/// `buf` is valid for writes of [`count`] elements of the variable's datatype.
unsafe fn read_into(t: &Tool, i: usize, buf: *mut c_void) -> Result<(), c_int> {
    let p = &PARAMS[i];
    let v = text(t, i)?;
    if buf.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    match (shape(p), p.kind) {
        (Shape::Number, _) => {
            let n: c_ulong = v.parse().map_err(|_| MPI_T_ERR_NOT_ACCESSIBLE)?;
            // SAFETY: `buf` holds one element of this type (the caller's contract).
            unsafe { buf.cast::<c_ulong>().write_unaligned(n) };
        }
        (Shape::Switch, _) => {
            let n: c_int = v.parse().map_err(|_| MPI_T_ERR_NOT_ACCESSIBLE)?;
            // SAFETY: `buf` holds one element of this type (the caller's contract).
            unsafe { buf.cast::<c_int>().write_unaligned(n) };
        }
        (Shape::Choice { .. }, Kind::Choice(words)) => {
            let n = words.iter().position(|w| *w == v).unwrap_or(0);
            let n = c_int::try_from(n).map_err(|_| MPI_T_ERR_INVALID)?;
            // SAFETY: `buf` holds one element of this type (the caller's contract).
            unsafe { buf.cast::<c_int>().write_unaligned(n) };
        }
        // SAFETY: `buf` holds the text's bytes + 1 (its count, the caller's contract).
        _ => unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), buf.cast::<u8>(), v.len());
            *buf.cast::<u8>().add(v.len()) = 0;
        },
    }
    Ok(())
}

/// The enumeration an `MPI_T_enum` names (`MPI_T_ERR_INVALID_HANDLE` if none).
fn enum_arg(e: Handle) -> Result<(&'static ParamSpec, &'static [&'static str]), c_int> {
    let p = e
        .checked_sub(1)
        .and_then(|i| enums().nth(i))
        .ok_or(MPI_T_ERR_INVALID_HANDLE)?;
    match p.kind {
        Kind::Choice(words) => Ok((p, words)),
        _ => Err(MPI_T_ERR_INVALID_HANDLE),
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_get_num`: one control variable per runtime parameter.
    fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num_cvar: *mut c_int) {
        tool_call(|_| {
            let n = c_int::try_from(PARAMS.len()).map_err(|_| MPI_T_ERR_INVALID)?;
            // SAFETY: MPI's contract: a valid output pointer.
            unsafe { put_required(num_cvar, n) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_get_info`.
    fn MPI_T_cvar_get_info / PMPI_T_cvar_get_info(
        cvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity_out: *mut c_int,
        datatype: *mut Handle, enumtype: *mut Handle, desc: *mut c_char, desc_len: *mut c_int,
        bind: *mut c_int, scope: *mut c_int,
    ) {
        tool_call(|_| {
            let p = &PARAMS[index_arg(cvar_index, PARAMS.len())?];
            let (ty, en) = match shape(p) {
                Shape::Number => (MPI_UNSIGNED_LONG, MPI_T_ENUM_NULL),
                Shape::Switch => (MPI_INT, MPI_T_ENUM_NULL),
                Shape::Choice { enum_index } => (MPI_INT, enum_index + 1),
                Shape::Text => (MPI_CHAR, MPI_T_ENUM_NULL),
            };
            // SAFETY: MPI's contract: each pointer is null or valid (strings: for
            // `*len` bytes).
            unsafe {
                put_str(&format!("{PREFIX}{}", p.name), name, name_len);
                put(verbosity_out, verbosity(p));
                put(datatype, ty);
                put(enumtype, en);
                put_str(&description(p), desc, desc_len);
                put(bind, MPI_T_BIND_NO_OBJECT);
                put(scope, MPI_T_SCOPE_CONSTANT);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_get_index`.
    fn MPI_T_cvar_get_index / PMPI_T_cvar_get_index(name: *const c_char, cvar_index_out: *mut c_int) {
        tool_call(|_| {
            // SAFETY: MPI's contract: a C string.
            let name = unsafe { name_arg(name) }?;
            let i = cvar_index(&name).ok_or(MPI_T_ERR_INVALID_NAME)?;
            // SAFETY: MPI's contract: a valid output pointer.
            unsafe { put_required(cvar_index_out, c_int::try_from(i).unwrap_or(0)) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_handle_alloc` (no variable is bound to an object: `obj_handle` is
    /// ignored).
    fn MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc(
        cvar_index: c_int, obj_handle: *mut c_void, handle: *mut Handle, count_out: *mut c_int,
    ) {
        let _ = obj_handle;
        tool_call(|t| {
            let i = index_arg(cvar_index, PARAMS.len())?;
            let n = count(t, i)?;
            if handle.is_null() {
                return Err(MPI_T_ERR_INVALID);
            }
            let h = t.new_handle();
            t.cvar_handles.insert(h, i);
            // SAFETY: MPI's contract: valid output pointers (`handle` checked above).
            unsafe {
                put(handle, h);
                put(count_out, n);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_handle_free`: sets `*handle` to `MPI_T_CVAR_HANDLE_NULL`.
    fn MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free(handle: *mut Handle) {
        tool_call(|t| {
            // SAFETY: MPI's contract: a valid pointer.
            let h = unsafe { handle.as_mut() }.ok_or(MPI_T_ERR_INVALID)?;
            t.cvar_handles.remove(h).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
            *h = 0;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_read`: the value this process's runtime uses.
    fn MPI_T_cvar_read / PMPI_T_cvar_read(handle: Handle, buf: *mut c_void) {
        tool_call(|t| {
            let i = *t.cvar_handles.get(&handle).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
            // SAFETY: MPI's contract: `buf` holds `count` elements of the datatype.
            unsafe { read_into(t, i, buf) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_cvar_write`: every variable is `MPI_T_SCOPE_CONSTANT` (the runtime reads
    /// its parameters once, at start), so `MPI_T_ERR_CVAR_SET_NEVER`.
    fn MPI_T_cvar_write / PMPI_T_cvar_write(handle: Handle, buf: *const c_void) {
        let _ = buf;
        tool_call(|t| {
            t.cvar_handles.get(&handle).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
            Err(MPI_T_ERR_CVAR_SET_NEVER)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_enum_get_info`: the enumeration of a choice parameter, named after it.
    fn MPI_T_enum_get_info / PMPI_T_enum_get_info(
        enumtype: Handle, num: *mut c_int, name: *mut c_char, name_len: *mut c_int,
    ) {
        tool_call(|_| {
            let (p, words) = enum_arg(enumtype)?;
            // SAFETY: MPI's contract: null or valid pointers.
            unsafe {
                put(num, c_int::try_from(words.len()).unwrap_or(0));
                put_str(&format!("{PREFIX}{}", p.name), name, name_len);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_T_enum_get_item`: item `index` is the parameter's word at that position,
    /// with value `index`.
    fn MPI_T_enum_get_item / PMPI_T_enum_get_item(
        enumtype: Handle, index: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int,
    ) {
        tool_call(|_| {
            let (_, words) = enum_arg(enumtype)?;
            // An item past the enumeration's end is an invalid item (MPI 4.1 §15.3.5).
            let i = index_arg(index, words.len()).map_err(|_| MPI_T_ERR_INVALID_ITEM)?;
            // SAFETY: MPI's contract: null or valid pointers.
            unsafe {
                put(value, index);
                put_str(words[i], name, name_len);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::TEST_SERIAL;

    #[test]
    fn names_round_trip_and_shapes_fit() {
        for (i, p) in PARAMS.iter().enumerate() {
            assert_eq!(cvar_index(&format!("steadfast_{}", p.name)), Some(i));
        }
        assert_eq!(cvar_index("shm_eager_max"), None);
        assert_eq!(cvar_index("steadfast_nothing"), None);
        assert_eq!(
            shape(&PARAMS[cvar_index("steadfast_shm_eager_max").unwrap()]),
            Shape::Number
        );
        assert_eq!(
            shape(&PARAMS[cvar_index("steadfast_progress_thread").unwrap()]),
            Shape::Switch
        );
        assert_eq!(
            shape(&PARAMS[cvar_index("steadfast_provider").unwrap()]),
            Shape::Text
        );
        assert!(matches!(
            shape(&PARAMS[cvar_index("steadfast_route").unwrap()]),
            Shape::Choice { .. }
        ));
    }

    #[test]
    fn calls_need_mpi_t_and_read_values() {
        let _s = TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0;
        let mut h: Handle = 0;
        // SAFETY: valid pointers throughout.
        unsafe {
            assert_eq!(PMPI_T_cvar_get_num(&mut n), MPI_T_ERR_NOT_INITIALIZED);
            assert_eq!(crate::tool::PMPI_T_init_thread(0, &mut n), MPI_SUCCESS);
            assert_eq!(PMPI_T_cvar_get_num(&mut n), MPI_SUCCESS);
            assert_eq!(n as usize, PARAMS.len());
            let i = cvar_index("steadfast_heartbeat_ms").unwrap() as c_int;
            assert_eq!(
                PMPI_T_cvar_handle_alloc(i, std::ptr::null_mut(), &mut h, &mut n),
                MPI_SUCCESS
            );
            assert_eq!(n, 1);
            let mut v: c_ulong = 0;
            assert_eq!(
                PMPI_T_cvar_read(h, (&mut v as *mut c_ulong).cast()),
                MPI_SUCCESS
            );
            assert!(v >= 1);
            assert_eq!(
                PMPI_T_cvar_write(h, (&v as *const c_ulong).cast()),
                MPI_T_ERR_CVAR_SET_NEVER
            );
            assert_eq!(PMPI_T_cvar_handle_free(&mut h), MPI_SUCCESS);
            assert_eq!(h, 0);
            assert_eq!(
                PMPI_T_cvar_read(h, (&mut v as *mut c_ulong).cast()),
                MPI_T_ERR_INVALID_HANDLE
            );
            assert_eq!(
                PMPI_T_enum_get_info(0, &mut n, std::ptr::null_mut(), std::ptr::null_mut()),
                MPI_T_ERR_INVALID_HANDLE
            );
            assert_eq!(
                PMPI_T_enum_get_info(1, &mut n, std::ptr::null_mut(), std::ptr::null_mut()),
                MPI_SUCCESS
            );
            assert_eq!(n as usize, sf::params::RouteMode::WORDS.len());
            assert_eq!(crate::tool::PMPI_T_finalize(), MPI_SUCCESS);
        }
    }
}
