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
//! A blocking operation on a peer that dies returns [`Error::PeerUnreachable`]: while
//! it waits, the messenger checks the peer's process (same host) and sends it liveness
//! probes whose failure the provider reports. Messages are never silently lost: a
//! receive buffer that is too small gives [`Error::Truncated`].

mod progress;
mod rma;
mod slots;
pub(crate) mod tags;
mod wire;

use std::time::{Duration, Instant};

use steadfast_fabric_sys as sys;

use crate::address::{provider_hash, PeerAddress};
use crate::error::{Error, Result};
use crate::info::{FabricConfig, Info, MrMode};
use crate::mr::{Access, CacheStats, MemoryRegion, RegistrationCache};
use crate::objects::{AddressVector, CompletionQueue, CqEntry, Domain, Endpoint, Fabric, Posted};
use crate::shm_lock_rescue::{self, LockRescue};
use steadfast_os::{host_identity, ProcessWatch, SpinWait};

pub use rma::{ExposedRegion, RemoteRegion};
pub use slots::Completion;
use slots::{Op, Outcome, SlotTable, Staging, BOUNCE_LEN};
pub use tags::{MAX_PEER_ID, MAX_USER_TAG};

/// Parent index of a read chunk whose receive was given up.
pub(crate) const ORPHAN: u32 = u32::MAX;

/// A peer's number, chosen by the caller (for a runtime: the rank).
pub type PeerId = u32;

/// Matches any user tag (use as the `ignore` mask of a receive).
pub const ANY_TAG: u64 = MAX_USER_TAG;

/// Settings of a [`Messenger`].
#[derive(Clone, Debug)]
pub struct MessengerConfig {
    /// Provider and domain.
    pub fabric: FabricConfig,
    /// This process's own id, carried in every message's tag.
    pub local_id: PeerId,
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
    /// Largest single RMA read of a rendezvous transfer.
    pub rendezvous_chunk: usize,
    /// Rendezvous reads in flight at once per message.
    pub rendezvous_pipeline: u32,
    /// How often a blocked operation checks that its peer is alive.
    pub liveness_interval: Duration,
    /// Give up on a blocking operation after this long (`None`: wait while the peer
    /// lives).
    pub operation_timeout: Option<Duration>,
}

impl MessengerConfig {
    /// Defaults for `provider` and local id `local_id`.
    pub fn new(fabric: FabricConfig, local_id: PeerId) -> Self {
        MessengerConfig {
            fabric,
            local_id,
            eager_threshold: None,
            inject_threshold: None,
            request_slots: 1024,
            control_receives: 32,
            registration_cache: 128,
            rendezvous_chunk: 8 << 20,
            rendezvous_pipeline: 4,
            liveness_interval: Duration::from_millis(50),
            operation_timeout: None,
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
    /// libfabric shm region locks released after their holder died (1.15-1.17 only;
    /// see docs/architecture.md).
    pub shm_locks_released: u64,
}

/// Tagged messaging, RMA and atomics over one libfabric endpoint. See the module docs.
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
    /// Regions exposed so far (for requested keys).
    exposed_count: u64,
    /// Control receives kept posted (grows with outstanding rendezvous sends).
    control_receives: usize,
    /// Rendezvous sends waiting for their FIN.
    rendezvous_outstanding: usize,
    /// Registrations of the staging buffers (when the provider needs them).
    staging_mrs: Vec<MemoryRegion>,
    /// Free staging buffers.
    staging_free: Vec<u16>,
    // Dropped last, after the endpoint is closed: memory libfabric may write into.
    staging: Vec<Box<[u8]>>,
    slots: SlotTable,
    /// Frees shm region locks that dead local peers held (shm before libfabric 1.18).
    shm_rescue: Option<LockRescue>,
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
        let eager_limit = Self::choose_eager_limit(&config, &info, rendezvous, inject_limit);
        // Without the thread a peer killed at the wrong moment hangs us; with it failing
        // to start (no threads left) we run as libfabric alone would.
        let shm_rescue = (info.provider_name() == "shm"
            && shm_lock_rescue::needed(crate::libfabric_version()))
        .then(LockRescue::start_system)
        .and_then(std::io::Result::ok);
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
            exposed_count: 0,
            control_receives: 0,
            rendezvous_outstanding: 0,
            staging_mrs: Vec::new(),
            staging_free: Vec::new(),
            staging: Vec::new(),
            slots,
            shm_rescue,
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
    /// for shm before libfabric 1.19, whose SAR protocol hangs on several unexpected
    /// messages above the inject size (ofiwg/libfabric#9143): there, everything above
    /// the inject size goes by our rendezvous, whose headers are inline.
    fn choose_eager_limit(
        config: &MessengerConfig,
        info: &Info,
        rendezvous: bool,
        inject_limit: usize,
    ) -> usize {
        if !rendezvous {
            return usize::MAX;
        }
        if let Some(limit) = config.eager_threshold {
            return limit;
        }
        let (major, minor) = crate::libfabric_version();
        if info.provider_name() == "shm" && (major, minor) < (1, 19) {
            return inject_limit;
        }
        64 * 1024
    }

    /// Adds peer `id` from its exported address bytes.
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
        let fi_addr = self._av.insert(&address.raw)?;
        let watch = (address.host == self.address.host).then(|| ProcessWatch::new(address.pid));
        if let (Some(rescue), Some(_)) = (&self.shm_rescue, &watch) {
            rescue.watch(address.pid);
        }
        let index = id as usize;
        if self.peers.len() <= index {
            self.peers.resize_with(index + 1, || None);
        }
        self.peers[index] = Some(Peer {
            fi_addr,
            dead: None,
            watch,
            probing: false,
            exited_at: None,
        });
        Ok(())
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

    /// Sends `data` to `peer` with `tag`, returning once `data` may be reused.
    ///
    /// # Errors
    /// [`Error::PeerUnreachable`] when the peer is or becomes dead;
    /// [`Error::InvalidArgument`] for a bad tag or peer; [`Error::Timeout`] past the
    /// configured operation timeout.
    pub fn send(&mut self, peer: PeerId, tag: u64, data: &[u8]) -> Result<()> {
        // SAFETY: we wait for completion before returning, so `data` outlives the
        // operation (wait_blocking only returns once libfabric is done with it).
        match unsafe { self.start_send(peer, tag, data.as_ptr(), data.len())? } {
            None => Ok(()),
            Some(request) => self.wait_blocking(request).map(|_| ()),
        }
    }

    /// Receives a message from `source` (any if `None`) whose tag equals `tag` on the
    /// bits not set in `ignore` ([`ANY_TAG`] for any), into `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the message is longer than `buf` (the message is
    /// consumed, `buf`'s content is unspecified); [`Error::PeerUnreachable`] when a
    /// specific source is or becomes dead; [`Error::Timeout`] past the timeout.
    pub fn recv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Completion> {
        // SAFETY: as in `send`: we wait until libfabric is done with `buf`.
        let request = unsafe { self.start_recv(source, tag, ignore, buf.as_mut_ptr(), buf.len())? };
        self.wait_blocking(request)
    }

    /// Starts a send without waiting. Returns `None` when the message was injected
    /// (already complete).
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request completes ([`wait`] or
    /// [`test`] returned its result) or the messenger is dropped.
    ///
    /// # Errors
    /// As [`send`](Self::send), for what can be known at once.
    ///
    /// [`wait`]: Self::wait
    /// [`test`]: Self::test
    pub unsafe fn isend(&mut self, peer: PeerId, tag: u64, data: &[u8]) -> Result<Option<Request>> {
        // SAFETY: forwarded to the caller.
        unsafe { self.start_send(peer, tag, data.as_ptr(), data.len()) }
    }

    /// Starts a receive without waiting.
    ///
    /// # Safety
    /// `buf` must stay valid and otherwise unused until the request completes or the
    /// messenger is dropped.
    ///
    /// # Errors
    /// As [`recv`](Self::recv), for what can be known at once.
    pub unsafe fn irecv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Request> {
        // SAFETY: forwarded to the caller.
        unsafe { self.start_recv(source, tag, ignore, buf.as_mut_ptr(), buf.len()) }
    }

    /// Waits for a request and returns its result.
    ///
    /// # Errors
    /// The operation's error; [`Error::InvalidArgument`] for a request already
    /// finished.
    pub fn wait(&mut self, request: Request) -> Result<Completion> {
        self.wait_blocking(request)
    }

    /// Progresses once and returns the request's result if it has finished.
    ///
    /// # Errors
    /// As [`wait`](Self::wait).
    pub fn test(&mut self, request: Request) -> Result<Option<Completion>> {
        self.check_request(request)?;
        self.progress()?;
        if matches!(self.slots.get(request.index).outcome, Outcome::Pending) {
            return Ok(None);
        }
        self.take_outcome(request.index).map(Some)
    }

    /// Gives up a request: a posted receive is cancelled, a send stops waiting for its
    /// peer. Returns once libfabric no longer holds the buffer: `Some` when the
    /// operation completed before the cancel took effect (a received message is then
    /// in the buffer and must be delivered), `None` when it was cancelled.
    ///
    /// # Errors
    /// The operation's own error if it failed first; [`Error::InvalidArgument`] for a
    /// request already finished.
    pub fn cancel(&mut self, request: Request) -> Result<Option<Completion>> {
        self.check_request(request)?;
        let index = request.index;
        self.abandon(index, Error::Cancelled);
        let mut waiter = Waiter::grace();
        loop {
            self.poll_completions()?;
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                return match self.take_outcome(index) {
                    Ok(c) => Ok(Some(c)),
                    Err(Error::Cancelled) => Ok(None),
                    Err(e) => Err(e),
                };
            }
            if waiter.timed_out().is_some() {
                eprintln!("steadfast-fabric: the provider did not release a buffer after cancel; aborting");
                std::process::abort();
            }
            waiter.pause();
        }
    }

    /// Checks whether `peer` is alive now (its process on this host, else a probe whose
    /// failure shows later); see [`peer_failure`](Self::peer_failure) for the verdict.
    pub fn check_peer(&mut self, peer: PeerId) {
        self.check_liveness(peer, true);
    }

    /// Polls the completion queue once, handling what completed; returns how many
    /// completions were handled. Call it while waiting on manual-progress providers.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the completion queue itself fails.
    pub fn progress(&mut self) -> Result<usize> {
        self.poll_completions()
    }

    fn check_request(&self, request: Request) -> Result<()> {
        let slot = self.slots.get(request.index);
        if slot.generation != request.generation || slot.op == Op::Free || slot.detached {
            return Err(Error::InvalidArgument("request already finished".into()));
        }
        Ok(())
    }

    /// Takes a finished slot's outcome and frees the slot.
    fn take_outcome(&mut self, index: u32) -> Result<Completion> {
        let outcome = std::mem::replace(&mut self.slots.get_mut(index).outcome, Outcome::Pending);
        self.slots.release(index);
        match outcome {
            Outcome::Done(c) => Ok(c),
            Outcome::Failed(e) => Err(e),
            Outcome::Pending => unreachable!("take_outcome on a pending slot"),
        }
    }

    fn request(&self, index: u32) -> Request {
        Request {
            index,
            generation: self.slots.get(index).generation,
        }
    }

    /// Posts a send of `len` bytes at `data`; `None` when injected.
    ///
    /// # Safety
    /// `data..data+len` valid and unchanged until the returned request completes.
    unsafe fn start_send(
        &mut self,
        peer: PeerId,
        tag: u64,
        data: *const u8,
        len: usize,
    ) -> Result<Option<Request>> {
        Self::check_tag(tag)?;
        let dest = self.peer_addr(peer)?;
        let data = if len == 0 {
            std::ptr::NonNull::<u8>::dangling().as_ptr()
        } else {
            data.cast_mut()
        };
        if len <= self.inject_limit {
            let wire_tag = tags::encode(self.config.local_id, tag);
            // SAFETY: data is valid for len bytes (caller); inject copies it at once.
            let bytes = unsafe { std::slice::from_raw_parts(data, len) };
            self.retry_post(Some(peer), |m| m.endpoint.tinject(bytes, dest, wire_tag))?;
            self.stats.injected += 1;
            return Ok(None);
        }
        if len <= self.eager_limit() {
            let index = self.slots.take(Op::EagerSend, Some(peer))?;
            let slot = self.slots.get_mut(index);
            slot.buf = data;
            slot.len = len;
            // SAFETY: forwarded contract on data.
            unsafe { self.post_eager_send(index, dest, tag) }
                .inspect_err(|_| self.slots.release(index))?;
            self.stats.eager += 1;
            return Ok(Some(self.request(index)));
        }
        // Every FIN must find a posted control receive: providers lose unexpected
        // messages under load (net in libfabric 1.17, with RMA reads in flight). FINs in
        // flight to us are at most our outstanding rendezvous sends, probes at most one
        // per peer.
        let needed = self.rendezvous_outstanding + 1 + self.peers.len() + 8;
        self.ensure_control_receives(needed)?;
        let index = self.slots.take(Op::RndvSend, Some(peer))?;
        self.rendezvous_outstanding += 1;
        let slot = self.slots.get_mut(index);
        slot.buf = data;
        slot.len = len;
        // SAFETY: forwarded contract on data.
        unsafe { self.post_rts(index, dest, tag) }.inspect_err(|_| self.release_failed(index))?;
        self.stats.rendezvous += 1;
        Ok(Some(self.request(index)))
    }

    /// Staging buffers posted in at most this many receives at once.
    const STAGING_BUFFERS: usize = 16;

    /// Allocates (and registers, if needed) the staging buffers for receives smaller
    /// than the eager limit.
    fn allocate_staging(&mut self) -> Result<()> {
        if self.eager_limit <= BOUNCE_LEN || self.eager_limit > (1 << 20) {
            return Ok(());
        }
        for i in 0..Self::STAGING_BUFFERS {
            let buffer = vec![0u8; self.eager_limit].into_boxed_slice();
            if self.mr_mode.local() {
                // SAFETY: the buffer is heap memory kept until the messenger is dropped,
                // after this region (field order).
                let mr = unsafe {
                    MemoryRegion::register(
                        &self.domain,
                        &self.endpoint,
                        self.mr_mode,
                        buffer.as_ptr(),
                        buffer.len(),
                        Access::ALL,
                        0,
                    )?
                };
                self.staging_mrs.push(mr);
            }
            self.staging.push(buffer);
            self.staging_free.push(i as u16);
        }
        Ok(())
    }

    /// Where a receive of `len` bytes lands first.
    fn choose_staging(&mut self, len: usize) -> Staging {
        if len < self.eager_limit {
            if let Some(n) = self.staging_free.pop() {
                return Staging::Pool(n);
            }
        }
        if len < BOUNCE_LEN {
            Staging::Inline
        } else {
            Staging::Direct
        }
    }

    /// Pointer, capacity and descriptor of a staging area.
    pub(super) fn staging_area(
        &mut self,
        index: u32,
    ) -> Option<(*mut u8, usize, *mut std::ffi::c_void)> {
        match self.slots.get(index).staging {
            Staging::Direct => None,
            Staging::Inline => Some((
                self.slots.get_mut(index).bounce.as_mut_ptr(),
                BOUNCE_LEN,
                self.bounce_desc(),
            )),
            Staging::Pool(n) => {
                let desc = self
                    .staging_mrs
                    .get(n as usize)
                    .map_or(std::ptr::null_mut(), |mr| mr.desc());
                let buffer = &mut self.staging[n as usize];
                Some((buffer.as_mut_ptr(), buffer.len(), desc))
            }
        }
    }

    /// Returns a slot's staging buffer to the pool.
    pub(super) fn release_staging(&mut self, index: u32) {
        if let Staging::Pool(n) =
            std::mem::replace(&mut self.slots.get_mut(index).staging, Staging::Direct)
        {
            self.staging_free.push(n);
        }
    }

    /// Posts control receives until `count` are posted.
    fn ensure_control_receives(&mut self, count: usize) -> Result<()> {
        while self.control_receives < count {
            let index = self.slots.take(Op::ControlRecv, None)?;
            self.slots.get_mut(index).detached = true;
            if let Err(e) = self.post_control_recv(index) {
                self.slots.release(index);
                return Err(e);
            }
            self.control_receives += 1;
        }
        Ok(())
    }

    /// Releases a slot whose first post failed (nothing outstanding).
    fn release_failed(&mut self, index: u32) {
        self.release_staging(index);
        if self.slots.get(index).op == Op::RndvSend {
            self.rendezvous_outstanding -= 1;
        }
        if let Some(mr) = self.slots.get_mut(index).mr.take() {
            self.cache.release(mr);
        }
        self.slots.release(index);
    }

    /// Posts a receive.
    ///
    /// # Safety
    /// `buf..buf+len` valid and unused until the returned request completes.
    unsafe fn start_recv(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        ignore: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<Request> {
        Self::check_tag(tag)?;
        if let Some(peer) = source {
            self.peer_addr(peer)?;
        }
        let index = self.slots.take(Op::Recv, source)?;
        let slot = self.slots.get_mut(index);
        slot.buf = buf;
        slot.len = len;
        let staging = self.choose_staging(len);
        self.slots.get_mut(index).staging = staging;
        let (wire_tag, wire_ignore) = tags::user_match(source, tag, ignore);
        // SAFETY: forwarded contract on buf.
        unsafe { self.post_user_recv(index, wire_tag, wire_ignore) }
            .inspect_err(|_| self.release_failed(index))?;
        Ok(self.request(index))
    }

    /// Calls `post` until it is accepted, progressing in between (`-FI_EAGAIN` is
    /// back-pressure). Gives up when `peer` turns out dead or the timeout passes.
    fn retry_post(
        &mut self,
        peer: Option<PeerId>,
        mut post: impl FnMut(&mut Self) -> Result<Posted>,
    ) -> Result<()> {
        let mut waiter = Waiter::new(&self.config);
        loop {
            if post(self)? == Posted::Yes {
                return Ok(());
            }
            self.poll_completions()?;
            if let Some(full) = waiter.liveness_due() {
                if let Some(peer) = peer {
                    self.check_liveness(peer, full);
                    self.peer_addr(peer)?;
                }
            }
            if let Some(after) = waiter.timed_out() {
                return Err(Error::Timeout {
                    operation: "posting",
                    after,
                });
            }
            waiter.pause();
        }
    }

    /// Waits for a request, checking its peer's liveness; on a timeout, cancels it and
    /// waits for libfabric to release its buffer.
    fn wait_blocking(&mut self, request: Request) -> Result<Completion> {
        self.check_request(request)?;
        let index = request.index;
        let mut waiter = Waiter::new(&self.config);
        let mut timeout_reported: Option<Duration> = None;
        loop {
            self.poll_completions()?;
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                return self.take_outcome(index);
            }
            if let Some(full) = waiter.liveness_due() {
                if let Some(peer) = self.slots.get(index).peer {
                    self.check_liveness(peer, full);
                    self.orphan_reads_from_exited(index, peer);
                }
            }
            if timeout_reported.is_none() {
                if let Some(after) = waiter.timed_out() {
                    timeout_reported = Some(after);
                    self.abandon(
                        index,
                        Error::Timeout {
                            operation: "waiting for completion",
                            after,
                        },
                    );
                    waiter = Waiter::grace();
                }
            } else if waiter.timed_out().is_some() {
                // libfabric still holds the user's buffer and will not give it back:
                // returning would let it write into freed memory.
                eprintln!("steadfast-fabric: the provider did not release a buffer after cancel; aborting");
                std::process::abort();
            }
            waiter.pause();
        }
    }

    /// Grace after a peer's process exited before reads from it are given up.
    const EXITED_GRACE: Duration = Duration::from_millis(500);

    /// Some providers never complete a read whose target process died (shm serves reads
    /// from the target's side). Once the process is confirmed gone and a grace period
    /// has passed, nothing can write into the receive buffer any more: the read chunks
    /// are orphaned (their late completions only free them) and the receive fails.
    fn orphan_reads_from_exited(&mut self, index: u32, peer: PeerId) {
        let Some(Some(p)) = self.peers.get(peer as usize) else {
            return;
        };
        if p.exited_at.is_none_or(|t| t.elapsed() < Self::EXITED_GRACE) {
            return;
        }
        let slot = self.slots.get(index);
        if slot.op != Op::Recv
            || slot.chunks_in_flight == 0
            || !matches!(slot.outcome, Outcome::Pending)
        {
            return;
        }
        let chunks: Vec<u32> = self
            .slots
            .active()
            .filter(|&i| self.slots.get(i).op == Op::ReadChunk && self.slots.get(i).parent == index)
            .collect();
        for chunk in chunks {
            self.slots.get_mut(chunk).parent = ORPHAN;
        }
        self.slots.get_mut(index).chunks_in_flight = 0;
        let reason = p.dead.clone().unwrap_or_default();
        self.abandon(index, Error::PeerUnreachable { peer, reason });
    }

    /// Checks one peer: its process (same host), else (when `full`) a probe message.
    fn check_liveness(&mut self, peer: PeerId, full: bool) {
        let Some(Some(p)) = self.peers.get_mut(peer as usize) else {
            return;
        };
        if p.dead.is_some() {
            return;
        }
        if p.watch.as_ref().is_some_and(ProcessWatch::has_exited) {
            p.exited_at = Some(Instant::now());
            self.mark_peer_dead(peer, "process exited".into());
            return;
        }
        if full && !p.probing {
            p.probing = true;
            let control = wire::Control {
                op: wire::ControlOp::Probe,
                status: wire::FinStatus::Done,
                source: self.config.local_id,
                token: 0,
            };
            if self.send_control(peer, control).is_ok() {
                self.stats.probes += 1;
            } else if let Some(Some(p)) = self.peers.get_mut(peer as usize) {
                p.probing = false;
            }
        }
    }
}

/// Bounded waiting: spin, then yield; tracks the liveness interval and the timeout.
struct Waiter {
    /// When waiting began; read from the clock at the first check, not at creation, so
    /// a wait that completes within a few spins never reads the clock.
    start: Option<Instant>,
    next_liveness: Option<Instant>,
    next_local: Option<Instant>,
    interval: Duration,
    timeout: Option<Duration>,
    spin: SpinWait,
}

impl Waiter {
    /// Spins between clock reads (liveness and timeout checks).
    const SPINS_PER_CHECK: u32 = 64;

    fn new(config: &MessengerConfig) -> Self {
        Waiter {
            start: None,
            next_liveness: None,
            next_local: None,
            interval: config.liveness_interval,
            timeout: config.operation_timeout,
            spin: SpinWait::default(),
        }
    }

    /// The wait after a cancel: long enough for any provider to flush.
    fn grace() -> Self {
        Waiter {
            start: None,
            next_liveness: None,
            next_local: None,
            interval: Duration::from_secs(3600),
            timeout: Some(Duration::from_secs(30)),
            spin: SpinWait::default(),
        }
    }

    /// One poll's pause: spins first (a wake-up costs ~85 µs on a busy host, so
    /// latency paths poll), then yields (see [`SpinWait`]; no PAUSE instruction: under
    /// KVM it doubled the median one-way 8 B shm latency).
    fn pause(&mut self) {
        self.spin.pause();
    }

    /// Whether this spin is one that reads the clock.
    fn checking(&self) -> bool {
        self.spin.every(Self::SPINS_PER_CHECK)
    }

    /// Between two checks of a same-host peer's process while blocked: a pidfd poll
    /// costs well under a microsecond, and an operation stuck on a dead peer (net keeps
    /// a send to it in back-pressure) should not hold up the caller for a whole
    /// liveness interval.
    const LOCAL_INTERVAL: Duration = Duration::from_millis(1);

    /// Which liveness check is due at this spin: `Some(true)` every liveness interval
    /// (process check, else a probe), `Some(false)` every [`Self::LOCAL_INTERVAL`]
    /// (process check only), `None` otherwise.
    fn liveness_due(&mut self) -> Option<bool> {
        if !self.checking() {
            return None;
        }
        let now = Instant::now();
        let start = *self.start.get_or_insert(now);
        let next = *self.next_liveness.get_or_insert(start + self.interval);
        if now >= next {
            self.next_liveness = Some(now + self.interval);
            return Some(true);
        }
        let next_local = *self.next_local.get_or_insert(start + Self::LOCAL_INTERVAL);
        if now >= next_local {
            self.next_local = Some(now + Self::LOCAL_INTERVAL);
            return Some(false);
        }
        None
    }

    fn timed_out(&mut self) -> Option<Duration> {
        let timeout = self.timeout?;
        if !self.checking() {
            return None;
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        (start.elapsed() >= timeout).then_some(timeout)
    }
}
