//! One-sided communication: a window of memory every rank of a communicator exposes,
//! which the others write ([`Window::put`]) and read ([`Window::get`]) without the
//! owner taking part.
//!
//! Within a node a put or get is one `process_vm_writev` / `process_vm_readv` into or
//! out of the owner's buffer (a single copy, no ring); across nodes it is a fabric RMA
//! write (with `FI_DELIVERY_COMPLETE`) or read on the registered buffer. Either way the
//! call returns when the data is where it was sent: a put is in the target's memory, a
//! get in the caller's buffer. [`Window::fence`] tells the owners that the puts before
//! it are done (a barrier of the window's own communicator).
//!
//! Peers write a window's memory while this process runs, so no Rust reference to it is
//! ever handed out: the owner reads and writes its own window by copies
//! ([`Window::read_local`], [`Window::write_local`]). [`Comm::window_allocate`] gives a
//! window that owns its memory (sound whatever the caller does: a leaked window leaks
//! its memory instead of freeing it under the peers); [`Comm::window`] exposes the
//! caller's buffer and is `unsafe` for that reason.

use std::marker::PhantomData;

use steadfast_fabric::{Error as FabricError, Exposure, RemoteRegion};
use steadfast_os::SpinWait;

mod dynamic;

use self::dynamic::Regions;
pub use self::dynamic::MAX_REGIONS;
use super::window_desc::exchange_descriptors;
use super::{Comm, CommError};
use crate::world::engine::{Engine, Route};
use crate::world::shared::Shared;

/// A put's data or a get's buffer.
enum Access<'b> {
    Put(&'b [u8]),
    Get(&'b mut [u8]),
}

/// How this process reaches one rank's window memory.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target {
    /// This process's own buffer.
    Own,
    /// Same node: single copy into / out of process `pid` at `addr`.
    Cma { pid: u32, addr: u64, len: usize },
    /// Another node: fabric RMA on the region (`world` is the peer's world rank).
    Fabric {
        world: u32,
        region: RemoteRegion,
        len: usize,
    },
}

/// Memory exposed by every rank of a communicator for one-sided access. Created
/// collectively by [`Comm::window_allocate`] (or the `unsafe` [`Comm::window`]);
/// dropping it is collective too (a barrier, so no rank frees its memory while another
/// still accesses it).
///
/// ```no_run
/// # fn demo(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
/// let win = comm.window_allocate(4096)?;
/// let next = (comm.rank() + 1) % comm.size();
/// win.put(next, 0, &comm.rank().to_le_bytes())?;
/// win.fence()?;
/// let mut got = [0u8; 4];
/// win.read_local(0, &mut got)?; // what the previous rank put
/// win.free()?;
/// # Ok(()) }
/// ```
///
/// The memory cannot be borrowed while peers may write it:
///
/// ```compile_fail
/// # fn demo(comm: &steadfast::Comm) {
/// let win = comm.window_allocate(64).unwrap();
/// let bytes: &mut [u8] = win.local(); // no such method: peers write this memory
/// # }
/// ```
pub struct Window<'a> {
    comm: Comm,
    base: *mut u8,
    len: usize,
    /// The capacity of the `Vec` the window owns ([`Comm::window_allocate`]); `None` for
    /// the caller's buffer.
    owned_capacity: Option<usize>,
    targets: Vec<Target>,
    /// The fabric registration, when some rank is reached through the fabric (closed
    /// on drop, after the closing barrier).
    exposed: Option<Exposure>,
    /// A dynamic window's attached regions ([`Comm::window_dynamic`]); `base` is null
    /// and offsets are addresses then.
    dynamic: Option<Box<Regions>>,
    /// `free` was called (its barrier is not repeated on drop).
    freed: bool,
    /// The closing barrier succeeded: no live peer still accesses the memory.
    closed: bool,
    _buf: PhantomData<&'a mut [u8]>,
}

// SAFETY: a window stands for a `&'a mut [u8]` (or an owned `Vec<u8>`), both Send, and
// a `Comm` (Send); its memory is only reached by copies through the raw pointer, from
// any thread as from the peers' processes (which write it whenever they put).
unsafe impl Send for Window<'_> {}
// SAFETY: every method takes `&self` and reaches the memory only by relaxed byte-atomic
// copies (`steadfast_os::shared_bytes`: two threads' copies never race; what one sees of
// a concurrent put or `write_local` is unspecified, as it is for a peer's put: see the
// module doc and docs/threads.md), and the engine only under its token.
unsafe impl Sync for Window<'_> {}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("comm", &self.comm)
            .field("len", &self.len)
            .finish()
    }
}

fn cma_error(e: std::io::Error, world: u32, engine: &mut Engine) -> CommError {
    match e.raw_os_error() {
        Some(libc::ESRCH) => {
            engine.report_failure(world, "window access: process gone".into());
            engine.apply_failures();
            CommError::ProcFailed { ranks: Vec::new() }
        }
        _ => CommError::WindowAccess {
            rank: world,
            source: std::sync::Arc::new(e),
        },
    }
}

fn fabric_error(e: FabricError, world: u32, engine: &mut Engine) -> CommError {
    match e {
        FabricError::PeerUnreachable { reason, .. } => {
            engine.report_failure(world, format!("fabric: {reason}"));
            engine.apply_failures();
            CommError::ProcFailed { ranks: Vec::new() }
        }
        other => other.into(),
    }
}

/// `len` zero bytes from the allocator's zeroed allocation: for a large window the
/// pages come zeroed from the kernel when first touched, instead of a memset of the
/// whole length that keeps this process away from its heartbeats (a second per
/// gigabyte on a loaded host).
fn zeroed_memory(len: usize) -> Result<Vec<u8>, CommError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len)
        .map_err(|e| CommError::InvalidArgument(format!("window of {len} bytes: {e}")))?;
    // SAFETY: `layout` has a non-zero size.
    let base = unsafe { std::alloc::alloc_zeroed(layout) };
    if base.is_null() {
        return Err(CommError::InvalidArgument(format!(
            "window of {len} bytes: out of memory"
        )));
    }
    // SAFETY: `base` was allocated by the global allocator with the layout of `len`
    // bytes (capacity `len`), all of them initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(base, len, len) })
}

/// A fabric put or get moves at most this many bytes per RMA operation.
const RMA_CHUNK: usize = 4 << 20;
/// RMA operations of one put or get in flight at once. One: with two or more in
/// flight over tcp (`ofi_rxm`), a 256 MiB put on a loaded 2-core host still held the
/// heartbeats back past a 300 ms timeout in about half the runs; with one, in none
/// (and at the same speed: 4 MiB per operation keeps the round trips few).
const RMA_IN_FLIGHT: usize = 1;

/// One put or get over the fabric, complete when it returns.
///
/// Waited for here, with the engine's progress between polls, rather than inside the
/// messenger (where no heartbeat went out for the whole transfer), and cut into chunks
/// of [`RMA_CHUNK`] with [`RMA_IN_FLIGHT`] in flight: a transfer of hundreds of
/// megabytes over tcp shares one connection with this process's heartbeats, and as one
/// operation it would hold them back for its whole length (the target then suspects
/// this process, and this one the target). If the target dies meanwhile, what is in
/// flight is cancelled.
fn fabric_access(
    shared: &Shared,
    world: u32,
    region: &RemoteRegion,
    offset: u64,
    mut access: Access<'_>,
) -> Result<(), CommError> {
    let len = match &access {
        Access::Put(data) => data.len(),
        Access::Get(buf) => buf.len(),
    };
    let mut in_flight: [Option<steadfast_fabric::Request>; RMA_IN_FLIGHT] = [None; RMA_IN_FLIGHT];
    let mut next = 0usize;
    let mut result = Ok(());
    let mut spin = SpinWait::default();
    // One poll (and one progress round) per hold of the engine: other threads go on
    // while the transfer runs.
    loop {
        let mut guard = shared.lock();
        let e = &mut *guard;
        let fab = e.fab_mut().ok_or(CommError::NoFabricEndpoint)?;
        // Post chunks while there is room.
        while result.is_ok() && next < len {
            let Some(free) = in_flight.iter_mut().find(|r| r.is_none()) else {
                break;
            };
            let end = len.min(next + RMA_CHUNK);
            let at = offset + next as u64;
            // SAFETY: `access` borrows the data or buffer for this whole function,
            // which returns only once every chunk's request has finished (`test` gave
            // its outcome, or `cancel` returned: it waits until libfabric lets go).
            let started = unsafe {
                match &mut access {
                    Access::Put(data) => {
                        fab.start_rma_write_delivered(world, &data[next..end], region, at)
                    }
                    Access::Get(buf) => fab.start_rma_read(world, &mut buf[next..end], region, at),
                }
            };
            match started {
                Ok(request) => *free = request,
                Err(err) => result = Err(err),
            }
            next = end;
        }
        let mut pending = false;
        for slot in in_flight.iter_mut() {
            if let Some(request) = *slot {
                match fab.test(request) {
                    Ok(None) => pending = true,
                    Ok(Some(_)) => *slot = None,
                    Err(err) => {
                        *slot = None;
                        if result.is_ok() {
                            result = Err(err);
                        }
                    }
                }
            }
        }
        if !pending && (next >= len || result.is_err()) {
            return result.map_err(|err| fabric_error(err, world, e));
        }
        if result.is_err() || e.is_failed(world) {
            // Give up what is still in flight; each cancel returns once the buffer is
            // ours again.
            let fab = e.fab_mut().ok_or(CommError::NoFabricEndpoint)?;
            for slot in in_flight.iter_mut() {
                if let Some(request) = slot.take() {
                    if let Err(err) = fab.cancel(request) {
                        if result.is_ok() {
                            result = Err(err);
                        }
                    }
                }
            }
            return match result {
                Ok(()) => Err(CommError::ProcFailed { ranks: Vec::new() }),
                Err(err) => Err(fabric_error(err, world, e)),
            };
        }
        // Heartbeats go out and failures are learnt while the transfer runs.
        e.progress();
        drop(guard);
        shared.make_way();
        spin.pause();
    }
}

impl Comm {
    /// Exposes `buf` for one-sided access by every rank of the communicator
    /// (`MPI_Win_create`). Collective: every rank calls it (buffers may differ in
    /// length). The window has its own communicator (a dup), so its traffic never
    /// matches this one's.
    ///
    /// # Errors
    /// `ProcFailed`, `Revoked`, `Excluded` from the exchange; `Fabric` when the
    /// buffer cannot be registered with the fabric; `WindowDescriptor` for a peer's
    /// descriptor that does not decode; `WindowAccess` when single-copy access between
    /// processes of this node is forbidden.
    ///
    /// # Safety
    /// Peers write `buf` until the window is freed: the window must be dropped or
    /// [`free`](Window::free)d, never leaked (`mem::forget`, a reference cycle), before
    /// `buf` is used again, and a failed `free` leaves `buf` writable by a live peer
    /// that has not finished. Prefer the safe [`window_allocate`](Self::window_allocate).
    pub unsafe fn window<'a>(&self, buf: &'a mut [u8]) -> Result<Window<'a>, CommError> {
        // SAFETY: the caller keeps `buf` for the window's life (this function's contract).
        unsafe { self.window_over(buf.as_mut_ptr(), buf.len(), None, None) }
    }

    /// [`window`](Self::window) over `len` bytes at `base`, for callers (the MPI C
    /// library's `MPI_Win_create`) whose memory is another program's and must never be
    /// seen through a Rust reference, since peers write it.
    ///
    /// # Errors
    /// As [`window`](Self::window).
    ///
    /// # Safety
    /// `base..base + len` stays valid memory (nothing when `len` is 0) until the window
    /// is dropped or freed, under the same rules as [`window`](Self::window)'s `buf`;
    /// this process touches it only by raw-pointer copies meanwhile.
    pub unsafe fn window_raw(
        &self,
        base: *mut u8,
        len: usize,
    ) -> Result<Window<'static>, CommError> {
        // SAFETY: the caller keeps the memory for the window's life (this contract).
        unsafe { self.window_over(base, len, None, None) }
    }

    /// Allocates `len` zeroed bytes and exposes them for one-sided access by every rank
    /// of the communicator (`MPI_Win_allocate`). Collective, as [`window`](Self::window).
    /// The window owns the memory: read and write it with [`Window::read_local`] and
    /// [`Window::write_local`].
    ///
    /// # Errors
    /// As [`window`](Self::window); `InvalidArgument` when `len` bytes cannot be
    /// allocated.
    pub fn window_allocate(&self, len: usize) -> Result<Window<'static>, CommError> {
        let memory = zeroed_memory(len)?;
        let mut memory = std::mem::ManuallyDrop::new(memory);
        let (base, capacity) = (memory.as_mut_ptr(), memory.capacity());
        // SAFETY: the window owns the Vec's memory from here on (rebuilt and freed in its
        // drop, leaked if it is leaked) and hands out no reference to it.
        // On an error the memory is leaked, not freed: a peer that received this rank's
        // descriptor may have finished creating its side and put into it.
        unsafe { self.window_over(base, len, Some(capacity), None) }
    }

    /// Creates a dynamic window (`MPI_Win_create_dynamic`): no memory at first; each
    /// rank attaches regions of its own with [`Window::attach`], and a put or get then
    /// names an address the target attached as its offset. Collective, as
    /// [`window`](Self::window). Accesses work between ranks of one node (single
    /// copies); through the fabric they fail with `Unsupported`.
    ///
    /// ```no_run
    /// # fn demo(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
    /// let win = comm.window_dynamic()?;
    /// let mut mine = vec![0u8; 64].into_boxed_slice();
    /// // SAFETY: `mine` lives past the window's free and is not touched meanwhile.
    /// unsafe { win.attach(mine.as_mut_ptr(), mine.len()) }?;
    /// // ... send `mine.as_ptr() as usize` to the peers, who put there ...
    /// win.free()?;
    /// # drop(mine);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`window`](Self::window).
    pub fn window_dynamic(&self) -> Result<Window<'static>, CommError> {
        // SAFETY: no memory at creation; attached regions carry `attach`'s contract.
        unsafe {
            self.window_over(
                std::ptr::null_mut(),
                0,
                None,
                Some(Box::new(Regions::new())),
            )
        }
    }

    /// Creates a window over `len` bytes at `base` (a dynamic one with `dynamic`, where
    /// `base` is null and `len` 0: its descriptor gives the regions table's address).
    ///
    /// # Safety
    /// The memory stays valid, and is touched by this process only through raw
    /// pointers, until the window is dropped; with `owned_capacity` the window owns it
    /// (the raw parts of a `Vec`).
    unsafe fn window_over<'a>(
        &self,
        base: *mut u8,
        len: usize,
        owned_capacity: Option<usize>,
        dynamic: Option<Box<Regions>>,
    ) -> Result<Window<'a>, CommError> {
        let comm = self.dup()?;
        let (group, routes_fabric) = {
            let e = comm.engine.lock();
            let group = e.comm(comm.id).group().to_vec();
            let fabric = group.iter().any(|&w| e.route(w) == Route::Fabric);
            (group, fabric)
        };
        // Register with the fabric only when a member is reached through it.
        let mut exposed = None;
        if routes_fabric && len > 0 {
            let mut e = comm.engine.lock();
            let fab = e.fab_mut().ok_or(CommError::NoFabricEndpoint)?;
            // SAFETY: the window keeps the memory valid (this function's contract) and
            // unexposes it in its drop, before the memory can be freed.
            let region = unsafe { fab.expose(base, len) }?;
            exposed = Some(region);
        }
        let addr = dynamic.as_ref().map_or(base, |r| r.table_addr() as *mut u8);
        let targets = match exchange_descriptors(
            &comm,
            &group,
            addr,
            len,
            exposed.as_ref(),
            dynamic.is_some(),
        ) {
            Ok(targets) => targets,
            Err(err) => {
                if let Some(exposure) = exposed {
                    if let Some(fab) = comm.engine.lock().fab_mut() {
                        // Ours: made on this messenger, so it cannot fail.
                        let _ = fab.unexpose(exposure);
                    }
                }
                return Err(err);
            }
        };
        let window = Window {
            comm,
            base,
            len,
            owned_capacity,
            targets,
            exposed,
            dynamic,
            freed: false,
            closed: false,
            _buf: PhantomData,
        };
        if window.dynamic.is_some() {
            window.probe_dynamic()?;
        } else {
            window.probe_single_copy()?;
        }
        Ok(window)
    }
}

impl Window<'_> {
    /// The window's communicator (a dup of the one it was created on).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Length of `target`'s window.
    ///
    /// # Errors
    /// `InvalidArgument` for a rank outside the communicator.
    pub fn len_of(&self, target: u32) -> Result<usize, CommError> {
        Ok(match self.target(target)? {
            Target::Own => self.len,
            Target::Cma { len, .. } | Target::Fabric { len, .. } => len,
        })
    }

    /// Copies `out.len()` bytes of this rank's own window at `offset` into `out`. Peers
    /// may write the window at any time: what a copy sees of a concurrent put is
    /// unspecified, so read after a [`fence`](Self::fence) that follows their puts.
    ///
    /// # Errors
    /// `InvalidArgument` when the range exceeds the window.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<(), CommError> {
        let at = self.local_at(offset, out.len())?;
        // SAFETY: in range (checked) of memory the window keeps valid; no Rust reference
        // to it exists, every access from this process goes through these atomic copies
        // (other threads may copy at once: the window is Sync), and `out` is the
        // caller's distinct buffer.
        unsafe { steadfast_os::shared_bytes::load(at, out) };
        Ok(())
    }

    /// Copies `data` into this rank's own window at `offset` (no progress, no failure
    /// check: a local store).
    ///
    /// # Errors
    /// `InvalidArgument` when the range exceeds the window.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<(), CommError> {
        let at = self.local_at(offset, data.len())?;
        // SAFETY: as in `read_local`; `data` cannot be the window's memory (no Rust
        // reference to it exists).
        unsafe { steadfast_os::shared_bytes::store(at, data) };
        Ok(())
    }

    /// The first byte of this rank's own window, for callers that access it with their
    /// own (unsafe) raw-pointer code, e.g. atomics; valid until the window is dropped.
    pub fn local_ptr(&self) -> *mut u8 {
        self.base
    }

    /// This rank's memory at `offset` for `len` bytes, checked: inside the window, or
    /// in an attached region of a dynamic window (where `offset` is the address).
    fn local_at(&self, offset: usize, len: usize) -> Result<*mut u8, CommError> {
        if let Some(regions) = self.dynamic.as_deref() {
            return self.local_dynamic(regions, offset, len);
        }
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(CommError::InvalidArgument(format!(
                "{len} bytes at offset {offset} exceed this rank's window of {} bytes",
                self.len
            )));
        }
        Ok(self.base.wrapping_add(offset))
    }

    fn target(&self, target: u32) -> Result<Target, CommError> {
        self.targets.get(target as usize).copied().ok_or_else(|| {
            CommError::InvalidArgument(format!(
                "target {target} outside a window of {} ranks",
                self.targets.len()
            ))
        })
    }

    /// Checks `target` and the range; returns how `target` is reached.
    fn check(&self, target: u32, offset: usize, len: usize) -> Result<Target, CommError> {
        let t = self.target(target)?;
        let size = self.len_of(target)?;
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(CommError::InvalidArgument(format!(
                "{len} bytes at offset {offset} exceed rank {target}'s window of {size} bytes"
            )));
        }
        Ok(t)
    }

    /// The world rank of `target`, unless it has failed, this process was excluded or
    /// the window is revoked.
    fn stopped(&self, e: &Engine, target: u32) -> Result<u32, CommError> {
        let c = e.comm(self.comm.id);
        if e.excluded() {
            return Err(CommError::Excluded);
        }
        if c.revoked() {
            return Err(CommError::Revoked);
        }
        let w = c.group()[target as usize];
        if e.is_failed(w) {
            return Err(CommError::ProcFailed {
                ranks: vec![target],
            });
        }
        Ok(w)
    }

    /// Writes `data` into `target`'s window at `offset`; returns when the data is in
    /// the target's memory.
    ///
    /// # Errors
    /// `InvalidArgument` out of range; `ProcFailed` when the target has failed;
    /// `Revoked`; `WindowAccess` or `Fabric` for other transport errors.
    pub fn put(&self, target: u32, offset: usize, data: &[u8]) -> Result<(), CommError> {
        self.access(target, offset, Access::Put(data))
    }

    /// Reads `buf.len()` bytes of `target`'s window at `offset` into `buf`.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn get(&self, target: u32, offset: usize, buf: &mut [u8]) -> Result<(), CommError> {
        self.access(target, offset, Access::Get(buf))
    }

    /// One put or get, complete when it returns.
    fn access(&self, target: u32, offset: usize, access: Access<'_>) -> Result<(), CommError> {
        if let Some(regions) = self.dynamic.as_deref() {
            return self.access_dynamic(regions, target, offset, access);
        }
        let len = match &access {
            Access::Put(data) => data.len(),
            Access::Get(buf) => buf.len(),
        };
        let t = self.check(target, offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let mut guard = self.comm.engine.lock();
        let e = &mut *guard;
        // A rank that only puts or gets still sends heartbeats and learns failures.
        e.progress();
        let w = self.stopped(e, target)?;
        let result = match (t, access) {
            (Target::Own, Access::Put(data)) => {
                // SAFETY: in range (checked); `data` cannot be the window's memory (no
                // Rust reference to it exists); atomic copies, as in `write_local`.
                unsafe { steadfast_os::shared_bytes::store(self.base.add(offset), &data[..len]) };
                Ok(())
            }
            (Target::Own, Access::Get(buf)) => {
                // SAFETY: in range (checked); `buf` is a distinct &mut; atomic copies,
                // as in `read_local`.
                unsafe { steadfast_os::shared_bytes::load(self.base.add(offset), &mut buf[..len]) };
                Ok(())
            }
            (Target::Cma { pid, addr, .. }, access) => {
                e.stats_mut().one_sided_shm += 1;
                // The copy needs no engine: other threads go on meanwhile.
                drop(guard);
                let at = addr + offset as u64;
                match access {
                    // SAFETY: a `Cma` target is another process of this node (this
                    // process is `Own`), whose window is exposed for exactly this.
                    Access::Put(data) => unsafe { steadfast_shm::cma::write_to(pid, at, data) },
                    Access::Get(buf) => steadfast_shm::cma::read_from(pid, at, buf),
                }
                .map_err(|err| cma_error(err, w, &mut self.comm.engine.lock()))
            }
            (Target::Fabric { world, region, .. }, access) => {
                e.stats_mut().one_sided_fabric += 1;
                drop(guard);
                fabric_access(&self.comm.engine, world, &region, offset as u64, access)
            }
        };
        result.map_err(|err| fill_ranks(err, target))
    }

    /// Waits until every rank has called it: puts issued before it are visible to
    /// their targets after it (`MPI_Win_fence`).
    ///
    /// # Errors
    /// As [`Comm::barrier`].
    pub fn fence(&self) -> Result<(), CommError> {
        self.comm.barrier()
    }

    /// Frees the window collectively (a barrier, then the registration closes).
    ///
    /// # Errors
    /// The barrier's: then some rank may not have finished with this memory (a failed
    /// peer cannot write any more, but a live one that saw the failure late might).
    pub fn free(mut self) -> Result<(), CommError> {
        self.freed = true;
        let result = self.comm.barrier();
        self.closed = result.is_ok();
        result
    }

    /// Reads one byte of every same-node peer's window, so a ptrace policy that
    /// forbids single copy is reported at creation rather than at the first put.
    fn probe_single_copy(&self) -> Result<(), CommError> {
        for (r, t) in self.targets.iter().enumerate() {
            if let Target::Cma { len, .. } = *t {
                if len > 0 {
                    let mut byte = [0u8; 1];
                    self.get(r as u32, 0, &mut byte)?;
                }
            }
        }
        Ok(())
    }
}

/// Names the target in a `ProcFailed` the transport raised.
fn fill_ranks(err: CommError, target: u32) -> CommError {
    match err {
        CommError::ProcFailed { ranks } if ranks.is_empty() => CommError::ProcFailed {
            ranks: vec![target],
        },
        other => other,
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        let closed = if self.freed {
            self.closed
        } else {
            // Collective like MPI_Win_free; a failure cannot be reported from drop.
            self.comm.barrier().is_ok()
        };
        // The registration closes after the barrier (field drop order is not enough:
        // the barrier must come first).
        if let Some(exposure) = self.exposed.take() {
            let mut e = self.comm.engine.lock();
            if let Some(fab) = e.fab_mut() {
                // Ours: made on this engine's messenger, so it cannot fail.
                let _ = fab.unexpose(exposure);
            }
        }
        if let Some(regions) = self.dynamic.take() {
            if !closed {
                // A live peer may still read the table and trust what it says.
                std::mem::forget(regions);
            }
        }
        if let Some(capacity) = self.owned_capacity {
            if closed {
                // SAFETY: the raw parts of the Vec made by `window_allocate`; every peer
                // passed the closing barrier and the registration is closed.
                drop(unsafe { Vec::from_raw_parts(self.base, self.len, capacity) });
            }
            // Otherwise a live peer may not have finished with the memory: it is
            // leaked rather than freed under it.
        }
        // The window's own communicator (a dup) is freed with it: its context is
        // released after the closing barrier, or retired if that failed.
        let clean = closed && !self.comm.is_revoked();
        super::context::release_sole_handle(&self.comm, clean);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_failures_name_the_target() {
        let e = fill_ranks(CommError::ProcFailed { ranks: vec![] }, 3);
        assert_eq!(e, CommError::ProcFailed { ranks: vec![3] });
        let e = fill_ranks(CommError::Revoked, 3);
        assert_eq!(e, CommError::Revoked);
    }
}
