//! Reduction operations: the predefined ones (`datatype::reduce`) and the program's
//! (`MPI_Op_create`, `MPI_Op_free`, `MPI_Op_commutative`), behind one [`Reduction`]
//! that every reducing collective resolves once at its start.
//!
//! # Order
//! MPI 4.1 §6.9.5 lets a non-commutative operation be applied in any bracketing but
//! only in rank order: `x0 op x1 op ... op x(n-1)`. The collectives therefore combine
//! two partial results only through [`Reduction::reduce_into_lower`] and
//! [`Reduction::reduce_into_higher`], which name the operand that covers the lower
//! ranks; the user function is always called as `f(invec = lower, inoutvec =
//! higher)`, whether the operation commutes or not, so the two partners of an
//! allreduce evaluate the same expression. A predefined operation is evaluated exactly
//! as before (all commute).
//!
//! # A user function that calls MPI
//! The function runs inside the collective, with the call's access to the library's
//! state given up ([`Guard::unlocked`]): under `MPI_THREAD_SERIALIZED` and
//! `MPI_THREAD_MULTIPLE` the mutex is released, so an MPI call made by the function
//! takes it as another thread's would (no self-deadlock); below that the main thread
//! owns the state and the call goes straight in. Nothing of the state is borrowed by
//! the collective meanwhile (the borrow checker sees to it: [`Guard::unlocked`] takes
//! the guard that every borrow of the state comes from; the collective's buffers are
//! the program's or its own scratch, its runtime communicators its own references or
//! looked up again at each round), so such a call cannot invalidate anything the
//! collective holds: a communicator freed meanwhile makes the rest of the collective
//! fail (`MPI_ERR_COMM`, or the runtime's error), an operation freed meanwhile is still
//! the copied function pointer. `MPI_Finalize` from inside a user function is refused
//! (`MPI_ERR_OTHER`), since it would end the state under the collective. MPI makes
//! such calls erroneous but for `MPI_Abort`, which works here; a collective called
//! from inside one takes tags out of the other ranks' sequence, so the program hangs
//! or mismatches as it would by calling collectives in different orders (a hang of
//! the program's making, not a deadlock on the library's lock). The non-blocking
//! reductions, which advance inside completion calls holding the state, queue the call
//! and run it where the thread holds nothing of the state (`op_deferred`).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::consts::*;
use crate::datatype::{reduce, Elem, TypeEntry};
use crate::error::{Fail, R};
use crate::op_c::UserFunction;
use crate::state::NO_OBJECT;
use crate::state::{call, Guard, Lib};
use crate::typemap::Layout;
use crate::util::{bytes, bytes_mut};
use crate::util::{out, read_handle};

/// `MPI_User_function`: `inoutvec[i] = invec[i] op inoutvec[i]` for `*len` items of
/// `*datatype`.
pub(crate) type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);

/// An operation made by `MPI_Op_create` or `MPI_Op_create_c`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserOp {
    /// The program's function, of either kind.
    pub f: UserFunction,
    /// Whether the program said it commutes.
    pub commute: bool,
}

/// `MPI_OP_NULL`.
pub(crate) const MPI_OP_NULL: Handle = 0x20;

/// The predefined operations of `mpi.h`, `MPI_REPLACE` and `MPI_NO_OP` (one-sided
/// communication's) among them: all commute.
const PREDEFINED: [Handle; 14] = [
    0x21, 0x22, 0x23, 0x24, 0x28, 0x29, 0x2a, 0x30, 0x31, 0x32, 0x38, 0x39, 0x3c, 0x3d,
];

fn is_predefined(op: Handle) -> bool {
    PREDEFINED.contains(&op)
}

thread_local! {
    /// How many user functions this thread is inside (`MPI_Finalize` is refused then).
    static IN_USER_FN: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is running a user reduction function (see the module doc).
pub(crate) fn in_user_function() -> bool {
    IN_USER_FN.with(|d| d.get() > 0)
}

/// Counts this thread into a user function for its life.
struct InUserFn;

impl InUserFn {
    fn enter() -> InUserFn {
        IN_USER_FN.with(|d| d.set(d.get() + 1));
        InUserFn
    }
}

impl Drop for InUserFn {
    fn drop(&mut self) {
        IN_USER_FN.with(|d| d.set(d.get() - 1));
    }
}

/// What a reduction applies.
#[derive(Clone, Debug)]
enum Kind {
    /// A predefined operation on elements of this kind.
    Predefined(Handle, Elem),
    /// The program's function, on items of the program's datatype.
    User {
        op: UserOp,
        datatype: Handle,
        /// The datatype's size in bytes (never 0 when a buffer is not empty).
        item: usize,
        /// The program's type has gaps: the collective reduces packed items, which
        /// the function gets laid out as the type describes (`reduce_packed`).
        layout: Option<Arc<Layout>>,
    },
}

/// One collective call's operation on its datatype, checked at the call's start.
#[derive(Clone, Debug)]
pub(crate) struct Reduction {
    kind: Kind,
}

impl Reduction {
    /// `op` on items of `datatype` (whose entry is `t`): a user operation applies to
    /// every type; a predefined one must be defined on the type's elements.
    ///
    /// A packed twin of a type with gaps (`reduce_packed`) reduces as its packed
    /// elements by a predefined operation; a user function gets the program's type.
    ///
    /// # Errors
    /// `MPI_ERR_OP` for a handle that is neither a live user operation nor a predefined
    /// operation defined on the type (a freed operation, `MPI_OP_NULL`...).
    pub fn new(lib: &Lib, op: Handle, datatype: Handle, t: &TypeEntry) -> R<Reduction> {
        if let Some(&u) = lib.ops.get(&op) {
            let (datatype, layout) = match lib.twins.origin(datatype) {
                Some(tw) => (tw.program, Some(Arc::clone(&tw.layout))),
                None => (datatype, None),
            };
            return Ok(Reduction {
                kind: Kind::User {
                    op: u,
                    datatype,
                    item: t.size,
                    layout,
                },
            });
        }
        reduce(op, t.elem, &mut [], &[])?;
        Ok(Reduction {
            kind: Kind::Predefined(op, t.elem),
        })
    }

    /// Whether the operation commutes (then any order of the operands will do).
    pub fn commutes(&self) -> bool {
        match self.kind {
            Kind::Predefined(..) => true,
            Kind::User { op, .. } => op.commute,
        }
    }

    /// `lower = lower op higher`, `lower` holding the reduction of lower ranks than
    /// `higher`'s. A user operation leaves the result in `higher` too.
    pub fn reduce_into_lower(&self, g: &mut Guard, lower: &mut [u8], higher: &mut [u8]) -> R<()> {
        match self.kind {
            Kind::Predefined(op, elem) => reduce(op, elem, lower, higher),
            Kind::User { .. } => {
                self.reduce_into_higher(g, lower, higher)?;
                lower.copy_from_slice(higher);
                Ok(())
            }
        }
    }

    /// `higher = lower op higher`, `lower` holding the reduction of lower ranks than
    /// `higher`'s. `lower` is left as it is (but by a user function that writes its
    /// `invec`, which C's signature allows it to).
    pub fn reduce_into_higher(&self, g: &mut Guard, lower: &mut [u8], higher: &mut [u8]) -> R<()> {
        if lower.len() != higher.len() {
            return Err(Fail::new(MPI_ERR_INTERN, "operands of different lengths"));
        }
        match self.kind {
            Kind::Predefined(op, elem) => reduce(op, elem, higher, lower),
            Kind::User { .. } => match self.user_call() {
                Some(user) => call_user(g, user, lower, higher),
                None => Err(Fail::new(
                    MPI_ERR_INTERN,
                    "a user operation without its call",
                )),
            },
        }
    }

    /// The program's function and its arguments, or `None` for a predefined operation.
    pub fn user_call(&self) -> Option<UserCall> {
        match &self.kind {
            Kind::Predefined(..) => None,
            Kind::User {
                op,
                datatype,
                item,
                layout,
            } => Some(UserCall {
                f: op.f,
                datatype: *datatype,
                item: *item,
                layout: layout.clone(),
            }),
        }
    }

    /// `acc = acc op other` for a predefined operation (all commute, so either operand
    /// may hold the lower ranks); `MPI_ERR_INTERN` for a user operation, which runs
    /// through [`apply_user`] instead.
    pub fn reduce_predefined(&self, acc: &mut [u8], other: &[u8]) -> R<()> {
        match self.kind {
            Kind::Predefined(op, elem) => reduce(op, elem, acc, other),
            Kind::User { .. } => Err(Fail::new(
                MPI_ERR_INTERN,
                "a user operation where a predefined one was expected",
            )),
        }
    }
}

/// A user operation's call: the program's function, its datatype handle and the size
/// of one (packed) item, and the type's layout when it has gaps.
#[derive(Clone, Debug)]
pub(crate) struct UserCall {
    pub f: UserFunction,
    pub datatype: Handle,
    pub item: usize,
    pub layout: Option<Arc<Layout>>,
}

/// Calls `f(invec, inoutvec, &len, &datatype)` over the two buffers with the call's
/// access to the state given up (see the module doc).
fn call_user(g: &mut Guard, user: UserCall, invec: &mut [u8], inoutvec: &mut [u8]) -> R<()> {
    g.unlocked(|| apply_user(user, invec, inoutvec))
}

/// Calls `f(invec, inoutvec, &len, &datatype)` over the two buffers (of equal length),
/// in pieces of at most as many items as `f`'s length type holds (`c_int::MAX` for an
/// `MPI_User_function`), counted as inside a user function. The caller holds nothing
/// of the library's state (the function may call MPI).
pub(crate) fn apply_user(user: UserCall, invec: &mut [u8], inoutvec: &mut [u8]) -> R<()> {
    if inoutvec.is_empty() {
        return Ok(());
    }
    let UserCall {
        f,
        datatype,
        item,
        layout,
    } = user;
    if item == 0 || inoutvec.len() % item != 0 || invec.len() != inoutvec.len() {
        return Err(Fail::new(MPI_ERR_INTERN, "a buffer of partial items"));
    }
    let piece = item.saturating_mul(f.max_items());
    let _inside = InUserFn::enter();
    for (a, b) in invec.chunks_mut(piece).zip(inoutvec.chunks_mut(piece)) {
        let len = b.len() / item;
        if let Some(l) = &layout {
            crate::reduce_packed::call_laid_out(f, l, len, datatype, a, b)?;
            continue;
        }
        // SAFETY: both buffers hold `len` (at most `f.max_items()`) items of
        // `datatype` and are exclusively borrowed for the call.
        unsafe {
            f.call(
                a.as_mut_ptr().cast::<c_void>(),
                b.as_mut_ptr().cast::<c_void>(),
                len,
                datatype,
            )
        };
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Op_create`: an operation applying `user_fn` (`commute`: whether it
    /// commutes; it must be associative either way).
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<UserFn>, commute: c_int, op: *mut Handle) {
        call(NO_OBJECT, |g| {
            let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
            // SAFETY: MPI's contract: `op` is valid for a write.
            unsafe { register(g.lib()?, UserFunction::Int(f), commute, op) }
        })
    }
}

/// Makes an operation of `f` (`commute`: whether the program says it commutes) and
/// writes its handle to `*op` (`MPI_Op_create` and `MPI_Op_create_c`).
///
/// # Safety
/// `op` is null or valid for a write.
///
/// # Errors
/// `MPI_ERR_ARG` when `op` is null.
pub(crate) unsafe fn register(
    lib: &mut Lib,
    f: UserFunction,
    commute: c_int,
    op: *mut Handle,
) -> R<()> {
    // SAFETY: the caller's contract.
    let slot = unsafe { out(op) }?;
    let h = lib.new_handle();
    lib.ops.insert(
        h,
        UserOp {
            f,
            commute: commute != 0,
        },
    );
    *slot = h;
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Op_free` (`*op` becomes `MPI_OP_NULL`; a collective already running with it
    /// finishes with it).
    fn MPI_Op_free / PMPI_Op_free(op: *mut Handle) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            // SAFETY: MPI's contract: `op` is valid for reads and writes.
            let h = unsafe { read_handle(op) }?;
            if is_predefined(h) {
                return Err(Fail::new(MPI_ERR_OP, format!("{h:#x} is a predefined operation")));
            }
            if lib.ops.remove(&h).is_none() {
                return Err(bad_op(h));
            }
            // SAFETY: as above.
            *unsafe { out(op) }? = MPI_OP_NULL;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Op_commutative`: 1 for the predefined operations, else what
    /// `MPI_Op_create` was told.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: Handle, commute: *mut c_int) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let c = if is_predefined(op) {
                true
            } else {
                lib.ops.get(&op).ok_or_else(|| bad_op(op))?.commute
            };
            // SAFETY: MPI's contract: `commute` is valid for a write.
            *unsafe { out(commute) }? = c_int::from(c);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Reduce_local`: `inoutbuf = inbuf op inoutbuf`, element by element, on
    /// this process only (MPI 4.1 §6.9.7); `inbuf` is the left operand, as a lower
    /// rank's value in a reduction, and is left unchanged (a user function gets a
    /// copy of it as `invec`).
    fn MPI_Reduce_local / PMPI_Reduce_local(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduce_local(inbuf, inoutbuf, count, datatype, op) {
            return rc;
        }
        call(MPI_COMM_SELF, |g| {
            if inbuf as usize == IN_PLACE || inoutbuf as usize == IN_PLACE {
                return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE in MPI_Reduce_local"));
            }
            let lib = g.lib()?;
            let (len, t) = lib.byte_len(count, datatype)?;
            let op = Reduction::new(lib, op, datatype, &t)?;
            // SAFETY: MPI's contract: both buffers hold `count` items of `datatype`,
            // `inoutbuf` is the program's alone during the call.
            let (input, acc) = unsafe { (bytes(inbuf, len)?, bytes_mut(inoutbuf, len)?) };
            let mut lower = input.to_vec();
            op.reduce_into_higher(g, &mut lower, acc)
        })
    }
}

#[cold]
fn bad_op(h: Handle) -> Fail {
    if h == MPI_OP_NULL {
        Fail::new(MPI_ERR_OP, "MPI_OP_NULL")
    } else {
        Fail::new(MPI_ERR_OP, format!("{h:#x} is not an operation (freed?)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_predefined_set_is_the_headers() {
        let header = include_str!("../include/mpi.h");
        let lines: Vec<&str> = header
            .lines()
            .filter(|l| l.contains("((MPI_Op)0x"))
            .collect();
        assert_eq!(lines.len(), PREDEFINED.len() + 1, "and MPI_OP_NULL");
        for line in lines {
            let hex = line.split("0x").nth(1).unwrap().trim_end_matches(')');
            let v = Handle::from_str_radix(hex, 16).unwrap();
            assert_eq!(is_predefined(v), v != MPI_OP_NULL, "{line}");
        }
    }

    thread_local! {
        /// What `place` saw: the datatype handle, and whether it ran inside.
        static SEEN: Cell<(Handle, bool)> = const { Cell::new((0, false)) };
    }

    /// `inoutvec = invec * 1000 + inoutvec` on `u32`s (no assert: a panic cannot
    /// leave an `extern "C"` function).
    unsafe extern "C" fn place(a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut Handle) {
        // SAFETY: called by `call_user` with `len` items of 4 bytes in both, and `dt`.
        let (a, b, n, dt) = unsafe { (a.cast::<u32>(), b.cast::<u32>(), *len as usize, *dt) };
        SEEN.with(|s| s.set((dt, in_user_function())));
        for i in 0..n {
            // SAFETY: as above.
            unsafe { *b.add(i) = *a.add(i) * 1000 + *b.add(i) };
        }
    }

    fn words(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn the_user_function_gets_the_lower_ranks_value_as_invec() {
        let r = Reduction {
            kind: Kind::User {
                op: UserOp {
                    f: UserFunction::Int(place),
                    commute: false,
                },
                datatype: 0x20d,
                item: 4,
                layout: None,
            },
        };
        let mut g = Guard::lock().expect("no owner before MPI_Init");
        let (mut lo, mut hi) = (words(&[1, 2]), words(&[3, 4]));
        r.reduce_into_higher(&mut g, &mut lo, &mut hi).unwrap();
        assert_eq!((lo.clone(), hi), (words(&[1, 2]), words(&[1003, 2004])));
        let mut hi = words(&[5, 6]);
        r.reduce_into_lower(&mut g, &mut lo, &mut hi).unwrap();
        assert_eq!(lo, words(&[1005, 2006]));
        assert!(!in_user_function());
        assert_eq!(SEEN.with(Cell::get), (0x20d, true));
        assert!(!r.commutes());
    }

    #[test]
    fn the_user_function_depth_counts_nested_entries() {
        assert!(!in_user_function());
        {
            let _a = InUserFn::enter();
            let _b = InUserFn::enter();
            assert!(in_user_function());
        }
        assert!(!in_user_function());
    }
}
