//! Tagged messaging over one RDM endpoint, with three protocols chosen by size:
//!
//! - **inject** (up to the provider's inject size): `fi_tinject`, done on return;
//! - **eager** (up to [`MessengerConfig::eager_threshold`]): `fi_tsend` of the user's
//!   buffer, received straight into the user's receive buffer;
//! - **rendezvous** (above): the sender registers its buffer and sends a 40-byte RTS
//!   header; the receiver RMA-reads the payload straight into the user's receive buffer
//!   and sends a FIN back. No intermediate copy on either side.
//!
//! Peers are numbered by the caller ([`PeerId`], e.g. MPI ranks) and added with their
//! exported addresses. See `tags.rs` for the tag layout.
//!
//! Receives are matched by the provider, or, in software-matching mode
//! ([`Messenger::enable_software_matching`], `arrivals.rs`), by the caller: every user
//! message is handed out as it arrives, a rendezvous one to be pulled or declined.
//!
//! A blocking operation on a peer that dies returns [`Error::PeerUnreachable`]: while
//! it waits, the messenger checks the peer's process (same host) and sends it liveness
//! probes whose failure the provider reports. Messages are never silently lost: a
//! receive buffer that is too small gives [`Error::Truncated`].

mod arrivals;
mod fence;
mod incarnation;
mod liveness;
mod ops;
mod post;
mod progress;
mod rendezvous;
mod rma;
mod slots;
mod staging;
pub(crate) mod tags;
mod waiter;
mod wire;

use std::time::{Duration, Instant};

use steadfast_fabric_sys as sys;

use crate::address::{provider_hash, PeerAddress};
use crate::error::{Error, Result};
use crate::info::{FabricConfig, Info, MrMode};
use crate::mr::{Access, CacheStats, MemoryRegion, RegistrationCache};
use crate::objects::{AddressVector, CompletionQueue, CqEntry, Domain, Endpoint, Fabric};
use crate::quirks::{self, Quirk};
use crate::shm_lock_rescue::LockRescue;
use steadfast_os::{host_identity, ProcessWatch};

pub use arrivals::{Arrival, ArrivalData, RemoteMessage, DEFAULT_ARRIVAL_POOL};
use rendezvous::ReadPlan;
pub use rma::{ExposedBuffer, Exposure, RemoteRegion};
pub use slots::Completion;
use slots::SlotTable;
pub use tags::{MAX_EXTRA, MAX_PEER_ID, MAX_USER_TAG};

/// Parent index of a read chunk whose receive was given up.
pub(crate) const ORPHAN: u32 = u32::MAX;

/// A peer's number, chosen by the caller (for a runtime: the rank).
pub type PeerId = u32;

/// Matches any user tag (use as the `ignore` mask of a receive).
pub const ANY_TAG: u64 = MAX_USER_TAG;

/// The default bound of a restarted process's wait for a peer's admission
/// ([`MessengerConfig::admission_timeout`]): 60 s, the launcher's restart timeout (a new
/// incarnation that has not joined within it is a failed restart; one whose peer has not
/// admitted it within as long is failed the same way), and the bound of the survivors'
/// own admission of a joined incarnation is shorter (10 s) than it.
pub const DEFAULT_ADMISSION_TIMEOUT: Duration = Duration::from_secs(60);

/// Settings of a [`Messenger`].
#[derive(Clone, Debug)]
pub struct MessengerConfig {
    /// Provider and domain.
    pub fabric: FabricConfig,
    /// This process's own id, carried in every message's tag.
    pub local_id: PeerId,
    /// This process's incarnation of its id (0 on first start, one more at each restart
    /// in place; see `docs/restart.md`): carried in its address, and its low bit in every
    /// message's tag. A messenger of generation > 0 sends user messages to a peer only
    /// once that peer has admitted it ([`Messenger::replace_peer`] on the peer's side).
    pub generation: u32,
    /// Largest message sent eagerly; larger ones use rendezvous. `None`: the
    /// provider's default (see [`Messenger::eager_limit`]).
    pub eager_threshold: Option<usize>,
    /// Largest message injected; `None`: the provider's inject size.
    pub inject_threshold: Option<usize>,
    /// Operations in flight at most (each takes one preallocated slot).
    pub request_slots: usize,
    /// Receives kept posted for control messages.
    pub control_receives: usize,
    /// Registrations kept cached.
    pub registration_cache: usize,
    /// Largest single RMA read of a rendezvous transfer (every message larger than it
    /// is read in reads of this size). `None`: chosen for the provider at open
    /// (`ReadPlan::for_provider` in `rendezvous.rs`: over `tcp;ofi_rxm`, messages up to
    /// 1 MiB in one read and larger ones in 256 KiB reads; elsewhere 8 MiB).
    pub rendezvous_chunk: Option<usize>,
    /// Rendezvous reads in flight at once per message. `None`: chosen for the provider
    /// at open (8 over `tcp;ofi_rxm`, 4 elsewhere).
    pub rendezvous_pipeline: Option<u32>,
    /// How often a blocked operation checks that its peer is alive.
    pub liveness_interval: Duration,
    /// Give up on a blocking operation after this long (`None`: wait while the peer
    /// lives).
    pub operation_timeout: Option<Duration>,
    /// How long a restarted process's send waits for its peer to admit it
    /// ([`Error::NotAdmitted`] after; `operation_timeout` instead when shorter). Default
    /// [`DEFAULT_ADMISSION_TIMEOUT`]: a peer admits a restarted process in its own
    /// progress once it learns of the restart, so only a peer that makes no progress
    /// (or never learns of it) reaches the bound. Irrelevant on a first start.
    pub admission_timeout: Duration,
    /// Whether the messenger may start its one helper thread where the provider needs
    /// it ([`Quirk::DeadPeerHoldsRegionLock`]: shm before libfabric 1.18, where a peer
    /// killed while holding a region lock hangs us). Default `true`; with `false` no
    /// thread is started, and such a hang is possible on those versions.
    pub shm_lock_rescue: bool,
}

impl MessengerConfig {
    /// Defaults for `provider` and local id `local_id`.
    pub fn new(fabric: FabricConfig, local_id: PeerId) -> Self {
        MessengerConfig {
            fabric,
            local_id,
            generation: 0,
            eager_threshold: None,
            inject_threshold: None,
            request_slots: 1024,
            control_receives: 32,
            registration_cache: 128,
            rendezvous_chunk: None,
            rendezvous_pipeline: None,
            liveness_interval: Duration::from_millis(50),
            operation_timeout: None,
            admission_timeout: DEFAULT_ADMISSION_TIMEOUT,
            shm_lock_rescue: true,
        }
    }
}

/// The handle of a non-blocking operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "an operation must be waited for or tested until it completes"]
pub struct Request {
    index: u32,
    generation: u32,
}

/// What the messenger knows of one peer.
struct Peer {
    fi_addr: sys::fi_addr_t,
    /// The peer's incarnation (from its address).
    generation: u32,
    /// Whether the peer has admitted this process's incarnation (see
    /// [`MessengerConfig::generation`]); user messages to it wait until then.
    admitted: bool,
    /// The slot of the receive draining the peer's replaced incarnation, if any.
    drain: Option<u32>,
    /// Set when the peer is known dead, with what showed it.
    dead: Option<String>,
    /// Process watch when the peer is on this host.
    watch: Option<ProcessWatch>,
    /// A probe is in flight.
    probing: bool,
    /// When the peer was found dead, if its process is known to have exited (then no
    /// operation toward it can touch our memory any more).
    exited_at: Option<Instant>,
}

/// Counters of protocol use and liveness activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessengerStats {
    /// Messages sent by inject.
    pub injected: u64,
    /// Messages sent eagerly.
    pub eager: u64,
    /// Messages sent by rendezvous.
    pub rendezvous: u64,
    /// Liveness probes sent.
    pub probes: u64,
    /// Control messages that failed to decode (dropped).
    pub malformed: u64,
    /// Messages of replaced incarnations dropped (fencing; see `docs/restart.md`).
    pub fenced: u64,
    /// libfabric shm region locks released after their holder died (1.15-1.17 only;
    /// see docs/architecture.md).
    pub shm_locks_released: u64,
}

/// Tagged messaging, RMA and atomics over one libfabric endpoint. See the module docs.
///
/// ```
/// use steadfast_fabric::{FabricConfig, Messenger, MessengerConfig, ANY_TAG};
///
/// // Two messengers over TCP on loopback, each driven by its own thread (normally
/// // one per process, with the addresses exchanged by the launcher). A blocking call
/// // progresses only its own messenger, so the peer must be driven meanwhile.
/// let config = |id| {
///     let mut c = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), id);
///     c.operation_timeout = Some(std::time::Duration::from_secs(60));
///     c
/// };
/// let mut a = Messenger::open(config(0))?;
/// let mut b = Messenger::open(config(1))?;
/// a.add_peer(1, &b.address().to_bytes())?;
/// b.add_peer(0, &a.address().to_bytes())?;
/// let receiver = std::thread::spawn(move || {
///     let mut buf = [0u8; 64];
///     let got = b.recv(Some(0), 0, ANY_TAG, &mut buf)?;
///     Ok::<_, steadfast_fabric::Error>((got.tag, buf[..got.len].to_vec()))
/// });
/// a.send(1, 42, b"hello")?;
/// assert_eq!(receiver.join().unwrap()?, (42, b"hello".to_vec()));
/// # Ok::<(), steadfast_fabric::Error>(())
/// ```
///
/// # Thread safety
/// `Send` but not `Sync`: one thread at a time drives it (the domain is opened with
/// `FI_THREAD_DOMAIN`, so libfabric takes no locks for us).
///
/// # Cleanup
/// Dropping it cancels what is still posted and closes every libfabric object.
pub struct Messenger {
    // Field order is drop order: registrations, then the endpoint and its parents,
    // and the slot table only after the endpoint no longer references it.
    cache: RegistrationCache,
    slots_mr: Option<MemoryRegion>,
    /// Open registrations of exposed memory ([`Messenger::expose`]), by index; they
    /// live here so that no libfabric handle of the messenger ever leaves it.
    exposures: Vec<Option<MemoryRegion>>,
    endpoint: Endpoint,
    cq: CompletionQueue,
    _av: AddressVector,
    domain: Domain,
    _fabric: Fabric,
    info: Info,
    address: PeerAddress,
    mr_mode: MrMode,
    peers: Vec<Option<Peer>>,
    config: MessengerConfig,
    inject_limit: usize,
    eager_limit: usize,
    stats: MessengerStats,
    /// Completion batch, kept here so polling does not zero it on every call.
    cq_batch: [CqEntry; progress::CQ_BATCH],
    /// Rendezvous receives whose reads met back-pressure with nothing in flight.
    deferred_reads: Vec<u32>,
    /// Rendezvous receives whose read was cancelled while their sender seemed alive
    /// (slot tokens, and since when): withdrawn by the sender, or its death
    /// (`rendezvous.rs`, `settle_withdrawn`).
    withdrawn_suspects: Vec<(u64, std::time::Instant)>,
    /// How rendezvous receives read the sender's buffer (sizes, depth, budget).
    read_plan: ReadPlan,
    /// Read chunks posted and not yet completed, over every receive.
    reads_in_flight: usize,
    /// Regions exposed so far (for requested keys).
    exposed_count: u64,
    /// Tells this messenger's exposures from another's.
    id: u64,
    /// Control receives kept posted (grows with outstanding rendezvous sends).
    control_receives: usize,
    /// Rendezvous sends waiting for their FIN.
    rendezvous_outstanding: usize,
    /// Registrations of the staging buffers (when the provider needs them).
    staging_mrs: Vec<MemoryRegion>,
    /// Free staging buffers.
    staging_free: Vec<u16>,
    /// Peers that admitted this incarnation before they were added (`incarnation.rs`).
    early_admits: Vec<PeerId>,
    /// The staging buffer every drain receive lands in (`incarnation.rs`), once a peer
    /// was replaced; never on the free list.
    drain_staging: Option<u16>,
    /// Software matching's pool of receives and its queue of arrivals (`arrivals.rs`).
    pool: Option<arrivals::Pool>,
    // Dropped last, after the endpoint is closed: memory libfabric may write into.
    staging: Vec<Box<[u8]>>,
    slots: SlotTable,
    /// Frees shm region locks that dead local peers held (shm before libfabric 1.18).
    shm_rescue: Option<LockRescue>,
    /// Set when the provider kept a buffer after a cancel (see
    /// [`Messenger::fence_kept_buffer`]): the endpoint is closed, every call fails with
    /// [`Error::Broken`], and the slot table and staging memory are leaked at drop.
    broken: bool,
}

/// A number no other messenger of this process has (tells exposures apart).
fn next_messenger_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    // ORDERING: Relaxed: only uniqueness matters, which the read-modify-write gives
    // whatever the order; nothing else is published through this counter.
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

// SAFETY: a Messenger exclusively owns its whole tree of libfabric objects (the Rc
// handles inside never leave it: every accessor borrows), so moving it to another thread
// moves every handle of its domain together, and FI_THREAD_DOMAIN only requires that
// access be serialized, which &mut self ensures. Raw pointers in slots point into its
// own slot table or into user buffers whose owners are bound by the unsafe contracts.
unsafe impl Send for Messenger {}

impl Messenger {
    /// Opens a provider, endpoint and everything behind it.
    ///
    /// # Errors
    /// [`Error::ProviderNotFound`] and other [`Info::query`] errors; [`Error::Fabric`]
    /// when opening an object fails; [`Error::InvalidArgument`] for an out-of-range id.
    pub fn open(config: MessengerConfig) -> Result<Self> {
        if config.local_id > MAX_PEER_ID {
            return Err(Error::InvalidArgument(format!(
                "local id {} > {MAX_PEER_ID}",
                config.local_id
            )));
        }
        if config.request_slots <= config.control_receives + 4 {
            return Err(Error::InvalidArgument(
                "request_slots must exceed control_receives + 4".into(),
            ));
        }
        let info = Info::query(&config.fabric)?;
        let fabric = Fabric::open(&info)?;
        let domain = Domain::open(&fabric, &info)?;
        let cq = CompletionQueue::open(&domain, 0)?;
        let av = AddressVector::open(&domain, 64)?;
        let endpoint = Endpoint::open(&domain, &info, &cq, &av)?;
        let mr_mode = info.mr_mode();
        let slots = SlotTable::new(config.request_slots);
        let slots_mr = if mr_mode.local() {
            let (start, len) = slots.memory();
            // SAFETY: the slot table is heap memory that lives as long as the messenger,
            // which drops this region before the table (field order).
            Some(unsafe {
                MemoryRegion::register(&domain, &endpoint, mr_mode, start, len, Access::ALL, 0)?
            })
        } else {
            None
        };
        let address = PeerAddress {
            addr_format: info.addr_format(),
            provider_hash: provider_hash(&info.provider_name()),
            pid: std::process::id(),
            host: host_identity(),
            generation: config.generation,
            raw: endpoint.name()?,
        };
        let inject_limit = config
            .inject_threshold
            .unwrap_or(usize::MAX)
            .min(info.inject_size());
        // Rendezvous needs remote reads with 64-bit keys, and CQ data to flag headers.
        let rendezvous = info.caps() & sys::FI_READ as u64 != 0
            && info.mr_key_size() <= 8
            && info.cq_data_size() >= 4;
        // Loaded since `info` exists: the query loaded it.
        let version = crate::libfabric_version()?;
        let eager_limit =
            Self::choose_eager_limit(&config, &info, version, rendezvous, inject_limit);
        // Without the thread a peer killed at the wrong moment hangs us; with it failing
        // to start (no threads left) we run as libfabric alone would.
        let rescue_needed = quirks::applies(
            Quirk::DeadPeerHoldsRegionLock,
            &info.provider_name(),
            version,
        );
        let shm_rescue = (config.shm_lock_rescue && rescue_needed)
            .then(LockRescue::start_system)
            .and_then(std::io::Result::ok);
        let read_plan = ReadPlan::for_provider(
            &info.provider_name(),
            config.rendezvous_chunk,
            config.rendezvous_pipeline,
            config.request_slots,
        );
        let mut messenger = Messenger {
            cache: RegistrationCache::new(config.registration_cache),
            slots_mr,
            endpoint,
            cq,
            _av: av,
            domain,
            _fabric: fabric,
            info,
            address,
            mr_mode,
            peers: Vec::new(),
            inject_limit,
            eager_limit,
            stats: MessengerStats::default(),
            cq_batch: [CqEntry::default(); progress::CQ_BATCH],
            deferred_reads: Vec::with_capacity(config.request_slots),
            withdrawn_suspects: Vec::new(),
            read_plan,
            reads_in_flight: 0,
            exposed_count: 0,
            exposures: Vec::new(),
            id: next_messenger_id(),
            control_receives: 0,
            rendezvous_outstanding: 0,
            staging_mrs: Vec::new(),
            staging_free: Vec::new(),
            drain_staging: None,
            pool: None,
            early_admits: Vec::new(),
            staging: Vec::new(),
            slots,
            shm_rescue,
            broken: false,
            config,
        };
        messenger.allocate_staging()?;
        let initial = messenger.config.control_receives;
        messenger.ensure_control_receives(initial)?;
        Ok(messenger)
    }

    /// The resolved provider information.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// This endpoint's address, to hand to peers.
    pub fn address(&self) -> &PeerAddress {
        &self.address
    }

    /// This process's id.
    pub fn local_id(&self) -> PeerId {
        self.config.local_id
    }

    /// Registration cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Protocol counters.
    pub fn stats(&self) -> MessengerStats {
        MessengerStats {
            shm_locks_released: self.shm_rescue.as_ref().map_or(0, LockRescue::released),
            ..self.stats
        }
    }

    /// Largest message that is injected.
    pub fn inject_limit(&self) -> usize {
        self.inject_limit
    }

    /// Largest message sent eagerly (everything, if the provider cannot do rendezvous).
    pub fn eager_limit(&self) -> usize {
        self.eager_limit
    }

    /// The eager limit for a provider: what the configuration says, else 64 KiB, except
    /// where the provider's SAR protocol hangs on several unexpected messages above the
    /// inject size ([`Quirk::UnexpectedSarHangs`]): there, everything above the inject
    /// size goes by our rendezvous, whose headers are inline.
    fn choose_eager_limit(
        config: &MessengerConfig,
        info: &Info,
        version: (u32, u32),
        rendezvous: bool,
        inject_limit: usize,
    ) -> usize {
        if !rendezvous {
            return usize::MAX;
        }
        if let Some(limit) = config.eager_threshold {
            return limit;
        }
        if quirks::applies(Quirk::UnexpectedSarHangs, &info.provider_name(), version) {
            return inject_limit;
        }
        64 * 1024
    }

    /// Adds peer `id` from its exported address bytes. On a restarted messenger
    /// ([`MessengerConfig::generation`] > 0), user messages to the peer wait until it
    /// has admitted this incarnation ([`Messenger::replace_peer`] on its side).
    ///
    /// # Errors
    /// [`Error::MalformedAddress`] when the bytes are not a valid address of this
    /// provider; [`Error::InvalidArgument`] for an out-of-range id.
    pub fn add_peer(&mut self, id: PeerId, address: &[u8]) -> Result<()> {
        if id > MAX_PEER_ID {
            return Err(Error::InvalidArgument(format!(
                "peer id {id} > {MAX_PEER_ID}"
            )));
        }
        let address = PeerAddress::from_bytes(address)?;
        address.check_compatible(&self.address, &self.info.provider_name())?;
        let admitted = self.config.generation == 0;
        self.install_peer(id, address, admitted, None)
    }

    /// Records that `peer` is dead (learnt elsewhere: a launcher, a failure detector):
    /// its pending operations fail with [`Error::PeerUnreachable`] and new ones are
    /// refused.
    pub fn declare_dead(&mut self, peer: PeerId, reason: &str) {
        if self.peers.get(peer as usize).is_some_and(Option::is_some) {
            self.mark_peer_dead(peer, reason.to_string());
        }
    }

    /// Whether `peer` is known to be dead, and why.
    pub fn peer_failure(&self, peer: PeerId) -> Option<&str> {
        self.peers.get(peer as usize)?.as_ref()?.dead.as_deref()
    }

    /// The live peer's libfabric address, or the error to report.
    fn peer_addr(&self, peer: PeerId) -> Result<sys::fi_addr_t> {
        match self.peers.get(peer as usize).and_then(Option::as_ref) {
            None => Err(Error::InvalidArgument(format!("unknown peer {peer}"))),
            Some(Peer {
                dead: Some(reason), ..
            }) => Err(Error::PeerUnreachable {
                peer,
                reason: reason.clone(),
            }),
            Some(p) => Ok(p.fi_addr),
        }
    }

    fn check_tag(tag: u64) -> Result<()> {
        if tag > MAX_USER_TAG {
            return Err(Error::InvalidArgument(format!(
                "tag {tag:#x} exceeds {MAX_USER_TAG:#x}"
            )));
        }
        Ok(())
    }

    /// Staging buffers posted in at most this many receives at once.
    const STAGING_BUFFERS: usize = 16;
}
