//! Shared-memory windows (MPI 4.1 §12.2.3): `MPI_Win_allocate_shared` and
//! `MPI_Win_shared_query`. The members (one node: a communicator of
//! `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`) share one POSIX shared-memory segment,
//! each rank's part after the lower ranks' parts (each part's start aligned to 64
//! bytes); every member maps all of it, so a rank reaches another's part by loads and
//! stores (`MPI_Win_shared_query` gives its address here). The window is also an
//! ordinary one over this rank's part (`win.rs`), so puts, gets, accumulates and
//! every synchronisation work on it as on any window.
//!
//! The segment is created by rank 0 and removed from the file system as soon as every
//! member has mapped it, so it never outlives the job, however the job ends. The
//! mapping goes when the window is freed; after a failed free (a member dead while
//! others may still write) it is kept, as the runtime keeps a window's memory then.

use std::ffi::{c_int, c_void, CString};

use crate::coll::Coll;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, Guard};
use crate::util::out;
use crate::win::{entry, MPI_ERR_SIZE};

/// `MPI_WIN_FLAVOR_SHARED` (the ABI's value).
pub(crate) const MPI_WIN_FLAVOR_SHARED: c_int = 44;
/// `MPI_ERR_RMA_FLAVOR`.
const MPI_ERR_RMA_FLAVOR: c_int = 52;
/// Each part's start is a multiple of this.
const ALIGN: usize = 64;
/// The segment's name: at most this many bytes (a `/` and a short name).
const NAME_LEN: usize = 80;

/// The segment as this process maps it.
pub(crate) struct SharedSeg {
    map: *mut u8,
    total: usize,
    /// Each rank's part: start in the segment and length.
    parts: Vec<(usize, usize)>,
}

impl Drop for SharedSeg {
    fn drop(&mut self) {
        if self.total > 0 {
            // SAFETY: `map` is this process's mapping of `total` bytes (`map_segment`);
            // no peer reaches it any more (the window's closing barrier is done).
            unsafe { libc::munmap(self.map.cast(), self.total) };
        }
    }
}

impl SharedSeg {
    /// The start of `rank`'s part in this process.
    fn part(&self, rank: usize) -> (*mut u8, usize) {
        let (start, len) = self.parts[rank];
        (self.map.wrapping_add(start), len)
    }
}

/// Maps `total` bytes of segment `name` (created, sized and zeroed by the creator).
fn map_segment(name: &CString, total: usize, create: bool) -> Result<*mut u8, String> {
    if total == 0 {
        return Ok(std::ptr::null_mut());
    }
    let flags = if create {
        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR
    } else {
        libc::O_RDWR
    };
    // SAFETY: `name` is a NUL-terminated string; the result is checked.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(format!("shm_open: {}", std::io::Error::last_os_error()));
    }
    let sized = if create {
        // SAFETY: `fd` is open for writing.
        unsafe { libc::ftruncate(fd, total as libc::off_t) == 0 }
    } else {
        true
    };
    let map = if sized {
        // SAFETY: a shared read-write mapping of `total` bytes of the open object.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: `fd` is ours; the mapping stays after the close.
    unsafe { libc::close(fd) };
    if map == libc::MAP_FAILED {
        if create {
            // SAFETY: a NUL-terminated name this call created.
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
        return Err(format!("mapping the shared window: {err}"));
    }
    Ok(map.cast())
}

/// A segment name removed when dropped.
struct Unlink(CString);

impl Drop for Unlink {
    fn drop(&mut self) {
        // SAFETY: a NUL-terminated name; the members that mapped keep their mappings.
        unsafe { libc::shm_unlink(self.0.as_ptr()) };
    }
}

/// The segment of a new shared window on `comm`, this rank's part `len` bytes: the
/// parts exchanged, rank 0 creating it, every member mapping it, then its name
/// removed. Collective; a member that cannot map fails everywhere.
fn segment(g: &mut Guard, comm: Handle, len: usize) -> R<SharedSeg> {
    let mut c = Coll::start_phases(g, comm, 3)?;
    let (me, n) = (c.me as usize, c.n as usize);
    // Every rank's part length.
    let mine = (len as u64).to_le_bytes();
    let mut lens = vec![[0u8; 8]; n];
    {
        let sends: Vec<(u32, &[u8])> = (0..n as u32).map(|r| (r, &mine[..])).collect();
        let mut recvs: Vec<(u32, &mut [u8])> = lens
            .iter_mut()
            .enumerate()
            .map(|(r, b)| (r as u32, &mut b[..]))
            .collect();
        c.exchange(g, &sends, &mut recvs)?;
    }
    let mut parts = Vec::with_capacity(n);
    let mut total = 0usize;
    for b in &lens {
        let l = usize::try_from(u64::from_le_bytes(*b))
            .map_err(|_| Fail::new(MPI_ERR_SIZE, "a part too large"))?;
        parts.push((total, l));
        total = total
            .checked_add(l.div_ceil(ALIGN) * ALIGN)
            .ok_or_else(|| Fail::new(MPI_ERR_SIZE, "the parts overflow"))?;
    }
    // Rank 0 names and creates the segment, then sends the name.
    c.next_phase();
    let mut name = [0u8; NAME_LEN];
    let mut created = Ok(std::ptr::null_mut());
    // Rank 0's segment name until every member has mapped it: an error return (a
    // member dead mid-creation) removes it.
    let mut unlink_on_error: Option<Unlink> = None;
    if me == 0 {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // ORDERING: Relaxed: only uniqueness within this process matters.
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Named with the job's prefix, so that `steadfast-run` removes it should this
        // process die before the unlink below.
        let prefix = g.lib()?.world.segment_prefix();
        let s = format!("/{prefix}shwin-{}-{seq}", std::process::id());
        if s.len() >= NAME_LEN {
            return Err(Fail::new(MPI_ERR_INTERN, "a segment name too long"));
        }
        name[..s.len()].copy_from_slice(s.as_bytes());
        let cname = CString::new(s).map_err(|_| Fail::new(MPI_ERR_INTERN, "a name with NUL"))?;
        created = map_segment(&cname, total, true);
        if created.is_ok() && total > 0 {
            unlink_on_error = Some(Unlink(cname));
        }
        let sends: Vec<(u32, &[u8])> = (1..n as u32).map(|r| (r, &name[..])).collect();
        c.exchange(g, &sends, &mut [])?;
    } else {
        c.exchange(g, &[], &mut [(0, &mut name[..])])?;
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    let cname = CString::new(&name[..end]).map_err(|_| Fail::new(MPI_ERR_INTERN, "a bad name"))?;
    let mapped = if me == 0 {
        created
    } else {
        map_segment(&cname, total, false)
    };
    // Every member says whether it mapped; then the name goes.
    c.next_phase();
    let ok = [u8::from(mapped.is_ok())];
    let mut oks = vec![[0u8; 1]; n];
    {
        let sends: Vec<(u32, &[u8])> = (0..n as u32).map(|r| (r, &ok[..])).collect();
        let mut recvs: Vec<(u32, &mut [u8])> = oks
            .iter_mut()
            .enumerate()
            .map(|(r, b)| (r as u32, &mut b[..]))
            .collect();
        c.exchange(g, &sends, &mut recvs)?;
    }
    // Every member has mapped it (or failed to): the name goes.
    drop(unlink_on_error);
    let seg = SharedSeg {
        map: mapped.as_ref().copied().unwrap_or(std::ptr::null_mut()),
        total: if mapped.is_ok() { total } else { 0 },
        parts,
    };
    match (&mapped, oks.iter().all(|b| b[0] == 1)) {
        (Ok(_), true) => Ok(seg),
        (Err(e), _) => Err(Fail::new(MPI_ERR_NO_MEM, format!("shared window: {e}"))),
        (Ok(_), false) => Err(Fail::new(
            MPI_ERR_NO_MEM,
            "shared window: another member could not map the segment",
        )),
    }
}

crate::mpi_fn! {
    /// `MPI_Win_allocate_shared`: `size` zeroed bytes of this rank in one segment all
    /// members map; their address in `*baseptr` (a `void **` passed as `void *`).
    fn MPI_Win_allocate_shared / PMPI_Win_allocate_shared(
        size: isize,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract for the three arguments.
            let (slot, base_out, len) = unsafe { crate::win::allocate_args(win, baseptr, size) }?;
            let seg = segment(g, comm, len)?;
            let me = g.lib()?.comm(comm)?.rank as usize;
            let (base, part) = seg.part(me);
            let base = base as usize;
            let h = crate::win::create(g, comm, disp_unit, MPI_WIN_FLAVOR_SHARED, |c| {
                // SAFETY: this rank's part of the segment, mapped until the window is
                // freed (the mapping goes with the window's entry, after the free);
                // reached only through the runtime window's raw copies and the
                // program's own loads and stores.
                unsafe { c.window_raw(base as *mut u8, part) }
            })?;
            entry(g.lib()?, h)?.shared = Some(seg);
            *base_out = base as *mut c_void;
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_shared_query`: the size, displacement unit and address (in this
    /// process) of `rank`'s part; `MPI_PROC_NULL` names the lowest rank with a
    /// non-empty part.
    fn MPI_Win_shared_query / PMPI_Win_shared_query(
        win: Handle,
        rank: c_int,
        size: *mut isize,
        disp_unit: *mut c_int,
        baseptr: *mut c_void
    ) {
        crate::win::win_call(win, |g| {
            let e = entry(g.lib()?, win)?;
            let seg = e.shared.as_ref().ok_or_else(|| {
                Fail::new(MPI_ERR_RMA_FLAVOR, "not a window of MPI_Win_allocate_shared")
            })?;
            let r = if rank == MPI_PROC_NULL {
                seg.parts.iter().position(|&(_, l)| l > 0).unwrap_or(0)
            } else {
                usize::try_from(rank)
                    .ok()
                    .filter(|&r| r < seg.parts.len())
                    .ok_or_else(|| Fail::new(MPI_ERR_RANK, format!("rank {rank}")))?
            };
            let (p, len) = seg.part(r);
            let unit = c_int::try_from(e.disp_units.get(r).copied().unwrap_or(1)).unwrap_or(1);
            // SAFETY: MPI's contract: the three are valid for writes (`baseptr` a
            // `void **`).
            unsafe {
                *out(size)? = len as isize;
                *out(disp_unit)? = unit;
                *out(baseptr.cast::<*mut c_void>())? = p.cast();
            }
            Ok(())
        })
    }
}
