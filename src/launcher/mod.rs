//! The launcher side of `steadfast-run`: the key-value service ranks bootstrap from,
//! and the relay of rank failures to the survivors.
//!
//! One thread runs an event loop ([`Service::serve`]) over nonblocking sockets with
//! `poll`, so a connection costs a descriptor and a few buffers, never a thread. The
//! service cannot be held shut by a local user:
//!
//! - A connection that has not authenticated (a `Hello` with the job's secret and a
//!   rank of the job) is a *stranger*: it may send one `Hello`-sized frame, within
//!   [`Limits::hello_timeout`]; at most [`Limits::max_strangers`] are kept, and a new
//!   connection past the cap (or past the process's descriptor limit) pushes out the
//!   oldest stranger. A rank sends its `Hello` as soon as it connects, so the job's own
//!   ranks always get in (and [`Builtin`](crate::bootstrap::builtin::Builtin) retries a
//!   connection cut before its `Hello` was answered).
//! - Authenticated connections are one per rank: a rank that connects again replaces
//!   its old connection; a rank that has ended is refused.
//! - Values, keys per rank, bytes per rank and bytes per job are capped ([`Limits`]);
//!   a put past a cap is answered with an error naming the value and the cap.
//! - A get waits for its value but is answered with an error when the value cannot
//!   come (see the `store` module's rules: owner dead, owner at a fence, own key, deadline).
//! - Output queued to a rank that does not read is capped too; past it the connection
//!   is closed.

mod event_loop;
pub mod segments;
mod store;

use crate::bootstrap::wire::{MAX_VALUE, SECRET_LEN};
use crate::bootstrap::SpawnCommand;
use std::io::{self, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The service's bounds. [`Limits::default`] suits jobs of up to thousands of ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Unauthenticated connections kept at once (default 64); the oldest goes first.
    pub max_strangers: usize,
    /// Time an unauthenticated connection has to send its `Hello` (default 5 s).
    pub hello_timeout: Duration,
    /// Longest wait of a get for a value that could still come (default 300 s).
    pub get_timeout: Duration,
    /// Largest value (default [`MAX_VALUE`], 64 KiB).
    pub max_value: usize,
    /// Keys one rank may store (default 1024).
    pub max_keys_per_rank: usize,
    /// Key and value bytes one rank may store (default 1 MiB).
    pub max_bytes_per_rank: usize,
    /// Key and value bytes the whole job may store (default 256 MiB).
    pub max_total_bytes: usize,
    /// Bytes queued to one rank that is not reading before its connection is closed
    /// (default 16 MiB).
    pub max_queued_bytes: usize,
    /// How long a restart waits for the launcher to see the old incarnation's death
    /// (a survivor may learn of it first) before it is refused as a restart of a live
    /// rank (default 5 s).
    pub restart_death_wait: Duration,
    /// How long a restarted incarnation has to join (default 60 s).
    pub restart_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_strangers: 64,
            hello_timeout: Duration::from_secs(5),
            get_timeout: Duration::from_secs(300),
            max_value: MAX_VALUE,
            max_keys_per_rank: 1024,
            max_bytes_per_rank: 1 << 20,
            max_total_bytes: 256 << 20,
            max_queued_bytes: 16 << 20,
            restart_death_wait: Duration::from_secs(5),
            restart_timeout: Duration::from_secs(60),
        }
    }
}

/// Called on the service's thread after each accepted put, with the rank, key and
/// value, before the put is answered.
pub type PutHook = Box<dyn FnMut(u32, &str, &[u8]) + Send>;

/// Starts incarnation `generation` of `rank` (same program, arguments and environment
/// as the first, with `STEADFAST_GENERATION` set; a spare slot whose spawn named a
/// command runs that command instead of the job's program and arguments, in every
/// incarnation: the third argument, `docs/spawn.md`); returns its process id or why it
/// could not be started. Called on the service's thread: it must not wait for the new
/// process.
pub type SpawnHook = Box<dyn FnMut(u32, u32, Option<&SpawnCommand>) -> Result<u32, String> + Send>;

/// The key-value service of one job.
///
/// ```no_run
/// use steadfast::launcher::{Limits, Service};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let service = Service::new(4, [7; 32], Limits::default())?;
/// let s = service.clone();
/// std::thread::spawn(move || s.serve(listener));
/// // ... start the ranks; as each ends:
/// service.rank_died(2, "killed by signal 9");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Service {
    size: u32,
    secret: [u8; SECRET_LEN],
    limits: Limits,
    /// Deaths reported by [`Service::rank_died`], not yet seen by the event loop:
    /// rank, incarnation (`None`: the current one), how.
    deaths: Mutex<Vec<(u32, Option<u32>, String)>>,
    /// Written by [`Service::rank_died`] to wake the event loop; read by it.
    wake_tx: UnixStream,
    wake_rx: UnixStream,
    put_hook: Mutex<Option<PutHook>>,
    spawn_hook: Mutex<Option<SpawnHook>>,
    /// The first spare slot of the universe (`size`: none; [`Service::spare_slots_from`]).
    first_spare: Mutex<u32>,
}

impl Service {
    /// A service for `size` ranks authenticated by `secret`, bounded by `limits`.
    ///
    /// # Errors
    /// The error of creating its wake-up socket pair.
    pub fn new(size: u32, secret: [u8; SECRET_LEN], limits: Limits) -> io::Result<Arc<Service>> {
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        Ok(Arc::new(Service {
            size,
            secret,
            limits,
            deaths: Mutex::new(Vec::new()),
            wake_tx,
            wake_rx,
            put_hook: Mutex::new(None),
            spawn_hook: Mutex::new(None),
            first_spare: Mutex::new(size),
        }))
    }

    /// Sets the hook called after each accepted put (see [`PutHook`]); set it before
    /// [`Service::serve`] to see every put.
    pub fn on_put(&self, hook: impl FnMut(u32, &str, &[u8]) + Send + 'static) {
        *self.put_hook.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(hook));
    }

    /// Sets the spawner that restarts failed ranks (see [`SpawnHook`]); without one,
    /// a restart is answered with an error saying so. Set it before
    /// [`Service::serve`].
    pub fn on_restart(
        &self,
        hook: impl FnMut(u32, u32, Option<&SpawnCommand>) -> Result<u32, String> + Send + 'static,
    ) {
        *self.spawn_hook.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(hook));
    }

    /// Ranks `first..size` are spare slots of the job's universe (`docs/spawn.md`):
    /// dead from the start (nobody waits for them), each started by one spawn (a
    /// `Restart` of its incarnation 0; another rank's start of the same slot is refused
    /// with [`SLOT_TAKEN`](crate::bootstrap::SLOT_TAKEN)), which the started process
    /// reads under [`SPAWNED_BY_KEY`](crate::bootstrap::SPAWNED_BY_KEY) of its slot. Set
    /// it before [`Service::serve`].
    pub fn spare_slots_from(&self, first: u32) {
        *self.first_spare.lock().unwrap_or_else(|p| p.into_inner()) = first.min(self.size);
    }

    /// Serves connections on `listener` (run it on its own thread); returns only if
    /// polling itself fails.
    ///
    /// # Errors
    /// The error of making `listener` nonblocking or of `poll`.
    pub fn serve(self: &Arc<Self>, listener: TcpListener) -> io::Result<()> {
        event_loop::EventLoop::new(self, listener)?.run()
    }

    /// Records that `rank`'s current incarnation ended (`how` says how) and tells
    /// every other connected rank.
    pub fn rank_died(&self, rank: u32, how: &str) {
        self.push_death(rank, None, how);
    }

    /// Records that incarnation `generation` of `rank` ended; ignored if that
    /// incarnation was already replaced.
    pub fn incarnation_died(&self, rank: u32, generation: u32, how: &str) {
        self.push_death(rank, Some(generation), how);
    }

    fn push_death(&self, rank: u32, generation: Option<u32>, how: &str) {
        self.deaths.lock().unwrap_or_else(|p| p.into_inner()).push((
            rank,
            generation,
            how.to_string(),
        ));
        // A full socket buffer means a wake-up is already pending.
        let _ = (&self.wake_tx).write(&[1]);
    }
}

#[cfg(test)]
mod tests;
