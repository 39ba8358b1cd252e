//! The receive side: matching (tag plus ignore mask), the unexpected queue, eager
//! messages read cell by cell (partial ones kept per ring), FINs, single-copy reads
//! (CMA, XPMEM or a split copy) and the RESEND fallback.

use super::send::EAGER_BATCH;
use super::{
    matches, peer_gone, Body, Dst, EagerInto, Endpoint, PartialEager, Popped, Received, Unexpected,
    Waiter,
};
use crate::error::ShmError;
use crate::message::{
    eager_continuations, Header, EAGER_CONT, EAGER_FIRST, FIN_FAILED, FIN_OK, FIN_RESEND,
    FIN_TRUNCATED,
};
use crate::segment::SPLIT_SLOTS;
use crate::{cma, split};
use std::collections::VecDeque;
use std::time::Instant;

/// Polls of a missing continuation cell before an eager message is kept as partial
/// (about 0.1-0.2 ms when the sender has stopped).
const CONTINUATION_POLLS: u32 = 2048;

impl Endpoint {
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
            let dst = Dst::of(buf);
            let mut want = |_: u32, t: u64, _: usize| matches(t, tag, ignore).then_some(dst);
            // SAFETY: `dst` is `buf`, borrowed exclusively by this call and not touched
            // until `pop` returns.
            while let Some(u) = unsafe { self.pop(ring, &mut want) }? {
                match u {
                    Popped::Delivered {
                        source,
                        tag,
                        len,
                        truncated,
                    } => {
                        self.next_ring = (ring + 1) % n;
                        if truncated {
                            return Err(ShmError::Truncated {
                                len,
                                capacity: dst.cap,
                            });
                        }
                        return Ok(Some(Received { source, tag, len }));
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
            // SAFETY: `want` names no destination.
            while let Some(p) = unsafe { self.pop(ring, &mut |_, _, _| None) }? {
                taken += 1;
                if let Popped::Queued(u) = p {
                    self.unexpected.push_back(u);
                }
            }
        }
        Ok(taken)
    }

    /// Pops one cell of `ring`. A message for which `want(source, tag, len)` names a
    /// destination is copied straight into it (no queueing; a destination too small
    /// consumes the message, reported as truncated); anything else is returned to be
    /// queued, and FINs are recorded.
    ///
    /// # Safety
    /// Every [`Dst`] that `want` returns must be valid for writes of its `cap` bytes and
    /// covered by no live reference until `pop` returns.
    pub(super) unsafe fn pop(
        &mut self,
        ring: u32,
        want: &mut dyn FnMut(u32, u64, usize) -> Option<Dst>,
    ) -> Result<Option<Popped>, ShmError> {
        if self.partial[ring as usize].is_some() {
            return self.continue_partial(ring);
        }
        let mut c = self.own.consumer_at(ring, self.rx[ring as usize]);
        let res = c.try_pop_slot(|cell, base| match Header::read_at(cell, base) {
            None => Err(format!("undecodable cell word0 {:#x}", cell.get(0))),
            Some(Header::Fin {
                token,
                status,
                read_ns,
            }) => Ok(Popped::Fin(token, status, read_ns)),
            Some(Header::Inline { tag, len }) => match want(ring, tag, len) {
                Some(dst) => {
                    if len <= dst.cap {
                        // SAFETY: the caller's contract on `want`'s destinations.
                        cell.read_bytes(base + 2, &mut unsafe { dst.slice() }[..len]);
                    }
                    Ok(Popped::Delivered {
                        source: ring,
                        tag,
                        len,
                        truncated: len > dst.cap,
                    })
                }
                None => {
                    let mut bytes = vec![0u8; len];
                    cell.read_bytes(base + 2, &mut bytes);
                    Ok(Popped::Queued(Unexpected {
                        source: ring,
                        tag,
                        body: Body::Inline(bytes),
                    }))
                }
            },
            Some(Header::Eager { tag, len }) => match want(ring, tag, len) {
                Some(dst) if len <= dst.cap => {
                    // SAFETY: the caller's contract on `want`'s destinations.
                    cell.read_bytes(2, &mut unsafe { dst.slice() }[..EAGER_FIRST]);
                    Ok(Popped::Eager {
                        tag,
                        len,
                        into: EagerInto::Dst(dst),
                    })
                }
                Some(_) => Ok(Popped::Eager {
                    tag,
                    len,
                    into: EagerInto::Drop, // truncated: read and dropped
                }),
                None => {
                    let mut bytes = vec![0u8; len];
                    cell.read_bytes(2, &mut bytes[..EAGER_FIRST]);
                    Ok(Popped::Eager {
                        tag,
                        len,
                        into: EagerInto::Queue(bytes),
                    })
                }
            },
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
            Ok(Some(Ok(Popped::Fin(token, status, read_ns)))) => {
                self.fins.push((token, status, read_ns));
                Ok(Some(Popped::Other))
            }
            Ok(Some(Ok(Popped::Eager { tag, len, into }))) => {
                // SAFETY: a destination in `into` came from `want` (caller's contract).
                unsafe { self.finish_eager(ring, tag, len, into) }.map(Some)
            }
            Ok(Some(Ok(p))) => Ok(Some(p)),
        }
    }

    /// Pops one continuation cell of `ring` into `dst` (`None`: read and drop it);
    /// `false` when the cell has not arrived yet.
    pub(super) fn pop_continuation(
        &mut self,
        ring: u32,
        dst: Option<&mut [u8]>,
    ) -> Result<bool, ShmError> {
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

    /// Pops up to `run` continuation cells of `ring` that are there, in one run
    /// ([`Consumer::try_pop_run`](crate::ring::Consumer::try_pop_run)), cell `i` into
    /// `dst[i * EAGER_CONT..]` (`None`: read and drop them); how many were popped.
    fn pop_run(
        &mut self,
        ring: u32,
        run: usize,
        mut dst: Option<&mut [u8]>,
    ) -> Result<usize, ShmError> {
        let mut c = self.own.consumer_at(ring, self.rx[ring as usize]);
        let got = c.try_pop_run(run, |i, cell| {
            if let Some(d) = dst.as_deref_mut() {
                let from = i * EAGER_CONT;
                let to = (from + EAGER_CONT).min(d.len());
                cell.read_bytes(0, &mut d[from..to]);
            }
        });
        self.rx[ring as usize] = c.pos();
        got.map_err(|e| ShmError::Corrupt {
            rank: ring,
            what: e.to_string(),
        })
    }

    /// Prefetches the next `cells` cells of `ring` (at most a batch; the first is
    /// prefetched by every pop already).
    fn prefetch_batch(&self, ring: u32, cells: usize) {
        let c = self.own.consumer_at(ring, self.rx[ring as usize]);
        c.prefetch(1, cells.min(EAGER_BATCH) as u64);
    }

    /// [`pop_continuation`](Self::pop_continuation), polling up to
    /// [`CONTINUATION_POLLS`] times for a cell not there yet: for a message whose
    /// sender took room for all of it before publishing its first cell and publishes
    /// the rest batch by batch while we copy (`try_push_reserved`), so the next batch
    /// is normally a few lines away. `false` past the bound (a sender descheduled,
    /// dead, or misbehaving): the caller keeps the message as partial.
    fn await_continuation(
        &mut self,
        ring: u32,
        mut dst: Option<&mut [u8]>,
    ) -> Result<bool, ShmError> {
        for _ in 0..CONTINUATION_POLLS {
            if self.pop_continuation(ring, dst.as_deref_mut())? {
                return Ok(true);
            }
            std::hint::spin_loop();
        }
        self.pop_continuation(ring, dst)
    }

    /// Reads the continuation cells of an eager message whose first cell was just
    /// popped: into the destination (`EagerInto::Dst`), into a queue copy, or nowhere
    /// (`Drop`: truncated receive). A message that fits the ring had room taken for all
    /// its cells before its first was published, and the rest come batch by batch
    /// (`push_eager`, `try_send`): a missing batch is waited for, boundedly
    /// (`await_continuation`). A larger one (whose sender may itself be blocked on a
    /// full ring toward us, draining it into this very call) is never waited for. When
    /// a cell is still missing (that case, or a descheduled, dead or misbehaving
    /// sender), the message is kept as partial and finished by later pops of the ring;
    /// a partial message is always queued, whoever wanted it.
    ///
    /// # Safety
    /// A destination in `into` is valid for writes of its `cap` (at least `len`) bytes
    /// and covered by no live reference until this returns.
    pub(super) unsafe fn finish_eager(
        &mut self,
        ring: u32,
        tag: u64,
        len: usize,
        mut into: EagerInto,
    ) -> Result<Popped, ShmError> {
        // A message the ring holds whole had its room taken before its first cell was
        // published (`push_eager`, `try_send`): its sender is writing the rest and never
        // waits for us, so the next batch is worth a short wait. A larger one is
        // streamed as we free room, and its sender may be waiting for room in our ring
        // while draining ours into this very call: never wait for it.
        let reserved = eager_continuations(len) < self.own.geometry().ring_cells as usize;
        let mut offset = EAGER_FIRST;
        let mut cell = 1;
        while offset < len {
            if reserved && cell % EAGER_BATCH == 0 {
                // Cell `cell` starts a batch: once it is published the whole batch is.
                self.prefetch_batch(ring, eager_continuations(len) + 1 - cell);
            } else if reserved && cell == 1 {
                // The first batch is published with the first cell: fetch it together.
                self.prefetch_batch(ring, eager_continuations(len).min(EAGER_BATCH - 1));
            }
            if reserved {
                // The rest of this batch is normally published: take what is there
                // in one run (one counter store), then wait below for what is not.
                let run =
                    (EAGER_BATCH - cell % EAGER_BATCH).min((len - offset).div_ceil(EAGER_CONT));
                let dst = match &mut into {
                    // SAFETY: the contract above.
                    EagerInto::Dst(d) => Some(&mut unsafe { d.slice() }[offset..len]),
                    EagerInto::Drop => None,
                    EagerInto::Queue(v) => Some(&mut v[offset..len]),
                };
                let popped = self.pop_run(ring, run, dst)?;
                cell += popped;
                offset = (offset + popped * EAGER_CONT).min(len);
                if offset >= len {
                    break;
                }
                if popped > 0 {
                    continue;
                }
            }
            cell += 1;
            let n = EAGER_CONT.min(len - offset);
            let dst = match &mut into {
                // SAFETY: the contract above.
                EagerInto::Dst(d) => Some(&mut unsafe { d.slice() }[offset..offset + n]),
                EagerInto::Drop => None,
                EagerInto::Queue(v) => Some(&mut v[offset..offset + n]),
            };
            let arrived = if reserved {
                self.await_continuation(ring, dst)?
            } else {
                self.pop_continuation(ring, dst)?
            };
            if !arrived {
                // Keep what was read; the rest comes with later pops.
                let kept = match into {
                    EagerInto::Dst(d) => {
                        let mut v = vec![0u8; len];
                        // SAFETY: the contract above.
                        v[..offset].copy_from_slice(&unsafe { d.slice() }[..offset]);
                        v
                    }
                    // A truncated receive still consumes the message; keep it whole
                    // so the receive that matches it reports the truncation.
                    EagerInto::Drop => vec![0u8; len],
                    EagerInto::Queue(v) => v,
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
        Ok(match into {
            EagerInto::Dst(_) | EagerInto::Drop => Popped::Delivered {
                source: ring,
                tag,
                len,
                truncated: matches!(into, EagerInto::Drop),
            },
            EagerInto::Queue(v) => Popped::Queued(Unexpected {
                source: ring,
                tag,
                body: Body::Inline(v),
            }),
        })
    }

    /// Reads more of `ring`'s partial eager message: `None` when no cell was there,
    /// `Other` when some were but not all, `Queued` once complete.
    pub(super) fn continue_partial(&mut self, ring: u32) -> Result<Option<Popped>, ShmError> {
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
    pub(super) fn deliver(&mut self, u: Unexpected, buf: &mut [u8]) -> Result<Received, ShmError> {
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
                let mut read_ns = 0;
                let (result, status) = if len > capacity {
                    (Err(ShmError::Truncated { len, capacity }), FIN_TRUNCATED)
                } else if !self.config.single_copy {
                    return self.resend_through_ring(u.source, u.tag, token, buf);
                } else {
                    // XPMEM where both sides have it; process_vm_readv otherwise, and
                    // whenever the XPMEM path fails. Timed: the sender weighs the
                    // ring against it (`eager_cost.rs`).
                    let start = Instant::now();
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
                    read_ns = u32::try_from(start.elapsed().as_nanos()).unwrap_or(u32::MAX);
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
                    let fin = Header::Fin {
                        token,
                        status,
                        read_ns,
                    };
                    match self.push(u.source, fin, &[]) {
                        Ok(()) | Err(ShmError::PeerDead(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
                result
            }
        }
    }

    /// The receiver's side of a split copy from `source` through its slot `k`: `None`
    /// when the sender died with a chunk claimed, else the read's result.
    pub(super) fn split_read(
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

    /// Answers an RTS with RESEND and receives the same message streamed through the
    /// ring. The sender pushes nothing else to us before the stream (it is blocked in
    /// that send), so the next cells of its ring are the message.
    pub(super) fn resend_through_ring(
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
                read_ns: 0,
            },
            &[],
        )?;
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            let partial_before = self.partial[source as usize].is_some();
            let dst = Dst::of(buf);
            let mut want = |_: u32, t: u64, _: usize| (t == tag).then_some(dst);
            // SAFETY: `dst` is `buf`, borrowed exclusively by this call and not touched
            // until `pop` returns.
            match unsafe { self.pop(source, &mut want) }? {
                Some(Popped::Delivered {
                    source,
                    tag,
                    len,
                    truncated,
                }) => {
                    if truncated {
                        return Err(ShmError::Truncated {
                            len,
                            capacity: dst.cap,
                        });
                    }
                    return Ok(Received { source, tag, len });
                }
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
    pub(super) fn finish_partial_into(
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
