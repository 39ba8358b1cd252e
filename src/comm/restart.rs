//! Restart in place (`MPIX_Comm_restart_rank` / `MPIX_Comm_irestart_rank` of the MPI
//! Forum's draft): a survivor asks the launcher to start a new incarnation of a failed
//! rank, with the same world rank, program and arguments; the request completes once
//! the new process has joined the job and this process has admitted it (its route is
//! reconnected: messages both ways reach the new process, nothing of the dead one is
//! delivered). See `docs/restart.md` for the model and what is not there yet.

use super::{Comm, CommError, Spin};

/// A restart in flight ([`Comm::irestart_rank`]); finish it with
/// [`test`](RestartRequest::test) or [`wait`](RestartRequest::wait). Dropping it
/// leaves the restart to finish on its own (this process then admits the new
/// incarnation when it hears that it joined, like every other survivor).
#[derive(Debug)]
#[must_use = "a restart request is finished by test or wait"]
pub struct RestartRequest {
    comm: Comm,
    done: Option<Result<u32, CommError>>,
}

impl RestartRequest {
    /// Progresses the restart once: `Ok(Some(generation))` once the new incarnation
    /// has joined and is reachable from here, `Ok(None)` while it runs.
    ///
    /// # Errors
    /// [`CommError::Restart`] naming why the restart failed (the new process ended
    /// before it joined, the launcher cannot start processes, ...).
    pub fn test(&mut self) -> Result<Option<u32>, CommError> {
        if let Some(done) = &self.done {
            return done.clone().map(Some);
        }
        let mut e = self.comm.engine.lock();
        e.progress();
        let outcome = e.restart_test();
        drop(e);
        match outcome {
            None => Ok(None),
            Some(r) => {
                let r = r.map_err(CommError::Restart);
                self.done = Some(r.clone());
                r.map(Some)
            }
        }
    }

    /// Waits until the restart is done; the new incarnation's generation.
    ///
    /// # Errors
    /// As [`test`](Self::test).
    pub fn wait(mut self) -> Result<u32, CommError> {
        let comm = self.comm.clone();
        Spin::until(&comm, || self.test())
    }
}

impl Comm {
    /// Starts spare slot `w` (a world rank) for a spawn and waits until its process
    /// joined and this process reaches it: as [`restart_rank`](Self::restart_rank) of
    /// the slot's first incarnation only (`Engine::start_spare_slot`).
    pub(crate) fn start_spare_slot(&self, w: u32) -> Result<u32, CommError> {
        self.engine
            .lock()
            .start_spare_slot(w)
            .map_err(CommError::Restart)?;
        RestartRequest {
            comm: self.clone(),
            done: None,
        }
        .wait()
    }

    /// Starts a new incarnation of the failed `rank` (a rank of this communicator) in
    /// place and waits until it has joined and this process reaches it; returns its
    /// generation. See [`irestart_rank`](Self::irestart_rank).
    ///
    /// # Errors
    /// As [`irestart_rank`](Self::irestart_rank) and [`RestartRequest::test`].
    pub fn restart_rank(&self, rank: u32) -> Result<u32, CommError> {
        self.irestart_rank(rank)?.wait()
    }

    /// Asks the launcher to start a new incarnation of the failed `rank` (a rank of this
    /// communicator): the same world rank, program, arguments and environment, its
    /// generation one more; it runs its `main` from the start and
    /// [`World::is_restored`](crate::World::is_restored) tells it so. Several survivors
    /// may ask for the same rank at once: one process starts and every request
    /// completes. One restart at a time per process.
    ///
    /// # Errors
    /// [`CommError::InvalidArgument`] for a rank outside the communicator;
    /// [`CommError::Restart`] when `rank` is this process or alive, a restart from this
    /// process is in flight, or the launcher cannot start processes (the error names
    /// the launcher).
    pub fn irestart_rank(&self, rank: u32) -> Result<RestartRequest, CommError> {
        let w = self.world_rank(rank).ok_or_else(|| {
            CommError::InvalidArgument(format!(
                "rank {rank} is not in a communicator of {}",
                self.size()
            ))
        })?;
        self.engine
            .lock()
            .restart_begin(w)
            .map_err(CommError::Restart)?;
        Ok(RestartRequest {
            comm: self.clone(),
            done: None,
        })
    }
}
