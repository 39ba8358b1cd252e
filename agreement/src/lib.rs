//! steadfast-agreement: the sans-IO fault-tolerance core of steadfast.
//!
//! Pure state machines driven by their caller: events go in (`start`, `on_message`,
//! `on_failure`, `tick(now)`), actions come out (`Send`, `Decided`, `Excluded`, ...). No
//! sockets, threads or clocks: the same code runs inside the runtime over real transports
//! and inside the deterministic simulator ([`sim`]).
//!
//! - [`era`]: the early-returning agreement (MPI_Comm_agree semantics).
//! - [`decision`]: contributions, decisions and outcome codes (what `era` and `wire`
//!   share).
//! - [`tree`]: the implicit heap it runs on (a star up to 8 ranks, binary beyond),
//!   repaired around dead ranks.
//! - [`wire`]: the byte layout of every message (docs/protocol.md).
//! - [`bcast`], [`detector`], [`pair`]: reliable broadcast, failure detector, two-party agreement.
//! - [`control`]: one process's control plane composed from the above: failures
//!   reported and applied, every communicator's agreement and revoke, early messages.
//! - [`shared`]: the lock-free structures other threads touch (loom-checked).
//! - [`sim`]: discrete-event simulator with seeded faults and property checkers.

pub mod bcast;
pub mod control;
pub mod decision;
pub mod detector;
pub mod era;
pub mod pair;
pub mod shared;
pub mod sim;
pub mod tree;
pub mod types;
pub mod wire;

pub use era::{Decision, Era, EraAction, EraConfig, Outcome};
pub use types::{AgreementId, CommId, CommKey, Epoch, Rank, RankSet, Seq};
