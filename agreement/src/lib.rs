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
//! - [`shared`]: the progress token other threads contend for (loom-checked).
//! - [`sim`]: discrete-event simulator with seeded faults and property checkers.
//!
//! # Quick start
//!
//! Three ranks agree while rank 2 fails: the caller carries the bytes (here a queue)
//! and reports the failure; the survivors decide the AND of the contributions, and the
//! failed rank in the decided set.
//!
//! ```
//! use std::collections::VecDeque;
//! use steadfast_agreement::{CommId, CommKey, Epoch, Era, EraAction, EraConfig, Rank, RankSet};
//!
//! let key = CommKey { comm: CommId(7), epoch: Epoch(0) };
//! let mut eras: Vec<Era> = (0..3).map(|r| Era::new(Rank(r), 3, key, EraConfig::default())).collect();
//! let mut wire: VecDeque<(Rank, Rank, Vec<u8>)> = VecDeque::new();
//! let mut decided = vec![None; 3];
//! let mut handle = |me: Rank, out: &mut Vec<EraAction>, wire: &mut VecDeque<_>| {
//!     for action in out.drain(..) {
//!         match action {
//!             EraAction::Send { to, seq, msg } => {
//!                 let mut bytes = Vec::new();
//!                 msg.encode(key, seq, &mut bytes);
//!                 wire.push_back((me, to, bytes));
//!             }
//!             EraAction::Decided { decision, .. } => decided[me.index()] = Some(decision),
//!             EraAction::Excluded { .. } => unreachable!("no survivor is excluded"),
//!         }
//!     }
//! };
//! let mut out = Vec::new();
//! // Rank 2 has failed before contributing; ranks 0 and 1 learn it.
//! for r in 0..2 {
//!     eras[r].on_failure(Rank(2), &mut out);
//!     handle(Rank(r as u32), &mut out, &mut wire);
//!     eras[r].start(0, 0b1110 | r as u64, &RankSet::new(), &mut out).unwrap();
//!     handle(Rank(r as u32), &mut out, &mut wire);
//! }
//! while let Some((from, to, bytes)) = wire.pop_front() {
//!     if to == Rank(2) {
//!         continue; // the dead receive nothing
//!     }
//!     eras[to.index()].on_bytes(from, &bytes, &mut out).unwrap();
//!     handle(to, &mut out, &mut wire);
//! }
//! let d0 = decided[0].clone().expect("rank 0 decided");
//! assert_eq!(Some(&d0), decided[1].as_ref(), "survivors agree");
//! assert_eq!(d0.value, 0b1110);
//! assert!(d0.failed.contains(Rank(2)));
//! ```
//!
//! The same engine under the simulator, one seed deciding delays and crashes, checked
//! for agreement, validity and termination:
//!
//! ```
//! use steadfast_agreement::sim::{run_checked, Scenario};
//!
//! for seed in 0..20 {
//!     let run = run_checked(&Scenario::random(seed, 16)).unwrap_or_else(|v| panic!("seed {seed}: {v:?}"));
//!     assert!(!run.hit_event_bound && run.malformed == 0);
//! }
//! ```

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
