//! Restart in place under a PMIx server (`docs/restart.md`, "Under PMIx"): the
//! incarnations' namespaces, who restarts a rank, `PMIx_Spawn`, and the failures the
//! server knows of.
//!
//! Everything the processes of a job share about restarts goes through the server's
//! data service (`PMIx_Publish` / `PMIx_Lookup`, keys `steadfast.<job>.<what>.<rank>.<g>`):
//!
//! - `inc.R.G` = the namespace of incarnation G (G >= 1) of rank R, published by that
//!   incarnation when it has joined (`Bootstrap::joined`). Every process resolves a rank
//!   to the namespace of its current incarnation with these (a restarted process reads
//!   them all at its start, a survivor when it learns of the rejoin);
//! - `token.R.G` = an attempt number, published with `PMIX_PERSIST_FIRST_READ` by
//!   incarnation 0 of R at its start, and for G >= 1 by the process that spawned G: of
//!   several survivors asking for the restart of (R, G) at once, the one whose lookup
//!   takes the token spawns, the others follow it (one process starts, every request
//!   completes);
//! - `attempt.R.G` = the attempt in flight, and `failed.R.G.N` = why attempt N failed,
//!   published by the token's holder (it publishes the token again, attempt N + 1, so a
//!   later restart can be asked for).
//!
//! A process's state (ended or not) comes from a query of its namespace's process
//! table (`PMIX_QUERY_PROC_TABLE`): it is what `failures` reports and how the spawner
//! sees a new incarnation end before it joins. Open MPI 4.1's `mpirun` (ORTE, with
//! `--enable-recovery`) and Open MPI 5's `mpiexec` (PRRTE) both provide all of it; a
//! server without the data service (Slurm's) cannot restart, and the error says so.
//! The calls to the server are in `pmix_service`.

use super::pmix::{refused, Pmix};
use super::pmix_ffi::Proc;
use super::pmix_service::{ending, Outcome, Seen, SpawnArgs};
use super::{BootstrapError, FailureEvent, Rejoin};
use std::time::{Duration, Instant};

/// In a restarted process: the namespace of the job it rejoins.
pub(super) const JOB_VAR: &str = "STEADFAST_PMIX_JOB";
/// In a restarted process: its rank in that job.
pub(super) const RANK_VAR: &str = "STEADFAST_PMIX_RANK";

/// How long the server may take to see the death a survivor saw first.
const DEATH_WAIT: Duration = Duration::from_secs(5);
/// How long a new incarnation may take to join.
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between two looks at a restart in flight (a lookup is a round trip to the
/// server, ~0.3 ms).
const RESTART_PERIOD: Duration = Duration::from_millis(1);
/// Pause between two queries of a new incarnation's state while it starts.
const STATE_PERIOD: Duration = Duration::from_millis(10);
/// Pause between two queries of the process tables (`failures`).
const FAILURES_PERIOD: Duration = Duration::from_millis(50);
/// Pause between two lookups of the next incarnation of the ranks seen ended.
const REJOINS_PERIOD: Duration = Duration::from_millis(5);

enum Phase {
    /// Waiting for the server to see the incarnation ended.
    Death,
    /// This process holds the token (attempt N); its spawn is in flight.
    Spawning {
        attempt: u32,
        outcome: Outcome,
        _args: SpawnArgs,
    },
    /// Spawned into `nspace`; waiting for it to join.
    Joining {
        attempt: u32,
        nspace: String,
        next_state: Instant,
    },
    /// Another process holds the token: waiting for its outcome.
    Following,
}

struct Restart {
    rank: u32,
    /// The incarnation that failed.
    generation: u32,
    phase: Phase,
    started: Instant,
    next: Instant,
}

/// A process's bookkeeping of incarnations and restarts (see the module's doc).
#[derive(Default)]
pub(super) struct Spawner {
    /// Why this server cannot restart ranks (`None`: it can).
    unavailable: Option<String>,
    /// Per rank, the namespaces of its incarnations 1, 2, ... that joined.
    incarnations: Vec<Vec<String>>,
    /// Per rank, one more than the last incarnation reported ended.
    reported: Vec<u32>,
    next_failures: Option<Instant>,
    next_rejoins: Option<Instant>,
    restart: Option<Restart>,
    answer: Option<Result<Rejoin, BootstrapError>>,
}

impl Spawner {
    fn generation_of(&self, rank: u32) -> u32 {
        self.incarnations
            .get(rank as usize)
            .map_or(0, |v| v.len() as u32)
    }

    /// Where `rank`'s current incarnation publishes.
    pub(super) fn current_proc(&self, job: &str, rank: u32) -> Proc {
        match self.incarnations.get(rank as usize).and_then(|v| v.last()) {
            Some(ns) => Proc::new(ns, 0),
            None => Proc::new(job, rank),
        }
    }

    /// Where each incarnation of `rank` published, newest first.
    pub(super) fn all_procs(&self, job: &str, rank: u32) -> Vec<Proc> {
        let mut v: Vec<Proc> = self
            .incarnations
            .get(rank as usize)
            .into_iter()
            .flatten()
            .rev()
            .map(|ns| Proc::new(ns, 0))
            .collect();
        v.push(Proc::new(job, rank));
        v
    }

    /// Records incarnation `generation` of `rank` in `nspace`; whether it is news.
    fn learn(&mut self, rank: u32, generation: u32, nspace: String) -> bool {
        let Some(v) = self.incarnations.get_mut(rank as usize) else {
            return false;
        };
        if generation as usize != v.len() + 1 {
            return false;
        }
        v.push(nspace);
        true
    }
}

impl Pmix {
    /// The data-service key of `what` about incarnation `generation` of `rank`.
    pub(super) fn key(&self, what: &str, rank: u32, generation: u32) -> String {
        format!("steadfast.{}.{what}.{rank}.{generation}", self.job)
    }

    /// Sets up the bookkeeping: a restarted process reads where every rank's current
    /// incarnation is; a first start publishes its restart token.
    pub(super) fn start_spawner(&mut self) -> Result<(), BootstrapError> {
        let size = self.size_of_job() as usize;
        self.spawner.incarnations = vec![Vec::new(); size];
        self.spawner.reported = vec![0; size];
        let me = self.world_rank();
        let generation = super::Bootstrap::generation(self);
        if generation == 0 {
            let token = self.key("token", me, 0);
            if let Err(why) = self.publish(&token, "0", true) {
                log::debug!("PMIx: no restarts: {why}");
                self.spawner.unavailable = Some(format!(
                    "restarting under PMIx needs the server's data service (PMIx_Publish and PMIx_Lookup), which this one refuses ({why})"
                ));
            }
            return Ok(());
        }
        let mut scanning: Vec<u32> = (0..size as u32).collect();
        let mut g = 1;
        while !scanning.is_empty() {
            let keys: Vec<String> = scanning.iter().map(|&r| self.key("inc", r, g)).collect();
            let found = self.lookup_many(&keys).map_err(refused)?;
            let mut next = Vec::new();
            for (&r, ns) in scanning.iter().zip(found) {
                if let Some(ns) = ns {
                    self.spawner.learn(r, g, ns);
                    next.push(r);
                }
            }
            scanning = next;
            g += 1;
        }
        let mine = &mut self.spawner.incarnations[me as usize];
        if mine.len() + 1 != generation as usize {
            log::warn!(
                "PMIx: incarnation {generation} of rank {me} found {} earlier ones joined",
                mine.len()
            );
        }
        mine.resize(generation as usize - 1, self.job.clone());
        mine.push(self.me.nspace());
        Ok(())
    }

    fn size_of_job(&self) -> u32 {
        super::Bootstrap::size(self)
    }

    /// A restarted process tells the others where it is (`inc.R.G`).
    pub(super) fn announce_joined(&mut self) -> Result<(), BootstrapError> {
        let generation = super::Bootstrap::generation(self);
        if generation == 0 {
            return Ok(());
        }
        let key = self.key("inc", self.world_rank(), generation);
        self.publish(&key, &self.me.nspace(), false)
            .map_err(|why| refused(format!("cannot tell the job this process joined: {why}")))
    }

    /// The state of `rank`'s current incarnation as known here (`None`: gone from its
    /// job's process table).
    fn state_of(&self, rank: u32) -> Result<Option<Seen>, String> {
        let p = self.spawner.current_proc(&self.job, rank);
        let states = self.proc_states(&p.nspace())?;
        Ok(states.iter().find(|s| s.0 == p.rank).map(|s| s.1))
    }

    /// Failures the server knows of: each rank's current incarnation seen ended (a
    /// query of the process tables at most every `FAILURES_PERIOD`, waiting up to
    /// `wait` for one).
    pub(super) fn poll_failures(
        &mut self,
        wait: Duration,
    ) -> Result<Vec<FailureEvent>, BootstrapError> {
        let deadline = Instant::now() + wait;
        loop {
            let now = Instant::now();
            if self.spawner.next_failures.is_none_or(|t| now >= t) {
                self.spawner.next_failures = Some(now + FAILURES_PERIOD);
                let events = self.scan_failures();
                if !events.is_empty() {
                    return Ok(events);
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
        }
    }

    fn scan_failures(&mut self) -> Vec<FailureEvent> {
        let me = self.world_rank();
        let size = self.size_of_job();
        let mut tables: Vec<(String, Vec<(u32, Seen)>)> = Vec::new();
        let mut events = Vec::new();
        for r in (0..size).filter(|&r| r != me) {
            let g = self.spawner.generation_of(r);
            if self.spawner.reported[r as usize] > g {
                continue;
            }
            let p = self.spawner.current_proc(&self.job, r);
            let ns = p.nspace();
            if !tables.iter().any(|t| t.0 == ns) {
                match self.proc_states(&ns) {
                    Ok(s) => tables.push((ns.clone(), s)),
                    Err(why) => {
                        log::debug!("PMIx: {why}");
                        continue;
                    }
                }
            }
            let table = &tables.iter().find(|t| t.0 == ns).expect("queried above").1;
            let state = table.iter().find(|s| s.0 == p.rank).map(|s| s.1);
            if let Some(how) = ending(state) {
                self.spawner.reported[r as usize] = g + 1;
                events.push(FailureEvent {
                    rank: r,
                    generation: g,
                    how,
                });
            }
        }
        events
    }

    /// Ranks seen ended here whose next incarnation has joined since (a lookup at most
    /// every `REJOINS_PERIOD`, only while some rank is seen ended).
    pub(super) fn poll_rejoins(&mut self) -> Vec<Rejoin> {
        let size = self.size_of_job();
        let watched: Vec<u32> = (0..size)
            .filter(|&r| self.spawner.reported[r as usize] > self.spawner.generation_of(r))
            .collect();
        let now = Instant::now();
        if watched.is_empty() || self.spawner.next_rejoins.is_some_and(|t| now < t) {
            return Vec::new();
        }
        self.spawner.next_rejoins = Some(now + REJOINS_PERIOD);
        let keys: Vec<String> = watched
            .iter()
            .map(|&r| self.key("inc", r, self.spawner.generation_of(r) + 1))
            .collect();
        let found = match self.lookup_many(&keys) {
            Ok(f) => f,
            Err(why) => {
                log::debug!("PMIx: {why}");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (&r, ns) in watched.iter().zip(found) {
            let g = self.spawner.generation_of(r) + 1;
            if let Some(ns) = ns {
                if self.spawner.learn(r, g, ns) {
                    out.push(Rejoin {
                        rank: r,
                        generation: g,
                        pid: 0,
                    });
                }
            }
        }
        out
    }

    /// Begins the restart of incarnation `generation` of `rank` (see the module's doc).
    pub(super) fn begin_restart(
        &mut self,
        rank: u32,
        generation: u32,
    ) -> Result<(), BootstrapError> {
        if let Some(why) = &self.spawner.unavailable {
            return Err(BootstrapError::NoSpawner {
                rank,
                why: format!(
                    "{why}; to restart ranks, run the job under Open MPI's mpirun --enable-recovery (Open MPI 5: mpiexec --with-ft ulfm), or run the job under steadfast-run (on one node; under Slurm, inside the allocation)"
                ),
            });
        }
        if self.spawner.restart.is_some() || self.spawner.answer.is_some() {
            return Err(refused(
                "a restart is already in progress from this process; poll it first",
            ));
        }
        if rank >= self.size_of_job() || rank == self.world_rank() {
            return Err(refused(format!(
                "cannot restart rank {rank}: not another rank of a job of {}",
                self.size_of_job()
            )));
        }
        let current = self.spawner.generation_of(rank);
        if current > generation {
            self.spawner.answer = Some(Ok(Rejoin {
                rank,
                generation: current,
                pid: 0,
            }));
            return Ok(());
        }
        let now = Instant::now();
        self.spawner.restart = Some(Restart {
            rank,
            generation,
            phase: Phase::Death,
            started: now,
            next: now,
        });
        Ok(())
    }

    /// The outcome of the restart in flight, if known within `wait`.
    pub(super) fn poll_restart(
        &mut self,
        wait: Duration,
    ) -> Option<Result<Rejoin, BootstrapError>> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(a) = self.spawner.answer.take() {
                return Some(a);
            }
            let mut r = self.spawner.restart.take()?;
            let now = Instant::now();
            if now >= r.next {
                r.next = now + RESTART_PERIOD;
                match self.step(&mut r) {
                    Some(a) => return Some(a),
                    None => self.spawner.restart = Some(r),
                }
            } else {
                self.spawner.restart = Some(r);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep((deadline - now).min(RESTART_PERIOD));
        }
    }

    /// One look at restart `r`: its outcome, or `None` while it runs.
    fn step(&mut self, r: &mut Restart) -> Option<Result<Rejoin, BootstrapError>> {
        let (rank, g) = (r.rank, r.generation);
        let failed = |why: String| Some(Err(BootstrapError::RestartFailed { rank, why }));
        let next = self.key("inc", rank, g + 1);
        match self.lookup_many(std::slice::from_ref(&next)) {
            Ok(mut found) => {
                if let Some(ns) = found.pop().flatten() {
                    self.spawner.learn(rank, g + 1, ns);
                    let generation = self.spawner.generation_of(rank);
                    return Some(Ok(Rejoin {
                        rank,
                        generation,
                        pid: 0,
                    }));
                }
            }
            Err(why) => return failed(why),
        }
        if r.started.elapsed() > JOIN_TIMEOUT {
            let mut why = format!("incarnation {} did not join within {JOIN_TIMEOUT:?}", g + 1);
            return match &r.phase {
                Phase::Joining {
                    attempt, nspace, ..
                } => {
                    // A process that never joins must not hold the job (once seen
                    // hanging in PMIx_Init): it is killed if it runs here.
                    if let Some(pid) = self.kill_unjoined(nspace) {
                        why.push_str(&format!(" (killed: pid {pid})"));
                    }
                    Some(Err(self.give_up(rank, g, *attempt, why)))
                }
                Phase::Spawning { attempt, .. } => Some(Err(self.give_up(rank, g, *attempt, why))),
                _ => failed(why),
            };
        }
        match &mut r.phase {
            Phase::Death => match self.state_of(rank) {
                Err(why) => failed(why),
                Ok(s) if ending(s).is_some() => {
                    match self.lookup_many(&[self.key("token", rank, g)]) {
                        Err(why) => failed(why),
                        Ok(mut t) => match t.pop().flatten() {
                            None => {
                                r.phase = Phase::Following;
                                None
                            }
                            Some(n) => {
                                let attempt = n.parse().unwrap_or(0);
                                match self.spawn(rank, g, attempt) {
                                    Ok((outcome, args)) => {
                                        r.phase = Phase::Spawning {
                                            attempt,
                                            outcome,
                                            _args: args,
                                        };
                                        None
                                    }
                                    Err(why) => Some(Err(self.give_up(rank, g, attempt, why))),
                                }
                            }
                        },
                    }
                }
                Ok(_) if r.started.elapsed() > DEATH_WAIT => Some(Err(refused(format!(
                    "cannot restart rank {rank}: incarnation {g} is alive (the PMIx server has not seen it end within {DEATH_WAIT:?})"
                )))),
                Ok(_) => None,
            },
            Phase::Spawning {
                attempt, outcome, ..
            } => {
                let attempt = *attempt;
                let done = outcome.lock().ok().and_then(|mut o| o.take());
                match done {
                    None => None,
                    Some(Err(rc)) => Some(Err(self.give_up(
                        rank,
                        g,
                        attempt,
                        format!("PMIx_Spawn failed with status {rc}"),
                    ))),
                    Some(Ok(nspace)) => {
                        let token = self.key("token", rank, g + 1);
                        if let Err(why) = self.publish(&token, "0", true) {
                            log::warn!("PMIx: incarnation {} of rank {rank} cannot be restarted later: {why}", g + 1);
                        }
                        log::debug!("PMIx: incarnation {} of rank {rank} spawned as {nspace}", g + 1);
                        r.phase = Phase::Joining {
                            attempt,
                            nspace,
                            next_state: Instant::now() + STATE_PERIOD,
                        };
                        None
                    }
                }
            }
            Phase::Joining {
                attempt,
                nspace,
                next_state,
            } => {
                if Instant::now() < *next_state {
                    return None;
                }
                *next_state = Instant::now() + STATE_PERIOD;
                let (attempt, nspace) = (*attempt, nspace.clone());
                match self.proc_states(&nspace) {
                    Ok(s) => ending(s.iter().find(|s| s.0 == 0).map(|s| s.1)).map(|how| {
                        let why = format!(
                            "incarnation {} of rank {rank} ended before it joined ({how})",
                            g + 1
                        );
                        Err(self.give_up(rank, g, attempt, why))
                    }),
                    Err(why) => {
                        log::debug!("PMIx: {why}");
                        None
                    }
                }
            }
            Phase::Following => {
                let keys = [self.key("attempt", rank, g)];
                let attempt = match self.lookup_many(&keys) {
                    Ok(mut a) => a.pop().flatten(),
                    Err(why) => return failed(why),
                };
                let note = attempt.map(|n| format!("{}.{n}", self.key("failed", rank, g)));
                match note.map(|k| self.lookup_many(&[k])) {
                    Some(Ok(mut w)) => w.pop().flatten().and_then(failed),
                    Some(Err(why)) => failed(why),
                    None => None,
                }
            }
        }
    }

    /// SIGKILLs the process of namespace `nspace` (a new incarnation that did not join
    /// in time) if it runs on this host and has not ended; its pid.
    fn kill_unjoined(&self, nspace: &str) -> Option<libc::pid_t> {
        let states = self.proc_states(nspace).ok()?;
        let seen = states.iter().find(|s| s.0 == 0)?.1;
        if !seen.local || seen.pid <= 0 || ending(Some(seen)).is_some() {
            return None;
        }
        log::warn!(
            "PMIx: killing pid {} of {nspace}: it did not join",
            seen.pid
        );
        // SAFETY: a signal to the process the server names as this new incarnation.
        unsafe { libc::kill(seen.pid, libc::SIGKILL) };
        Some(seen.pid)
    }

    /// Ends attempt `attempt` of the restart of (`rank`, `g`) as failed: tells the
    /// followers why and puts the token back for the next attempt.
    fn give_up(&mut self, rank: u32, g: u32, attempt: u32, why: String) -> BootstrapError {
        let note = format!("{}.{attempt}", self.key("failed", rank, g));
        if let Err(e) = self.publish(&note, &why, false) {
            log::warn!("PMIx: the other askers are not told why the restart failed: {e}");
        }
        let token = self.key("token", rank, g);
        if let Err(e) = self.publish(&token, &(attempt + 1).to_string(), true) {
            log::warn!("PMIx: rank {rank} cannot be restarted again: {e}");
        }
        BootstrapError::RestartFailed { rank, why }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_resolve_to_their_current_incarnation() {
        let mut s = Spawner {
            incarnations: vec![Vec::new(); 3],
            ..Spawner::default()
        };
        assert_eq!(s.current_proc("job", 2).nspace(), "job");
        assert_eq!(s.current_proc("job", 2).rank, 2);
        assert!(!s.learn(2, 2, "skip".into()), "incarnation 1 first");
        assert!(s.learn(2, 1, "job.1".into()));
        assert!(!s.learn(2, 1, "again".into()), "known already");
        assert!(s.learn(2, 2, "job.2".into()));
        let p = s.current_proc("job", 2);
        assert_eq!((p.nspace().as_str(), p.rank), ("job.2", 0));
        let all: Vec<String> = s.all_procs("job", 2).iter().map(Proc::nspace).collect();
        assert_eq!(all, ["job.2", "job.1", "job"]);
        assert_eq!(s.generation_of(2), 2);
        assert_eq!(s.generation_of(1), 0);
        assert!(!s.learn(7, 1, "out of range".into()));
    }
}
