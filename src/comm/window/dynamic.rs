//! Dynamic windows (`MPI_Win_create_dynamic`): a window with no memory at creation, to
//! which each rank attaches regions of its own memory later ([`Window::attach`],
//! [`Window::detach`]); a put or get then names an absolute address of the target
//! (the `offset` of [`Window::put`] and [`Window::get`]).
//!
//! Each rank keeps a table of the regions it has attached, at an address its peers
//! learn at creation (the descriptor's address). Before an access the origin reads the
//! target's table (with single copies, on the same node) and checks that the range
//! lies inside one attached region, so a put never lands in memory the target did not
//! attach. Attaching and detaching involve no peer (MPI makes the program order them
//! with the accesses); the table is a sequence lock, so a reader that raced a change
//! reads it again. Across nodes (fabric routes) a dynamic window's accesses fail with
//! `Unsupported`: the regions would need a registration of their own each.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Mutex;

use super::{cma_error, fill_ranks, Access, Target, Window};
use crate::comm::CommError;

/// Regions one rank may have attached at once.
pub const MAX_REGIONS: usize = 64;
/// Words per entry: address, length, in use.
const ENTRY_WORDS: usize = 3;
/// Reads of a target's table that may race a change before the access gives up.
const MAX_READS: u32 = 10_000;

/// A rank's attached regions, as its peers read them: a version word (odd while a
/// change is under way), then the entries.
#[repr(C)]
struct Table {
    version: AtomicU64,
    entries: [[AtomicU64; ENTRY_WORDS]; MAX_REGIONS],
}

/// The entries' bytes.
const ENTRIES_BYTES: usize = MAX_REGIONS * ENTRY_WORDS * 8;

/// This rank's attached regions.
pub(super) struct Regions {
    table: Box<Table>,
    /// Serialises attach and detach (never taken on an access).
    writer: Mutex<()>,
}

impl Regions {
    pub fn new() -> Self {
        Regions {
            table: Box::new(Table {
                version: AtomicU64::new(0),
                entries: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            }),
            writer: Mutex::new(()),
        }
    }

    /// Where the peers read the table.
    pub fn table_addr(&self) -> u64 {
        &*self.table as *const Table as u64
    }

    /// Changes the entries under the sequence lock.
    fn change<T>(&self, f: impl FnOnce(&[[AtomicU64; ENTRY_WORDS]; MAX_REGIONS]) -> T) -> T {
        // A panic inside cannot leave the table half changed for a caller to see as
        // whole: the version stays odd and readers give up.
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        // ORDERING: Relaxed store then a Release fence: a reader that sees any entry
        // written below also sees the odd version (and retries).
        let v = self.table.version.load(Ordering::Relaxed);
        self.table.version.store(v + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let out = f(&self.table.entries);
        // ORDERING: Release: a reader that sees the even version sees the entries.
        self.table.version.store(v + 2, Ordering::Release);
        out
    }

    /// Adds `len` bytes at `addr`.
    pub fn attach(&self, addr: u64, len: usize) -> Result<(), CommError> {
        if addr.checked_add(len as u64).is_none() {
            return Err(CommError::InvalidArgument(format!(
                "{len} bytes at {addr:#x} wrap around the address space"
            )));
        }
        self.change(|entries| {
            // ORDERING: Relaxed: only writers, serialised by the mutex, change `in use`.
            let free = entries.iter().find(|e| e[2].load(Ordering::Relaxed) == 0);
            let Some(e) = free else {
                return Err(CommError::InvalidArgument(format!(
                    "more than {MAX_REGIONS} regions attached to one window"
                )));
            };
            // ORDERING: Relaxed: published by the version's Release store.
            e[0].store(addr, Ordering::Relaxed);
            e[1].store(len as u64, Ordering::Relaxed);
            e[2].store(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// Removes the region attached at `addr` (the last attached there, if several).
    pub fn detach(&self, addr: u64) -> Result<(), CommError> {
        self.change(|entries| {
            // ORDERING: Relaxed: writers are serialised by the mutex.
            let found = entries.iter().rev().find(|e| {
                e[2].load(Ordering::Relaxed) == 1 && e[0].load(Ordering::Relaxed) == addr
            });
            match found {
                Some(e) => {
                    // ORDERING: Relaxed: published by the version's Release store.
                    e[2].store(0, Ordering::Relaxed);
                    Ok(())
                }
                None => Err(CommError::InvalidArgument(format!(
                    "no region attached at {addr:#x}"
                ))),
            }
        })
    }

    /// Whether `len` bytes at `addr` lie in one of this rank's attached regions.
    pub fn contains_local(&self, addr: u64, len: usize) -> bool {
        loop {
            // ORDERING: Acquire: pairs with the writer's final Release store.
            let v1 = self.table.version.load(Ordering::Acquire);
            let mut words = [0u64; MAX_REGIONS * ENTRY_WORDS];
            for (w, a) in words.iter_mut().zip(self.table.entries.iter().flatten()) {
                // ORDERING: Relaxed: validated by the version check below.
                *w = a.load(Ordering::Relaxed);
            }
            // ORDERING: Acquire fence: the entry loads above happen before the second
            // version load, so a change that overlapped them shows as a new version.
            fence(Ordering::Acquire);
            let v2 = self.table.version.load(Ordering::Relaxed);
            if v1 == v2 && v1 % 2 == 0 {
                return contains(&words, addr, len);
            }
            std::hint::spin_loop();
        }
    }
}

/// Whether `len` bytes at `addr` lie in one in-use entry of `words`.
fn contains(words: &[u64], addr: u64, len: usize) -> bool {
    let Some(end) = addr.checked_add(len as u64) else {
        return false;
    };
    words
        .chunks_exact(ENTRY_WORDS)
        .any(|e| e[2] == 1 && e[0] <= addr && e[0].checked_add(e[1]).is_some_and(|x| end <= x))
}

/// Reads the table of process `pid` at `table` whole (a version read before and after
/// the entries, until they agree); whether `len` bytes at `addr` are attached there.
fn remote_contains(pid: u32, table: u64, addr: u64, len: usize) -> std::io::Result<bool> {
    let mut bytes = [0u8; ENTRIES_BYTES];
    for _ in 0..MAX_READS {
        let mut v1 = [0u8; 8];
        steadfast_shm::cma::read_from(pid, table, &mut v1)?;
        steadfast_shm::cma::read_from(pid, table + 8, &mut bytes)?;
        let mut v2 = [0u8; 8];
        steadfast_shm::cma::read_from(pid, table, &mut v2)?;
        if v1 == v2 && u64::from_ne_bytes(v1) % 2 == 0 {
            let words: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                .collect();
            return Ok(contains(&words, addr, len));
        }
        std::thread::yield_now();
    }
    Err(std::io::Error::other(
        "the target's region table kept changing",
    ))
}

fn not_attached(target: u32, addr: u64, len: usize) -> CommError {
    CommError::InvalidArgument(format!(
        "{len} bytes at {addr:#x} are not in a region rank {target} attached"
    ))
}

impl Window<'_> {
    /// Attaches `len` bytes at `base` of this process to a dynamic window
    /// ([`Comm::window_dynamic`](crate::Comm::window_dynamic)): peers may then put
    /// and get there, naming the address (`base as usize` plus an offset) as the
    /// offset. Local: no peer takes part.
    ///
    /// # Errors
    /// `InvalidArgument` on a window that is not dynamic, a range that wraps, or when
    /// [`MAX_REGIONS`](crate::comm::MAX_WINDOW_REGIONS) regions are attached already.
    ///
    /// # Safety
    /// The memory stays valid, and is touched by this process only through raw
    /// pointers, until it is detached and every peer that accessed it has finished
    /// (the program synchronises with them, as MPI requires), or until the window is
    /// freed.
    pub unsafe fn attach(&self, base: *mut u8, len: usize) -> Result<(), CommError> {
        self.regions()?.attach(base as u64, len)
    }

    /// Detaches the region attached at `base`.
    ///
    /// # Errors
    /// `InvalidArgument` on a window that is not dynamic or when no region is
    /// attached at `base`.
    pub fn detach(&self, base: *const u8) -> Result<(), CommError> {
        self.regions()?.detach(base as u64)
    }

    /// Checks that `target` attached `len` bytes at address `addr` (a caller that
    /// queues an operation for the target to apply later checks it first).
    ///
    /// # Errors
    /// `InvalidArgument` when they are not attached, or the window is not dynamic;
    /// `Unsupported` through the fabric; `ProcFailed` when the target is gone.
    pub fn check_attached(&self, target: u32, addr: usize, len: usize) -> Result<(), CommError> {
        let regions = self.regions()?;
        match self.target(target)? {
            Target::Own => self.local_dynamic(regions, addr, len).map(|_| ()),
            Target::Cma {
                pid, addr: table, ..
            } => {
                let w = self.comm.engine.lock().comm(self.comm.id).group()[target as usize];
                match remote_contains(pid, table, addr as u64, len) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(not_attached(target, addr as u64, len)),
                    Err(err) => Err(fill_ranks(
                        cma_error(err, w, &mut self.comm.engine.lock()),
                        target,
                    )),
                }
            }
            Target::Fabric { .. } => Err(CommError::Unsupported(
                "dynamic windows reached through the fabric".into(),
            )),
        }
    }

    /// Whether the window is dynamic.
    pub fn is_dynamic(&self) -> bool {
        self.dynamic.is_some()
    }

    fn regions(&self) -> Result<&Regions, CommError> {
        self.dynamic
            .as_deref()
            .ok_or_else(|| CommError::InvalidArgument("the window is not dynamic".into()))
    }

    /// This rank's memory at address `addr` for `len` bytes, if attached.
    pub(super) fn local_dynamic(
        &self,
        regions: &Regions,
        addr: usize,
        len: usize,
    ) -> Result<*mut u8, CommError> {
        if regions.contains_local(addr as u64, len) {
            Ok(addr as *mut u8)
        } else {
            Err(not_attached(self.comm.rank(), addr as u64, len))
        }
    }

    /// One put or get on a dynamic window at address `addr` of `target`.
    pub(super) fn access_dynamic(
        &self,
        regions: &Regions,
        target: u32,
        addr: usize,
        access: Access<'_>,
    ) -> Result<(), CommError> {
        let len = match &access {
            Access::Put(data) => data.len(),
            Access::Get(buf) => buf.len(),
        };
        let t = self.target(target)?;
        if len == 0 {
            return Ok(());
        }
        let mut guard = self.comm.engine.lock();
        guard.progress();
        let w = self.stopped(&guard, target)?;
        let result = match t {
            Target::Own => {
                drop(guard);
                let at = self.local_dynamic(regions, addr, len)?;
                match access {
                    // SAFETY: attached memory (checked), valid by `attach`'s contract;
                    // atomic copies, as in `write_local`.
                    Access::Put(data) => unsafe { steadfast_os::shared_bytes::store(at, data) },
                    // SAFETY: as above; `buf` is a distinct &mut.
                    Access::Get(buf) => unsafe { steadfast_os::shared_bytes::load(at, buf) },
                }
                Ok(())
            }
            Target::Cma {
                pid, addr: table, ..
            } => {
                guard.stats_mut().one_sided_shm += 1;
                drop(guard);
                let at = addr as u64;
                match remote_contains(pid, table, at, len) {
                    Ok(true) => match access {
                        // SAFETY: a range the target attached (its table says so), which
                        // it keeps valid by `attach`'s contract.
                        Access::Put(data) => unsafe { steadfast_shm::cma::write_to(pid, at, data) },
                        Access::Get(buf) => steadfast_shm::cma::read_from(pid, at, buf),
                    }
                    .map_err(|err| cma_error(err, w, &mut self.comm.engine.lock())),
                    Ok(false) => Err(not_attached(target, at, len)),
                    Err(err) => Err(cma_error(err, w, &mut self.comm.engine.lock())),
                }
            }
            Target::Fabric { .. } => Err(CommError::Unsupported(
                "dynamic windows reached through the fabric".into(),
            )),
        };
        result.map_err(|err| fill_ranks(err, target))
    }

    /// Reads the version word of every same-node peer's table, so a ptrace policy that
    /// forbids single copy is reported at creation.
    pub(super) fn probe_dynamic(&self) -> Result<(), CommError> {
        for (r, t) in self.targets.iter().enumerate() {
            if let Target::Cma { pid, addr, .. } = *t {
                let mut v = [0u8; 8];
                let w = self.comm.engine.lock().comm(self.comm.id).group()[r];
                steadfast_shm::cma::read_from(pid, addr, &mut v).map_err(|err| {
                    fill_ranks(cma_error(err, w, &mut self.comm.engine.lock()), r as u32)
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ranges_inside_one_attached_region_are_found() {
        let r = Regions::new();
        r.attach(0x1000, 0x100).unwrap();
        r.attach(0x1100, 0x100).unwrap();
        assert!(r.contains_local(0x1000, 0x100));
        assert!(r.contains_local(0x10ff, 1));
        assert!(r.contains_local(0x1100, 0x100));
        // Spanning two adjacent regions is not inside one.
        assert!(!r.contains_local(0x10ff, 2));
        assert!(!r.contains_local(0xfff, 1));
        assert!(!r.contains_local(0x1200, 1));
        assert!(!r.contains_local(u64::MAX, 2));
        r.detach(0x1000).unwrap();
        assert!(!r.contains_local(0x1000, 1));
        assert!(r.detach(0x1000).is_err());
        assert!(r.attach(u64::MAX, 2).is_err());
    }

    #[test]
    fn the_table_fills_up_with_an_error() {
        let r = Regions::new();
        for i in 0..MAX_REGIONS as u64 {
            r.attach(i * 16, 16).unwrap();
        }
        assert!(r.attach(0x10_0000, 1).is_err());
        r.detach(0).unwrap();
        r.attach(0x10_0000, 1).unwrap();
    }

    #[test]
    fn this_process_reads_its_own_table_as_a_peer_would() {
        let r = Regions::new();
        r.attach(0x5000, 64).unwrap();
        let pid = std::process::id();
        assert!(remote_contains(pid, r.table_addr(), 0x5000, 64).unwrap());
        assert!(!remote_contains(pid, r.table_addr(), 0x5000, 65).unwrap());
    }

    #[test]
    fn readers_never_see_a_half_changed_table() {
        // A writer flips one region between two addresses; a reader must always find
        // exactly one of them attached.
        let r = std::sync::Arc::new(Regions::new());
        r.attach(0x1000, 8).unwrap();
        let w = std::sync::Arc::clone(&r);
        let writer = std::thread::spawn(move || {
            for i in 0..20_000u64 {
                let (from, to) = if i % 2 == 0 {
                    (0x1000, 0x2000)
                } else {
                    (0x2000, 0x1000)
                };
                w.change(|entries| {
                    // ORDERING: Relaxed, as in `attach`: the writer is serialised by the
                    // mutex and publishes through the version's Release store; the
                    // interim 0 is the torn state a reader must never see.
                    for e in entries.iter() {
                        if e[2].load(Ordering::Relaxed) == 1 && e[0].load(Ordering::Relaxed) == from
                        {
                            e[0].store(0, Ordering::Relaxed);
                            e[0].store(to, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        for _ in 0..20_000 {
            let a = r.contains_local(0x1000, 8);
            let b = r.contains_local(0x2000, 8);
            // Two separate reads may straddle a flip, but each alone sees a whole table:
            // a torn read would show address 0 attached.
            assert!(!r.contains_local(0, 8));
            let _ = (a, b);
        }
        writer.join().unwrap();
    }
}
