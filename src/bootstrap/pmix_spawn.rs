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

use super::pmix::{refused, Pmix};
use super::pmix_ffi::{
    key_array, App, Info, PData, Proc, ProcInfo, Query, Value, PMIX_DATA_ARRAY, PMIX_ERR_NOT_FOUND,
    PMIX_ERR_PARTIAL_SUCCESS, PMIX_INFO, PMIX_PERSIST_FIRST_READ, PMIX_PERSIST_SESSION,
    PMIX_PROC_INFO, PMIX_PROC_STATE_TERMINATED, PMIX_SUCCESS,
};
use super::{BootstrapError, FailureEvent, Rejoin};
use std::ffi::{c_char, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};
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

/// The outcome of a `PMIx_Spawn_nb`, filled by its callback: the new namespace or the
/// server's status.
type Outcome = Arc<Mutex<Option<Result<String, i32>>>>;

/// What a spawn passes to the server, kept alive until its callback ran.
struct SpawnArgs {
    _strings: Vec<CString>,
    _argv: Vec<*mut c_char>,
    _env: Vec<*mut c_char>,
    _app: Box<App>,
}

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

/// Names a process state of `pmix_common.h`.
fn state_name(state: u8) -> &'static str {
    match state {
        20 => "terminated",
        51 => "killed by command",
        52 => "aborted",
        53 => "failed to start",
        54 => "aborted by signal",
        55 => "exited without finalizing",
        56 => "communication failed",
        58 => "called abort",
        62 => "exited with a non-zero status",
        63 => "failed to launch",
        _ => "ended",
    }
}

/// A process as its job's process table shows it.
#[derive(Clone, Copy, Debug)]
struct Seen {
    state: u8,
    pid: libc::pid_t,
}

/// How the process `seen` ended, if it has (`None`: gone from its job's process table,
/// which is an end too). ORTE shows a process that ended normally (it finalized) as
/// `PMIX_PROC_STATE_UNDEF` with its pid, where one not started yet has pid 0.
fn ending(seen: Option<Seen>) -> Option<String> {
    match seen {
        None => Some("gone from the PMIx server's process table".into()),
        Some(Seen { state: 0, pid }) if pid > 0 => Some(format!(
            "PMIx process state 0 with pid {pid}: ended normally"
        )),
        Some(Seen { state, .. }) if state >= PMIX_PROC_STATE_TERMINATED => {
            Some(format!("PMIx process state {state}: {}", state_name(state)))
        }
        Some(_) => None,
    }
}

/// The PMIx_Spawn_nb callback: records the outcome.
///
/// # Safety
/// `cbdata` is an `Outcome` given up by `Arc::into_raw`, passed once; `nspace` is NULL
/// or a C string.
unsafe extern "C" fn spawned(status: i32, nspace: *mut c_char, cbdata: *mut c_void) {
    // SAFETY: the reference `spawn` gave up for this one call (contract above).
    let outcome = unsafe { Arc::from_raw(cbdata as *const Mutex<Option<Result<String, i32>>>) };
    let r = if status == PMIX_SUCCESS && !nspace.is_null() {
        // SAFETY: a C string from the server, valid during the callback.
        Ok(unsafe { CStr::from_ptr(nspace) }
            .to_string_lossy()
            .into_owned())
    } else {
        Err(status)
    };
    if let Ok(mut o) = outcome.lock() {
        *o = Some(r);
    };
}

fn cstring(s: impl Into<Vec<u8>>) -> Result<CString, BootstrapError> {
    CString::new(s).map_err(|_| refused("a spawn argument holds a NUL"))
}

/// The variables a restarted process must get from its own launch, not its parent.
fn launcher_variable(name: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 6] = [b"PMIX_", b"OMPI_", b"ORTE_", b"OPAL_", b"PRTE_", b"PRRTE_"];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || [
            b"STEADFAST_GENERATION".as_slice(),
            JOB_VAR.as_bytes(),
            RANK_VAR.as_bytes(),
        ]
        .contains(&name)
}

impl Pmix {
    fn key(&self, what: &str, rank: u32, generation: u32) -> String {
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

    /// PMIx_Publish of one string, kept for the session; `first_read`: deleted by the
    /// first lookup.
    fn publish(&self, key: &str, value: &str, first_read: bool) -> Result<(), String> {
        let k = CString::new(key).map_err(|_| format!("key {key:?} holds a NUL"))?;
        let v = CString::new(value).map_err(|_| format!("value {value:?} holds a NUL"))?;
        let persistence = if first_read {
            PMIX_PERSIST_FIRST_READ
        } else {
            PMIX_PERSIST_SESSION
        };
        let infos = [
            Info::string(&k, &v),
            Info::persistence(c"pmix.persist", persistence),
        ];
        // SAFETY: an array of `len` infos whose strings outlive the call.
        let rc = unsafe { (self.api.publish)(infos.as_ptr(), infos.len()) };
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx_Publish({key}) failed with status {rc}"));
        }
        Ok(())
    }

    /// PMIx_Lookup of string values, never waiting: each key's value if published.
    fn lookup_many(&self, keys: &[String]) -> Result<Vec<Option<String>>, String> {
        let mut data: Vec<PData> = keys
            .iter()
            .map(|k| PData {
                proc_: Proc::new("", 0),
                key: key_array(k.as_bytes()),
                value: Value::undef(),
            })
            .collect();
        // SAFETY: an array of `len` pdata with NUL-terminated keys; no info.
        let rc = unsafe { (self.api.lookup)(data.as_mut_ptr(), data.len(), std::ptr::null(), 0) };
        if rc == PMIX_ERR_NOT_FOUND {
            return Ok(vec![None; keys.len()]);
        }
        if rc == PMIX_ERR_PARTIAL_SUCCESS && keys.len() > 1 {
            // PRRTE fills none of them then: one lookup per key.
            let mut out = Vec::with_capacity(keys.len());
            for k in keys {
                out.extend(self.lookup_many(std::slice::from_ref(k))?);
            }
            return Ok(out);
        }
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx_Lookup failed with status {rc}"));
        }
        let mut out = Vec::with_capacity(keys.len());
        for d in &mut data {
            out.push(d.value.string());
            if d.value.kind != 0 {
                // SAFETY: a value PMIx filled in; destructed once, not used after.
                unsafe { (self.api.destruct)(&mut d.value) };
            }
        }
        Ok(out)
    }

    /// The state of each process of namespace `nspace` (rank, `pmix_proc_state_t`),
    /// from a query of its process table; a process missing from it has ended (ORTE
    /// forgets a spawned job once its process has exited).
    fn proc_states(&self, nspace: &str) -> Result<Vec<(u32, Seen)>, String> {
        let ns = CString::new(nspace).map_err(|_| "a namespace holds a NUL".to_string())?;
        let table = c"pmix.qry.ptable";
        let mut keys = [table.as_ptr() as *mut c_char, std::ptr::null_mut()];
        let mut qualifiers = [Info::string(c"pmix.nspace", &ns)];
        let mut query = Query {
            keys: keys.as_mut_ptr(),
            qualifiers: qualifiers.as_mut_ptr(),
            nqual: 1,
        };
        let mut results: *mut Info = std::ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: one query whose arrays outlive the call; PMIx allocates the results.
        let rc = unsafe { (self.api.query)(&mut query, 1, &mut results, &mut n) };
        if rc == PMIX_ERR_NOT_FOUND {
            // A job whose processes all ended may be forgotten by the server.
            return Ok(Vec::new());
        }
        if rc != PMIX_SUCCESS {
            return Err(format!(
                "PMIx_Query_info(process table of {nspace}) failed with status {rc}"
            ));
        }
        let mut states = Vec::new();
        for i in 0..n {
            // SAFETY: `results` holds `n` infos from the server; each data array holds
            // `size` elements of its type (process infos, or infos holding pointers to
            // process infos: ORTE answers the latter, PRRTE the former).
            unsafe {
                let info = &mut *results.add(i);
                if info.value.kind == PMIX_DATA_ARRAY && !info.value.data.darray.is_null() {
                    let da = &*info.value.data.darray;
                    for j in 0..da.size {
                        let p: *const ProcInfo = match da.kind {
                            PMIX_PROC_INFO => (da.array as *const ProcInfo).add(j),
                            PMIX_INFO => {
                                let inner = &*(da.array as *const Info).add(j);
                                if inner.value.kind != PMIX_PROC_INFO {
                                    continue;
                                }
                                inner.value.data.pinfo
                            }
                            _ => break,
                        };
                        if !p.is_null() {
                            states.push((
                                (*p).proc_.rank,
                                Seen {
                                    state: (*p).state,
                                    pid: (*p).pid,
                                },
                            ));
                        }
                    }
                }
                (self.api.destruct)(&mut info.value);
            }
        }
        if !results.is_null() {
            // SAFETY: the array PMIx allocated (PMIX_INFO_FREE after the destructs).
            unsafe { libc::free(results.cast()) };
        }
        Ok(states)
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
            let why = format!("incarnation {} did not join within {JOIN_TIMEOUT:?}", g + 1);
            return match r.phase {
                Phase::Spawning { attempt, .. } | Phase::Joining { attempt, .. } => {
                    Some(Err(self.give_up(rank, g, attempt, why)))
                }
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
                                    Ok(phase) => {
                                        r.phase = phase;
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

    /// Spawns incarnation `g + 1` of `rank` (attempt `attempt`): this program, its
    /// arguments, working directory and environment (without the launcher's own
    /// variables), told which rank of which job it is.
    fn spawn(&mut self, rank: u32, g: u32, attempt: u32) -> Result<Phase, String> {
        let attempt_key = self.key("attempt", rank, g);
        self.publish(&attempt_key, &attempt.to_string(), false)?;
        let mut strings = Vec::new();
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
        let cmd = cstring(exe.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let cwd = cstring(cwd.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let mut argv = Vec::new();
        for a in std::env::args_os() {
            strings.push(cstring(a.as_bytes()).map_err(|e| e.to_string())?);
            argv.push(strings.last().expect("pushed").as_ptr() as *mut c_char);
        }
        argv.push(std::ptr::null_mut());
        let mut vars: Vec<Vec<u8>> = std::env::vars_os()
            .filter(|(k, _)| !launcher_variable(k.as_bytes()))
            .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        vars.push(format!("STEADFAST_GENERATION={}", g + 1).into_bytes());
        vars.push(format!("{JOB_VAR}={}", self.job).into_bytes());
        vars.push(format!("{RANK_VAR}={rank}").into_bytes());
        if std::env::var_os("STEADFAST_JOB_ID").is_none() {
            // Rank 0's job id names the segments: a restarted rank 0 needs it.
            if let Ok(Some(job)) = super::Bootstrap::lookup(self, 0, "job") {
                if let Ok(b) = <[u8; 8]>::try_from(job.as_slice()) {
                    vars.push(format!("STEADFAST_JOB_ID={:x}", u64::from_le_bytes(b)).into_bytes());
                }
            }
        }
        let mut env = Vec::new();
        for v in vars {
            strings.push(cstring(v).map_err(|e| e.to_string())?);
            env.push(strings.last().expect("pushed").as_ptr() as *mut c_char);
        }
        env.push(std::ptr::null_mut());
        let app = Box::new(App {
            cmd: cmd.as_ptr() as *mut c_char,
            argv: argv.as_mut_ptr(),
            env: env.as_mut_ptr(),
            cwd: cwd.as_ptr() as *mut c_char,
            maxprocs: 1,
            info: std::ptr::null_mut(),
            ninfo: 0,
        });
        strings.push(cmd);
        strings.push(cwd);
        let outcome: Outcome = Arc::new(Mutex::new(None));
        let cb = Arc::into_raw(outcome.clone()) as *mut c_void;
        // SAFETY: one app whose strings and arrays live in `SpawnArgs` until the
        // callback ran (the phase keeps them); `cb` is given up to `spawned`, which
        // takes it back once; if the call fails, no callback runs and it is taken
        // back here.
        let rc = unsafe { (self.api.spawn_nb)(std::ptr::null(), 0, &*app, 1, spawned, cb) };
        if rc != PMIX_SUCCESS {
            // SAFETY: the reference given up above, never passed to a callback.
            drop(unsafe { Arc::from_raw(cb as *const Mutex<Option<Result<String, i32>>>) });
            return Err(format!("PMIx_Spawn_nb failed with status {rc}"));
        }
        Ok(Phase::Spawning {
            attempt,
            outcome,
            _args: SpawnArgs {
                _strings: strings,
                _argv: argv,
                _env: env,
                _app: app,
            },
        })
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

    #[test]
    fn the_launchers_variables_are_not_passed_on() {
        assert!(launcher_variable(b"PMIX_RANK"));
        assert!(launcher_variable(b"OMPI_COMM_WORLD_RANK"));
        assert!(launcher_variable(b"STEADFAST_GENERATION"));
        assert!(launcher_variable(JOB_VAR.as_bytes()));
        assert!(!launcher_variable(b"STEADFAST_ROUTE"));
        assert!(!launcher_variable(b"PATH"));
    }
}
