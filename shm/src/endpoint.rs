//! A process's shared-memory endpoint: its own segment (rings from every local sender)
//! plus the segments of the other local ranks it sends into.
//!
//! Protocols (see `message`): up to [`INLINE_MAX`] bytes travel inside one cell (copy
//! in, copy out); larger messages send a descriptor and the receiver pulls the bytes
//! straight from the sender's buffer with `process_vm_readv`, then returns a FIN that
//! releases the sender. Matching is tag plus ignore mask, as in the fabric layer;
//! messages that arrive before their receive wait in an unexpected queue (small ones
//! copied out of the ring, large ones as descriptors: nothing is copied twice).
//!
//! Peer death: every wait checks the peer's process now and then (a pidfd where the
//! kernel has them, else `kill(pid, 0)`) and turns a dead peer into
//! [`ShmError::PeerDead`] instead of waiting forever.

use crate::cma;
use crate::error::ShmError;
use crate::message::{
    Header, EAGER_CONT, EAGER_FIRST, FIN_FAILED, FIN_OK, FIN_RESEND, FIN_TRUNCATED, INLINE_MAX,
};
use crate::ring::Cell;
use crate::ring::{ConsumerPos, ProducerPos};
use crate::segment::SPLIT_SLOTS;
use crate::segment::{process_alive, remove_stale, Geometry, Segment, SegmentError};
use crate::split::{self, SPLIT_MIN};
use crate::xpmem::Xpmem;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Ignore mask that matches any tag.
pub const ANY_TAG: u64 = u64::MAX;

/// How to open an endpoint.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Job id (equal on every rank of the job; names the segments).
    pub job: u64,
    /// This process's local rank.
    pub rank: u32,
    /// Number of local ranks.
    pub ranks: u32,
    /// Cells per ring (a power of two).
    pub ring_cells: u32,
    /// How long `connect` waits for the other ranks' segments.
    pub connect_timeout: Duration,
    /// Give up a wait after this long (`None`: only a dead peer ends a wait).
    pub operation_timeout: Option<Duration>,
    /// Largest message copied through the ring cell by cell; larger ones are read by
    /// the receiver straight from the sender's memory (single copy). Default 4 KiB (see
    /// [`EndpointConfig::new`]).
    pub eager_max: usize,
    /// Whether this process reads large messages straight from senders' memory. When
    /// off (or when the kernel refuses, e.g. a yama ptrace policy), senders are asked to
    /// stream large messages through the ring instead, and remember it.
    pub single_copy: bool,
    /// Place the segment on the NUMA node this process runs on (only acts on machines
    /// with more than one node).
    pub numa_place: bool,
    /// Use XPMEM for single copy where `/dev/xpmem` exists (else process_vm_readv).
    pub xpmem: bool,
    /// Share the copy of messages of [`split::SPLIT_MIN`](crate::split::SPLIT_MIN) bytes
    /// or more with the sender while it waits (see [`crate::split`]).
    pub split_copy: bool,
}

/// How large messages travel to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyPath {
    /// The receiver reads the sender's buffer with process_vm_readv (one copy).
    SingleCopy,
    /// Copied through the ring cell by cell (two copies, pipelined): the peer refused
    /// single copy.
    Pipelined,
}

impl EndpointConfig {
    /// Defaults for rank `rank` of `ranks` in `job`: 64 cells per ring (16 KiB), eager
    /// up to 4 KiB (measured here: 4 KiB one-way 1.35 µs eager against 2.15 µs by
    /// single copy; 8 KiB eager stalls on the 16 KiB ring).
    pub fn new(job: u64, rank: u32, ranks: u32) -> Self {
        EndpointConfig {
            job,
            rank,
            ranks,
            ring_cells: 64,
            connect_timeout: Duration::from_secs(30),
            operation_timeout: None,
            eager_max: 4 << 10,
            single_copy: true,
            numa_place: true,
            xpmem: true,
            split_copy: true,
        }
    }
}

/// A send in flight (from [`Endpoint::isend`]); finish it with
/// [`Endpoint::test_send`] or [`Endpoint::wait_send`].
#[derive(Debug)]
#[must_use = "a send request must be waited for before its buffer is reused"]
pub struct SendRequest {
    dest: u32,
    tag: u64,
    data: *const u8,
    len: usize,
    /// 0 when already complete (inline / eager), else the RTS token.
    token: u64,
}

/// What a receive got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Sender's local rank.
    pub source: u32,
    /// The message's tag.
    pub tag: u64,
    /// Bytes delivered.
    pub len: usize,
}

#[derive(Debug)]
enum Body {
    Inline(Vec<u8>),
    Rts {
        addr: u64,
        len: u64,
        token: u64,
        split: u64,
    },
}

/// A large send of ours whose copy the receiver may share (slot `k` of our segment's
/// slots for `dest`).
#[derive(Debug, Clone, Copy)]
struct Offer {
    token: u64,
    dest: u32,
    k: u32,
}

#[derive(Debug)]
struct Unexpected {
    source: u32,
    tag: u64,
    body: Body,
}

/// An eager message being read cell by cell.
#[derive(Debug)]
struct PartialEager {
    tag: u64,
    len: usize,
    /// Bytes filled so far.
    offset: usize,
    bytes: Vec<u8>,
}

#[derive(Debug)]
struct Peer {
    segment: Segment,
    pid: u32,
    /// A pidfd of the peer's process when the kernel offers them: it becomes readable
    /// when the process exits, and cannot be fooled by pid reuse.
    pidfd: Option<std::os::fd::OwnedFd>,
    tx: ProducerPos,
    path: CopyPath,
    /// XPMEM access to the peer's memory, where both sides have the device.
    apid: Option<i64>,
}

/// Opens a pidfd for `pid` (Linux 5.3+); `None` where unavailable.
fn pidfd_open(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a fresh fd we now own.
    (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the process behind `pidfd` has exited (the fd polls readable).
fn pidfd_exited(pidfd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLIN | libc::POLLHUP) != 0
}

/// The shared-memory endpoint of one local rank.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    own: Segment,
    rx: Vec<ConsumerPos>,
    peers: Vec<Option<Peer>>,
    dead: Vec<bool>,
    unexpected: VecDeque<Unexpected>,
    fins: Vec<(u64, u8)>,
    /// Per sending ring: an eager message whose continuation cells have not all
    /// arrived (never waited for: its sender may be waiting for us).
    partial: Vec<Option<PartialEager>>,
    next_token: u64,
    next_ring: u32,
    xpmem: Option<Xpmem>,
    /// Per destination: bit k set when split slot k is free.
    split_free: Vec<u64>,
    /// Large sends in flight with a split slot.
    offers: Vec<Offer>,
    /// Chunks of our large sends that this process wrote itself (split copy).
    split_chunks_written: u64,
}

/// Polls between liveness checks of a peer while waiting.
const SPINS_PER_CHECK: u32 = 1024;
/// Polls before a waiter starts yielding its core.
const SPINS_BEFORE_YIELD: u32 = 2000;

/// Every split slot free.
fn split_all_free() -> u64 {
    if SPLIT_SLOTS >= 64 {
        u64::MAX
    } else {
        (1 << SPLIT_SLOTS) - 1
    }
}

/// Whether `p`'s process has exited (without touching the endpoint's verdicts).
fn peer_gone(p: &Peer) -> bool {
    match &p.pidfd {
        Some(fd) => pidfd_exited(fd),
        None => !process_alive(p.pid),
    }
}

fn matches(msg_tag: u64, tag: u64, ignore: u64) -> bool {
    (msg_tag ^ tag) & !ignore == 0
}

impl Endpoint {
    /// Creates this rank's segment, first removing every segment in /dev/shm whose
    /// owner process is dead (of this job or an earlier one).
    ///
    /// # Errors
    /// [`ShmError::InvalidArgument`] for a rank outside `ranks` or a bad ring size;
    /// [`ShmError::Segment`] when the segment cannot be created.
    pub fn open(config: EndpointConfig) -> Result<Self, ShmError> {
        if config.rank >= config.ranks {
            return Err(ShmError::InvalidArgument(format!(
                "rank {} outside {} local ranks",
                config.rank, config.ranks
            )));
        }
        if !config.ring_cells.is_power_of_two() || config.ring_cells < 2 {
            return Err(ShmError::InvalidArgument(format!(
                "ring_cells {} is not a power of two >= 2",
                config.ring_cells
            )));
        }
        remove_stale(None);
        let geometry = Geometry {
            senders: config.ranks,
            ring_cells: config.ring_cells,
        };
        let xpmem = if config.xpmem { Xpmem::open() } else { None };
        let segid = xpmem.as_ref().map_or(0, Xpmem::segid);
        let own = Segment::create_with_xpmem(config.job, config.rank, geometry, segid)?;
        if config.numa_place && crate::topology::numa_nodes_from_sysfs() > 1 {
            // Senders write into it, we read it: it belongs near us. Best effort: a
            // refusal leaves the kernel's first-touch placement.
            if let Ok(t) = crate::topology::Topology::detect() {
                if let Some(node) = t.current_numa_node() {
                    let _ = t.place_on_node(own.as_words(), node);
                }
            }
        }
        let rx = (0..config.ranks).map(|s| own.consumer(s).pos()).collect();
        let n = config.ranks as usize;
        Ok(Endpoint {
            own,
            rx,
            peers: (0..n).map(|_| None).collect(),
            dead: vec![false; n],
            unexpected: VecDeque::new(),
            fins: Vec::new(),
            partial: (0..n).map(|_| None).collect(),
            next_token: 1,
            next_ring: 0,
            xpmem,
            split_free: vec![split_all_free(); n],
            offers: Vec::new(),
            split_chunks_written: 0,
            config,
        })
    }

    /// This endpoint's local rank.
    pub fn rank(&self) -> u32 {
        self.config.rank
    }

    /// How large messages currently travel to `peer` (it switches to
    /// [`CopyPath::Pipelined`] the first time the peer refuses single copy).
    pub fn copy_path(&self, peer: u32) -> Option<CopyPath> {
        self.peers.get(peer as usize)?.as_ref().map(|p| p.path)
    }

    /// Maps every other local rank's segment, waiting for them to exist.
    ///
    /// # Errors
    /// [`ShmError::Segment`] when a segment stays absent past `connect_timeout` or is
    /// invalid.
    pub fn connect(&mut self) -> Result<(), ShmError> {
        let deadline = Instant::now() + self.config.connect_timeout;
        for r in 0..self.config.ranks {
            if r == self.config.rank || self.peers[r as usize].is_some() {
                continue;
            }
            let segment = loop {
                match Segment::attach(self.config.job, r, 100_000) {
                    Ok(s) => break s,
                    Err(SegmentError::Io { ref source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound
                            && Instant::now() < deadline =>
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            // Every ring index used below (ours in its segment, its in ours) must exist:
            // a peer segment of another geometry is refused, never indexed.
            if segment.geometry() != self.own.geometry() {
                return Err(SegmentError::Invalid {
                    path: segment.path().to_path_buf(),
                    reason: format!(
                        "geometry {:?}, this process expects {:?} (parameters differ between ranks?)",
                        segment.geometry(),
                        self.own.geometry()
                    ),
                }
                .into());
            }
            let pid = segment.owner_pid();
            let pidfd = pidfd_open(pid);
            let apid = match (&self.xpmem, segment.xpmem_segid()) {
                (Some(x), segid) if segid > 0 => x.get(segid),
                _ => None,
            };
            let tx = segment.producer(self.config.rank).pos();
            self.peers[r as usize] = Some(Peer {
                segment,
                pid,
                pidfd,
                tx,
                path: CopyPath::SingleCopy,
                apid,
            });
        }
        Ok(())
    }

    fn check_rank(&self, r: u32) -> Result<(), ShmError> {
        if r >= self.config.ranks || r == self.config.rank {
            return Err(ShmError::InvalidArgument(format!(
                "rank {r} is not another local rank (0..{}, self {})",
                self.config.ranks, self.config.rank
            )));
        }
        if self.peers[r as usize].is_none() {
            return Err(ShmError::InvalidArgument(format!(
                "rank {r} not connected (call connect first)"
            )));
        }
        Ok(())
    }

    /// Whether `rank` is known dead, checking its pid now.
    fn peer_dead(&mut self, rank: u32) -> bool {
        if self.dead[rank as usize] {
            return true;
        }
        if let Some(p) = &self.peers[rank as usize] {
            if peer_gone(p) {
                self.dead[rank as usize] = true;
                // Its owner cannot remove it any more; every survivor tries (the first
                // succeeds), keeping /dev/shm clean.
                let _ = std::fs::remove_file(p.segment.path());
            }
        }
        self.dead[rank as usize]
    }

    /// Fills and pushes one cell to `dest`; `Ok(false)` when its ring is full.
    fn try_push_with(&mut self, dest: u32, fill: impl FnOnce(&Cell)) -> Result<bool, ShmError> {
        let me = self.config.rank;
        let peer = self.peers[dest as usize]
            .as_mut()
            .ok_or_else(|| ShmError::InvalidArgument(format!("rank {dest} not connected")))?;
        let mut p = peer.segment.producer_at(me, peer.tx);
        let pushed = p.try_push(fill);
        peer.tx = p.pos();
        Ok(pushed)
    }

    fn try_push(&mut self, dest: u32, header: Header, payload: &[u8]) -> Result<bool, ShmError> {
        self.try_push_with(dest, |cell| header.write(cell, payload))
    }

    /// Fills and pushes one cell to `dest`, draining our own rings while its ring is
    /// full (so two ranks sending to each other cannot deadlock).
    fn push_with(&mut self, dest: u32, fill: impl Fn(&Cell)) -> Result<(), ShmError> {
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            if self.try_push_with(dest, &fill)? {
                return Ok(());
            }
            self.progress()?;
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    fn push(&mut self, dest: u32, header: Header, payload: &[u8]) -> Result<(), ShmError> {
        self.push_with(dest, |cell| header.write(cell, payload))
    }

    /// Copies a medium message through consecutive cells.
    fn push_eager(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        let h = Header::Eager {
            tag,
            len: data.len(),
        };
        self.push(dest, h, &data[..EAGER_FIRST])?;
        for chunk in data[EAGER_FIRST..].chunks(EAGER_CONT) {
            self.push_with(dest, |cell| cell.write_bytes(0, chunk))?;
        }
        Ok(())
    }

    /// Sends `data` to local rank `dest` with `tag`; returns once the data is out of
    /// `data` (copied into a cell, or read by the receiver).
    ///
    /// # Errors
    /// [`ShmError::PeerDead`] when `dest` dies first; [`ShmError::InvalidArgument`] for a
    /// bad rank; [`ShmError::Timeout`] past the configured timeout.
    pub fn send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        self.check_rank(dest)?;
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        if data.len() <= INLINE_MAX {
            let h = Header::Inline {
                tag,
                len: data.len(),
            };
            return self.push(dest, h, data);
        }
        let pipelined = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::Pipelined);
        if data.len() <= self.config.eager_max || pipelined {
            return self.push_eager(dest, tag, data);
        }
        let token = self.next_token;
        self.next_token += 1;
        let split = self.offer_split(dest, token, data.len());
        let h = Header::Rts {
            tag,
            addr: data.as_ptr() as u64,
            len: data.len() as u64,
            token,
            split,
        };
        if let Err(e) = self.push(dest, h, &[]) {
            self.release_offer(token);
            return Err(e);
        }
        // `data` stays borrowed until the receiver's FIN: it reads straight from it.
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            // SAFETY: `data` is the buffer the RTS named, borrowed until we return.
            unsafe { self.help_split(token, data) };
            self.progress()?;
            if let Some(i) = self.fins.iter().position(|f| f.0 == token) {
                let (_, status) = self.fins.swap_remove(i);
                self.release_offer(token);
                if status == FIN_RESEND {
                    // The receiver cannot read our memory: stream it, and from now on
                    // send large messages to this peer that way directly.
                    if let Some(p) = self.peers[dest as usize].as_mut() {
                        p.path = CopyPath::Pipelined;
                    }
                    return self.push_eager(dest, tag, data);
                }
                return Ok(());
            }
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    /// Starts a send without waiting for a large message to be read.
    ///
    /// Inline and eager messages are copied into the ring at once (the request is
    /// already complete); a larger one posts its descriptor and completes when the
    /// receiver has read it ([`test_send`](Self::test_send) /
    /// [`wait_send`](Self::wait_send)).
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request completes: the receiver
    /// reads it from this process's memory.
    ///
    /// # Errors
    /// As [`send`](Self::send); [`ShmError::WouldBlock`] when the ring has no room for
    /// the descriptor (nothing was sent).
    pub unsafe fn isend(
        &mut self,
        dest: u32,
        tag: u64,
        data: &[u8],
    ) -> Result<SendRequest, ShmError> {
        self.check_rank(dest)?;
        // The known verdict only: a pidfd poll here would put a system call on every
        // send; waits check the process (`Waiter`), `poll_deaths` refreshes the verdict.
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        let pipelined = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::Pipelined);
        let mut req = SendRequest {
            dest,
            tag,
            data: data.as_ptr(),
            len: data.len(),
            token: 0,
        };
        if data.len() <= self.config.eager_max || pipelined {
            self.send(dest, tag, data)?;
            return Ok(req);
        }
        let token = self.next_token;
        let split = self.offer_split(dest, token, data.len());
        let h = Header::Rts {
            tag,
            addr: data.as_ptr() as u64,
            len: data.len() as u64,
            token,
            split,
        };
        match self.try_push(dest, h, &[]) {
            Ok(true) => {}
            Ok(false) => {
                self.release_offer(token);
                return Err(ShmError::WouldBlock);
            }
            Err(e) => {
                self.release_offer(token);
                return Err(e);
            }
        }
        self.next_token += 1;
        req.token = token;
        Ok(req)
    }

    /// Progresses once; `Ok(true)` when `request` is complete (its buffer is free).
    ///
    /// # Errors
    /// [`ShmError::PeerDead`] when the receiver died before reading; ring errors.
    pub fn test_send(&mut self, request: &mut SendRequest) -> Result<bool, ShmError> {
        if request.token == 0 {
            return Ok(true);
        }
        // SAFETY: the caller of `isend` keeps the buffer valid until completion, which
        // has not happened yet.
        unsafe {
            let data = std::slice::from_raw_parts(request.data, request.len);
            self.help_split(request.token, data);
        }
        self.progress()?;
        let Some(i) = self.fins.iter().position(|f| f.0 == request.token) else {
            if self.peer_dead(request.dest) {
                return Err(ShmError::PeerDead(request.dest));
            }
            return Ok(false);
        };
        let (_, status) = self.fins.swap_remove(i);
        self.release_offer(request.token);
        request.token = 0;
        if status == FIN_RESEND {
            if let Some(p) = self.peers[request.dest as usize].as_mut() {
                p.path = CopyPath::Pipelined;
            }
            // SAFETY: the caller of `isend` keeps the buffer valid until completion,
            // which is now.
            let data = unsafe { std::slice::from_raw_parts(request.data, request.len) };
            self.push_eager(request.dest, request.tag, data)?;
        }
        Ok(true)
    }

    /// Waits until `request` is complete.
    ///
    /// # Errors
    /// As [`test_send`](Self::test_send), plus [`ShmError::Timeout`].
    pub fn wait_send(&mut self, mut request: SendRequest) -> Result<(), ShmError> {
        let mut waiter = Waiter::new(self.config.operation_timeout);
        let dest = request.dest;
        loop {
            if self.test_send(&mut request)? {
                return Ok(());
            }
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    /// Sends a small message without waiting: [`ShmError::WouldBlock`] when the ring is
    /// full or the message needs the single-copy path (larger than [`INLINE_MAX`]).
    ///
    /// # Errors
    /// As [`send`](Self::send), plus `WouldBlock`.
    pub fn try_send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        self.check_rank(dest)?;
        // The known verdict only (see `isend`).
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        if data.len() > INLINE_MAX {
            return Err(ShmError::WouldBlock);
        }
        let h = Header::Inline {
            tag,
            len: data.len(),
        };
        if self.try_push(dest, h, data)? {
            Ok(())
        } else {
            Err(ShmError::WouldBlock)
        }
    }

    /// Receives a message from `source` (any when `None`) whose tag equals `tag` on the
    /// bits not set in `ignore`, into `buf`.
    ///
    /// # Errors
    /// [`ShmError::Truncated`] when the message is longer than `buf` (it is consumed);
    /// [`ShmError::PeerDead`] when `source` (or, for any source, every peer) is dead;
    /// [`ShmError::Cma`] when the single-copy read fails; [`ShmError::Timeout`].
    pub fn recv(
        &mut self,
        source: Option<u32>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Received, ShmError> {
        if let Some(s) = source {
            self.check_rank(s)?;
        }
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            if let Some(r) = self.try_recv(source, tag, ignore, buf)? {
                return Ok(r);
            }
            let watched = source.unwrap_or(self.config.rank);
            waiter.wait(|| self.source_dead(source), watched)?;
        }
    }

    fn source_dead(&mut self, source: Option<u32>) -> bool {
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

    /// One attempt at [`recv`](Self::recv): `Ok(None)` when nothing matches yet.
    ///
    /// # Errors
    /// As [`recv`](Self::recv), without waiting.
    pub fn try_recv(
        &mut self,
        source: Option<u32>,
        tag: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Option<Received>, ShmError> {
        let wanted =
            |u: &Unexpected| source.is_none_or(|s| s == u.source) && matches(u.tag, tag, ignore);
        if let Some(i) = self.unexpected.iter().position(wanted) {
            let u = self.unexpected.remove(i).expect("index from position");
            return self.deliver(u, buf).map(Some);
        }
        // Poll the rings: the source's only, or all of them from a rotating start.
        let n = self.config.ranks;
        let (first, count) = match source {
            Some(s) => (s, 1),
            None => (self.next_ring, n),
        };
        for k in 0..count {
            let ring = (first + k) % n;
            if ring == self.config.rank {
                continue;
            }
            while let Some(u) = self.pop(ring, Some((tag, ignore)), buf)? {
                match u {
                    Popped::Delivered(r) => {
                        self.next_ring = (ring + 1) % n;
                        return r.map(Some);
                    }
                    Popped::Queued(u) => {
                        if wanted(&u) {
                            return self.deliver(u, buf).map(Some);
                        }
                        self.unexpected.push_back(u);
                    }
                    Popped::Fin(..) | Popped::Eager { .. } | Popped::Other => {}
                }
            }
        }
        Ok(None)
    }

    /// Whether a message matching (`source`, `tag`, `ignore`) has arrived, without
    /// receiving it: its source, tag and length.
    ///
    /// # Errors
    /// As [`progress`](Self::progress).
    pub fn probe(
        &mut self,
        source: Option<u32>,
        tag: u64,
        ignore: u64,
    ) -> Result<Option<Received>, ShmError> {
        let found = |q: &VecDeque<Unexpected>| {
            q.iter()
                .find(|u| source.is_none_or(|s| s == u.source) && matches(u.tag, tag, ignore))
                .map(|u| Received {
                    source: u.source,
                    tag: u.tag,
                    len: match &u.body {
                        Body::Inline(b) => b.len(),
                        Body::Rts { len, .. } => *len as usize,
                    },
                })
        };
        if let Some(r) = found(&self.unexpected) {
            return Ok(Some(r));
        }
        self.progress()?;
        Ok(found(&self.unexpected))
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

    /// Drains every ring into the unexpected queue and the FIN list; returns the number
    /// of cells taken.
    ///
    /// # Errors
    /// [`ShmError::Corrupt`] for a ring that does not decode.
    pub fn progress(&mut self) -> Result<usize, ShmError> {
        let mut taken = 0;
        for ring in 0..self.config.ranks {
            if ring == self.config.rank {
                continue;
            }
            while let Some(p) = self.pop(ring, None, &mut [])? {
                taken += 1;
                if let Popped::Queued(u) = p {
                    self.unexpected.push_back(u);
                }
            }
        }
        Ok(taken)
    }

    /// Pops one cell of `ring`. An inline message matching `want` is copied straight
    /// into `buf` (no queueing); anything else is returned to be queued, and FINs are
    /// recorded.
    fn pop(
        &mut self,
        ring: u32,
        want: Option<(u64, u64)>,
        buf: &mut [u8],
    ) -> Result<Option<Popped>, ShmError> {
        if self.partial[ring as usize].is_some() {
            return self.continue_partial(ring);
        }
        let mut c = self.own.consumer_at(ring, self.rx[ring as usize]);
        let capacity = buf.len();
        let res = c.try_pop(|cell| match Header::read(cell) {
            None => Err(format!("undecodable cell word0 {:#x}", cell.get(0))),
            Some(Header::Fin { token, status }) => Ok(Popped::Fin(token, status)),
            Some(Header::Inline { tag, len }) => {
                if want.is_some_and(|(t, ig)| matches(tag, t, ig)) {
                    if len > capacity {
                        return Ok(Popped::Delivered(Err(ShmError::Truncated {
                            len,
                            capacity,
                        })));
                    }
                    cell.read_bytes(2, &mut buf[..len]);
                    Ok(Popped::Delivered(Ok(Received {
                        source: ring,
                        tag,
                        len,
                    })))
                } else {
                    let mut bytes = vec![0u8; len];
                    cell.read_bytes(2, &mut bytes);
                    Ok(Popped::Queued(Unexpected {
                        source: ring,
                        tag,
                        body: Body::Inline(bytes),
                    }))
                }
            }
            Some(Header::Eager { tag, len }) => {
                let wanted = want.is_some_and(|(t, ig)| matches(tag, t, ig));
                if wanted && len <= capacity {
                    cell.read_bytes(2, &mut buf[..EAGER_FIRST]);
                    Ok(Popped::Eager {
                        tag,
                        len,
                        bytes: None,
                    })
                } else if wanted {
                    Ok(Popped::Eager {
                        tag,
                        len,
                        bytes: Some(Vec::new()), // truncated: read and dropped
                    })
                } else {
                    let mut bytes = vec![0u8; len];
                    cell.read_bytes(2, &mut bytes[..EAGER_FIRST]);
                    Ok(Popped::Eager {
                        tag,
                        len,
                        bytes: Some(bytes),
                    })
                }
            }
            Some(Header::Rts {
                tag,
                addr,
                len,
                token,
                split,
            }) => Ok(Popped::Queued(Unexpected {
                source: ring,
                tag,
                body: Body::Rts {
                    addr,
                    len,
                    token,
                    split,
                },
            })),
        });
        self.rx[ring as usize] = c.pos();
        let corrupt = |what: String| ShmError::Corrupt { rank: ring, what };
        match res {
            Err(e) => Err(corrupt(e.to_string())),
            Ok(None) => Ok(None),
            Ok(Some(Err(what))) => Err(corrupt(what)),
            Ok(Some(Ok(Popped::Fin(token, status)))) => {
                self.fins.push((token, status));
                Ok(Some(Popped::Other))
            }
            Ok(Some(Ok(Popped::Eager { tag, len, bytes }))) => {
                self.finish_eager(ring, tag, len, bytes, buf).map(Some)
            }
            Ok(Some(Ok(p))) => Ok(Some(p)),
        }
    }

    /// Pops one continuation cell of `ring` into `dst` (`None`: read and drop it);
    /// `false` when the cell has not arrived yet.
    fn pop_continuation(&mut self, ring: u32, dst: Option<&mut [u8]>) -> Result<bool, ShmError> {
        let mut c = self.own.consumer_at(ring, self.rx[ring as usize]);
        let got = c.try_pop(|cell| {
            if let Some(d) = dst {
                cell.read_bytes(0, d);
            }
        });
        self.rx[ring as usize] = c.pos();
        match got {
            Err(e) => Err(ShmError::Corrupt {
                rank: ring,
                what: e.to_string(),
            }),
            Ok(got) => Ok(got.is_some()),
        }
    }

    /// Reads the continuation cells of an eager message whose first cell was just
    /// popped: into `buf` (`bytes` None), into `bytes` (queued for later), or nowhere
    /// (`bytes` empty: truncated receive). Never waits: when a cell is missing (its
    /// sender may itself be blocked on a full ring toward us, draining it into this
    /// very call), the message is kept as partial and finished by later pops of the
    /// ring; a partial message is always queued, whoever wanted it.
    fn finish_eager(
        &mut self,
        ring: u32,
        tag: u64,
        len: usize,
        mut bytes: Option<Vec<u8>>,
        buf: &mut [u8],
    ) -> Result<Popped, ShmError> {
        let mut offset = EAGER_FIRST;
        while offset < len {
            let n = EAGER_CONT.min(len - offset);
            let dst = match bytes.as_mut() {
                None => Some(&mut buf[offset..offset + n]),
                Some(v) if v.is_empty() => None,
                Some(v) => Some(&mut v[offset..offset + n]),
            };
            if !self.pop_continuation(ring, dst)? {
                // Keep what was read; the rest comes with later pops.
                let kept = match bytes {
                    None => {
                        let mut v = vec![0u8; len];
                        v[..offset].copy_from_slice(&buf[..offset]);
                        v
                    }
                    // A truncated receive still consumes the message; keep it whole
                    // so the receive that matches it reports the truncation.
                    Some(v) if v.is_empty() => vec![0u8; len],
                    Some(v) => v,
                };
                self.partial[ring as usize] = Some(PartialEager {
                    tag,
                    len,
                    offset,
                    bytes: kept,
                });
                return Ok(Popped::Other);
            }
            offset += n;
        }
        let capacity = buf.len();
        Ok(match bytes {
            None => Popped::Delivered(Ok(Received {
                source: ring,
                tag,
                len,
            })),
            Some(v) if v.is_empty() => {
                Popped::Delivered(Err(ShmError::Truncated { len, capacity }))
            }
            Some(v) => Popped::Queued(Unexpected {
                source: ring,
                tag,
                body: Body::Inline(v),
            }),
        })
    }

    /// Reads more of `ring`'s partial eager message: `None` when no cell was there,
    /// `Other` when some were but not all, `Queued` once complete.
    fn continue_partial(&mut self, ring: u32) -> Result<Option<Popped>, ShmError> {
        let mut p = self.partial[ring as usize]
            .take()
            .expect("caller checked a partial message");
        let mut progressed = false;
        while p.offset < p.len {
            let n = EAGER_CONT.min(p.len - p.offset);
            let off = p.offset;
            if !self.pop_continuation(ring, Some(&mut p.bytes[off..off + n]))? {
                self.partial[ring as usize] = Some(p);
                return Ok(progressed.then_some(Popped::Other));
            }
            p.offset += n;
            progressed = true;
        }
        Ok(Some(Popped::Queued(Unexpected {
            source: ring,
            tag: p.tag,
            body: Body::Inline(p.bytes),
        })))
    }

    /// Hands a queued message to the user: copies an inline one, or pulls a large one
    /// from the sender's memory and releases the sender.
    fn deliver(&mut self, u: Unexpected, buf: &mut [u8]) -> Result<Received, ShmError> {
        let capacity = buf.len();
        match u.body {
            Body::Inline(bytes) => {
                if bytes.len() > capacity {
                    return Err(ShmError::Truncated {
                        len: bytes.len(),
                        capacity,
                    });
                }
                buf[..bytes.len()].copy_from_slice(&bytes);
                Ok(Received {
                    source: u.source,
                    tag: u.tag,
                    len: bytes.len(),
                })
            }
            Body::Rts {
                addr,
                len,
                token,
                split,
            } => {
                let len = len as usize;
                let (pid, apid) = self.peers[u.source as usize]
                    .as_ref()
                    .map(|p| (p.pid, p.apid))
                    .ok_or_else(|| {
                        ShmError::InvalidArgument(format!("rank {} not connected", u.source))
                    })?;
                let (result, status) = if len > capacity {
                    (Err(ShmError::Truncated { len, capacity }), FIN_TRUNCATED)
                } else if !self.config.single_copy {
                    return self.resend_through_ring(u.source, u.tag, token, buf);
                } else {
                    // XPMEM where both sides have it; process_vm_readv otherwise, and
                    // whenever the XPMEM path fails.
                    let via_xpmem = match (&self.xpmem, apid) {
                        (Some(x), Some(apid)) => x.read(apid, addr, &mut buf[..len]).is_ok(),
                        _ => false,
                    };
                    let read = if via_xpmem {
                        Ok(())
                    } else if split > 0 && split <= SPLIT_SLOTS as u64 && self.config.split_copy {
                        match self.split_read(u.source, split as u32 - 1, addr, &mut buf[..len]) {
                            Some(r) => r,
                            None => {
                                // The sender died with a chunk claimed: no FIN.
                                self.dead[u.source as usize] = true;
                                return Err(ShmError::PeerDead(u.source));
                            }
                        }
                    } else {
                        cma::read_from(pid, addr, &mut buf[..len])
                    };
                    match read {
                        Ok(()) => (
                            Ok(Received {
                                source: u.source,
                                tag: u.tag,
                                len,
                            }),
                            FIN_OK,
                        ),
                        Err(source) if source.raw_os_error() == Some(libc::EPERM) => {
                            // The kernel forbids reading the sender (ptrace policy):
                            // fall back to the pipelined copy, now and from now on.
                            self.config.single_copy = false;
                            return self.resend_through_ring(u.source, u.tag, token, buf);
                        }
                        Err(source) if source.raw_os_error() == Some(libc::ESRCH) => {
                            self.dead[u.source as usize] = true;
                            (Err(ShmError::PeerDead(u.source)), FIN_FAILED)
                        }
                        Err(source) => (
                            Err(ShmError::Cma {
                                rank: u.source,
                                source,
                            }),
                            FIN_FAILED,
                        ),
                    }
                };
                if !self.dead[u.source as usize] {
                    let fin = Header::Fin { token, status };
                    match self.push(u.source, fin, &[]) {
                        Ok(()) | Err(ShmError::PeerDead(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
                result
            }
        }
    }
}

impl Endpoint {
    /// Takes a free split slot for a large send to `dest`, resets it and records the
    /// offer; returns the slot plus one for the RTS, 0 when the copy stays the
    /// receiver's alone (too small, disabled, XPMEM, no single copy, no free slot).
    fn offer_split(&mut self, dest: u32, token: u64, len: usize) -> u64 {
        let single_copy = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::SingleCopy);
        if !self.config.split_copy || self.xpmem.is_some() || len < SPLIT_MIN || !single_copy {
            return 0;
        }
        let free = &mut self.split_free[dest as usize];
        if *free == 0 {
            return 0;
        }
        let k = free.trailing_zeros();
        *free &= !(1 << k);
        split::reset(self.own.split_slot(dest, k));
        self.offers.push(Offer { token, dest, k });
        u64::from(k) + 1
    }

    /// Frees the split slot of `token`'s send, if it has one (its FIN arrived, or the
    /// RTS never left).
    fn release_offer(&mut self, token: u64) {
        if let Some(i) = self.offers.iter().position(|o| o.token == token) {
            let o = self.offers.swap_remove(i);
            self.split_free[o.dest as usize] |= 1 << o.k;
        }
    }

    /// The sender's share of `token`'s copy, when the receiver has started it.
    ///
    /// # Safety
    /// `data` must be the buffer `token`'s RTS named, still valid.
    unsafe fn help_split(&mut self, token: u64, data: &[u8]) {
        let Some(o) = self.offers.iter().find(|o| o.token == token).copied() else {
            return;
        };
        let Some(pid) = self.peers[o.dest as usize].as_ref().map(|p| p.pid) else {
            return;
        };
        let slot = self.own.split_slot(o.dest, o.k);
        // SAFETY: forwarded from the caller.
        self.split_chunks_written += unsafe { split::sender_help(slot, pid, data) };
    }

    /// Chunks of this process's large sends that it copied itself into the receiver's
    /// buffer (see [`crate::split`]); 0 when every copy was the receivers'.
    pub fn split_chunks_written(&self) -> u64 {
        self.split_chunks_written
    }

    /// The receiver's side of a split copy from `source` through its slot `k`: `None`
    /// when the sender died with a chunk claimed, else the read's result.
    fn split_read(
        &mut self,
        source: u32,
        k: u32,
        addr: u64,
        buf: &mut [u8],
    ) -> Option<std::io::Result<()>> {
        let me = self.config.rank;
        let p = self.peers[source as usize].as_ref()?;
        let slot = p.segment.split_slot(me, k);
        match split::receiver_copy(slot, p.pid, addr, buf, || peer_gone(p)) {
            split::Outcome::Copied { .. } => Some(Ok(())),
            split::Outcome::ReadFailed(e) => Some(Err(e)),
            split::Outcome::SenderDead => None,
        }
    }
}

impl Endpoint {
    /// Answers an RTS with RESEND and receives the same message streamed through the
    /// ring. The sender pushes nothing else to us before the stream (it is blocked in
    /// that send), so the next cells of its ring are the message.
    fn resend_through_ring(
        &mut self,
        source: u32,
        tag: u64,
        token: u64,
        buf: &mut [u8],
    ) -> Result<Received, ShmError> {
        self.push(
            source,
            Header::Fin {
                token,
                status: FIN_RESEND,
            },
            &[],
        )?;
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            let partial_before = self.partial[source as usize].is_some();
            match self.pop(source, Some((tag, 0)), buf)? {
                Some(Popped::Delivered(r)) => return r,
                Some(Popped::Queued(u)) if u.tag == tag => return self.deliver(u, buf),
                Some(Popped::Queued(u)) => self.unexpected.push_back(u),
                Some(_) if !partial_before && self.partial[source as usize].is_some() => {
                    // The resent message outgrew the ring: the sender is waiting for
                    // us alone (nothing of ours is in flight to it), so read the rest
                    // straight into `buf`, waiting for each cell.
                    return self.finish_partial_into(source, buf, &mut waiter);
                }
                Some(_) => {}
                None => waiter.wait(|| self.peer_dead(source), source)?,
            }
        }
    }

    /// Completes `ring`'s partial eager message into `buf`, waiting for its cells.
    fn finish_partial_into(
        &mut self,
        ring: u32,
        buf: &mut [u8],
        waiter: &mut Waiter,
    ) -> Result<Received, ShmError> {
        let p = self.partial[ring as usize]
            .take()
            .expect("caller saw a partial message");
        if p.len > buf.len() {
            // Finish it in the queue; the truncation is reported when it is delivered.
            self.partial[ring as usize] = Some(p);
            loop {
                match self.continue_partial(ring)? {
                    Some(Popped::Queued(u)) => return self.deliver(u, buf),
                    Some(_) => {}
                    None => waiter.wait(|| self.peer_dead(ring), ring)?,
                }
            }
        }
        buf[..p.offset].copy_from_slice(&p.bytes[..p.offset]);
        let mut offset = p.offset;
        while offset < p.len {
            let n = EAGER_CONT.min(p.len - offset);
            if self.pop_continuation(ring, Some(&mut buf[offset..offset + n]))? {
                offset += n;
            } else {
                waiter.wait(|| self.peer_dead(ring), ring)?;
            }
        }
        Ok(Received {
            source: ring,
            tag: p.tag,
            len: p.len,
        })
    }
}

enum Popped {
    Delivered(Result<Received, ShmError>),
    Queued(Unexpected),
    Fin(u64, u8),
    /// First cell of an eager message; `bytes`: None = into the user's buffer, empty =
    /// truncated, else the queue copy.
    Eager {
        tag: u64,
        len: usize,
        bytes: Option<Vec<u8>>,
    },
    Other,
}

/// Spin, then yield; check the peer every [`SPINS_PER_CHECK`] polls; enforce the timeout.
struct Waiter {
    spins: u32,
    start: Option<Instant>,
    timeout: Option<Duration>,
}

impl Waiter {
    fn new(timeout: Option<Duration>) -> Self {
        Waiter {
            spins: 0,
            start: None,
            timeout,
        }
    }

    fn wait(&mut self, mut dead: impl FnMut() -> bool, rank: u32) -> Result<(), ShmError> {
        self.spins = self.spins.wrapping_add(1);
        if self.spins % SPINS_PER_CHECK == 0 {
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
        if self.spins >= SPINS_BEFORE_YIELD {
            std::thread::yield_now();
        }
        Ok(())
    }
}
