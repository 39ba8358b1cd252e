//! Lock-free plumbing the runtime's threads share around the state machines.
//!
//! The engines of this crate run on one thread at a time: whoever holds the
//! [`ProgressToken`]. The runtime's application thread and its optional progress
//! thread try to take it and never wait on a mutex held by the other, so the engines
//! never re-enter.
//!
//! Atomics come from `sync`, which is `loom`'s under `--cfg loom`: the token is
//! model-checked there (`scripts/test.sh` runs `--lib shared::` under loom).

pub mod biased;
pub mod board;
pub(crate) mod sync;
pub mod token;

pub use biased::{Attempt, BiasedGuard, BiasedToken};
pub use board::{CommFlags, FailureBoard};
pub use token::{ProgressGuard, ProgressToken};
