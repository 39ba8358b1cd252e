//! Lock-free structures the runtime's threads share around the state machines.
//!
//! The engines of this crate run on one thread at a time: whoever holds the
//! [`ProgressToken`]. Other threads (the application calling in, a progress thread, the
//! transport's completion handlers, the launcher's failure notices) never take a mutex:
//! they post events to an [`Inbox`], read failures from the [`FailedRanks`] bitmap,
//! check a communicator's [`RevokeFlag`], and look decided agreements up in a
//! [`DecidedTable`]. A failure that arrives while a message is being handled is simply
//! the next event in the inbox, so the engines never re-enter.
//!
//! Atomics come from [`sync`], which is `loom`'s under `--cfg loom`: the structures
//! written here are model-checked there (`scripts/test.sh` runs those tests). The
//! inbox is crossbeam's bounded queue, checked by crossbeam itself.

pub mod decided;
pub mod failed;
pub mod inbox;
pub mod revoke;
pub(crate) mod sync;
pub mod token;

pub use decided::{DecidedTable, Lookup};
pub use failed::FailedRanks;
pub use inbox::{Inbox, InboxFull};
pub use revoke::RevokeFlag;
pub use token::{ProgressGuard, ProgressToken};
