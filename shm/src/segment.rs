//! Shared-memory segments: one per receiving process, in /dev/shm, holding one ring per
//! local sender.
//!
//! Layout (a wire format: `#[repr(C)]`, offsets not pointers, checked on attach):
//!
//! | offset | what |
//! |---|---|
//! | 0 | [`SegmentHeader`] (magic, version, sizes, owner, job), padded to 4096 |
//! | 4096 + k * stride | ring of sender k: [`RingHeader`] then `ring_cells` [`Cell`]s |
//! | after the rings | [`SPLIT_SLOTS`] [`SplitSlot`]s per destination d: the owner's large sends to d whose copy the two sides share |
//!
//! The owner creates the file under a private name (mode 0600, `O_EXCL`), sizes it,
//! initialises it, sets `ready`, and only then links it under its public name (which
//! fails if the name exists); senders map it and check `ready` before touching a ring. The owner
//! removes the name when dropped; a starting job removes the segments of dead owners
//! ([`remove_stale`]).

use crate::ring::{Cell, Consumer, ConsumerPos, Producer, ProducerPos, RingHeader, CELL_BYTES};
use memmap2::MmapMut;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// "SFSHMSEG", little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SFSHMSEG");
/// Layout version; a segment of another version is refused (5: the owner's
/// generation in the header, the admitted incarnation in each ring header; 6: packed
/// cells in the rings, `ring.rs`).
pub const VERSION: u32 = 6;
/// Bytes reserved for the header.
pub const HEADER_BYTES: usize = 4096;

/// Where segments live.
pub const SHM_DIR: &str = "/dev/shm";

/// Split-copy slots per destination (large sends in flight to one peer whose copy the
/// sender may share; more wait for a free slot or go unshared).
pub const SPLIT_SLOTS: u32 = 64;

/// The shared state of one large send whose copy the sender and the receiver share:
/// both claim chunks from `next` and count finished ones in `done`. Lives in the
/// sender's segment; the receiver writes `dst` and `state`.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct SplitSlot {
    /// 0 while only the sender knows the send; 1 once the receiver published `dst`.
    pub state: AtomicU64,
    /// The receiver's buffer address.
    pub dst: AtomicU64,
    /// The next chunk to claim.
    pub next: AtomicU64,
    /// Chunks finished (copied, or failed and marked in `failed`).
    pub done: AtomicU64,
    /// Bit c: the sender could not write chunk c (the receiver copies it again).
    pub failed: AtomicU64,
    _pad: [AtomicU64; 3],
}

const _: () = assert!(std::mem::size_of::<SplitSlot>() == 64);

/// The segment's header.
#[repr(C)]
#[derive(Debug)]
pub struct SegmentHeader {
    magic: u64,
    version: u32,
    header_bytes: u32,
    ring_cells: u32,
    cell_bytes: u32,
    senders: u32,
    owner_rank: u32,
    owner_pid: u32,
    /// The owner's incarnation (0 on first start; see `docs/restart.md`).
    owner_generation: u32,
    job: u64,
    total_bytes: u64,
    /// The owner's XPMEM segment id (its whole address space), 0 without XPMEM.
    xpmem_segid: i64,
    /// 0 while the owner initialises, 1 once every ring is usable.
    ready: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<SegmentHeader>() <= HEADER_BYTES);
const _: () = assert!(std::mem::size_of::<Cell>() == CELL_BYTES);
const _: () = assert!(std::mem::size_of::<RingHeader>() % 64 == 0);

/// Errors of segment handling.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// The file could not be created, opened, sized or mapped.
    #[error("{what} {path}: {source}")]
    Io {
        /// The step that failed.
        what: &'static str,
        /// The segment's path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The file is not a segment of this layout.
    #[error("{path} is not a usable steadfast segment: {reason}")]
    Invalid {
        /// The segment's path.
        path: PathBuf,
        /// What did not match.
        reason: String,
    },
    /// The owner did not finish initialising in time.
    #[error("{path}: owner never marked the segment ready")]
    NotReady {
        /// The segment's path.
        path: PathBuf,
    },
}

/// Sizes of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Local senders (one ring each; a rank's own slot stays unused).
    pub senders: u32,
    /// Cells per ring (a power of two).
    pub ring_cells: u32,
}

impl Geometry {
    fn ring_stride(&self) -> usize {
        std::mem::size_of::<RingHeader>() + self.ring_cells as usize * CELL_BYTES
    }

    fn slots_offset(&self) -> usize {
        HEADER_BYTES + self.senders as usize * self.ring_stride()
    }

    /// The segment's size, `None` when it does not fit in the address space. Once this
    /// is `Some`, every offset inside the segment (`ring_stride`, `slots_offset`) is
    /// computed without overflow.
    fn total_bytes(&self) -> Option<usize> {
        let senders = self.senders as usize;
        let stride = (self.ring_cells as usize)
            .checked_mul(CELL_BYTES)?
            .checked_add(std::mem::size_of::<RingHeader>())?;
        let slots = senders
            .checked_mul(SPLIT_SLOTS as usize)?
            .checked_mul(std::mem::size_of::<SplitSlot>())?;
        senders
            .checked_mul(stride)?
            .checked_add(HEADER_BYTES)?
            .checked_add(slots)
    }
}

/// The plain fields of a segment header, as read from a peer's file: what
/// [`validate_header`] checks before anything is computed from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderFields {
    /// [`MAGIC`] in a correct segment.
    pub magic: u64,
    /// [`VERSION`] in a correct segment.
    pub version: u32,
    /// [`HEADER_BYTES`].
    pub header_bytes: u32,
    /// Size of a ring cell.
    pub cell_bytes: u32,
    /// Cells per ring.
    pub ring_cells: u32,
    /// Rings (local senders).
    pub senders: u32,
    /// The owner's rank.
    pub owner_rank: u32,
    /// The job.
    pub job: u64,
    /// The size the owner recorded.
    pub total_bytes: u64,
}

/// Checks a header read from the file of `rank` in `job`, `file_len` bytes long:
/// the geometry, when every field is what a correct owner writes and every size adds
/// up (with checked arithmetic: a hostile header cannot make an offset wrap around).
///
/// # Errors
/// What did not match, for [`SegmentError::Invalid`].
pub fn validate_header(
    h: &HeaderFields,
    job: u64,
    rank: u32,
    file_len: usize,
) -> Result<Geometry, String> {
    if h.magic != MAGIC || h.version != VERSION {
        return Err(format!("magic {:#x} version {}", h.magic, h.version));
    }
    if h.job != job || h.owner_rank != rank {
        return Err(format!("job {:#x} rank {}", h.job, h.owner_rank));
    }
    let geometry = Geometry {
        senders: h.senders,
        ring_cells: h.ring_cells,
    };
    let total = geometry.total_bytes();
    if h.header_bytes as usize != HEADER_BYTES
        || h.cell_bytes as usize != CELL_BYTES
        || !geometry.ring_cells.is_power_of_two()
        || geometry.senders == 0
        || total != Some(file_len)
        || h.total_bytes != file_len as u64
    {
        return Err(format!(
            "sizes disagree: header {}, cell {}, {} senders x {} cells, file {file_len}",
            h.header_bytes, h.cell_bytes, geometry.senders, geometry.ring_cells
        ));
    }
    Ok(geometry)
}

/// The path of the segment of `rank` in job `job`.
pub fn segment_path(job: u64, rank: u32) -> PathBuf {
    Path::new(SHM_DIR).join(format!("steadfast-{job:016x}-{rank}"))
}

/// A mapped segment (owned or attached).
#[derive(Debug)]
pub struct Segment {
    map: MmapMut,
    geometry: Geometry,
    path: PathBuf,
    owned: bool,
    /// The file's (device, inode), to tell it from a later file of the same name (a
    /// restarted owner's).
    file_id: (u64, u64),
}

impl Segment {
    /// Creates the segment of `rank` in `job` (the caller is its owner and only
    /// consumer); fails if the name exists.
    ///
    /// # Errors
    /// [`SegmentError::Io`] from create / size / map.
    pub fn create(job: u64, rank: u32, geometry: Geometry) -> Result<Segment, SegmentError> {
        Segment::create_with_xpmem(job, rank, geometry, 0)
    }

    /// As [`create`](Self::create), publishing the owner's XPMEM segment id (0: none).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_with_xpmem(
        job: u64,
        rank: u32,
        geometry: Geometry,
        xpmem_segid: i64,
    ) -> Result<Segment, SegmentError> {
        Segment::create_incarnation(job, rank, geometry, xpmem_segid, 0)
    }

    /// As [`create_with_xpmem`](Self::create_with_xpmem), by incarnation `generation`
    /// of its owner (recorded in the header).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_incarnation(
        job: u64,
        rank: u32,
        geometry: Geometry,
        xpmem_segid: i64,
        generation: u32,
    ) -> Result<Segment, SegmentError> {
        let path = segment_path(job, rank);
        let total = match geometry.total_bytes() {
            Some(total) if geometry.ring_cells.is_power_of_two() && geometry.senders > 0 => total,
            _ => {
                return Err(SegmentError::Invalid {
                    path,
                    reason: format!(
                        "{} senders x {} cells: needs senders > 0, a power-of-two ring, \
                         and a size that fits in memory",
                        geometry.senders, geometry.ring_cells
                    ),
                })
            }
        };
        // Built under a private name, then linked into place complete: a sender never
        // sees a file that is not yet sized or initialised, and `link` fails when the
        // name exists, so creation stays exclusive.
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let io = |what, source| SegmentError::Io {
            what,
            path: path.clone(),
            source,
        };
        let _ = std::fs::remove_file(&tmp);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| io("creating", e))?;
        let built = (|| {
            file.set_len(total as u64).map_err(|e| io("sizing", e))?;
            // SAFETY: a fresh private file of ours; others map it only once linked, and
            // every shared field is accessed through atomics.
            let map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| io("mapping", e))?;
            let meta = file.metadata().map_err(|e| io("inspecting", e))?;
            let mut segment = Segment {
                map,
                geometry,
                path: path.clone(),
                owned: false,
                file_id: (meta.dev(), meta.ino()),
            };
            segment.init(job, rank, total, xpmem_segid, generation);
            std::fs::hard_link(&tmp, &path).map_err(|e| io("publishing", e))?;
            segment.owned = true;
            Ok(segment)
        })();
        let _ = std::fs::remove_file(&tmp);
        built
    }

    fn init(&mut self, job: u64, rank: u32, total: usize, xpmem_segid: i64, generation: u32) {
        // The file is zero-filled: counters start at 0, cells are zero. Only the header
        // needs writing, through the mapping, before `ready` is published.
        let g = self.geometry;
        let base = self.map.as_mut_ptr();
        // SAFETY: the mapping is HEADER_BYTES or more, page aligned, and nobody else
        // touches the header before `ready` is set below.
        let h = unsafe { &mut *(base as *mut SegmentHeader) };
        h.magic = MAGIC;
        h.version = VERSION;
        h.header_bytes = HEADER_BYTES as u32;
        h.ring_cells = g.ring_cells;
        h.cell_bytes = CELL_BYTES as u32;
        h.senders = g.senders;
        h.owner_rank = rank;
        h.owner_pid = std::process::id();
        h.owner_generation = generation;
        h.job = job;
        h.total_bytes = total as u64;
        h.xpmem_segid = xpmem_segid;
        // ORDERING: Release; pairs with the Acquire load in `attach`: a sender that sees
        // ready = 1 sees the header fields above.
        h.ready.store(1, Ordering::Release);
    }

    /// Maps the existing segment of `rank` in `job`, as a sender, waiting up to
    /// `spins` polls for its owner to mark it ready.
    ///
    /// # Errors
    /// [`SegmentError::Io`], [`SegmentError::Invalid`] for a file of another layout,
    /// version, job or size, [`SegmentError::NotReady`].
    pub fn attach(job: u64, rank: u32, spins: u32) -> Result<Segment, SegmentError> {
        let path = segment_path(job, rank);
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|source| SegmentError::Io {
                what: "opening",
                path: path.clone(),
                source,
            })?;
        let meta = file.metadata().map_err(|source| SegmentError::Io {
            what: "inspecting",
            path: path.clone(),
            source,
        })?;
        let len = meta.len() as usize;
        let file_id = (meta.dev(), meta.ino());
        let invalid = |reason: String| SegmentError::Invalid {
            path: path.clone(),
            reason,
        };
        if len < HEADER_BYTES {
            return Err(invalid(format!("{len} bytes, smaller than a header")));
        }
        // SAFETY: shared fields are only accessed through atomics; the header's plain
        // fields are written once by the owner before `ready` and only read here after.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(|source| SegmentError::Io {
            what: "mapping",
            path: path.clone(),
            source,
        })?;
        // SAFETY: at least HEADER_BYTES mapped, page aligned.
        let h = unsafe { &*(map.as_ptr() as *const SegmentHeader) };
        let mut ready = false;
        for _ in 0..spins.max(1) {
            // ORDERING: Acquire; pairs with the Release store in `init`.
            if h.ready.load(Ordering::Acquire) == 1 {
                ready = true;
                break;
            }
            std::thread::yield_now();
        }
        if !ready {
            return Err(SegmentError::NotReady { path });
        }
        let fields = HeaderFields {
            magic: h.magic,
            version: h.version,
            header_bytes: h.header_bytes,
            cell_bytes: h.cell_bytes,
            ring_cells: h.ring_cells,
            senders: h.senders,
            owner_rank: h.owner_rank,
            job: h.job,
            total_bytes: h.total_bytes,
        };
        let geometry = validate_header(&fields, job, rank, len).map_err(invalid)?;
        Ok(Segment {
            map,
            geometry,
            path,
            owned: false,
            file_id,
        })
    }

    /// Removes the segment's name if it still names this segment's file (for a survivor
    /// cleaning up after a dead owner: a restarted owner may have created a new file of
    /// the same name since, which must stay).
    pub fn remove_if_unchanged(&self) {
        if let Ok(meta) = std::fs::metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.file_id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }

    /// The owner's incarnation.
    pub fn owner_generation(&self) -> u32 {
        self.header().owner_generation
    }

    /// Lets incarnation `generation` of `sender` push into its ring of this new
    /// segment (see [`RingHeader::admit_into_new`]).
    pub fn admit_into_new(&self, sender: u32, generation: u32) {
        self.ring(sender).0.admit_into_new(generation);
    }

    /// Whether the owner admits incarnation `generation` of `sender` into its ring.
    pub fn admits(&self, sender: u32, generation: u32) -> bool {
        self.ring(sender).0.admits(generation)
    }

    /// The segment's sizes.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The owner's pid as recorded in the header.
    pub fn owner_pid(&self) -> u32 {
        self.header().owner_pid
    }

    /// The owner's XPMEM segment id, 0 when it has none.
    pub fn xpmem_segid(&self) -> i64 {
        self.header().xpmem_segid
    }

    /// Where the segment lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: validated at create/attach; lives as long as the mapping.
        unsafe { &*(self.map.as_ptr() as *const SegmentHeader) }
    }

    /// The whole mapping viewed as atomic words (for placing it in memory; every byte
    /// of a segment is only ever accessed atomically once it is published).
    pub fn as_words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page aligned and its length a multiple of 64 (header
        // and ring sizes are), any bit pattern is a valid AtomicU64, and shared
        // references to atomics are sound while other processes write them.
        unsafe {
            std::slice::from_raw_parts(self.map.as_ptr() as *const AtomicU64, self.map.len() / 8)
        }
    }

    /// The ring of `sender`: its header and cells.
    fn ring(&self, sender: u32) -> (&RingHeader, &[Cell]) {
        assert!(
            sender < self.geometry.senders,
            "sender {sender} out of range"
        );
        let off = HEADER_BYTES + sender as usize * self.geometry.ring_stride();
        // SAFETY: `off` is inside the mapping (checked sizes), 64-byte aligned (page
        // base + multiples of 64-byte sizes); RingHeader and Cell hold only atomics, so
        // shared references to them are sound even while other processes write.
        unsafe {
            let base = self.map.as_ptr().add(off);
            let header = &*(base as *const RingHeader);
            let cells = std::slice::from_raw_parts(
                base.add(std::mem::size_of::<RingHeader>()) as *const Cell,
                self.geometry.ring_cells as usize,
            );
            (header, cells)
        }
    }

    /// Split-copy slot `k` of the owner's sends to local rank `dest`.
    ///
    /// # Panics
    /// If `dest` or `k` is out of range.
    pub fn split_slot(&self, dest: u32, k: u32) -> &SplitSlot {
        assert!(
            dest < self.geometry.senders && k < SPLIT_SLOTS,
            "split slot out of range"
        );
        let off = self.geometry.slots_offset()
            + (dest as usize * SPLIT_SLOTS as usize + k as usize)
                * std::mem::size_of::<SplitSlot>();
        // SAFETY: inside the mapping (sizes checked at create/attach), 64-byte aligned
        // (page base plus multiples of 64), and a SplitSlot holds only atomics.
        unsafe { &*(self.map.as_ptr().add(off) as *const SplitSlot) }
    }

    /// The consumer end of `sender`'s ring (the owner's side).
    pub fn consumer(&self, sender: u32) -> Consumer<'_> {
        let (h, c) = self.ring(sender);
        Consumer::new(h, c)
    }

    /// The producer end of `sender`'s ring (that sender's side).
    pub fn producer(&self, sender: u32) -> Producer<'_> {
        let (h, c) = self.ring(sender);
        Producer::new(h, c)
    }

    /// The producer end of `sender`'s ring, resumed from a saved position.
    pub fn producer_at(&self, sender: u32, pos: ProducerPos) -> Producer<'_> {
        let (h, c) = self.ring(sender);
        Producer::resume(h, c, pos)
    }

    /// The consumer end of `sender`'s ring, resumed from a saved position.
    pub fn consumer_at(&self, sender: u32, pos: ConsumerPos) -> Consumer<'_> {
        let (h, c) = self.ring(sender);
        Consumer::resume(h, c, pos)
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        if self.owned {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Removes the segments of `job` whose owners are dead (or of any job when `job` is
/// `None`); returns the paths removed. A segment whose header cannot be read is left
/// alone unless its file is older than a minute (a crashed creator).
pub fn remove_stale(job: Option<u64>) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("steadfast-")) else {
            continue;
        };
        let Some((job_hex, _rank)) = rest.split_once('-') else {
            continue;
        };
        if job.is_some_and(|j| format!("{j:016x}") != job_hex) {
            continue;
        }
        let path = entry.path();
        // A segment being built (`<name>.tmp-<creator pid>`): its header may be half
        // written (the owner pid still 0 while the magic is set), so only its creator's
        // death makes it stale.
        if let Some(creator) = tmp_creator(rest) {
            if !steadfast_os::process::pid_alive(creator) && std::fs::remove_file(&path).is_ok() {
                log::info!(
                    "steadfast-shm: removed {}, left by a creator that died",
                    path.display()
                );
                removed.push(path);
            }
            continue;
        }
        let stale = match owner_pid_of(&path) {
            // A zombie owner is dead too: it will never use its segment again.
            Some(pid) => !steadfast_os::process::pid_alive(pid),
            // Unreadable: a crashed creator's leftover (or a foreign file) once it has
            // not been touched for a minute; a segment being built is never public.
            None => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > std::time::Duration::from_secs(60)),
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            log::info!(
                "steadfast-shm: removed {}, left by a dead process",
                path.display()
            );
            removed.push(path);
        }
    }
    removed
}

/// The creator's pid of a segment file being built, from the `.tmp-<pid>` end of its
/// name (`rest` is the name after `steadfast-`); `None` for a finished segment.
fn tmp_creator(rest: &str) -> Option<u32> {
    rest.rsplit_once(".tmp-")?.1.parse().ok()
}

fn owner_pid_of(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut f = File::open(path).ok()?;
    let mut buf = [0u8; std::mem::offset_of!(SegmentHeader, owner_pid) + 4];
    f.read_exact(&mut buf).ok()?;
    if u64::from_le_bytes(buf[0..8].try_into().ok()?) != MAGIC {
        return None;
    }
    let at = std::mem::offset_of!(SegmentHeader, owner_pid);
    // 0: a header not fully written (unreadable, then: the age rule applies).
    Some(u32::from_le_bytes(buf[at..at + 4].try_into().ok()?)).filter(|&pid| pid != 0)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn job() -> u64 {
        0x7e57_0000_0000_0000 | std::process::id() as u64
    }

    #[test]
    fn create_attach_exchange_and_cleanup() {
        let g = Geometry {
            senders: 3,
            ring_cells: 8,
        };
        let owner = Segment::create(job(), 1, g).unwrap();
        assert!(Segment::create(job(), 1, g).is_err(), "O_EXCL");
        let sender = Segment::attach(job(), 1, 10).unwrap();
        assert_eq!(sender.geometry(), g);
        assert_eq!(sender.owner_pid(), std::process::id());
        let mut p = sender.producer(2);
        let mut c = owner.consumer(2);
        assert!(p.try_push(|cell| cell.set(0, 42)));
        assert_eq!(c.try_pop(|cell| cell.get(0)).unwrap(), Some(42));
        let path = owner.path().to_path_buf();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(sender);
        drop(owner);
        assert!(!path.exists());
    }

    #[test]
    fn wrong_job_or_garbage_is_refused() {
        let g = Geometry {
            senders: 1,
            ring_cells: 2,
        };
        let _owner = Segment::create(job() ^ 1, 0, g).unwrap();
        // A file of garbage under a segment name.
        let path = segment_path(job() ^ 2, 0);
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        assert!(matches!(
            Segment::attach(job() ^ 2, 0, 1),
            Err(SegmentError::NotReady { .. } | SegmentError::Invalid { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            Segment::attach(job() ^ 3, 0, 1),
            Err(SegmentError::Io { .. })
        ));
    }

    #[test]
    fn stale_segments_of_dead_owners_are_removed() {
        let g = Geometry {
            senders: 1,
            ring_cells: 2,
        };
        let j = job() ^ 4;
        let seg = Segment::create(j, 0, g).unwrap();
        // Rewrite the recorded owner to a pid that cannot exist.
        // SAFETY: test-only write to our own header; nobody else maps it.
        unsafe { (*(seg.map.as_ptr() as *mut SegmentHeader)).owner_pid = 0x7fff_fff0 };
        let path = seg.path().to_path_buf();
        std::mem::forget(seg); // as if the owner had been SIGKILLed
        assert_eq!(remove_stale(Some(j)), vec![path.clone()]);
        assert!(!path.exists());
    }

    #[test]
    fn a_segment_being_built_is_removed_only_when_its_creator_died() {
        let j = job() ^ 5;
        let name = |pid: u32| format!("{SHM_DIR}/steadfast-{j:016x}-0.tmp-{pid}");
        // Half written: the magic is set, the owner pid not yet (0).
        let mut header = vec![0u8; HEADER_BYTES];
        header[..8].copy_from_slice(&MAGIC.to_le_bytes());
        let live = PathBuf::from(name(std::process::id()));
        let dead = PathBuf::from(name(0x7fff_fff0));
        std::fs::write(&live, &header).unwrap();
        std::fs::write(&dead, &header).unwrap();
        assert_eq!(remove_stale(Some(j)), vec![dead.clone()]);
        assert!(live.exists(), "its creator is alive and still building it");
        std::fs::remove_file(&live).unwrap();
        assert_eq!(tmp_creator(&format!("{j:016x}-3.tmp-42")), Some(42));
        assert_eq!(tmp_creator(&format!("{j:016x}-3")), None);
    }
}
