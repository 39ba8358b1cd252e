//! Collectives over point-to-point messages on the communicator's collective twin
//! (`state::CommKind::Intra::coll`), each call with its own tag: `MPI_Barrier`
//! (dissemination), `MPI_Ibarrier`, `MPI_Bcast` and `MPI_Reduce` (binomial trees),
//! `MPI_Allreduce` (recursive doubling), `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`
//! (gather + bcast), `MPI_Alltoall` (all pairs at once). The rounds of the blocking
//! barrier and of the tree collectives (bcast, reduce, allreduce) are in
//! `coll_rounds`, over borrowed buffers.
//!
//! A collective that still waits for a message when some member of the communicator
//! is known failed gives up with `MPI_ERR_PROC_FAILED`, whether or not it waits on
//! that member: a rank that waits on a live rank which gave up would otherwise wait
//! forever, and ULFM requires an operation a failure keeps from completing to raise
//! the error rather than block (acknowledging failures does not re-enable
//! collectives; a shrink does). Ranks whose part completed before they learnt of the
//! failure return success, so the outcome is not uniform (ULFM allows that;
//! `MPIX_Comm_agree` makes it so). A revoke of the communicator interrupts them
//! with `MPI_ERR_REVOKED`.

use std::ffi::{c_int, c_void};

use sf::comm::{OwnedRecvRequest, OwnedSendRequest};
use sf::{Comm, CommError};

use crate::coll_rounds::{Rounds, Scratch};
use crate::consts::*;
use crate::datatype::reduce;
use crate::error::{Fail, R};
use crate::request::{Op, Req};
use crate::state::{call, Guard};
use crate::util::{bytes, bytes_mut, new_request_out, rank_arg};

/// Polls of a collective's wait between two looks at revocation and failures.
pub(crate) const INTERRUPT_POLLS: u32 = 16;

/// One collective call's context.
pub(crate) struct Coll {
    pub p2p: Comm,
    pub coll: Comm,
    pub tag: u32,
    pub me: u32,
    pub n: u32,
}

impl Coll {
    pub fn start(g: &mut Guard, comm: Handle) -> R<Coll> {
        Coll::start_phases(g, comm, 1)
    }

    /// As [`Coll::start`] for a call of `phases` phases, each with its own tag
    /// ([`Coll::next_phase`]). All are taken now, so that the call advances the
    /// communicator's tag sequence by the same amount at every rank even when it
    /// fails in its first phase at some and in a later one at others; otherwise the
    /// next collective's messages would meet this one's at the ranks left behind.
    pub fn start_phases(g: &mut Guard, comm: Handle, phases: u32) -> R<Coll> {
        let lib = g.lib()?;
        let (p2p, coll) = lib.intra(comm)?;
        let tag = lib.coll_tag(comm)?;
        for _ in 1..phases {
            lib.coll_tag(comm)?;
        }
        // The table's copies: the runtime's `rank()` and `size()` take its engine.
        let e = lib.comm(comm)?;
        Ok(Coll {
            me: e.rank,
            n: e.size,
            p2p,
            coll,
            tag,
        })
    }

    /// The tag of the call's next phase (taken by [`Coll::start_phases`]; the
    /// sequence's tags are consecutive modulo its 20 bits).
    pub(crate) fn next_phase(&mut self) {
        self.tag = (self.tag + 1) & 0xf_ffff;
    }

    /// Why waiting must stop: the program's communicator was revoked (a revoke by
    /// another rank reaches the program's twin only), which then revokes this one; or
    /// a member is known failed, so the call may never complete (see the module doc).
    fn interrupted(&self) -> Option<Fail> {
        if self.p2p.is_revoked() {
            self.coll.revoke();
            return Some(CommError::Revoked.into());
        }
        if self.coll.any_failed() {
            let ranks = self.coll.failed_ranks();
            return Some(CommError::ProcFailed { ranks }.into());
        }
        None
    }

    /// Sends each `(rank, bytes)` and receives exactly `len` bytes from each
    /// `(rank, len)`, all at once; the received messages in order.
    pub fn exchange(
        &self,
        g: &mut Guard,
        sends: Vec<(u32, Vec<u8>)>,
        recvs: &[(u32, usize)],
    ) -> R<Vec<Vec<u8>>> {
        let mut rreqs: Vec<Option<OwnedRecvRequest<Vec<u8>>>> = Vec::with_capacity(recvs.len());
        for &(src, len) in recvs {
            rreqs.push(Some(self.coll.irecv_owned(
                Some(src),
                Some(self.tag),
                vec![0u8; len],
            )?));
        }
        let mut sreqs: Vec<Option<OwnedSendRequest<Vec<u8>>>> = Vec::with_capacity(sends.len());
        for (dest, data) in sends {
            sreqs.push(Some(self.coll.isend_owned(dest, self.tag, data)?));
        }
        let mut got = vec![Vec::new(); recvs.len()];
        let mut spin = crate::util::spin_wait();
        let mut polls: u32 = 0;
        loop {
            g.lib()?;
            let mut pending = false;
            for s in sreqs.iter_mut() {
                if let Some(r) = s {
                    if r.test()? {
                        *s = None;
                    } else {
                        pending = true;
                    }
                }
            }
            for (i, s) in rreqs.iter_mut().enumerate() {
                let Some(r) = s else { continue };
                match r.test()? {
                    Some(st) => {
                        let (buf, _) = s.take().expect("some").wait();
                        if st.len != recvs[i].1 {
                            return Err(Fail::new(
                                MPI_ERR_TRUNCATE,
                                format!(
                                    "rank {} sent {} bytes where {} were expected: the ranks \
                                     passed different counts or types",
                                    recvs[i].0, st.len, recvs[i].1
                                ),
                            ));
                        }
                        got[i] = buf;
                    }
                    None => pending = true,
                }
            }
            if !pending {
                return Ok(got);
            }
            // Two engine holds and a scan of the group: not at every poll of a wait
            // that usually ends within a few (a failure or revoke is seen a few
            // microseconds later at most).
            polls = polls.wrapping_add(1);
            if polls % INTERRUPT_POLLS == 0 {
                if let Some(f) = self.interrupted() {
                    return Err(f);
                }
            }
            g.relax(&mut spin);
        }
    }
}

/// A non-blocking dissemination barrier: in round k every rank sends to rank + 2^k
/// and receives from rank - 2^k.
pub(crate) struct Ibarrier {
    c: Coll,
    mask: u32,
    send: Option<OwnedSendRequest<Vec<u8>>>,
    recv: Option<OwnedRecvRequest<Vec<u8>>>,
}

impl Ibarrier {
    fn new(c: Coll) -> Self {
        Ibarrier {
            c,
            mask: 1,
            send: None,
            recv: None,
        }
    }

    /// Progresses; `true` once every round is done.
    pub fn test(&mut self) -> R<bool> {
        loop {
            if self.mask >= self.c.n {
                return Ok(true);
            }
            if self.send.is_none() && self.recv.is_none() {
                let to = (self.c.me + self.mask) % self.c.n;
                let from = (self.c.me + self.c.n - self.mask) % self.c.n;
                self.recv = Some(self.c.coll.irecv_owned(
                    Some(from),
                    Some(self.c.tag),
                    Vec::new(),
                )?);
                self.send = Some(self.c.coll.isend_owned(to, self.c.tag, Vec::new())?);
            }
            if let Some(s) = &mut self.send {
                if s.test()? {
                    self.send = None;
                }
            }
            if let Some(r) = &mut self.recv {
                if r.test()?.is_some() {
                    self.recv = None;
                }
            }
            if self.send.is_none() && self.recv.is_none() {
                self.mask <<= 1;
                continue;
            }
            if let Some(f) = self.c.interrupted() {
                return Err(f);
            }
            return Ok(false);
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: Handle) {
        call(comm, |g| Rounds::start(g, comm, 1)?.barrier(g))
    }
}

crate::mpi_fn! {
    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: Handle, request: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            let b = Ibarrier::new(Coll::start(g, comm)?);
            let lib = g.lib()?;
            let h = lib.add_request(Req::new(comm, Op::Barrier(Box::new(b))))?;
            *slot = h;
            Ok(())
        })
    }
}

pub(crate) fn root_arg(root: c_int, n: u32) -> R<u32> {
    rank_arg(root, n).map_err(|f| Fail::new(MPI_ERR_ROOT, f.message))
}

crate::mpi_fn! {
    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: Handle,
        root: c_int,
        comm: Handle
    ) {
        call(comm, |g| {
            let (len, _) = g.lib()?.byte_len(count, datatype)?;
            let c = Rounds::start(g, comm, 1)?;
            let root = root_arg(root, c.n)?;
            // SAFETY: MPI's contract: `buffer` holds `count` items, the program's
            // alone during the call.
            let buf = unsafe { bytes_mut(buffer, len) }?;
            c.bcast(g, buf, root)
        })
    }
}

/// Copies a reduction's input into `recvbuf`, where it is reduced (nothing with
/// `MPI_IN_PLACE`). `std::ptr::copy`: a program that passes one buffer as both (an
/// error MPI does not require to detect) gets its data unchanged, not undefined
/// behaviour.
///
/// # Safety
/// `sendbuf` (unless `MPI_IN_PLACE`) and `recvbuf` hold `len` bytes each.
unsafe fn input_to_recvbuf(sendbuf: *const c_void, recvbuf: *mut c_void, len: usize) -> R<()> {
    if sendbuf as usize == IN_PLACE || len == 0 {
        return Ok(());
    }
    if sendbuf.is_null() || recvbuf.is_null() {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            format!("a null buffer for {len} bytes"),
        ));
    }
    // SAFETY: the caller's contract; `copy` allows the two to overlap.
    unsafe { std::ptr::copy(sendbuf.cast::<u8>(), recvbuf.cast::<u8>(), len) };
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Reduce` (predefined operations on basic and contiguous types).
    fn MPI_Reduce / PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        root: c_int,
        comm: Handle
    ) {
        call(comm, |g| {
            let (len, t) = g.lib()?.byte_len(count, datatype)?;
            reduce(op, t.elem, &mut [], &[])?;
            let c = Rounds::start(g, comm, 1)?;
            let root = root_arg(root, c.n)?;
            let mut scratch = Scratch::new();
            if c.me == root {
                // The root reduces in its `recvbuf`.
                // SAFETY: MPI's contract: the buffers hold `count` items; the root's
                // `recvbuf` is the program's alone during the call.
                let acc = unsafe {
                    input_to_recvbuf(sendbuf, recvbuf, len)?;
                    bytes_mut(recvbuf, len)?
                };
                c.reduce(g, acc, scratch.get(len), op, t.elem, root)
            } else {
                // Elsewhere `recvbuf` is not significant: a copy of the input, beside
                // the scratch for the children's values.
                // SAFETY: MPI's contract: `sendbuf` holds `count` items.
                let input = unsafe { bytes(sendbuf, len) }?;
                let mut acc = Scratch::new();
                let acc = acc.get(len);
                acc.copy_from_slice(input);
                c.reduce(g, acc, scratch.get(len), op, t.elem, root)
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Allreduce`: recursive doubling (`Coll::allreduce`).
    fn MPI_Allreduce / PMPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle
    ) {
        call(comm, |g| {
            let (len, t) = g.lib()?.byte_len(count, datatype)?;
            reduce(op, t.elem, &mut [], &[])?;
            let mut c = Rounds::start(g, comm, 2)?;
            // Reduced in `recvbuf`.
            // SAFETY: MPI's contract: the buffers hold `count` items; `recvbuf` is the
            // program's alone during the call.
            let acc = unsafe {
                input_to_recvbuf(sendbuf, recvbuf, len)?;
                bytes_mut(recvbuf, len)?
            };
            let mut scratch = Scratch::new();
            c.allreduce(g, acc, scratch.get(len), op, t.elem)
        })
    }
}

/// Gathers every rank's `block` at `root` (rank order), `block_len` bytes each.
fn gather(c: &Coll, g: &mut Guard, block: Vec<u8>, block_len: usize, root: u32) -> R<Vec<Vec<u8>>> {
    if c.me != root {
        c.exchange(g, vec![(root, block)], &[])?;
        return Ok(Vec::new());
    }
    let others: Vec<(u32, usize)> = (0..c.n)
        .filter(|&r| r != root)
        .map(|r| (r, block_len))
        .collect();
    let mut got = c.exchange(g, vec![], &others)?.into_iter();
    Ok((0..c.n)
        .map(|r| {
            if r == root {
                block.clone()
            } else {
                got.next().expect("one per rank")
            }
        })
        .collect())
}

crate::mpi_fn! {
    /// `MPI_Gather`.
    fn MPI_Gather / PMPI_Gather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let is_root = c.me == root;
            let rlen = if is_root { g.lib()?.byte_len(recvcount, recvtype)?.0 } else { 0 };
            let block = if is_root && sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: the root's `recvbuf` holds n blocks.
                unsafe { bytes(recvbuf.cast_const(), rlen * c.n as usize) }?
                    [rlen * c.me as usize..rlen * (c.me as usize + 1)]
                    .to_vec()
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                unsafe { bytes(sendbuf, slen) }?.to_vec()
            };
            let blocks = gather(&c, g, block, rlen, root)?;
            if is_root {
                // SAFETY: MPI's contract: the root's `recvbuf` holds n blocks.
                let out = unsafe { bytes_mut(recvbuf, rlen * c.n as usize) }?;
                for (chunk, b) in out.chunks_exact_mut(rlen.max(1)).zip(&blocks) {
                    chunk[..b.len()].copy_from_slice(b);
                }
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Scatter`.
    fn MPI_Scatter / PMPI_Scatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle
    ) {
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let is_root = c.me == root;
            let in_place = is_root && recvbuf as usize == IN_PLACE;
            let rlen = if in_place { 0 } else { g.lib()?.byte_len(recvcount, recvtype)?.0 };
            if is_root {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: the root's `sendbuf` holds n blocks.
                let all = unsafe { bytes(sendbuf, slen * c.n as usize) }?;
                let sends: Vec<(u32, Vec<u8>)> = (0..c.n)
                    .filter(|&r| r != root)
                    .map(|r| (r, all[slen * r as usize..slen * (r as usize + 1)].to_vec()))
                    .collect();
                let mine = all[slen * root as usize..slen * (root as usize + 1)].to_vec();
                c.exchange(g, sends, &[])?;
                if !in_place {
                    // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items.
                    let out = unsafe { bytes_mut(recvbuf, rlen) }?;
                    let n = mine.len().min(out.len());
                    out[..n].copy_from_slice(&mine[..n]);
                }
            } else {
                let got = c.exchange(g, vec![], &[(root, rlen)])?.remove(0);
                // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items.
                unsafe { bytes_mut(recvbuf, rlen) }?.copy_from_slice(&got);
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Allgather`: a gather at rank 0, then a broadcast.
    fn MPI_Allgather / PMPI_Allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        call(comm, |g| {
            let mut c = Coll::start_phases(g, comm, 2)?;
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let total = rlen * c.n as usize;
            let block = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` holds n blocks.
                unsafe { bytes(recvbuf.cast_const(), total) }?
                    [rlen * c.me as usize..rlen * (c.me as usize + 1)]
                    .to_vec()
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                unsafe { bytes(sendbuf, slen) }?.to_vec()
            };
            let blocks = gather(&c, g, block, rlen, 0)?;
            let mut all = blocks.concat();
            all.resize(total, 0);
            c.next_phase();
            Rounds::of(&c, comm).bcast(g, &mut all, 0)?;
            // SAFETY: MPI's contract: `recvbuf` holds n blocks, the program's alone.
            unsafe { bytes_mut(recvbuf, total) }?.copy_from_slice(&all);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoall`: every pair at once.
    fn MPI_Alltoall / PMPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        call(comm, |g| {
            let c = Coll::start(g, comm)?;
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let n = c.n as usize;
            let all: Vec<u8> = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` holds n blocks.
                unsafe { bytes(recvbuf.cast_const(), rlen * n) }?.to_vec()
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds n blocks of `sendcount` items.
                unsafe { bytes(sendbuf, slen * n) }?.to_vec()
            };
            let slen = all.len() / n.max(1);
            let me = c.me as usize;
            let sends: Vec<(u32, Vec<u8>)> = (0..n)
                .filter(|&r| r != me)
                .map(|r| (r as u32, all[slen * r..slen * (r + 1)].to_vec()))
                .collect();
            let recvs: Vec<(u32, usize)> = (0..n).filter(|&r| r != me).map(|r| (r as u32, rlen)).collect();
            let mut got = c.exchange(g, sends, &recvs)?.into_iter();
            // SAFETY: MPI's contract: `recvbuf` holds n blocks, the program's alone.
            let out = unsafe { bytes_mut(recvbuf, rlen * n) }?;
            for r in 0..n {
                let block = if r == me {
                    all[slen * me..slen * (me + 1)].to_vec()
                } else {
                    got.next().expect("one per peer")
                };
                let k = block.len().min(rlen);
                out[rlen * r..rlen * r + k].copy_from_slice(&block[..k]);
            }
            Ok(())
        })
    }
}
