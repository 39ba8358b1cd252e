//! The user operations of the non-blocking reductions, run where this thread holds
//! nothing of the library's state.
//!
//! A non-blocking reduction (`nbc`) advances inside the completion calls (`MPI_Test`,
//! `MPI_Wait`... and the progress of requests freed while active), which hold the
//! library's state borrowed down to the request. The program's function may call MPI
//! (erroneous in MPI but for `MPI_Abort`; see `op`'s module doc for why that must
//! neither deadlock on the lock nor alias the state), so it cannot run there. The
//! schedule queues the call on this thread instead ([`defer`]) and waits on the
//! returned [`Pending`]; this thread runs its queue ([`run_queued`]) at the next point
//! where it holds nothing of the state: between two attempts of a wait
//! (`Guard::relax`, the owner's fast wait) and at the end of every entry point that
//! can advance a request (`state::run`, the owner's fast test). So a request whose
//! reduction reached a user function completes at the next test or wait, as one with
//! a predefined operation does.
//!
//! Other program callbacks that a completion call reaches while it holds the state
//! (a generalized request's `free_fn`, run when the request goes: `greq.rs`) are queued
//! the same way ([`defer_call`]).
//!
//! The memory a queued call reads and writes stays valid until it has run: it is the
//! schedule's scratch, which a schedule dropped with its call still queued leaks
//! rather than frees (`Nbc`'s `Drop`), or the program's buffer of a request that has
//! not completed (MPI's contract: the program leaves it alone until then).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::op::{apply_user, UserCall};

/// A queued user function call: `inout = invec op inout` over `len` bytes, then
/// `inout` copied to `copy_to` (when not null).
struct Job {
    user: UserCall,
    invec: *mut u8,
    inout: *mut u8,
    len: usize,
    copy_to: *mut u8,
    done: Arc<AtomicBool>,
}

thread_local! {
    /// This thread's queued calls.
    static QUEUE: RefCell<Vec<Job>> = const { RefCell::new(Vec::new()) };
    /// This thread's queued callbacks ([`defer_call`]).
    static CALLS: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
    /// Whether `QUEUE` may hold a call (the entry points' one cheap check).
    static QUEUED: Cell<bool> = const { Cell::new(false) };
}

/// A queued call, as the schedule that queued it waits on it.
pub(crate) struct Pending {
    done: Arc<AtomicBool>,
}

impl Pending {
    /// Whether the call has run (its writes are then visible to this thread).
    pub(crate) fn is_done(&self) -> bool {
        // ORDERING: Acquire; pairs with the Release store in `run_queued` after the
        // function's writes, which the schedule reads next (another thread may test a
        // request freed while active).
        self.done.load(Ordering::Acquire)
    }
}

/// The two operands of a deferred reduction and where its result goes.
pub(crate) struct Operands {
    /// The left operand (the lower ranks' value).
    pub invec: *mut u8,
    /// The right operand (the higher ranks' value), overwritten with the result.
    pub inout: *mut u8,
    /// Where the result is copied afterwards (null: nowhere).
    pub copy_to: *mut u8,
    /// The length of each, in bytes.
    pub len: usize,
}

/// Queues `inout = invec op inout` (then the copy) on this thread.
///
/// # Safety
/// `invec`, `inout` and `copy_to` (unless null) are valid for reads and writes of
/// `len` bytes until the call has run (see the module doc), and not otherwise
/// accessed until [`Pending::is_done`] says so; `invec` and `inout` do not overlap.
pub(crate) unsafe fn defer(user: UserCall, ops: Operands) -> Pending {
    let done = Arc::new(AtomicBool::new(false));
    let job = Job {
        user,
        invec: ops.invec,
        inout: ops.inout,
        len: ops.len,
        copy_to: ops.copy_to,
        done: Arc::clone(&done),
    };
    QUEUE.with(|q| q.borrow_mut().push(job));
    QUEUED.with(|f| f.set(true));
    Pending { done }
}

/// Queues callback `f` (a program's function with its arguments) to run on this
/// thread where it holds nothing of the state, as the reductions' calls do.
pub(crate) fn defer_call(f: Box<dyn FnOnce()>) {
    CALLS.with(|q| q.borrow_mut().push(f));
    QUEUED.with(|f| f.set(true));
}

/// Whether this thread has calls queued.
#[inline(always)]
pub(crate) fn any_queued() -> bool {
    QUEUED.with(Cell::get)
}

/// Runs this thread's queued calls. The caller holds nothing of the library's state
/// (neither its lock nor a borrow of it): the functions may call MPI. A call queued
/// meanwhile (by an MPI call a function makes) runs too.
pub(crate) fn run_queued() {
    loop {
        // One at a time, the queues not borrowed while a function runs.
        if let Some(f) = CALLS.with(|q| q.borrow_mut().pop()) {
            f();
            continue;
        }
        let Some(job) = QUEUE.with(|q| q.borrow_mut().pop()) else {
            QUEUED.with(|f| f.set(false));
            return;
        };
        // SAFETY: `defer`'s contract: both operands valid, exclusive and disjoint for
        // `len` bytes until `done` is set below.
        let (invec, inout) = unsafe {
            (
                std::slice::from_raw_parts_mut(job.invec, job.len),
                std::slice::from_raw_parts_mut(job.inout, job.len),
            )
        };
        if let Err(f) = apply_user(job.user, invec, inout) {
            // Only a schedule's inconsistency: the operands were built as whole items.
            log::error!("a deferred user reduction: {}", f.message);
        }
        if !job.copy_to.is_null() {
            // SAFETY: `defer`'s contract for `copy_to`; `copy` allows overlap.
            unsafe { std::ptr::copy(job.inout, job.copy_to, job.len) };
        }
        // ORDERING: Release; pairs with the Acquire in `Pending::is_done`, after the
        // function's writes and the copy.
        job.done.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_int, c_void};

    /// `inout[i] = invec[i] * 10 + inout[i]` on bytes.
    unsafe extern "C" fn shift(
        a: *mut c_void,
        b: *mut c_void,
        len: *mut c_int,
        _: *mut crate::consts::Handle,
    ) {
        // SAFETY: called by `apply_user` with `len` one-byte items in both.
        let (a, b, n) = unsafe { (a.cast::<u8>(), b.cast::<u8>(), *len as usize) };
        for i in 0..n {
            // SAFETY: as above.
            unsafe { *b.add(i) = (*a.add(i)).wrapping_mul(10).wrapping_add(*b.add(i)) };
        }
    }

    #[test]
    fn a_deferred_call_runs_only_when_the_queue_is_run_and_then_copies() {
        let user = UserCall {
            f: crate::op_c::UserFunction::Int(shift),
            datatype: 0x201,
            item: 1,
            layout: None,
        };
        let (mut lo, mut hi, mut out) = ([1u8, 2], [3u8, 4], [0u8, 0]);
        // SAFETY: the three arrays live past `run_queued` below and are untouched
        // until `is_done`.
        let p = unsafe {
            defer(
                user,
                Operands {
                    invec: lo.as_mut_ptr(),
                    inout: hi.as_mut_ptr(),
                    copy_to: out.as_mut_ptr(),
                    len: 2,
                },
            )
        };
        assert!(any_queued() && !p.is_done());
        run_queued();
        assert!(!any_queued() && p.is_done());
        assert_eq!((lo, hi, out), ([1, 2], [13, 24], [13, 24]));
    }
}
