//! Attributes with the program's own keys on communicators (MPI 4.1, 7.7):
//! `MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`, `MPI_Comm_set_attr`,
//! `MPI_Comm_delete_attr`, and `MPI_Comm_get_attr` for those keys (the predefined keys
//! are `comm.rs`'s). `MPI_Comm_dup` copies each attribute through its key's copy
//! callback (`MPI_COMM_DUP_FN` copies the value, `MPI_COMM_NULL_COPY_FN` nothing);
//! `MPI_Comm_free`, `MPI_Comm_delete_attr` and a replacing `MPI_Comm_set_attr` call the
//! delete callback; `MPI_Finalize` deletes `MPI_COMM_SELF`'s attributes first, in the
//! reverse order of their setting (the idiom libraries use to run their clean-up).
//!
//! The callbacks are the program's C functions and may call MPI themselves (a library's
//! clean-up frees its communicators): they run with no borrow of the library's state
//! and without its lock ([`Guard::unlocked`]).

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Guard, Lib};
use crate::util::out;

/// `MPI_Comm_copy_attr_function`.
pub(crate) type CopyFn = unsafe extern "C" fn(
    oldcomm: Handle,
    keyval: c_int,
    extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int;

/// `MPI_Comm_delete_attr_function`.
pub(crate) type DeleteFn = unsafe extern "C" fn(
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    extra_state: *mut c_void,
) -> c_int;

/// `MPI_COMM_DUP_FN` in `mpi.h`: a copy callback that copies the value.
const DUP_FN: usize = 1;

/// `MPI_KEYVAL_INVALID` in `mpi.h`.
const KEYVAL_INVALID: c_int = -127;

/// The first key the program's keys get (clear of the predefined ones: the
/// communicators' from 10001, the windows' from 20001).
pub(crate) const FIRST_KEY: c_int = 100_000;

/// A key: its callbacks (`None`: the null ones) and extra state.
#[derive(Clone, Copy)]
pub(crate) struct Keyval {
    /// `None`: `MPI_COMM_NULL_COPY_FN`; `copy_dup`: `MPI_COMM_DUP_FN`.
    copy: Option<CopyFn>,
    copy_dup: bool,
    delete: Option<DeleteFn>,
    extra: *mut c_void,
    /// Freed by `MPI_Comm_free_keyval` while values still use it: it takes no new one.
    freed: bool,
}

/// The keys and the program's attributes on each communicator.
#[derive(Default)]
pub(crate) struct Attrs {
    keys: Vec<(c_int, Keyval)>,
    next: c_int,
    /// `(communicator, key, value)` in the order they were set.
    values: Vec<(Handle, c_int, usize)>,
}

impl Attrs {
    fn key(&self, k: c_int) -> R<Keyval> {
        self.keys
            .iter()
            .find(|(id, _)| *id == k)
            .map(|(_, kv)| *kv)
            .ok_or_else(|| Fail::new(MPI_ERR_KEYVAL, format!("{k} is not an attribute key")))
    }

    /// The value of key `k` on `comm`, if set.
    pub fn get(&self, comm: Handle, k: c_int) -> Option<usize> {
        self.values
            .iter()
            .find(|&&(c, key, _)| c == comm && key == k)
            .map(|&(_, _, v)| v)
    }

    /// Forgets every value on `comm` without running a callback (a communicator that
    /// was never made: a failed `MPI_Comm_idup`).
    pub fn forget(&mut self, comm: Handle) {
        self.values.retain(|&(c, _, _)| c != comm);
    }

    /// Removes the value of `k` on `comm`; it, with its delete callback, if set.
    fn take(&mut self, comm: Handle, k: c_int) -> Option<(usize, Keyval)> {
        let i = self
            .values
            .iter()
            .position(|&(c, key, _)| c == comm && key == k)?;
        let (_, _, v) = self.values.remove(i);
        Some((v, self.key(k).ok()?))
    }
}

/// Calls `kv`'s delete callback for value `v` of key `k` on `comm`, without the lock.
fn run_delete(g: &mut Guard, comm: Handle, k: c_int, v: usize, kv: Keyval) -> R<()> {
    let Some(f) = kv.delete else {
        return Ok(());
    };
    // SAFETY: the program's delete callback, with the arguments MPI gives it; no
    // borrow of the library's state is held across it.
    let rc = g.unlocked(|| unsafe { f(comm, k, v as *mut c_void, kv.extra) });
    if rc != MPI_SUCCESS {
        return Err(Fail::new(
            rc,
            format!("the delete callback of attribute key {k} failed"),
        ));
    }
    Ok(())
}

/// Deletes every attribute of `comm` (its free), the last set first.
pub(crate) fn delete_all(g: &mut Guard, comm: Handle) -> R<()> {
    loop {
        let lib = g.lib()?;
        let Some(&(_, k, _)) = lib.attrs.values.iter().rev().find(|&&(c, _, _)| c == comm) else {
            return Ok(());
        };
        let Some((v, kv)) = lib.attrs.take(comm, k) else {
            return Ok(());
        };
        run_delete(g, comm, k, v, kv)?;
    }
}

/// Copies `old`'s attributes to its dup `new` through their copy callbacks.
pub(crate) fn copy_all(g: &mut Guard, old: Handle, new: Handle) -> R<()> {
    let set: Vec<(c_int, usize)> = g
        .lib()?
        .attrs
        .values
        .iter()
        .filter(|&&(c, _, _)| c == old)
        .map(|&(_, k, v)| (k, v))
        .collect();
    for (k, v) in set {
        let kv = g.lib()?.attrs.key(k)?;
        let copied = if kv.copy_dup {
            Some(v)
        } else if let Some(f) = kv.copy {
            let mut out_val: *mut c_void = std::ptr::null_mut();
            let mut flag: c_int = 0;
            let (out_p, flag_p) = (&raw mut out_val, &raw mut flag);
            // SAFETY: the program's copy callback, with the arguments MPI gives it and
            // outputs that live across the call; no borrow of the state is held.
            let rc = g.unlocked(|| unsafe {
                f(old, k, kv.extra, v as *mut c_void, out_p.cast(), flag_p)
            });
            if rc != MPI_SUCCESS {
                return Err(Fail::new(
                    rc,
                    format!("the copy callback of attribute key {k} failed"),
                ));
            }
            (flag != 0).then_some(out_val as usize)
        } else {
            None
        };
        if let Some(v) = copied {
            g.lib()?.attrs.values.push((new, k, v));
        }
    }
    Ok(())
}

/// Sets attribute `keyval` of object `obj` (a communicator or a datatype, whose handles
/// never meet) to `value`; a value already set is deleted first (its callback runs).
pub(crate) fn set(g: &mut Guard, obj: Handle, keyval: c_int, value: *mut c_void) -> R<()> {
    let lib = g.lib()?;
    if lib.attrs.key(keyval)?.freed {
        return Err(Fail::new(
            MPI_ERR_KEYVAL,
            format!("attribute key {keyval} was freed"),
        ));
    }
    if let Some((v, kv)) = lib.attrs.take(obj, keyval) {
        run_delete(g, obj, keyval, v, kv)?;
    }
    g.lib()?.attrs.values.push((obj, keyval, value as usize));
    Ok(())
}

/// Deletes attribute `keyval` of object `obj` (its callback runs).
pub(crate) fn delete(g: &mut Guard, obj: Handle, keyval: c_int) -> R<()> {
    let lib = g.lib()?;
    lib.attrs.key(keyval)?;
    let (v, kv) = lib.attrs.take(obj, keyval).ok_or_else(|| {
        Fail::new(
            MPI_ERR_KEYVAL,
            format!("no attribute of key {keyval} is set"),
        )
    })?;
    run_delete(g, obj, keyval, v, kv)
}

/// Deletes `MPI_COMM_SELF`'s attributes, last set first (the start of `MPI_Finalize`).
pub(crate) fn finalize_self(g: &mut Guard) -> R<()> {
    delete_all(g, MPI_COMM_SELF)
}

crate::mpi_fn! {
    /// `MPI_Comm_create_keyval`.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        copy_fn: usize,
        delete_fn: Option<DeleteFn>,
        keyval: *mut c_int,
        extra_state: *mut c_void
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `keyval` is valid for a write.
            let slot = unsafe { out(keyval) }?;
            let copy = match copy_fn {
                0 | DUP_FN => None,
                // SAFETY: any other value is the program's copy callback (MPI's
                // contract), a function of that type.
                p => Some(unsafe { std::mem::transmute::<usize, CopyFn>(p) }),
            };
            let attrs = &mut g.lib()?.attrs;
            let k = FIRST_KEY + attrs.next;
            attrs.next += 1;
            attrs.keys.push((
                k,
                Keyval {
                    copy,
                    copy_dup: copy_fn == DUP_FN,
                    delete: delete_fn,
                    extra: extra_state,
                    freed: false,
                },
            ));
            *slot = k;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_free_keyval`: the key goes (attributes set with it stay until deleted,
    /// as MPI says); `*keyval` becomes `MPI_KEYVAL_INVALID`.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(keyval: *mut c_int) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `keyval` is valid for reads and writes.
            let slot = unsafe { out(keyval) }?;
            let attrs = &mut g.lib()?.attrs;
            attrs.key(*slot)?;
            // Kept while values use it (their delete callback still runs); a freed
            // key takes no new value.
            if attrs.values.iter().any(|&(_, k, _)| k == *slot) {
                for (id, kv) in attrs.keys.iter_mut() {
                    if id == slot {
                        kv.freed = true;
                    }
                }
            } else {
                attrs.keys.retain(|(id, _)| id != slot);
            }
            *slot = KEYVAL_INVALID;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_set_attr`: a value already set is deleted first (its callback runs).
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: Handle, keyval: c_int, attribute_val: *mut c_void) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            set(g, comm, keyval, attribute_val)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_delete_attr`.
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: Handle, keyval: c_int) {
        call(comm, |g| {
            g.lib()?.comm(comm)?;
            delete(g, comm, keyval)
        })
    }
}

// The MPI-1 names, deprecated since MPI-2.0 but still in MPI 4.1 (§20.1) and in
// many programs: the same calls as the `MPI_Comm_*` ones (MPI_Copy_function and
// MPI_Delete_function have the C signatures of the new callback types).

crate::mpi_fn! {
    /// `MPI_Keyval_create` (deprecated): `MPI_Comm_create_keyval`.
    fn MPI_Keyval_create / PMPI_Keyval_create(
        copy_fn: usize,
        delete_fn: Option<DeleteFn>,
        keyval: *mut c_int,
        extra_state: *mut c_void
    ) {
        // SAFETY: the same contract as this function's.
        unsafe { PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state) }
    }
}

crate::mpi_fn! {
    /// `MPI_Keyval_free` (deprecated): `MPI_Comm_free_keyval`.
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) {
        // SAFETY: the same contract as this function's.
        unsafe { PMPI_Comm_free_keyval(keyval) }
    }
}

crate::mpi_fn! {
    /// `MPI_Attr_put` (deprecated): `MPI_Comm_set_attr`.
    fn MPI_Attr_put / PMPI_Attr_put(comm: Handle, keyval: c_int, attribute_val: *mut c_void) {
        // SAFETY: the same contract as this function's.
        unsafe { PMPI_Comm_set_attr(comm, keyval, attribute_val) }
    }
}

crate::mpi_fn! {
    /// `MPI_Attr_get` (deprecated): `MPI_Comm_get_attr`.
    fn MPI_Attr_get / PMPI_Attr_get(
        comm: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int
    ) {
        // SAFETY: the same contract as this function's.
        unsafe { crate::comm::PMPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
    }
}

crate::mpi_fn! {
    /// `MPI_Attr_delete` (deprecated): `MPI_Comm_delete_attr`.
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: Handle, keyval: c_int) {
        // SAFETY: the same contract as this function's.
        unsafe { PMPI_Comm_delete_attr(comm, keyval) }
    }
}

/// `MPI_Comm_get_attr` for a key of the program's: `*attribute_val` becomes the value
/// set and `*flag` 1, or `*flag` 0.
///
/// # Safety
/// MPI's contract: `attribute_val` points to a `void *`, `flag` to an int.
pub(crate) unsafe fn get(
    lib: &Lib,
    comm: Handle,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> R<()> {
    lib.attrs.key(keyval)?;
    let v = lib.attrs.get(comm, keyval);
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(v) = v {
            *out(attribute_val.cast::<*mut c_void>())? = v as *mut c_void;
        }
        *out(flag)? = c_int::from(v.is_some());
    }
    Ok(())
}
