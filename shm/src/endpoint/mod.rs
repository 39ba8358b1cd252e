//! A process's shared-memory endpoint: its own segment (rings from every local sender)
//! plus the segments of the other local ranks it sends into.
//!
//! Protocols (see `message`): up to [`INLINE_MAX`](crate::message::INLINE_MAX) bytes travel inside one cell (copy
//! in, copy out); larger messages send a descriptor and the receiver pulls the bytes
//! straight from the sender's buffer with `process_vm_readv`, then returns a FIN that
//! releases the sender. Matching is tag plus ignore mask, as in the fabric layer;
//! messages that arrive before their receive wait in an unexpected queue (small ones
//! copied out of the ring, large ones as descriptors: nothing is copied twice).
//!
//! Peer death: every wait checks the peer's process now and then (a pidfd where the
//! kernel has them, else `kill(pid, 0)`; see [`steadfast_os::ProcessWatch`]) and turns
//! a dead peer into [`ShmError::PeerDead`] instead of waiting forever.
//!
//! The endpoint's state machines live one per file: this one holds the types, opening
//! and connecting; `send` the send protocols (inline, eager, RTS with split copy),
//! `recv` the receive side (matching, the unexpected queue, partial eager messages,
//! resends), `arrivals` the same messages handed out unmatched to a matching engine
//! above (the runtime's), `peers` liveness (death verdicts, the bounded waiter).

mod arrivals;
mod eager_cost;
mod peers;
mod recv;
mod rejoin;
mod send;

pub use arrivals::{Arrival, ArrivalData, PullTicket};

use peers::{peer_gone, Waiter};

use crate::error::ShmError;
use crate::message::{EAGER_CONT, EAGER_FIRST};
use crate::ring::CELL_BYTES;
use crate::ring::{ConsumerPos, ProducerPos};
use crate::segment::SPLIT_SLOTS;
use crate::segment::{remove_stale, Geometry, Segment, SegmentError};
use crate::xpmem::Xpmem;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use steadfast_os::ProcessWatch;

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
    /// the receiver straight from the sender's memory (single copy). Default 64 KiB (see
    /// [`EndpointConfig::new`]); [`Endpoint::open`] lowers it to the largest message a
    /// ring holds whole ([`eager_whole_max`]), so an eager send never waits for the
    /// receiver in the middle of a message.
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
    /// This process's incarnation (0 on first start). A restarted one pushes into a
    /// peer's older segment only once that peer admitted it (see
    /// [`Endpoint::readmit`]).
    pub generation: u32,
}

/// Ring memory a process's segment holds for all its senders at most (rings are cut
/// down to fit it as local ranks grow; the pages are touched only by pairs that talk).
pub const RING_BYTES_PER_PROCESS: usize = 4 << 20;

/// Cells per ring for `ranks` local ranks: 512 (128 KiB) when the process's rings fit
/// [`RING_BYTES_PER_PROCESS`], halved until they do, never below 64 (16 KiB). Every
/// local rank computes the same value (a segment of another geometry is refused).
///
/// ```
/// use steadfast_shm::ring_cells_for;
/// assert_eq!(ring_cells_for(2), 512);
/// assert_eq!(ring_cells_for(64), 256);
/// assert_eq!(ring_cells_for(1024), 64);
/// ```
pub fn ring_cells_for(ranks: u32) -> u32 {
    let senders = (ranks as usize).saturating_sub(1).max(1);
    let mut cells = 512u32;
    while cells > 64 && senders * cells as usize * CELL_BYTES > RING_BYTES_PER_PROCESS {
        cells /= 2;
    }
    cells
}

/// The largest eager message a ring of `ring_cells` holds whole (its first cell and
/// every continuation at once).
///
/// ```
/// use steadfast_shm::eager_whole_max;
/// assert_eq!(eager_whole_max(64), 232 + 63 * 248);
/// ```
pub fn eager_whole_max(ring_cells: u32) -> usize {
    EAGER_FIRST + (ring_cells as usize).saturating_sub(1) * EAGER_CONT
}

/// `test_send` calls without a FIN between two checks of the receiver's process.
const SEND_TESTS_PER_CHECK: u32 = 1024;

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
    /// Defaults for rank `rank` of `ranks` in `job`: rings sized by
    /// [`ring_cells_for`] (512 cells, 128 KiB, per sender up to 33 local ranks), eager
    /// up to 64 KiB. Measured on the 2-core machine (one-way, µs): 8 KiB 0.70 eager
    /// against 3.0 by single copy, 32 KiB 1.9 against 4.7, 64 KiB 3.4-3.8 against 6.9;
    /// from 128 KiB single copy (shared by both sides) wins.
    ///
    /// ```
    /// use steadfast_shm::EndpointConfig;
    /// let c = EndpointConfig::new(7, 0, 4);
    /// assert_eq!((c.ring_cells, c.eager_max), (512, 64 << 10));
    /// ```
    pub fn new(job: u64, rank: u32, ranks: u32) -> Self {
        EndpointConfig {
            job,
            rank,
            ranks,
            ring_cells: ring_cells_for(ranks),
            connect_timeout: Duration::from_secs(30),
            operation_timeout: None,
            eager_max: 64 << 10,
            single_copy: true,
            numa_place: true,
            xpmem: true,
            split_copy: true,
            generation: 0,
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
    /// The receiver answered without reading the data (`FIN_FAILED`: it dropped the
    /// message, e.g. its communicator was revoked, or its read failed).
    unread: bool,
}

impl SendRequest {
    /// Whether the receiver let the (complete) send go without reading its data: it
    /// dropped the message (a revoked or freed communicator) or could not read it.
    pub fn unread(&self) -> bool {
        self.unread
    }
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
    /// The peer's process, watched since connecting (a pidfd where the kernel offers
    /// them: it cannot be fooled by pid reuse).
    watch: ProcessWatch,
    tx: ProducerPos,
    path: CopyPath,
    /// XPMEM access to the peer's memory, where both sides have the device.
    apid: Option<i64>,
    /// This process is a restarted incarnation and the peer's segment is older: push
    /// only once the peer admits us (its ring then starts past the dead one's cells).
    awaiting_admission: bool,
    /// The recent cost of writing large eager messages to it (ring or single copy).
    eager_cost: eager_cost::EagerCost,
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
    /// FINs of our large sends not yet taken: (token, status, the read's ns).
    fins: Vec<(u64, u8, u32)>,
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
    /// `test_send` calls that found no FIN: the receiver's process is checked every
    /// [`SEND_TESTS_PER_CHECK`]-th (a system call per test was a third of a waiting
    /// sender's time, and slowed its reply to the message's answer).
    unanswered_tests: u32,
}

/// Every split slot free.
fn split_all_free() -> u64 {
    if SPLIT_SLOTS >= 64 {
        u64::MAX
    } else {
        (1 << SPLIT_SLOTS) - 1
    }
}

fn matches(msg_tag: u64, tag: u64, ignore: u64) -> bool {
    (msg_tag ^ tag) & !ignore == 0
}

/// How often [`Endpoint::connect_unless_ended`] asks whether a peer it waits for ended.
const ENDED_POLL: Duration = Duration::from_millis(10);

impl Endpoint {
    /// Creates this rank's segment, first removing every segment in /dev/shm whose
    /// owner process is dead (of this job or an earlier one).
    ///
    /// # Errors
    /// [`ShmError::InvalidArgument`] for a rank outside `ranks` or a bad ring size;
    /// [`ShmError::Segment`] when the segment cannot be created.
    pub fn open(mut config: EndpointConfig) -> Result<Self, ShmError> {
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
        config.eager_max = config.eager_max.min(eager_whole_max(config.ring_cells));
        remove_stale(None);
        let geometry = Geometry {
            senders: config.ranks,
            ring_cells: config.ring_cells,
        };
        let xpmem = if config.xpmem { Xpmem::open() } else { None };
        let segid = xpmem.as_ref().map_or(0, Xpmem::segid);
        let own = Segment::create_incarnation(
            config.job,
            config.rank,
            geometry,
            segid,
            config.generation,
        )?;
        if config.numa_place && crate::topology::numa_nodes_from_sysfs() > 1 {
            // Senders write into it, we read it: it belongs near us. Best effort: a
            // refusal leaves the kernel's first-touch placement.
            if let Ok(t) = crate::topology::Topology::detect() {
                if let Some(node) = t.current_numa_node() {
                    if let Err(e) = t.place_on_node(own.as_words(), node) {
                        log::debug!("steadfast-shm: segment left where first touched: {e}");
                    }
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
            unanswered_tests: 0,
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
        self.connect_unless_ended(&mut |_| false)
    }

    /// [`connect`](Self::connect), giving up on a peer whose segment is not there while
    /// `ended(rank)` says it has ended (asked every 10 ms of waiting): it is
    /// then taken as dead. A process started into a running job (a restart, a spawn)
    /// may find a peer that has finished and removed its segment since it learnt
    /// which ranks were alive; without this it would wait for the whole
    /// `connect_timeout` and fail.
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub fn connect_unless_ended(
        &mut self,
        ended: &mut dyn FnMut(u32) -> bool,
    ) -> Result<(), ShmError> {
        let deadline = Instant::now() + self.config.connect_timeout;
        for r in 0..self.config.ranks {
            if r == self.config.rank || self.peers[r as usize].is_some() || self.dead[r as usize] {
                continue;
            }
            let mut next_ask = Instant::now();
            let segment = loop {
                match Segment::attach(self.config.job, r, 100_000) {
                    Ok(s) => break Some(s),
                    Err(SegmentError::Io { ref source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound
                            && Instant::now() < deadline =>
                    {
                        if Instant::now() >= next_ask {
                            if ended(r) {
                                break None;
                            }
                            next_ask = Instant::now() + ENDED_POLL;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            let Some(segment) = segment else {
                log::debug!("shm: rank {r} ended before this process connected to it");
                self.dead[r as usize] = true;
                continue;
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
            let owner = segment.owner_generation();
            if owner > 0 {
                // A restarted peer pushes into our ring only once it reads its
                // incarnation admitted there. Our segment is new (nothing older is in
                // it), and no launcher event will tell us to admit this incarnation:
                // we know it from the start (two ranks restarted at once).
                self.own.admit_into_new(r, owner);
            }
            let pid = segment.owner_pid();
            let watch = ProcessWatch::new(pid);
            let apid = match (&self.xpmem, segment.xpmem_segid()) {
                (Some(x), segid) if segid > 0 => x.get(segid),
                _ => None,
            };
            let tx = segment.producer(self.config.rank).pos();
            self.peers[r as usize] = Some(Peer {
                segment,
                pid,
                watch,
                tx,
                path: CopyPath::SingleCopy,
                apid,
                awaiting_admission: self.config.generation > 0,
                eager_cost: Default::default(),
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
}

enum Popped {
    /// Copied into the destination its receive named (nothing copied when `truncated`:
    /// the destination was too small; the message is consumed).
    Delivered {
        source: u32,
        tag: u64,
        len: usize,
        truncated: bool,
    },
    Queued(Unexpected),
    Fin(u64, u8, u32),
    /// First cell of an eager message, and where the rest goes.
    Eager {
        tag: u64,
        len: usize,
        into: EagerInto,
    },
    Other,
}

/// Where the cells of an eager message go.
enum EagerInto {
    /// A receive's destination.
    Dst(Dst),
    /// Nowhere: the destination was too small (truncated).
    Drop,
    /// A queue copy.
    Queue(Vec<u8>),
}

/// A receive's destination, by raw parts: the runtime names buffers of pending
/// receives it holds by pointer (they may be written while no reference to them lives).
#[derive(Clone, Copy, Debug)]
struct Dst {
    ptr: *mut u8,
    cap: usize,
}

impl Dst {
    fn of(buf: &mut [u8]) -> Self {
        Dst {
            ptr: buf.as_mut_ptr(),
            cap: buf.len(),
        }
    }

    /// # Safety
    /// `ptr` is valid for writes of `cap` bytes, and covered by no other live reference
    /// while the returned one is used.
    unsafe fn slice<'a>(self) -> &'a mut [u8] {
        // SAFETY: the contract above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.cap) }
    }
}
