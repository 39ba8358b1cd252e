//! How a rank learns who it is and exchanges endpoint addresses with the others.
//!
//! [`from_env`] picks the bootstrap that launched this process: the built-in launcher
//! `steadfast-run` ([`builtin`]), PMI-1 ([`pmi1`]: Hydra, `srun --mpi=pmi2`) or PMIx
//! ([`pmix`]: Open MPI's `mpirun`, `srun --mpi=pmix`).

pub mod builtin;
pub mod pmi1;
pub mod pmix;
mod pmix_ffi;
mod pmix_service;
mod pmix_spawn;
mod spawn_command;
pub mod wire;

pub use spawn_command::{SpawnCommand, SPAWN_COMMAND_KEY};

use std::time::Duration;

/// Errors of bootstrapping.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// No launcher environment recognised.
    #[error(
        "no bootstrap found: looked for {looked_for}; start the program with steadfast-run -n N"
    )]
    NotLaunched {
        /// The variables checked.
        looked_for: &'static str,
    },
    /// A variable is present but unusable.
    #[error("bad value of {name}: {why}")]
    BadEnv {
        /// Variable name.
        name: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The launcher refused or failed a request.
    #[error("bootstrap: {0}")]
    Refused(String),
    /// The connection to a launcher's server (PMI) failed.
    #[error("{server} connection: {source}")]
    Connection {
        /// Which server (`PMI`).
        server: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A rank whose data was needed is dead.
    #[error("rank {rank} died: {how}")]
    RankDied {
        /// The dead rank.
        rank: u32,
        /// How it ended.
        how: String,
    },
    /// The connection to the launcher failed.
    #[error(transparent)]
    Frame(#[from] wire::FrameError),
    /// The launcher cannot start processes for this job (no spawner).
    #[error("cannot restart rank {rank}: {why}")]
    NoSpawner {
        /// The rank asked for.
        rank: u32,
        /// Which launcher, and why it cannot.
        why: String,
    },
    /// A restart was asked for, and failed (the launcher says why).
    #[error("restart of rank {rank} failed: {why}")]
    RestartFailed {
        /// The rank asked for.
        rank: u32,
        /// What happened.
        why: String,
    },
}

/// Keys under this prefix outlive their owner's incarnation in `steadfast-run`'s store:
/// a restarted process reads back the communicators its earlier incarnation saved
/// (`Comm::save`, `docs/restart.md`).
pub const SAVED_PREFIX: &str = "sf.saved.";

/// The key under which `steadfast-run`'s store records, in a spare slot of the universe
/// it started (`docs/spawn.md`), the world rank whose spawn started it (4 bytes, little
/// endian); the spawned process reads it from its own slot.
pub const SPAWNED_BY_KEY: &str = "sf.spawned-by";

/// How `steadfast-run`'s store begins its answer to the start of a spare slot that
/// another rank's spawn started already (the asker picks another slot).
pub const SLOT_TAKEN: &str = "spare slot taken:";

/// A failure the launcher reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureEvent {
    /// The dead rank.
    pub rank: u32,
    /// Its incarnation (0 on first start; launchers without restarts report 0).
    pub generation: u32,
    /// How it ended.
    pub how: String,
}

/// A restarted rank that has joined the job again (the launcher's answer to a restart,
/// or its news to every other rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejoin {
    /// The restarted rank.
    pub rank: u32,
    /// Its new incarnation.
    pub generation: u32,
    /// Its process id (0 when the launcher does not say).
    pub pid: u32,
}

/// What every launcher offers a rank.
pub trait Bootstrap: Send {
    /// This process's rank.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Publishes `value` under `key` for this rank.
    ///
    /// # Errors
    /// Connection failures; refusals.
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError>;
    /// The value `rank` published under `key`, waiting for it.
    ///
    /// # Errors
    /// [`BootstrapError::RankDied`] when `rank` dies first; connection failures.
    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError>;
    /// The value `rank` published under `key`, if it is there now (never waits).
    ///
    /// # Errors
    /// Connection failures; launchers without it (the default) refuse by name.
    fn lookup(&mut self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, BootstrapError> {
        let _ = (rank, key);
        Err(BootstrapError::Refused(
            "this launcher has no lookup without waiting (only steadfast-run has)".into(),
        ))
    }
    /// Waits until every live rank has reached the fence (dead ranks do not block it).
    ///
    /// # Errors
    /// Connection failures.
    fn fence(&mut self) -> Result<(), BootstrapError>;
    /// Failures reported by the launcher since the last call (waits up to `wait`).
    ///
    /// # Errors
    /// Connection failures.
    fn failures(&mut self, wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError>;

    /// This process's incarnation: 0 on first start, one more at each restart.
    fn generation(&self) -> u32 {
        0
    }

    /// Asks the launcher to start a new incarnation of `rank`, whose incarnation
    /// `generation` failed; [`restart_poll`](Self::restart_poll) gives the outcome. One
    /// restart at a time per process.
    ///
    /// # Errors
    /// [`BootstrapError::NoSpawner`] when this launcher cannot start processes (the
    /// default); connection failures.
    fn restart_begin(&mut self, rank: u32, generation: u32) -> Result<(), BootstrapError> {
        let _ = generation;
        Err(BootstrapError::NoSpawner {
            rank,
            why: "this launcher has no spawner (only steadfast-run restarts ranks so far)".into(),
        })
    }

    /// The outcome of the restart begun by [`restart_begin`](Self::restart_begin), if
    /// it is known within `wait`.
    ///
    /// # Errors
    /// Connection failures.
    fn restart_poll(
        &mut self,
        wait: Duration,
    ) -> Result<Option<Result<Rejoin, BootstrapError>>, BootstrapError> {
        let _ = wait;
        Ok(None)
    }

    /// A restarted process tells the launcher it has published its addresses.
    ///
    /// # Errors
    /// Connection failures.
    fn joined(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    /// Restarted ranks that joined since the last call (learnt while reading the
    /// launcher's other frames; never waits).
    fn rejoins(&mut self) -> Vec<Rejoin> {
        Vec::new()
    }
}

/// Variables checked, in order, by [`from_env`].
pub const LOOKED_FOR: &str =
    "STEADFAST_RUN_ADDR (steadfast-run), PMI_FD / PMI_PORT (PMI-1: mpiexec.hydra, srun --mpi=pmi2), PMIX_RANK / PMIX_NAMESPACE (PMIx: mpirun, srun --mpi=pmix)";

/// The bootstrap of the launcher that started this process.
///
/// # Errors
/// [`BootstrapError::NotLaunched`] naming what was looked for; connection errors.
pub fn from_env() -> Result<Box<dyn Bootstrap>, BootstrapError> {
    if std::env::var_os("STEADFAST_RUN_ADDR").is_some() {
        return Ok(Box::new(builtin::Builtin::from_env()?));
    }
    if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
        return Ok(Box::new(pmi1::Pmi1::from_env()?));
    }
    if std::env::var_os("PMIX_RANK").is_some() || std::env::var_os("PMIX_NAMESPACE").is_some() {
        return Ok(Box::new(pmix::Pmix::from_env()?));
    }
    Err(BootstrapError::NotLaunched {
        looked_for: LOOKED_FOR,
    })
}
