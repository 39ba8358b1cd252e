//! `MPI_Op_create_c` (MPI 4.1 §6.9.5): a user operation whose function takes its
//! length as an `MPI_Count` (`MPI_User_function_c`), and [`UserFunction`], which holds
//! either kind of function for the operation table and calls it with the length its
//! kind takes. Every reduction calls user functions through it (`op::apply_user`,
//! `reduce_packed::call_laid_out`, the deferred calls of `op_deferred`), so an
//! operation made here works wherever one made by `MPI_Op_create` does.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::MpiCount;
use crate::error::Fail;
use crate::op::{register, UserFn};
use crate::state::{call, NO_OBJECT};

/// `MPI_User_function_c`: `inoutvec[i] = invec[i] op inoutvec[i]` for `*len` items of
/// `*datatype`, the length an `MPI_Count`.
pub(crate) type UserFnC =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MpiCount, *mut Handle);

/// The program's function of a user operation, as it was given.
#[derive(Clone, Copy, Debug)]
pub(crate) enum UserFunction {
    /// From `MPI_Op_create`: the length is an `int`.
    Int(UserFn),
    /// From `MPI_Op_create_c`: the length is an `MPI_Count`.
    Large(UserFnC),
}

impl UserFunction {
    /// The most items one call can be given (its length type's maximum).
    pub(crate) fn max_items(self) -> usize {
        match self {
            UserFunction::Int(_) => c_int::MAX as usize,
            UserFunction::Large(_) => MpiCount::MAX as usize,
        }
    }

    /// Calls the function on `len` items (at most [`Self::max_items`]) of `datatype`:
    /// `inoutvec = invec op inoutvec`, with the length and the handle in locals.
    ///
    /// # Safety
    /// `invec` and `inoutvec` hold `len` items of `datatype` laid out as it describes,
    /// exclusively the function's for the call.
    pub(crate) unsafe fn call(
        self,
        invec: *mut c_void,
        inoutvec: *mut c_void,
        len: usize,
        datatype: Handle,
    ) {
        let mut dt = datatype;
        match self {
            UserFunction::Int(f) => {
                let mut n = c_int::try_from(len).unwrap_or(c_int::MAX);
                // SAFETY: `f` is the program's `MPI_User_function` (MPI_Op_create's
                // contract); the caller's contract for the buffers; `n` and `dt` are
                // locals; the function, C code, cannot unwind into Rust.
                unsafe { f(invec, inoutvec, &mut n, &mut dt) }
            }
            UserFunction::Large(f) => {
                let mut n = MpiCount::try_from(len).unwrap_or(MpiCount::MAX);
                // SAFETY: as above, `f` being the program's `MPI_User_function_c`
                // (MPI_Op_create_c's contract).
                unsafe { f(invec, inoutvec, &mut n, &mut dt) }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Op_create_c`: an operation applying `user_fn`, an `MPI_User_function_c`
    /// (`commute`: whether it commutes; it must be associative either way).
    fn MPI_Op_create_c / PMPI_Op_create_c(user_fn: Option<UserFnC>, commute: c_int, op: *mut Handle) {
        call(NO_OBJECT, |g| {
            let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
            // SAFETY: MPI's contract: `op` is valid for a write.
            unsafe { register(g.lib()?, UserFunction::Large(f), commute, op) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{apply_user, UserCall};
    use std::cell::Cell;

    thread_local! {
        /// The lengths `add` was given.
        static LENS: Cell<MpiCount> = const { Cell::new(0) };
    }

    /// `inoutvec += invec` on bytes; records the length.
    unsafe extern "C" fn add(a: *mut c_void, b: *mut c_void, len: *mut MpiCount, _: *mut Handle) {
        // SAFETY: called by `apply_user` with `len` one-byte items in both.
        let (a, b, n) = unsafe { (a.cast::<u8>(), b.cast::<u8>(), *len) };
        LENS.with(|l| l.set(l.get() + n));
        for i in 0..n as usize {
            // SAFETY: as above.
            unsafe { *b.add(i) = (*b.add(i)).wrapping_add(*a.add(i)) };
        }
    }

    #[test]
    fn a_large_count_function_gets_its_length_as_an_mpi_count() {
        let user = UserCall {
            f: UserFunction::Large(add),
            datatype: 0x201,
            item: 1,
            layout: None,
        };
        let (mut a, mut b) = ([1u8, 2, 3, 4], [10u8, 20, 30, 40]);
        apply_user(user, &mut a, &mut b).unwrap();
        assert_eq!(b, [11, 22, 33, 44]);
        assert_eq!(LENS.with(Cell::get), 4, "four one-byte items");
        assert_eq!(UserFunction::Large(add).max_items(), i64::MAX as usize);
    }
}
