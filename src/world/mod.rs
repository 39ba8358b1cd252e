//! The world: this process's place in the job, its transports and its progress engine.
//!
//! [`World::init`] bootstraps from the launcher's environment, exchanges node
//! identities to build the node map (same node: shared memory; otherwise: the fabric),
//! opens the transports the map needs, and returns the world with its communicator
//! [`World::comm`]. Dropping the world (or [`World::finalize`]) never waits on a dead
//! rank.

pub(crate) mod engine;
pub(crate) mod matching;
mod posts;
mod restored;
pub(crate) mod shared;
pub(crate) mod spares;
pub mod tags;

use std::sync::Arc;
use std::time::Duration;

use steadfast_agreement::detector::{Detector, DetectorConfig, DetectorError};
use steadfast_agreement::{CommId, CommKey, Epoch, Rank};
use steadfast_fabric::{FabricConfig, Messenger, MessengerConfig, DEFAULT_ARRIVAL_POOL};
use steadfast_shm::{Endpoint as ShmEndpoint, EndpointConfig};

use crate::bootstrap::{self, Bootstrap, BootstrapError};
use crate::params::{self, ParamError, Params};
use engine::{Engine, EngineParts};
pub use engine::{FailureNote, Route, Stats};
use shared::{ProgressThread, Shared};

/// The id of the world communicator.
pub const WORLD_COMM: CommId = CommId(1);
/// The context of the world communicator's messages.
pub const WORLD_CTX: u64 = 1;

/// Why [`World::init`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    /// No launcher, or the launcher failed.
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    /// A bad parameter, or parameters that differ between ranks.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The failure detector cannot run with these timings.
    #[error("failure detector: {0}")]
    Detector(#[from] DetectorError),
    /// The fabric could not be opened or a peer's address was bad.
    #[error("fabric: {0}")]
    Fabric(#[from] steadfast_fabric::Error),
    /// Shared memory could not be set up.
    #[error("shared memory: {0}")]
    Shm(#[from] steadfast_shm::ShmError),
    /// The progress thread could not be started.
    #[error("cannot start the progress thread: {0}")]
    Thread(#[source] std::io::Error),
    /// This process is a restarted incarnation, and something it needs to rejoin the
    /// job is not available (see `docs/restart.md`).
    #[error("cannot rejoin the job as a restarted process: {0}")]
    Rejoin(String),
    /// A peer published something unusable.
    #[error("rank {rank} published a bad {what}")]
    BadPeerData {
        /// The peer.
        rank: u32,
        /// Which key.
        what: &'static str,
    },
}

/// This process's identity of its node: `STEADFAST_NODE_ID` if set, else hostname plus
/// boot id (two containers of one kernel with different hostnames are different
/// nodes; namespaces used as test "hosts" set the parameter).
fn node_identity(params: &Params) -> String {
    if let Some(set) = params.node_id() {
        return set.to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}/{}", host.trim(), steadfast_os::boot_id())
}

/// FNV-1a over `bytes`: the runtime's one hash for ids derived identically on every
/// rank (job segments; communicators call [`steadfast_os::fnv1a64`] by name).
pub(crate) use steadfast_os::fnv1a64 as fnv1a;

/// The id of the shared-memory segments of `job` on `node` (their names are
/// `steadfast-<id>-<rank>`); `steadfast-run` derives it too, to remove them.
pub(crate) fn shm_segment_job(job: u64, node: &[u8]) -> u64 {
    fnv1a(&[job.to_le_bytes().as_slice(), node].concat())
}

/// The job id `steadfast-run` chose (`STEADFAST_JOB_ID`, hex), if it did.
fn launcher_job_id() -> Option<u64> {
    u64::from_str_radix(&std::env::var("STEADFAST_JOB_ID").ok()?, 16).ok()
}

/// Cores this process may run on.
fn cores_available() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A job id drawn by rank 0: random enough that two jobs on one node never share
/// segment names.
fn fresh_job_id() -> u64 {
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        b = (t.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)).to_le_bytes();
    }
    u64::from_le_bytes(b)
}

/// The world of one process (see the module doc). Not `Send`: it lives on the thread
/// that created it.
pub struct World {
    engine: Arc<Shared>,
    generation: u32,
    /// Ranks started with the job (the others are spare slots).
    started: u32,
    params: Params,
    provider: Option<String>,
    /// `steadfast-<segment id>-`: see [`World::segment_prefix`].
    segment_prefix: String,
    progress_thread: Option<ProgressThread>,
    /// Not Send: the application's side of the engine stays on one thread.
    _local: std::marker::PhantomData<*const ()>,
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(t) = self.progress_thread.take() {
            t.stop();
        }
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.engine.lock();
        f.debug_struct("World")
            .field("rank", &e.rank())
            .field("size", &e.size())
            .finish_non_exhaustive()
    }
}

impl World {
    /// Bootstraps from the environment (see [`bootstrap::from_env`]) with the
    /// parameters of [`Params::load`].
    ///
    /// # Errors
    /// [`InitError`] naming what failed.
    pub fn init() -> Result<World, InitError> {
        let params = Params::load()?;
        if params.pmi_failure_signal() {
            // Before connecting: Hydra may signal a failure from then on.
            bootstrap::pmi1::tolerate_failure_signal_if_launched();
        }
        let boot = bootstrap::from_env()?;
        Self::init_with(boot, params)
    }

    /// Bootstraps over `boot` with `params`.
    ///
    /// # Errors
    /// [`InitError`] naming what failed.
    pub fn init_with(mut boot: Box<dyn Bootstrap>, params: Params) -> Result<World, InitError> {
        let (rank, size) = (boot.rank(), boot.size());
        // A restarted incarnation (see `docs/restart.md`) joins the surviving job:
        // the others are past their fences, so it never fences.
        let generation = boot.generation();
        let restored = generation > 0;
        if params.provider_environment() {
            // Before the first libfabric call (`provider_environment`, default on).
            steadfast_fabric::apply_quirk_environment();
        }
        // Checked before any traffic: the conversion to nanoseconds cannot wrap.
        let detector = Detector::new(
            Rank(rank),
            size,
            DetectorConfig::from_millis(params.heartbeat_ms(), params.detect_timeout_ms())?,
        )?;
        let detectors = match params.detectors() {
            params::Detectors::Launcher => engine::Detectors::Launcher,
            params::Detectors::Heartbeat => engine::Detectors::Heartbeat,
            _ => engine::Detectors::All,
        };

        // A provider named explicitly must exist, even if no peer needs the fabric.
        if params.get("provider").map(|(_, s)| s) != Some(&params::Source::Default) {
            let available = steadfast_fabric::available_providers()?;
            steadfast_fabric::resolve_provider(params.provider(), &available)?;
        }

        // Node map.
        let node = node_identity(&params);
        boot.put("node", node.as_bytes())?;
        restored::keep_node(&mut *boot, node.as_bytes())?;
        // The kernel we run on, whatever node id was set: counts the ranks sharing
        // these cores.
        let host = steadfast_fabric::liveness::host_identity().to_le_bytes();
        boot.put("host", &host)?;
        boot.put(params::consistency::KEY, &params.agreed_encoding())?;
        boot.put("gen", &generation.to_le_bytes())?;
        // Read by `Comm::abort` to kill this process (same host only).
        boot.put("pid", &std::process::id().to_le_bytes())?;
        if rank == 0 {
            let job = match (launcher_job_id(), restored) {
                (Some(job), _) => job,
                (None, false) => fresh_job_id(),
                (None, true) => {
                    return Err(InitError::Rejoin(
                        "rank 0 restarted without STEADFAST_JOB_ID: its job id is lost".into(),
                    ))
                }
            };
            boot.put("job", &job.to_le_bytes())?;
        }
        // A restarted process: the ranks dead now (the launcher tells a connecting
        // rank, before the answers above), with their incarnations.
        let mut dead: Vec<(u32, u32)> = Vec::new();
        // The universe's spare slots (`spares`): dead with no values until spawned.
        let started = spares::started_ranks(size);
        if !restored {
            dead = spares::slots(started, size);
        }
        if restored {
            for ev in boot.failures(Duration::ZERO)? {
                dead.push((ev.rank, ev.generation));
            }
        } else {
            boot.fence()?;
        }
        let mut generations = vec![0u32; size as usize];
        generations[rank as usize] = generation;
        if restored {
            for r in 0..size {
                if let Some(&(_, g)) = dead.iter().find(|&&(d, _)| d == r) {
                    generations[r as usize] = g;
                } else if r != rank {
                    // None: it died meanwhile, with its keys dropped (the launcher's
                    // failure event tells its incarnation later).
                    if let Some(g) = restored::peer_value(&mut *boot, true, &mut dead, r, "gen")? {
                        generations[r as usize] =
                            u32::from_le_bytes(g.as_slice().try_into().map_err(|_| {
                                InitError::BadPeerData {
                                    rank: r,
                                    what: "generation",
                                }
                            })?);
                    }
                }
            }
            for d in &mut dead {
                d.1 = d.1.max(generations[d.0 as usize]);
            }
        }
        // A rank's value; in a restarted process, `None` for a dead rank that left none
        // (see `restored`).
        let peer = restored::peer_value;
        // Every rank compares every rank's values, so a mismatch stops them all here
        // (a dead rank that left none cannot disagree).
        let mine = params.agreed_encoding();
        let mut agreed = Vec::with_capacity(size as usize);
        for r in 0..size {
            agreed.push(if r == rank {
                mine.clone()
            } else {
                peer(&mut *boot, restored, &mut dead, r, params::consistency::KEY)?
                    .unwrap_or_else(|| mine.clone())
            });
        }
        params::consistency::compare(&agreed)?;
        let job_bytes = match launcher_job_id() {
            Some(job) if restored => job.to_le_bytes().to_vec(),
            _ => peer(&mut *boot, restored, &mut dead, 0, "job")?.ok_or_else(|| {
                InitError::Rejoin("rank 0 is dead and its job id is unknown".into())
            })?,
        };
        let job = u64::from_le_bytes(job_bytes.as_slice().try_into().map_err(|_| {
            InitError::BadPeerData {
                rank: 0,
                what: "job id",
            }
        })?);
        let segment_prefix = format!("steadfast-{:016x}-", shm_segment_job(job, node.as_bytes()));
        let mut nodes: Vec<Vec<u8>> = Vec::with_capacity(size as usize);
        let mut host_ranks = Vec::new();
        for r in 0..size {
            let spare = r >= started;
            nodes.push(if r == rank {
                node.as_bytes().to_vec()
            } else if restored {
                match restored::peer_node(&mut *boot, &mut dead, r)? {
                    Some(n) => n,
                    // A spare slot never started: on rank 0's node (`spares`).
                    None if spare => nodes[0].clone(),
                    None => {
                        return Err(InitError::Rejoin(format!(
                            "rank {r} is dead and its node is unknown"
                        )))
                    }
                }
            } else if spare {
                nodes[0].clone()
            } else {
                boot.get(r, "node")?
            });
            if spare && r == rank && rank > 0 && nodes[rank as usize] != nodes[0] {
                return Err(InitError::Rejoin(format!(
                    "spawned rank {rank} runs on another node than rank 0 ({:?}, not {:?}): \
                     the launcher's spare slots are on rank 0's node",
                    String::from_utf8_lossy(&nodes[rank as usize]),
                    String::from_utf8_lossy(&nodes[0])
                )));
            }
            if r == rank
                || peer(&mut *boot, restored, &mut dead, r, "host")?.is_some_and(|h| h == host)
            {
                host_ranks.push(r);
            }
        }
        let oversubscribed = host_ranks.len() > cores_available();
        let bind = params.bind();
        if bind == params::Bind::Core || (bind == params::Bind::Auto && !oversubscribed) {
            let index = host_ranks
                .iter()
                .position(|&r| r == rank)
                .expect("self listed");
            // Ranks of one host spread over its cores and stop migrating, which on a
            // latency path matters (Open MPI binds to cores by default too). Best effort.
            let _ = steadfast_os::affinity::bind_to_allowed_cpu(index);
        }
        let forced_fabric = params.route() == params::RouteMode::Fabric;
        let same = |r: usize| nodes[r] == nodes[rank as usize];
        let local_world: Vec<u32> = (0..size)
            .filter(|&r| same(r as usize) && (!forced_fabric || r == rank))
            .collect();
        let mut routes = Vec::with_capacity(size as usize);
        for r in 0..size {
            routes.push(if r == rank {
                engine::Route::Local
            } else if let Some(l) = local_world.iter().position(|&w| w == r) {
                engine::Route::Shm(l as u32)
            } else {
                engine::Route::Fabric
            });
        }
        let needs_fabric = routes.contains(&engine::Route::Fabric);
        let one_host = nodes.iter().all(|n| *n == nodes[0]);

        // Fabric, only when some peer needs it.
        let mut fab = None;
        let mut provider = None;
        if needs_fabric {
            let mut fc = FabricConfig::new(params.provider());
            if let Some(domain) = params.domain() {
                fc = fc.domain(domain);
            } else if one_host {
                fc = fc.domain("lo");
            }
            let mut mc = MessengerConfig::new(fc, rank);
            // In the address and the tags: survivors fence the dead incarnation by it,
            // and this one sends to each survivor once that survivor admitted it.
            mc.generation = generation;
            let mut m = Messenger::open(mc)?;
            // Every user message goes to the process's matcher (engine_fabric.rs);
            // control messages (tags::CONTROL) keep their own posted receive. Enabled
            // before the address is published: nothing can arrive earlier.
            m.enable_software_matching(0, tags::CONTROL_IGNORE, DEFAULT_ARRIVAL_POOL)?;
            provider = Some(m.info().provider_name());
            boot.put("fabric", &m.address().to_bytes())?;
            if !restored {
                boot.fence()?;
            }
            for r in 0..size {
                // A rank dead now is added when its next incarnation is admitted.
                let is_dead = dead.iter().any(|&(d, _)| d == r);
                if routes[r as usize] == engine::Route::Fabric && !is_dead {
                    let addr = boot.get(r, "fabric")?;
                    m.add_peer(r, &addr)?;
                    if restored {
                        // Nothing of an older incarnation of r can reach this new
                        // process: r may send at once (a restarted r waits for it). A
                        // failure here is r's death, which the engine learns anyway.
                        if let Err(e) = m.admit(r) {
                            log::debug!("rank {r} not told of its admission: {e}");
                        }
                    }
                }
            }
            fab = Some(m);
        }

        // Shared memory among the ranks of this node.
        let mut shm = None;
        if local_world.len() > 1 {
            let me = local_world
                .iter()
                .position(|&w| w == rank)
                .expect("self is local") as u32;
            let seg_job = shm_segment_job(job, node.as_bytes());
            let mut cfg = EndpointConfig::new(seg_job, me, local_world.len() as u32);
            cfg.eager_max = params.shm_eager_max();
            cfg.split_copy = params.shm_split_copy();
            cfg.generation = generation;
            let mut ep = ShmEndpoint::open(cfg)?;
            let is_dead = |r: u32| dead.iter().any(|&(d, _)| d == r);
            let local_dead: Vec<u32> = (0..local_world.len() as u32)
                .filter(|&l| is_dead(local_world[l as usize]))
                .collect();
            ep.assume_dead(&local_dead);
            // Started into a running job: a peer may have finished since `dead` was
            // read (its segment gone); the launcher's failure events say so.
            let mut ended = |l: u32| {
                let w = local_world[l as usize];
                if restored {
                    if let Ok(events) = boot.failures(Duration::ZERO) {
                        for ev in events {
                            if !dead.iter().any(|&(d, _)| d == ev.rank) {
                                dead.push((ev.rank, ev.generation));
                            }
                        }
                    }
                }
                dead.iter().any(|&(d, _)| d == w)
            };
            ep.connect_unless_ended(&mut ended)?;
            shm = Some(ep);
        }

        let yield_when_idle = match params.yield_when_idle() {
            params::YieldWhenIdle::Yield => true,
            params::YieldWhenIdle::Spin => false,
            _ => oversubscribed,
        };
        let mut engine = Engine::new(EngineParts {
            rank,
            size,
            routes,
            local_world,
            fab,
            shm,
            boot,
            detector,
            detectors,
            yield_when_idle,
            generations,
        })?;
        if restored {
            // Our segment exists: the survivors can admit us. Joined first: applying
            // the failures below sends control messages, and a push into a survivor's
            // ring waits until that survivor has admitted us (it used to wait for the
            // restart's whole timeout when another rank was dead at our start).
            engine.boot_mut().joined()?;
            for &(d, g) in &dead {
                engine.report_failure(d, format!("launcher: dead at restart (incarnation {g})"));
            }
            engine.apply_failures();
        } else {
            // Every rank's transports are up before anyone sends.
            engine.boot_mut().fence()?;
            if !dead.is_empty() {
                for &(d, _) in &dead {
                    engine.report_failure(d, "launcher: a spare slot, not started".into());
                }
                engine.apply_failures();
            }
        }
        engine.start_detector();
        let key = CommKey {
            comm: WORLD_COMM,
            epoch: Epoch(0),
        };
        engine.add_comm(key, WORLD_CTX, (0..size).collect());
        let engine = Arc::new(Shared::new(engine));
        let progress_thread = if params.progress_thread() {
            let interval = (params.heartbeat() / 2).max(Duration::from_millis(1));
            Some(ProgressThread::start(Arc::clone(&engine), interval).map_err(InitError::Thread)?)
        } else {
            None
        };
        Ok(World {
            engine,
            generation,
            started,
            params,
            provider,
            segment_prefix,
            progress_thread,
            _local: std::marker::PhantomData,
        })
    }

    /// This process's rank (the world communicator's group is the world ranks in
    /// order). Never waits for another thread.
    pub fn rank(&self) -> u32 {
        self.engine.world_facts().me
    }

    /// Number of ranks. Never waits for another thread.
    pub fn size(&self) -> u32 {
        self.engine.world_facts().group.len() as u32
    }

    /// Whether a wait here should yield the core at every poll rather than spin first:
    /// this node runs more ranks than it has cores (or `STEADFAST_YIELD_WHEN_IDLE`
    /// says so). A layer with wait loops of its own (an MPI library's collectives)
    /// follows it: a rank spinning on an oversubscribed core holds off the rank it
    /// waits for.
    ///
    /// ```no_run
    /// let world = steadfast::World::init().unwrap();
    /// let spin = steadfast_os::SpinWait::new(if world.yields_when_idle() { 0 } else { 2000 });
    /// # let _ = spin;
    /// ```
    pub fn yields_when_idle(&self) -> bool {
        self.engine.yield_when_idle()
    }

    /// This process's incarnation: 0 on first start, one more at each restart in
    /// place (see `docs/restart.md`).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The prefix of this node's shared-memory files of the job (`steadfast-<id>-`,
    /// in `/dev/shm`). `steadfast-run` removes every file with it when the job ends,
    /// however its processes end; a layer that makes POSIX segments of its own (an MPI
    /// library's shared windows) names them with it so that none outlives the job.
    ///
    /// ```no_run
    /// let world = steadfast::World::init().unwrap();
    /// let name = format!("/{}mine-{}", world.segment_prefix(), std::process::id());
    /// # let _ = name;
    /// ```
    pub fn segment_prefix(&self) -> &str {
        &self.segment_prefix
    }

    /// The number of ranks started with the job: the world's first ranks; the others
    /// (up to [`size`](Self::size)) are spare slots that [`Comm::spawn`](crate::Comm::spawn)
    /// starts (`docs/spawn.md`).
    pub fn job_ranks(&self) -> u32 {
        self.started
    }

    /// Whether this process was started by [`Comm::spawn`](crate::Comm::spawn) (the
    /// first incarnation of a spare slot); [`World::parent`] then gives its parents.
    pub fn is_spawned(&self) -> bool {
        self.generation == 1 && self.rank() >= self.started
    }

    /// Whether this process is a restarted incarnation of its rank (the MPI Forum
    /// draft's `MPIX_Is_restored_rank`): it runs `main` from the beginning and has its
    /// old rank, but not its old memory.
    pub fn is_restored(&self) -> bool {
        self.generation > 0
    }

    /// The engine every communicator of this world shares (`World::comm`, defined
    /// with the communicators, builds on it).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.engine
    }

    /// How world rank `rank` is reached.
    pub fn route(&self, rank: u32) -> Option<Route> {
        self.engine.lock().routes().get(rank as usize).copied()
    }

    /// The libfabric provider in use between nodes, if any peer needs it.
    pub fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    /// The parameters this world was built with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Traffic counters.
    pub fn stats(&self) -> Stats {
        self.engine.lock().stats()
    }

    /// Every failure learnt so far: rank, how, when.
    pub fn failures(&self) -> Vec<FailureNote> {
        self.engine.lock().notes()
    }

    /// Runs the progress engine once (heartbeats, failure reports, control messages).
    /// Applications that compute for long stretches call it now and then, or the
    /// detector's timeout suspects them.
    pub fn progress(&self) {
        self.engine.lock().progress();
    }

    /// Progresses for `d` (heartbeats keep flowing), e.g. instead of sleeping.
    pub fn progress_for(&self, d: Duration) {
        let end = std::time::Instant::now() + d;
        while std::time::Instant::now() < end {
            self.progress();
            std::thread::yield_now();
        }
    }
}
