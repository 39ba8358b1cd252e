//! The one place lock-free code here gets its atomics from: std normally, loom's
//! model-checked versions under `--cfg loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
