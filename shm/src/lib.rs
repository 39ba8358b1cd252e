//! steadfast-shm: how ranks on one node talk, at memory speed.
//!
//! - [`ring`]: the lock-free single-producer/single-consumer fastbox.
//! - [`segment`]: the /dev/shm segments that hold the rings (one per receiving process).

pub mod ring;
pub mod segment;
mod sync;
