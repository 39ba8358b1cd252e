//! What every handle carries (its world's state and the thread that owns it), and the
//! checks every entry point makes before touching one: not null, called from the
//! owner thread, world not finalized.
//!
//! # Thread safety
//! The Rust `World` and `Comm` are `!Send`: their engine is driven by the thread that
//! created them. The C ABI keeps that rule and checks it instead of trusting it: every
//! handle records the thread that called `sf_init`, and a call on any other thread
//! returns [`SF_ERR_WRONG_THREAD`] without touching the handle beyond reading that
//! (immutable) thread id. Two worlds may live on two threads.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;
use std::thread::{self, ThreadId};

use sf::World;

use crate::error::{Error, Result, SF_ERR_NOT_INITIALIZED, SF_ERR_WRONG_THREAD};

/// The failure callback: `(world rank of the failed process, user data)`; null for
/// none.
pub type sf_failure_fn = Option<extern "C" fn(rank: u32, user_data: *mut c_void)>;

/// A registered callback (not null).
type FailureCallback = extern "C" fn(rank: u32, user_data: *mut c_void);

/// A world's state, shared by every handle made from it.
pub(crate) struct WorldState {
    /// `None` once finalized.
    world: RefCell<Option<World>>,
    on_failure: Cell<Option<(FailureCallback, *mut c_void)>>,
    /// World ranks already reported to the callback.
    reported: RefCell<Vec<u32>>,
}

impl WorldState {
    pub fn new(world: World) -> Rc<Self> {
        Rc::new(WorldState {
            world: RefCell::new(Some(world)),
            on_failure: Cell::new(None),
            reported: RefCell::new(Vec::new()),
        })
    }

    /// Runs `f` on the world, or fails with [`SF_ERR_NOT_INITIALIZED`].
    pub fn with_world<T>(&self, f: impl FnOnce(&World) -> Result<T>) -> Result<T> {
        match self.world.borrow().as_ref() {
            Some(w) => f(w),
            None => Err(finalized()),
        }
    }

    pub fn is_live(&self) -> bool {
        self.world.borrow().is_some()
    }

    /// Takes the world out (finalize); later calls on its handles fail.
    pub fn take_world(&self) -> Option<World> {
        self.world.borrow_mut().take()
    }

    pub fn set_failure_callback(&self, cb: sf_failure_fn, user_data: *mut c_void) {
        self.on_failure.set(cb.map(|cb| (cb, user_data)));
    }

    /// Calls the failure callback once for each failed world rank not reported yet.
    /// Called at the end of every entry point, with no borrow held, so the callback
    /// may call the library (even free the handle the call was made on).
    pub fn report_failures(&self) {
        let Some((callback, user_data)) = self.on_failure.get() else {
            return;
        };
        let fresh: Vec<u32> = {
            let world = self.world.borrow();
            let Some(world) = world.as_ref() else {
                return;
            };
            let mut reported = self.reported.borrow_mut();
            let mut fresh = Vec::new();
            for note in world.failures() {
                if !reported.contains(&note.rank) {
                    reported.push(note.rank);
                    fresh.push(note.rank);
                }
            }
            fresh
        };
        for rank in fresh {
            log::debug!("steadfast C ABI: reporting the failure of world rank {rank}");
            callback(rank, user_data);
        }
    }
}

fn finalized() -> Error {
    Error::new(
        SF_ERR_NOT_INITIALIZED,
        "the world of this handle was finalized",
    )
}

/// The part common to every handle.
pub(crate) struct Home {
    /// The thread that called `sf_init`; never written after creation.
    pub owner: ThreadId,
    pub state: Rc<WorldState>,
}

impl Home {
    /// A home on the calling thread.
    pub fn here(state: Rc<WorldState>) -> Self {
        Home {
            owner: thread::current().id(),
            state,
        }
    }

    /// Another handle of the same world.
    pub fn sibling(&self) -> Self {
        Home {
            owner: self.owner,
            state: Rc::clone(&self.state),
        }
    }
}

/// A handle type: it has a [`Home`].
pub(crate) trait Handle {
    /// The type's name in C, for messages.
    const NAME: &'static str;

    /// The handle's home, reached through a raw pointer without making a reference to
    /// the whole handle (which may be in use by its owner thread).
    ///
    /// # Safety
    /// `this` points to a live handle.
    unsafe fn home(this: *const Self) -> *const Home;
}

/// Checks a handle pointer for a call: not null, owned by this thread (where the
/// caller then is the handle's only user: C calls on one thread do not overlap, and a
/// callback runs when the call that invoked it no longer uses its handle).
///
/// # Safety
/// `ptr` is null or a handle made by this library and not freed.
unsafe fn check<H: Handle>(ptr: *const H) -> Result<()> {
    if ptr.is_null() {
        return Err(Error::null(H::NAME));
    }
    // SAFETY: `ptr` is a live handle (the caller's contract); only the owner field is
    // read, which nothing writes after creation, so a call from another thread does not
    // race with the owner's use of the handle.
    let owner = unsafe { (*H::home(ptr)).owner };
    if owner != thread::current().id() {
        return Err(Error::new(
            SF_ERR_WRONG_THREAD,
            format!(
                "{} used from thread {:?}, but its world belongs to thread {owner:?}",
                H::NAME,
                thread::current().id()
            ),
        ));
    }
    Ok(())
}

/// The body of an entry point on a handle of a live world: checks the handle, runs
/// `f`, then reports new failures to the callback (also when `f` failed: failures
/// usually come with errors).
///
/// # Safety
/// `ptr` is null or a handle made by this library and not freed.
pub(crate) unsafe fn with<H: Handle, T>(
    ptr: *const H,
    f: impl FnOnce(&H) -> Result<T>,
) -> Result<T> {
    // SAFETY: the caller's contract.
    let state = unsafe { enter(ptr) }?;
    // SAFETY: checked live and on its owner thread, where only shared references to it
    // are in use (two arguments may name the same handle).
    let outcome = f(unsafe { &*ptr });
    state.report_failures();
    outcome
}

/// As [`with`], with the handle borrowed mutably (a request being progressed: no
/// other argument of the call is a request).
///
/// # Safety
/// `ptr` is null or a handle made by this library and not freed.
pub(crate) unsafe fn with_mut<H: Handle, T>(
    ptr: *mut H,
    f: impl FnOnce(&mut H) -> Result<T>,
) -> Result<T> {
    // SAFETY: the caller's contract.
    let state = unsafe { enter(ptr) }?;
    // SAFETY: checked live and on its owner thread, where this call is its only user.
    let outcome = f(unsafe { &mut *ptr });
    state.report_failures();
    outcome
}

/// Checks a handle for a call and returns its world's state, if the world is live.
///
/// # Safety
/// `ptr` is null or a handle made by this library and not freed.
unsafe fn enter<H: Handle>(ptr: *const H) -> Result<Rc<WorldState>> {
    // SAFETY: the caller's contract.
    unsafe { check(ptr)? };
    // SAFETY: checked: live, and on its owner thread.
    let state = Rc::clone(&unsafe { &*H::home(ptr) }.state);
    if state.is_live() {
        Ok(state)
    } else {
        Err(finalized())
    }
}

/// Takes a handle back from C to drop it (`*pptr` becomes null); a null `*pptr` is
/// nothing to free.
///
/// # Safety
/// `pptr` is null or valid for reads and writes, and `*pptr` is null or a handle made
/// by this library and not freed.
pub(crate) unsafe fn take<H: Handle>(pptr: *mut *mut H) -> Result<Option<Box<H>>> {
    if pptr.is_null() {
        return Err(Error::null(H::NAME));
    }
    // SAFETY: the caller's contract.
    let ptr = unsafe { *pptr };
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { check(ptr)? };
    // SAFETY: made by `Box::into_raw` in `give`, not freed (the caller's contract), and
    // cleared below so that the caller cannot free it twice through `pptr`.
    let boxed = unsafe { Box::from_raw(ptr) };
    // SAFETY: valid for writes (the caller's contract).
    unsafe { *pptr = std::ptr::null_mut() };
    Ok(Some(boxed))
}

/// Hands a new handle to C through an out pointer checked by [`out`].
pub(crate) fn give<H>(out: &mut *mut H, handle: H) {
    *out = Box::into_raw(Box::new(handle));
}

/// An out pointer, checked for null.
///
/// # Safety
/// `ptr` is null or valid for writes of a `T`, and not aliased during the call.
pub(crate) unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { ptr.as_mut() }.ok_or_else(|| Error::null(what))
}

/// Writes `ranks` into the caller's array of `capacity` (as many as fit) and the full
/// count into `*count` (when not null).
///
/// # Safety
/// `array` is null or valid for writes of `capacity` `u32`s; `count` is null or valid
/// for a write.
pub(crate) unsafe fn copy_ranks(
    ranks: &[u32],
    array: *mut u32,
    capacity: usize,
    count: *mut usize,
) -> Result<()> {
    if capacity > 0 && array.is_null() {
        return Err(Error::invalid(format!(
            "the rank array is a null pointer with a capacity of {capacity}"
        )));
    }
    let n = ranks.len().min(capacity);
    if n > 0 {
        // SAFETY: `array` holds `capacity >= n` u32s (the caller's contract) and cannot
        // overlap `ranks`, which this library allocated.
        unsafe { std::ptr::copy_nonoverlapping(ranks.as_ptr(), array, n) };
    }
    if !count.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *count = ranks.len() };
    }
    Ok(())
}

/// Implements [`Handle`] for a struct with a `home: Home` field.
macro_rules! handle {
    ($t:ident) => {
        impl $crate::handle::Handle for $t {
            const NAME: &'static str = stringify!($t);

            unsafe fn home(this: *const Self) -> *const $crate::handle::Home {
                // SAFETY: `this` is live (the caller's contract); no reference is made.
                unsafe { std::ptr::addr_of!((*this).home) }
            }
        }
    };
}
pub(crate) use handle;
