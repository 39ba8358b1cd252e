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

use std::marker::PhantomData;

use steadfast_agreement::Rank;
use steadfast_fabric::{Error as FabricError, ExposedRegion, RemoteRegion};

use super::{Comm, CommError};
use crate::world::engine::{Engine, Route};

/// Tag of the descriptor exchange (on the window's own communicator).
const TAG: u32 = 1;
/// Descriptor: pid (4), length (8), local address (8), fabric region present (1), the
/// region (24).
const DESC_LEN: usize = 4 + 8 + 8 + 1 + RemoteRegion::ENCODED_LEN;

/// A put's data or a get's buffer.
enum Access<'b> {
    Put(&'b [u8]),
    Get(&'b mut [u8]),
}

/// How this process reaches one rank's window memory.
#[derive(Clone, Copy, Debug)]
enum Target {
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
/// collectively by [`Comm::window`]; dropping it is collective too (a barrier, so no
/// rank frees its memory while another still accesses it).
pub struct Window<'a> {
    comm: Comm,
    base: *mut u8,
    len: usize,
    targets: Vec<Target>,
    /// The fabric registration, when some rank is reached through the fabric (closed
    /// on drop, after the closing barrier).
    exposed: Option<ExposedRegion<'a>>,
    freed: bool,
    _buf: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("comm", &self.comm)
            .field("len", &self.len)
            .finish()
    }
}

fn encode(pid: u32, len: usize, addr: u64, region: Option<RemoteRegion>) -> [u8; DESC_LEN] {
    let mut d = [0u8; DESC_LEN];
    d[0..4].copy_from_slice(&pid.to_le_bytes());
    d[4..12].copy_from_slice(&(len as u64).to_le_bytes());
    d[12..20].copy_from_slice(&addr.to_le_bytes());
    if let Some(r) = region {
        d[20] = 1;
        d[21..].copy_from_slice(&r.to_bytes());
    }
    d
}

/// Rank `rank`'s descriptor: (pid, length, address, fabric region).
fn decode(rank: u32, d: &[u8]) -> Result<(u32, usize, u64, Option<RemoteRegion>), CommError> {
    if d.len() != DESC_LEN {
        return Err(CommError::WindowDescriptor {
            rank,
            problem: "wrong length",
        });
    }
    let pid = u32::from_le_bytes(d[0..4].try_into().expect("4 bytes"));
    let len = u64::from_le_bytes(d[4..12].try_into().expect("8 bytes")) as usize;
    let addr = u64::from_le_bytes(d[12..20].try_into().expect("8 bytes"));
    let region = match d[20] {
        0 => None,
        _ => Some(RemoteRegion::from_bytes(&d[21..]).map_err(CommError::from)?),
    };
    Ok((pid, len, addr, region))
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

impl Comm {
    /// Exposes `buf` for one-sided access by every rank of the communicator
    /// (`MPI_Win_create`). Collective: every rank calls it (buffers may differ in
    /// length). The window has its own communicator (a dup), so its traffic never
    /// matches this one's.
    ///
    /// # Errors
    /// `ProcFailed`, `Revoked`, `Excluded` from the exchange; `Fabric` when the buffer
    /// cannot be registered with the fabric; `WindowDescriptor` for a peer's
    /// descriptor that does not decode.
    pub fn window<'a>(&self, buf: &'a mut [u8]) -> Result<Window<'a>, CommError> {
        let comm = self.dup()?;
        let (me, n) = (comm.rank(), comm.size());
        let len = buf.len();
        let base = buf.as_mut_ptr();
        let (group, routes_fabric) = {
            let e = comm.engine.lock();
            let group = e.comms[&comm.id].group.clone();
            let fabric = group.iter().any(|&w| e.routes[w as usize] == Route::Fabric);
            (group, fabric)
        };
        // Register with the fabric only when a member is reached through it.
        let mut exposed = None;
        if routes_fabric && len > 0 {
            let mut e = comm.engine.lock();
            let fab = e.fab.as_mut().ok_or(CommError::NoFabricEndpoint)?;
            let region = fab.expose(buf)?;
            exposed = Some(region);
        }
        let mine = encode(
            std::process::id(),
            len,
            base as u64,
            exposed.as_ref().map(ExposedRegion::remote),
        );
        // Everyone sends its descriptor to everyone, then receives theirs.
        let mut sends = Vec::with_capacity(n as usize);
        for r in (0..n).filter(|&r| r != me) {
            sends.push(comm.isend(r, TAG, &mine)?);
        }
        let mut targets = Vec::with_capacity(n as usize);
        for r in 0..n {
            if r == me {
                targets.push(Target::Own);
                continue;
            }
            let mut d = [0u8; DESC_LEN];
            let st = comm.recv(Some(r), Some(TAG), &mut d)?;
            let (pid, len, addr, region) = decode(r, &d[..st.len])?;
            let w = group[r as usize];
            let route = comm.engine.lock().routes[w as usize];
            targets.push(match route {
                Route::Local => Target::Own,
                Route::Shm(_) => Target::Cma { pid, addr, len },
                Route::Fabric => match region {
                    Some(region) => Target::Fabric {
                        world: w,
                        region,
                        len,
                    },
                    // An empty window has nothing registered.
                    None if len == 0 => Target::Cma { pid, addr, len },
                    None => {
                        return Err(CommError::WindowDescriptor {
                            rank: r,
                            problem: "no fabric registration, though reached through the fabric",
                        })
                    }
                },
            });
        }
        for s in sends {
            s.wait()?;
        }
        let window = Window {
            comm,
            base,
            len,
            targets,
            exposed,
            freed: false,
            _buf: PhantomData,
        };
        window.probe_single_copy()?;
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

    /// This rank's own window memory. Peers may write it at any time: read it after a
    /// [`fence`](Self::fence) that follows their puts.
    pub fn local(&mut self) -> &mut [u8] {
        // SAFETY: base/len come from the &'a mut [u8] the window borrows for its whole
        // life; the &mut self receiver makes this the only Rust reference to it now.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
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
        let c = &e.comms[&self.comm.id];
        if e.excluded {
            return Err(CommError::Excluded);
        }
        if c.revoked {
            return Err(CommError::Revoked);
        }
        let w = c.group[target as usize];
        if e.failed.contains(Rank(w)) {
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
    /// `Revoked`; `WindowAccess`, `Fabric` for a transport failure.
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
                // SAFETY: in range (checked); `data` cannot alias the window's memory
                // mutably, and ptr::copy tolerates overlap.
                unsafe { std::ptr::copy(data.as_ptr(), self.base.add(offset), len) };
                Ok(())
            }
            (Target::Own, Access::Get(buf)) => {
                // SAFETY: in range (checked); `buf` is a distinct &mut, and ptr::copy
                // tolerates overlap anyway.
                unsafe { std::ptr::copy(self.base.add(offset), buf.as_mut_ptr(), len) };
                Ok(())
            }
            (Target::Cma { pid, addr, .. }, access) => {
                e.stats.one_sided_shm += 1;
                let at = addr + offset as u64;
                match access {
                    Access::Put(data) => steadfast_shm::cma::write_to(pid, at, data),
                    Access::Get(buf) => steadfast_shm::cma::read_from(pid, at, buf),
                }
                .map_err(|err| cma_error(err, w, e))
            }
            (Target::Fabric { world, region, .. }, access) => {
                e.stats.one_sided_fabric += 1;
                let fab = e.fab.as_mut().expect("fabric target without fabric");
                match access {
                    Access::Put(data) => {
                        fab.rma_write_delivered(world, data, &region, offset as u64)
                    }
                    Access::Get(buf) => fab.rma_read(world, buf, &region, offset as u64),
                }
                .map_err(|err| fabric_error(err, world, e))
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
        self.comm.barrier()
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
        if !self.freed {
            // Collective like MPI_Win_free; a failure cannot be reported from drop.
            let _ = self.comm.barrier();
        }
        // The registration closes after the barrier (field drop order is not enough:
        // the barrier must come first).
        self.exposed.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_reject_bad_lengths() {
        let r = RemoteRegion {
            addr: 0x1000,
            key: 7,
            len: 4096,
        };
        let d = encode(42, 4096, 0xdead_beef, Some(r));
        assert_eq!(decode(1, &d).unwrap(), (42, 4096, 0xdead_beef, Some(r)));
        let d = encode(1, 0, 0, None);
        assert_eq!(decode(1, &d).unwrap(), (1, 0, 0, None));
        assert!(matches!(
            decode(3, &d[..10]),
            Err(CommError::WindowDescriptor { rank: 3, .. })
        ));
    }

    #[test]
    fn transport_failures_name_the_target() {
        let e = fill_ranks(CommError::ProcFailed { ranks: vec![] }, 3);
        assert_eq!(e, CommError::ProcFailed { ranks: vec![3] });
        let e = fill_ranks(CommError::Revoked, 3);
        assert_eq!(e, CommError::Revoked);
    }
}
