//! Memory registration (`fi_mr_reg`) honouring the provider's `mr_mode`, and the
//! registration cache that makes repeated zero-copy sends of one buffer register once.

use std::ffi::c_void;
use std::ptr::{self, NonNull};

use steadfast_fabric_sys as sys;

use crate::error::{check, Result};
use crate::info::MrMode;
use crate::objects::{Domain, Endpoint};

/// Access rights of a registration (`FI_SEND`, `FI_REMOTE_READ`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access(pub u64);

impl Access {
    /// Local sends, receives and RMA/atomic initiation, plus remote reads (what the
    /// rendezvous protocol needs of a send buffer).
    pub const LOCAL_AND_REMOTE_READ: Access = Access(
        (sys::FI_SEND | sys::FI_RECV | sys::FI_READ | sys::FI_WRITE | sys::FI_REMOTE_READ) as u64,
    );
    /// Everything, including remote writes and atomics (an exposed RMA region).
    pub const ALL: Access = Access(
        (sys::FI_SEND
            | sys::FI_RECV
            | sys::FI_READ
            | sys::FI_WRITE
            | sys::FI_REMOTE_READ
            | sys::FI_REMOTE_WRITE) as u64,
    );
}

/// A registered memory region (`fi_mr_reg`).
///
/// It does not own or borrow the memory: whoever creates one promises (through the
/// `unsafe` constructor) that the memory stays mapped while the region is open. Safe
/// owners are [`RegistrationCache`] (inside a messenger) and
/// the messenger's exposures ([`Messenger::expose`](crate::Messenger::expose)).
pub struct MemoryRegion {
    fid: NonNull<sys::fid_mr>,
    desc: *mut c_void,
    key: u64,
    start: usize,
    len: usize,
    // Closed after us: the endpoint (FI_MR_ENDPOINT binds us to it), then the domain.
    _endpoint: Option<Endpoint>,
    _domain: Domain,
}

impl MemoryRegion {
    /// Registers `len` bytes at `start`.
    ///
    /// With `FI_MR_ENDPOINT` the region is bound to `endpoint` and enabled; without
    /// `FI_MR_PROV_KEY`, `requested_key` is the key asked for.
    ///
    /// # Safety
    /// `start..start+len` must be mapped memory of this process that stays mapped
    /// (not unmapped or remapped) for as long as the region is open.
    ///
    /// # Errors
    /// [`crate::Error::Fabric`] when the provider refuses.
    pub unsafe fn register(
        domain: &Domain,
        endpoint: &Endpoint,
        mr_mode: MrMode,
        start: *const u8,
        len: usize,
        access: Access,
        requested_key: u64,
    ) -> Result<Self> {
        let mut fid: *mut sys::fid_mr = ptr::null_mut();
        // SAFETY: the domain is open; the caller guarantees the range stays mapped.
        let ret = unsafe {
            sys::fi_mr_reg(
                domain.raw(),
                start.cast(),
                len,
                access.0,
                0,
                requested_key,
                0,
                &mut fid,
                ptr::null_mut(),
            )
        };
        check("fi_mr_reg", ret as i64)?;
        let fid = NonNull::new(fid).expect("fi_mr_reg returned null");
        let mut region = MemoryRegion {
            fid,
            desc: ptr::null_mut(),
            key: 0,
            start: start as usize,
            len,
            _endpoint: None,
            _domain: domain.clone(),
        };
        if mr_mode.endpoint() {
            let ep = endpoint.live()?;
            // SAFETY: the region and endpoint are open and of the same domain.
            unsafe {
                check(
                    "fi_mr_bind",
                    sys::fi_mr_bind(fid.as_ptr(), &mut (*ep).fid, 0) as i64,
                )?;
                check("fi_mr_enable", sys::fi_mr_enable(fid.as_ptr()) as i64)?;
            }
            region._endpoint = Some(endpoint.clone());
        }
        // SAFETY: the region is open (and enabled where required).
        unsafe {
            region.desc = sys::fi_mr_desc(fid.as_ptr());
            region.key = sys::fi_mr_key(fid.as_ptr());
        }
        Ok(region)
    }

    /// The local descriptor to pass with operations on this memory.
    pub fn desc(&self) -> *mut c_void {
        self.desc
    }

    /// The key a peer uses to access this region.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// First byte covered.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Bytes covered.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region covers no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `[addr, addr+len)` lies inside the region.
    pub fn covers(&self, addr: usize, len: usize) -> bool {
        addr >= self.start && addr.saturating_add(len) <= self.start + self.len
    }

    /// The address a peer must use for byte `addr` of this region: the virtual address
    /// under `FI_MR_VIRT_ADDR`, else the offset from the region's start.
    pub fn remote_address(&self, mr_mode: MrMode, addr: usize) -> u64 {
        if mr_mode.virt_addr() {
            addr as u64
        } else {
            (addr - self.start) as u64
        }
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: opened by fi_mr_reg and closed once; the endpoint and domain are
        // still open (we hold them).
        unsafe {
            sys::fi_close(&mut (*self.fid.as_ptr()).fid);
        }
    }
}

impl std::fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MemoryRegion {{ start: {:#x}, len: {}, key: {:#x} }}",
            self.start, self.len, self.key
        )
    }
}

/// Page size used to round registrations out, so that sub-slices of a registered
/// buffer hit.
const PAGE: usize = 4096;

struct CacheEntry {
    region: MemoryRegion,
    last_use: u64,
    in_use: u32,
}

/// Hit and miss counts of a [`RegistrationCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups served by an existing registration.
    pub hits: u64,
    /// Lookups that registered memory.
    pub misses: u64,
    /// Registrations closed to make room.
    pub evictions: u64,
}

/// Handle of a cache entry held by an in-flight operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSlot(u32);

/// A bounded cache of registrations keyed by address range, least recently used out.
///
/// An entry in use by an in-flight operation is never evicted. The cache assumes that
/// a registered range keeps its mapping while cached: with providers that pin pages
/// (verbs, cxi, efa), a buffer that is freed and its address reused must be
/// [`invalidate`](Self::invalidate)d first. The socket and shared-memory providers read
/// memory through its address at transfer time, so a stale entry there is harmless.
pub struct RegistrationCache {
    entries: Vec<Option<CacheEntry>>,
    clock: u64,
    stats: CacheStats,
    next_key: u64,
}

impl RegistrationCache {
    /// A cache holding at most `capacity` registrations (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let mut entries = Vec::with_capacity(capacity);
        entries.resize_with(capacity, || None);
        RegistrationCache {
            entries,
            clock: 0,
            stats: CacheStats::default(),
            next_key: 1 << 40,
        }
    }

    /// Hit, miss and eviction counts so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Finds or makes a registration covering `[addr, addr+len)` and marks it in use.
    ///
    /// # Safety
    /// The range must be mapped and stay mapped until [`release`](Self::release) is
    /// called for the returned slot (and, while cached, see the type's note on reuse).
    ///
    /// # Errors
    /// [`crate::Error::Fabric`] when registration fails.
    pub unsafe fn acquire(
        &mut self,
        domain: &Domain,
        endpoint: &Endpoint,
        mr_mode: MrMode,
        addr: usize,
        len: usize,
    ) -> Result<CacheSlot> {
        self.clock += 1;
        let want_len = len.max(1);
        for (index, entry) in self.entries.iter_mut().enumerate() {
            if let Some(entry) = entry {
                if entry.region.covers(addr, want_len) {
                    entry.last_use = self.clock;
                    entry.in_use += 1;
                    self.stats.hits += 1;
                    return Ok(CacheSlot(index as u32));
                }
            }
        }
        self.stats.misses += 1;
        let start = addr & !(PAGE - 1);
        let end = (addr + want_len).div_ceil(PAGE) * PAGE;
        let key = self.next_key;
        self.next_key += 1;
        // SAFETY: the caller guarantees [addr, addr+len) is mapped; rounding out to
        // whole pages stays within mappings, which are page-granular.
        let region = unsafe {
            MemoryRegion::register(
                domain,
                endpoint,
                mr_mode,
                start as *const u8,
                end - start,
                Access::LOCAL_AND_REMOTE_READ,
                key,
            )?
        };
        let index = self.free_index();
        let fresh = CacheEntry {
            region,
            last_use: self.clock,
            in_use: 1,
        };
        match index {
            Some(index) => {
                if self.entries[index].take().is_some() {
                    self.stats.evictions += 1;
                }
                self.entries[index] = Some(fresh);
                Ok(CacheSlot(index as u32))
            }
            None => {
                // Every entry is held by an in-flight operation: grow (rare, bounded by
                // the number of request slots).
                self.entries.push(Some(fresh));
                Ok(CacheSlot((self.entries.len() - 1) as u32))
            }
        }
    }

    /// An empty slot, else the least recently used entry not in use.
    fn free_index(&self) -> Option<usize> {
        if let Some(i) = self.entries.iter().position(Option::is_none) {
            return Some(i);
        }
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.as_ref()
                    .filter(|e| e.in_use == 0)
                    .map(|e| (i, e.last_use))
            })
            .min_by_key(|&(_, last)| last)
            .map(|(i, _)| i)
    }

    /// The registration behind a slot.
    pub fn region(&self, slot: CacheSlot) -> &MemoryRegion {
        &self.entries[slot.0 as usize]
            .as_ref()
            .expect("cache slot in use")
            .region
    }

    /// Marks an operation done with the slot.
    pub fn release(&mut self, slot: CacheSlot) {
        if let Some(entry) = self.entries[slot.0 as usize].as_mut() {
            entry.in_use = entry.in_use.saturating_sub(1);
        }
    }

    /// Drops cached registrations overlapping `[addr, addr+len)` that no operation
    /// holds. Call before unmapping memory that was sent from, with pinning providers.
    pub fn invalidate(&mut self, addr: usize, len: usize) {
        for entry in &mut self.entries {
            let overlaps = entry.as_ref().is_some_and(|e| {
                e.in_use == 0
                    && e.region.start() < addr + len
                    && addr < e.region.start() + e.region.len()
            });
            if overlaps {
                *entry = None;
            }
        }
    }
}
