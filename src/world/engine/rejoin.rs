//! Restart in place, the engine's part (see `docs/restart.md`): asking the launcher for
//! a restart and following it, and admitting restarted ranks that joined.

use std::time::Instant;

use super::{Engine, Route};

/// A restart asked for by this process.
#[derive(Clone, Copy, Debug)]
pub(super) enum RestartState {
    /// Asked the launcher to restart this rank; no answer yet.
    Asked(u32),
    /// The launcher says this incarnation joined; admitting it here by the deadline.
    Admitting(u32, u32, Instant),
}

/// How long a joined incarnation's route may take to appear here (its segment is
/// created before it joins, so this is only a bound).
const ADMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Engine {
    /// Admits the restarted ranks that joined (see `docs/restart.md`): their route is
    /// reconnected (shared memory: their new segment mapped, the dead incarnation's
    /// cells dropped), and the control plane readmits them. A rank whose new segment is
    /// not visible yet stays pending for the next round.
    pub(super) fn admit_rejoins(&mut self) {
        let now = self.now_ns();
        // The old incarnation's failure is applied first (reported in the same batch).
        self.control.apply_failures(now);
        self.drive();
        let mut still = Vec::new();
        for (w, g) in std::mem::take(&mut self.rejoins) {
            // A later incarnation than `g` may be known already: a suspicion or a
            // launcher event named it (it ended before it was admitted here).
            let known = self.control.generation(w);
            if g <= known || w == self.rank {
                continue;
            }
            let admitted = match self.routes[w as usize] {
                Route::Shm(l) => match self.shm.as_mut().map(|s| s.readmit(l, g)) {
                    Some(Ok(done)) => done,
                    Some(Err(e)) => {
                        log::warn!("rank {w} incarnation {g} cannot be admitted: {e}");
                        continue;
                    }
                    None => false,
                },
                Route::Fabric => match self.admit_fabric(w, g) {
                    Ok(done) => done,
                    Err(e) => {
                        log::warn!("rank {w} incarnation {g} cannot be admitted: {e}");
                        continue;
                    }
                },
                Route::Local => continue,
            };
            if admitted {
                self.control.readmit(w, g, now);
                self.publish_readmitted(w);
                // What the dead incarnation left in the matcher's unexpected queues goes
                // too (the ring's cells were dropped by `readmit` above; over the
                // fabric, the messenger fences them: `Messenger::replace_peer`).
                self.matching.readmit(w);
                log::debug!("rank {w} admitted as incarnation {g}");
            } else {
                still.push((w, g));
            }
        }
        self.rejoins = still;
        self.drive();
    }

    /// Admits incarnation `g` of world rank `w`, reached through the fabric: its
    /// address (published before it joined) replaces the dead incarnation's in the
    /// messenger, which fences what the dead one sent and tells the new one it may
    /// send (`Messenger::replace_peer`). `Ok(false)`: not published yet, try again.
    fn admit_fabric(&mut self, w: u32, g: u32) -> Result<bool, String> {
        let known = self.fab.as_ref().map(|f| f.peer_generation(w));
        match known {
            None => return Err("this process has no fabric endpoint".into()),
            Some(Some(k)) if k >= g => {
                // Added at this process's own restart already (both restarted at
                // once): the peer may still wait for this admission.
                let fab = self.fab.as_mut().expect("checked above");
                fab.admit(w).map_err(|e| e.to_string())?;
                return Ok(true);
            }
            Some(_) => {}
        }
        if let Some(RestartState::Asked(other)) = self.restart {
            // The launcher answers a connection's requests in order, and this
            // process's restart of `other` is answered only once that incarnation
            // joined: a Lookup now would block this process (no progress round) until
            // then. When `other` was restarted at the same time as `w`, its init may
            // be sending to this process, which makes no progress: neither joined
            // until the restart timed out (`docs/restart.md`, "Two ranks restarted at
            // once"). The admission waits for the answer instead.
            log::trace!(
                "rank {w} incarnation {g}: admitted after the restart of rank {other} is answered"
            );
            return Ok(false);
        }
        let bytes = match self.boot.lookup(w, "fabric") {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(false),
            Err(e) => return Err(format!("its fabric address cannot be read: {e}")),
        };
        let address = steadfast_fabric::PeerAddress::from_bytes(&bytes)
            .map_err(|e| format!("its fabric address: {e}"))?;
        if address.generation < g {
            return Ok(false);
        }
        if address.generation > g {
            return Err(format!(
                "incarnation {} has replaced it already",
                address.generation
            ));
        }
        let fab = self.fab.as_mut().expect("checked above");
        fab.replace_peer(w, &bytes).map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// Asks the launcher to restart world rank `w` (failed here) in place.
    ///
    /// # Errors
    /// Why it cannot be asked: `w` is this process or not failed, a restart is in
    /// flight already, the launcher has no spawner.
    pub fn restart_begin(&mut self, w: u32) -> Result<(), String> {
        self.restart_begin_of(w, None)
    }

    /// Asks the launcher to start spare slot `w` for a spawn: its first incarnation
    /// only. A spawn picks slots it believes never started; when it learns, between
    /// its pick and this request, that another spawn's child ran in the slot and ended,
    /// restarting that child would start a second process in a slot another spawn
    /// owns (its children then met `MPIX_ERR_PROC_FAILED`).
    ///
    /// # Errors
    /// As [`restart_begin`](Self::restart_begin); an error starting with
    /// [`SLOT_TAKEN`](crate::bootstrap::SLOT_TAKEN) when the slot has started since.
    pub fn start_spare_slot(&mut self, w: u32) -> Result<(), String> {
        self.restart_begin_of(w, Some(0))
    }

    /// Asks for a restart of `w`'s failed incarnation, which must be `only` when set.
    fn restart_begin_of(&mut self, w: u32, only: Option<u32>) -> Result<(), String> {
        if w >= self.size || w == self.rank {
            return Err(format!(
                "rank {w} is not another rank of a world of {}",
                self.size
            ));
        }
        self.apply_failures();
        // A restart whose request was dropped finishes here (its new incarnation is
        // admitted through the launcher's Rejoined event like at any survivor).
        let _ = self.restart_test();
        let current = self.control.generation(w);
        // The incarnation to restart: the failed one; or, when another survivor's
        // restart was admitted here before this process asked (it may never have seen
        // the rank failed), the one it replaced: the launcher then answers at once with
        // the current incarnation, so concurrent askers all complete.
        let failed = if self.control.is_failed(w) {
            current
        } else if current > self.restart_answered[w as usize] {
            current - 1
        } else {
            return Err(format!(
                "rank {w} is alive: only a failed rank can be restarted"
            ));
        };
        if only.is_some_and(|g| g != failed) {
            return Err(format!(
                "{} slot {w} has started since it was picked (incarnation {current})",
                crate::bootstrap::SLOT_TAKEN
            ));
        }
        if let Some(RestartState::Asked(other) | RestartState::Admitting(other, ..)) = self.restart
        {
            return Err(format!(
                "the restart of rank {other} is in flight: one restart at a time per process"
            ));
        }
        self.boot
            .restart_begin(w, failed)
            .map_err(|e| e.to_string())?;
        self.restart = Some(RestartState::Asked(w));
        Ok(())
    }

    /// The outcome of the restart in flight, once known: the new incarnation, admitted
    /// here, or why it failed. `None` while it runs (call again after progress).
    pub fn restart_test(&mut self) -> Option<Result<u32, String>> {
        if let RestartState::Asked(w) = self.restart? {
            match self.boot.restart_poll(std::time::Duration::ZERO) {
                Ok(None) => return None,
                Ok(Some(Ok(j))) => {
                    self.rejoins.push((j.rank, j.generation));
                    let deadline = Instant::now() + ADMIT_WAIT;
                    self.restart = Some(RestartState::Admitting(w, j.generation, deadline));
                }
                Ok(Some(Err(e))) => {
                    self.restart = None;
                    return Some(Err(e.to_string()));
                }
                Err(e) => {
                    self.restart = None;
                    return Some(Err(format!("the launcher connection failed: {e}")));
                }
            }
        }
        let Some(RestartState::Admitting(w, g, deadline)) = self.restart else {
            return None;
        };
        self.admit_rejoins();
        if self.control.generation(w) >= g {
            self.restart = None;
            let answered = &mut self.restart_answered[w as usize];
            *answered = (*answered).max(g);
            return Some(Ok(g));
        }
        if Instant::now() >= deadline {
            self.restart = None;
            return Some(Err(format!(
                "incarnation {g} of rank {w} joined but its route could not be set up within {ADMIT_WAIT:?}"
            )));
        }
        None
    }
}

/// Communicators and restarted members (`docs/restart.md`, "Communicators").
impl Engine {
    /// World rank `w`'s current incarnation as known here (the one admitted, or a later
    /// one that a launcher event or a suspicion reported ended).
    pub fn generation_of(&self, w: u32) -> u32 {
        self.control.generation(w)
    }

    /// The members of communicator `id` (comm rank, incarnation) that were restarted
    /// since its epoch began and are admitted here: alive at a later incarnation than
    /// the one the epoch holds.
    pub fn readmit_candidates(&self, id: steadfast_agreement::CommId) -> Vec<(u32, u32)> {
        let c = self.comm(id);
        c.group()
            .iter()
            .zip(c.incarnations())
            .enumerate()
            .filter(|&(r, (&w, &inc))| {
                r as u32 != c.me() && self.control.generation(w) > inc && !self.control.is_failed(w)
            })
            .map(|(r, (&w, _))| (r as u32, self.control.generation(w)))
            .collect()
    }

    /// Moves communicator `id` to its next epoch with the restarted members
    /// `readmitted` (comm ranks) back in it (see `ControlPlane::new_epoch`).
    pub fn new_comm_epoch(
        &mut self,
        id: steadfast_agreement::CommId,
        readmitted: &[u32],
    ) -> Option<steadfast_agreement::CommKey> {
        let key = self.control.new_epoch(id, readmitted);
        self.drive();
        key
    }

    /// Registers a communicator whose members' incarnations are given (a restarted
    /// process rejoining a saved communicator) and opens its context.
    pub fn add_comm_at(
        &mut self,
        key: steadfast_agreement::CommKey,
        ctx: u64,
        group: Vec<u32>,
        incarnations: Vec<u32>,
    ) -> Option<u32> {
        let me = self.control.add_comm_at(key, ctx, group, incarnations);
        if me.is_some() {
            self.publish_comm(key.comm);
        }
        self.drive();
        if me.is_some() {
            self.open_context(key.comm);
        }
        me
    }

    /// Whether this process is a restarted incarnation that has not rejoined the world
    /// communicator yet: its world's agreement state is the fresh one of its init, which
    /// cannot match the survivors' (`CommError::RestoredWorld`).
    pub fn world_restored(&self) -> bool {
        self.world_restored
    }

    /// Replaces the world communicator's fault-tolerance state by the one at `key`
    /// (a later epoch, the survivors' after their readmission) with the members'
    /// `incarnations`: the restarted process rejoins its world. Same id, context and
    /// group; the context stays open (its matching state is the process's). Control
    /// messages of that epoch that came early are handled now. `None` when the record
    /// does not fit the world (another group or context, not a member).
    pub fn rejoin_world(
        &mut self,
        key: steadfast_agreement::CommKey,
        ctx: u64,
        group: Vec<u32>,
        incarnations: Vec<u32>,
    ) -> Option<u32> {
        let id = crate::world::WORLD_COMM;
        let fits = key.comm == id && {
            let c = self.comm(id);
            c.context() == ctx && c.group() == group.as_slice() && key.epoch > c.key().epoch
        };
        if !fits {
            return None;
        }
        let me = self.control.add_comm_at(key, ctx, group, incarnations);
        if me.is_some() {
            self.publish_comm(id);
        }
        self.drive();
        if me.is_some() {
            self.world_restored = false;
        }
        me
    }
}
