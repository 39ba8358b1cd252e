//! Liveness of the endpoint's peers: death verdicts (checked against the process,
//! remembered once reached) and the bounded waiter every blocking call uses.

use super::{Endpoint, Peer};
use crate::error::ShmError;
use std::time::{Duration, Instant};
use steadfast_os::SpinWait;

/// Polls between liveness checks of a peer while waiting.
const SPINS_PER_CHECK: u32 = 1024;

/// Whether `p`'s process has exited, a zombie included (without touching the
/// endpoint's verdicts).
pub(super) fn peer_gone(p: &Peer) -> bool {
    p.watch.has_exited()
}

/// Spin, then yield; check the peer every [`SPINS_PER_CHECK`] polls; enforce the timeout.
pub(super) struct Waiter {
    spin: SpinWait,
    start: Option<Instant>,
    timeout: Option<Duration>,
}

impl Waiter {
    pub(super) fn new(timeout: Option<Duration>) -> Self {
        Waiter {
            spin: SpinWait::default(),
            start: None,
            timeout,
        }
    }

    /// One poll's pause: `Err` when `dead` says the peer `rank` died, or past the
    /// timeout.
    pub(super) fn wait(
        &mut self,
        mut dead: impl FnMut() -> bool,
        rank: u32,
    ) -> Result<(), ShmError> {
        self.spin.pause();
        if self.spin.every(SPINS_PER_CHECK) {
            if dead() {
                return Err(ShmError::PeerDead(rank));
            }
            if let Some(t) = self.timeout {
                let start = *self.start.get_or_insert_with(Instant::now);
                if start.elapsed() >= t {
                    return Err(ShmError::Timeout(t));
                }
            }
        }
        Ok(())
    }
}

impl Endpoint {
    /// Whether `rank` is known dead, checking its pid now.
    pub(super) fn peer_dead(&mut self, rank: u32) -> bool {
        if self.dead[rank as usize] {
            return true;
        }
        if let Some(p) = &self.peers[rank as usize] {
            if peer_gone(p) {
                self.dead[rank as usize] = true;
                // Its owner cannot remove it any more; every survivor tries (the first
                // succeeds), keeping /dev/shm clean; a restarted owner's new file of the
                // same name stays.
                p.segment.remove_if_unchanged();
            }
        }
        self.dead[rank as usize]
    }

    pub(super) fn source_dead(&mut self, source: Option<u32>) -> bool {
        match source {
            Some(s) => self.peer_dead(s),
            None => {
                let me = self.config.rank;
                (0..self.config.ranks)
                    .filter(|&r| r != me)
                    .all(|r| self.peer_dead(r))
            }
        }
    }

    /// Checks every peer's process; appends to `out` the local ranks found dead since
    /// the last call (each reported once).
    pub fn poll_deaths(&mut self, out: &mut Vec<u32>) {
        for r in 0..self.config.ranks {
            if r == self.config.rank || self.peers[r as usize].is_none() {
                continue;
            }
            let was = self.dead[r as usize];
            if !was && self.peer_dead(r) {
                out.push(r);
            }
        }
    }

    /// The process id of local rank `rank`, once connected.
    pub fn peer_pid(&self, rank: u32) -> Option<u32> {
        self.peers.get(rank as usize)?.as_ref().map(|p| p.pid)
    }

    /// Records that local rank `rank` is dead (learnt elsewhere, e.g. from the
    /// launcher): waits on it end with [`ShmError::PeerDead`].
    pub fn declare_dead(&mut self, rank: u32) {
        if rank == self.config.rank || rank >= self.config.ranks {
            return;
        }
        // Checking first removes its segment when its process is indeed gone.
        self.peer_dead(rank);
        if let Some(d) = self.dead.get_mut(rank as usize) {
            *d = true;
        }
    }
}
