//! The operating-system helpers of steadfast, each written once with one rule.
//!
//! | Module | Job |
//! |---|---|
//! | [`affinity`] | binding the calling thread to one of the CPUs it may use |
//! | [`process`] | whether a process of this host is alive (pidfd, else `kill(pid, 0)`); a zombie is dead |
//! | [`spawn`] | children that die with their parent ([`DieWithParent`] on [`std::process::Command`]) |
//! | [`host`] | the boot id (read once) and an identity of this host and pid namespace |
//! | [`hash`] | FNV-1a, the one hash for ids every process derives alike |
//! | [`membarrier`] | the global `membarrier(2)`: the heavy side of an asymmetric fence |
//! | [`shared_bytes`] | copies into and out of memory other threads copy at the same time (relaxed byte atomics: no data race) |
//! | [`thread_id`] | a number naming the calling thread, one load on x86-64 Linux |
//! | [`wait`] | [`SpinWait`]: bounded spinning, then yielding the core |
//!
//! Nothing here changes process-wide state, starts threads or prints; the only
//! side effect is the one the caller asks for by name (e.g. a child's parent-death
//! signal, set in the child).
//!
//! # Example
//!
//! ```
//! use steadfast_os::{fnv1a64, ProcessWatch};
//!
//! // This process is alive; a hash is the same on every process.
//! assert!(!ProcessWatch::new(std::process::id()).has_exited());
//! assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
//! ```

pub mod affinity;
pub mod hash;
pub mod host;
pub mod membarrier;
pub mod process;
pub mod shared_bytes;
pub mod spawn;
pub mod thread_id;
pub mod wait;

pub use hash::fnv1a64;
pub use host::{boot_id, host_identity};
pub use process::ProcessWatch;
pub use spawn::DieWithParent;
pub use wait::SpinWait;
