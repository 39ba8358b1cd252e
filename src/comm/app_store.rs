//! The launcher's store for a library above the runtime: records one process puts
//! and any process of the job reads, without a message (the MPI library's ports and
//! name service, `docs/spawn.md`, "Ports"). Keys live under their own prefix, apart
//! from the runtime's `sf.` keys, and count against the putting rank's store quota
//! like every key; a put replaces the rank's earlier value of the key.

use super::{Comm, CommError};

/// The prefix of every key put through [`Comm::put_app_value`].
const PREFIX: &str = "app.";

fn app_key(key: &str) -> String {
    format!("{PREFIX}{key}")
}

impl Comm {
    /// Puts `value` under `key` for this process in the launcher's store (replacing
    /// its earlier value), for any process of the job to read with
    /// [`lookup_app_value`](Self::lookup_app_value).
    ///
    /// # Errors
    /// [`CommError::Launcher`] when the store refuses (quota, size) or cannot be
    /// reached, or the launcher has no store (PMI launchers refuse by name).
    pub fn put_app_value(&self, key: &str, value: &[u8]) -> Result<(), CommError> {
        self.engine
            .lock()
            .boot_mut()
            .put(&app_key(key), value)
            .map_err(|e| CommError::Launcher(format!("putting {key:?}: {e}")))
    }

    /// The value world rank `rank` put under `key` with
    /// [`put_app_value`](Self::put_app_value), if there is one now (never waits for
    /// it); runs the progress engine once, so a loop of lookups learns of failures
    /// without a progress thread.
    ///
    /// # Errors
    /// [`CommError::Launcher`] when the store cannot be reached or the launcher has no
    /// lookup without waiting (only `steadfast-run` has one).
    pub fn lookup_app_value(&self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, CommError> {
        let mut e = self.engine.lock();
        let v = e
            .boot_mut()
            .lookup(rank, &app_key(key))
            .map_err(|e| CommError::Launcher(format!("reading rank {rank}'s {key:?}: {e}")));
        e.progress();
        v
    }
}
