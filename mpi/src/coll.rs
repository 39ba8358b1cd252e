//! Collectives over point-to-point messages on the communicator's collective twin
//! (`state::CommKind::Intra::coll`), each call with its own tag: `MPI_Barrier`
//! (dissemination), `MPI_Ibarrier`, `MPI_Bcast` and `MPI_Reduce` (binomial trees),
//! `MPI_Allreduce` (recursive doubling), `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`
//! (gather + bcast), `MPI_Alltoall` (all pairs at once). The rounds of the blocking
//! barrier and of the tree collectives (bcast, reduce, allreduce) are in
//! `coll_rounds`, over borrowed buffers. On an inter-communicator every entry point
//! here but `MPI_Barrier` hands the call to `coll_inter`, `MPI_Ibarrier` to
//! `nbc_inter`.
//!
//! A collective that still waits for a message when some member of the communicator
//! is known failed gives up with `MPI_ERR_PROC_FAILED`, whether or not it waits on
//! that member: a rank that waits on a live rank which gave up would otherwise wait
//! forever (a call that began before the failure was known first waits a short grace
//! for the messages still on their way: `sf::comm::GiveUpClock`), and ULFM requires an operation a failure keeps from completing to raise
//! the error rather than block (acknowledging failures does not re-enable
//! collectives; a shrink does). Ranks whose part completed before they learnt of the
//! failure return success, so the outcome is not uniform (ULFM allows that;
//! `MPIX_Comm_agree` makes it so). A revoke of the communicator interrupts them
//! with `MPI_ERR_REVOKED`.

use std::ffi::{c_int, c_void};

use sf::comm::{GiveUpClock, OwnedRecvRequest, OwnedSendRequest, SendRequest};
use sf::{Comm, CommError};

use crate::coll_inter::{self, is_inter, RecvArg, SendArg};
use crate::coll_rounds::{test_once, PendingRecv, Rounds, Scratch};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::op::Reduction;
use crate::request::{Op, Req};
use crate::state::{call, CommKind, Guard};
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
    /// When a failure seen while waiting ends the call.
    pub clock: GiveUpClock,
}

impl Coll {
    /// The context of a call on `p2p` and its collective twin `coll` beginning now,
    /// with tag `tag`, this process being `me` of `n`.
    pub fn new(p2p: Comm, coll: Comm, tag: u32, me: u32, n: u32) -> Coll {
        let clock = GiveUpClock::start(coll.any_failed());
        Coll {
            p2p,
            coll,
            tag,
            me,
            n,
            clock,
        }
    }

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
        if p2p.is_revoked() {
            // ULFM: no collective starts on a revoked communicator, even one that
            // would need no message (a single member); the tags are taken all the same.
            coll.revoke();
            return Err(CommError::Revoked.into());
        }
        // The table's copies: the runtime's `rank()` and `size()` take its engine.
        let e = lib.comm(comm)?;
        Ok(Coll::new(p2p, coll, tag, e.rank, e.size))
    }

    /// The tag of the call's next phase (taken by [`Coll::start_phases`]; the
    /// sequence's tags are consecutive modulo its 20 bits).
    pub(crate) fn next_phase(&mut self) {
        self.tag = (self.tag + 1) & 0xf_ffff;
    }

    /// Why waiting must stop: the program's communicator was revoked (a revoke by
    /// another rank reaches the program's twin only), which then revokes this one; or
    /// a member is known failed and the call's clock says to give up, so the call may
    /// never complete (see the module doc).
    pub(crate) fn interrupted(&self) -> Option<Fail> {
        if self.p2p.is_revoked() {
            self.coll.revoke();
            return Some(CommError::Revoked.into());
        }
        if self.coll.any_failed() && self.clock.expired() {
            let ranks = self.coll.failed_ranks();
            return Some(CommError::ProcFailed { ranks }.into());
        }
        None
    }

    /// Sends each `(rank, bytes)` and receives into each `(rank, buffer)` exactly its
    /// length, all posted at once straight from and into the given buffers (no copy),
    /// then waits for them all. A message of another length is `MPI_ERR_TRUNCATE`.
    pub fn exchange(
        &self,
        g: &mut Guard,
        sends: &[(u32, &[u8])],
        recvs: &mut [(u32, &mut [u8])],
    ) -> R<()> {
        let mut rreqs: Vec<Option<PendingRecv<'_>>> = Vec::with_capacity(recvs.len());
        for (src, buf) in recvs.iter_mut() {
            let len = buf.len();
            // SAFETY: the request borrows `buf`; it is completed or dropped (which
            // cancels it) before this function returns, never leaked.
            let req = unsafe { self.coll.irecv(Some(*src), Some(self.tag), buf) }?;
            rreqs.push(Some(PendingRecv {
                req,
                src: *src,
                len,
            }));
        }
        let mut sreqs: Vec<Option<SendRequest<'_>>> = Vec::with_capacity(sends.len());
        for &(dest, data) in sends {
            // SAFETY: as above, for `data`.
            sreqs.push(Some(unsafe { self.coll.isend(dest, self.tag, data) }?));
        }
        let mut spin = crate::util::spin_wait();
        let mut polls: u32 = 0;
        loop {
            g.lib()?;
            if !test_once(&mut sreqs, &mut rreqs)? {
                return Ok(());
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

/// `buf` cut into `n` consecutive blocks of `len` bytes (`buf` holds at least
/// `n * len`; `len` may be 0).
pub(crate) fn blocks_mut(buf: &mut [u8], len: usize, n: usize) -> impl Iterator<Item = &mut [u8]> {
    (0..n).scan(buf, move |rest, _| {
        let (block, tail) = std::mem::take(rest).split_at_mut(len);
        *rest = tail;
        Some(block)
    })
}

/// Block `i` of `len` bytes of `buf`.
pub(crate) fn block(buf: &[u8], len: usize, i: usize) -> &[u8] {
    &buf[len * i..len * (i + 1)]
}

/// Copies the root's own block into its place of the result (`MPI_ERR_TRUNCATE` when
/// it is longer than a block: the counts or types differ).
fn own_block(dst: &mut [u8], src: &[u8]) -> R<()> {
    let block_len = dst.len();
    let d = dst.get_mut(..src.len()).ok_or_else(|| {
        Fail::new(
            MPI_ERR_TRUNCATE,
            format!(
                "{} bytes sent where blocks of {} are received: the counts or types differ",
                src.len(),
                block_len
            ),
        )
    })?;
    d.copy_from_slice(src);
    Ok(())
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
    pub(crate) fn new(c: Coll) -> Self {
        Ibarrier {
            c,
            mask: 1,
            send: None,
            recv: None,
        }
    }

    /// The call's context back (once done).
    pub(crate) fn into_coll(self) -> Coll {
        self.c
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
        call(comm, |g| {
            // An inter-communicator's: every process of both groups (the runtime's
            // barrier over their union).
            // Without the lock while it waits, as the blocking point-to-point calls.
            if let CommKind::Inter { coll, .. } = &g.lib()?.comm(comm)?.kind {
                let coll = coll.clone();
                return Ok(g.unlocked(|| coll.barrier())?);
            }
            Rounds::start(g, comm, 1)?.barrier(g)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: Handle, request: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            if is_inter(g, comm)? {
                return crate::nbc_inter::ibarrier(g, comm, slot);
            }
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
        // A type with gaps: packed, then the call below (`coll_packed`).
        if let Some(rc) = crate::coll_packed::bcast(buffer, count, datatype, root, comm, None) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let buf = RecvArg { ptr: buffer, count, dt: datatype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::bcast(g, comm, buf, root) };
            }
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
    /// `MPI_Reduce` (predefined and user operations on basic and contiguous types).
    fn MPI_Reduce / PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        root: c_int,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Reduce { root }, sendbuf, recvbuf, count, datatype, op, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let recv = RecvArg { ptr: recvbuf, count, dt: datatype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::reduce(g, comm, sendbuf, recv, op, root) };
            }
            let lib = g.lib()?;
            let (len, t) = lib.byte_len(count, datatype)?;
            let op = Reduction::new(lib, op, datatype, &t)?;
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
                c.reduce(g, acc, scratch.get(len), &op, root)
            } else {
                // Elsewhere `recvbuf` is not significant: a copy of the input, beside
                // the scratch for the children's values.
                // SAFETY: MPI's contract: `sendbuf` holds `count` items.
                let input = unsafe { bytes(sendbuf, len) }?;
                let mut acc = Scratch::new();
                let acc = acc.get(len);
                acc.copy_from_slice(input);
                c.reduce(g, acc, scratch.get(len), &op, root)
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
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Allreduce, sendbuf, recvbuf, count, datatype, op, comm, None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let recv = RecvArg { ptr: recvbuf, count, dt: datatype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::allreduce(g, comm, sendbuf, recv, op) };
            }
            let lib = g.lib()?;
            let (len, t) = lib.byte_len(count, datatype)?;
            let op = Reduction::new(lib, op, datatype, &t)?;
            let mut c = Rounds::start(g, comm, 2)?;
            // Reduced in `recvbuf`.
            // SAFETY: MPI's contract: the buffers hold `count` items; `recvbuf` is the
            // program's alone during the call.
            let acc = unsafe {
                input_to_recvbuf(sendbuf, recvbuf, len)?;
                bytes_mut(recvbuf, len)?
            };
            let mut scratch = Scratch::new();
            c.allreduce(g, acc, scratch.get(len), &op)
        })
    }
}

/// Gathers every rank's `block` at `root`, in rank order, into the root's `out` (n
/// blocks of `block_len` bytes), straight into place; the root's own `block` is
/// copied (`None`: already in place, `MPI_IN_PLACE`).
fn gather_into(
    c: &Coll,
    g: &mut Guard,
    block: Option<&[u8]>,
    out: &mut [u8],
    block_len: usize,
    root: u32,
) -> R<()> {
    if c.me != root {
        return c.exchange(g, &[(root, block.unwrap_or_default())], &mut []);
    }
    let mut recvs: Vec<(u32, &mut [u8])> = Vec::with_capacity(c.n as usize);
    for (r, b) in (0..c.n).zip(blocks_mut(out, block_len, c.n as usize)) {
        if r != root {
            recvs.push((r, b));
        } else if let Some(mine) = block {
            own_block(b, mine)?;
        }
    }
    c.exchange(g, &[], &mut recvs)
}

crate::mpi_fn! {
    /// `MPI_Gather`: every rank's block straight into its place at the root.
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
        // A type with gaps: packed, then the call below (`coll_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Gather,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
            None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::gather(g, comm, send, recv, root) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let is_root = c.me == root;
            let rlen = if is_root { g.lib()?.byte_len(recvcount, recvtype)?.0 } else { 0 };
            let block = if is_root && sendbuf as usize == IN_PLACE {
                None
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items, unchanged
                // during the call.
                Some(unsafe { bytes(sendbuf, slen) }?)
            };
            let out = if is_root {
                // SAFETY: MPI's contract: the root's `recvbuf` holds n blocks, the
                // program's alone during the call (and not `sendbuf`).
                unsafe { bytes_mut(recvbuf, rlen * c.n as usize) }?
            } else {
                &mut []
            };
            gather_into(&c, g, block, out, rlen, root)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Scatter`: every block straight from its place at the root.
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
        // A type with gaps: packed, then the call below (`coll_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Scatter,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            root,
            comm,
            None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::scatter(g, comm, send, recv, root) };
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let is_root = c.me == root;
            let in_place = is_root && recvbuf as usize == IN_PLACE;
            let rlen = if in_place { 0 } else { g.lib()?.byte_len(recvcount, recvtype)?.0 };
            // SAFETY: MPI's contract: `recvbuf` holds `recvcount` items, the program's
            // alone during the call (and not the root's `sendbuf`).
            let out = unsafe { bytes_mut(recvbuf, rlen) }?;
            if !is_root {
                return c.exchange(g, &[], &mut [(root, out)]);
            }
            let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
            let n = c.n as usize;
            // SAFETY: MPI's contract: the root's `sendbuf` holds n blocks, unchanged
            // during the call.
            let all = unsafe { bytes(sendbuf, slen * n) }?;
            let sends: Vec<(u32, &[u8])> = (0..c.n)
                .filter(|&r| r != root)
                .map(|r| (r, block(all, slen, r as usize)))
                .collect();
            if !in_place {
                let mine = block(all, slen, root as usize);
                let k = mine.len().min(out.len());
                out[..k].copy_from_slice(&mine[..k]);
            }
            c.exchange(g, &sends, &mut [])
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Allgather`: a gather at rank 0 straight into its `recvbuf`, then a
    /// broadcast of that buffer.
    fn MPI_Allgather / PMPI_Allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Allgather,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            0,
            comm,
            None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::allgather(g, comm, send, recv) };
            }
            let mut c = Coll::start_phases(g, comm, 2)?;
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let total = rlen * c.n as usize;
            let in_place = sendbuf as usize == IN_PLACE;
            if c.me == 0 {
                let block = if in_place {
                    None
                } else {
                    let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                    // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                    Some(unsafe { bytes(sendbuf, slen) }?)
                };
                // SAFETY: MPI's contract: `recvbuf` holds n blocks, the program's alone
                // (and not `sendbuf`).
                let out = unsafe { bytes_mut(recvbuf, total) }?;
                gather_into(&c, g, block, out, rlen, 0)?;
            } else {
                let block = if in_place {
                    // SAFETY: MPI's contract: `recvbuf` holds n blocks; only read here,
                    // before the broadcast below writes it.
                    block(unsafe { bytes(recvbuf.cast_const(), total) }?, rlen, c.me as usize)
                } else {
                    let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                    // SAFETY: MPI's contract: `sendbuf` holds `sendcount` items.
                    unsafe { bytes(sendbuf, slen) }?
                };
                gather_into(&c, g, Some(block), &mut [], rlen, 0)?;
            }
            c.next_phase();
            // SAFETY: MPI's contract: `recvbuf` holds n blocks, the program's alone.
            let all = unsafe { bytes_mut(recvbuf, total) }?;
            Rounds::of(&c, comm).bcast(g, all, 0)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Alltoall`: every pair at once, straight from `sendbuf` into `recvbuf`
    /// (`MPI_IN_PLACE`: from a copy of `recvbuf`).
    fn MPI_Alltoall / PMPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle
    ) {
        // A type with gaps: packed, then the call below (`coll_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Alltoall,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            0,
            comm,
            None,
        ) {
            return rc;
        }
        call(comm, |g| {
            if is_inter(g, comm)? {
                let send = SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                // SAFETY: this function's contract: MPI's rules for its arguments.
                return unsafe { coll_inter::alltoall(g, comm, send, recv) };
            }
            let c = Coll::start(g, comm)?;
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let n = c.n as usize;
            let me = c.me as usize;
            let copy: Vec<u8>;
            let (all, slen) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` holds n blocks.
                copy = unsafe { bytes(recvbuf.cast_const(), rlen * n) }?.to_vec();
                (&copy[..], rlen)
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                // SAFETY: MPI's contract: `sendbuf` holds n blocks of `sendcount` items,
                // unchanged during the call (and not `recvbuf`).
                (unsafe { bytes(sendbuf, slen * n) }?, slen)
            };
            // SAFETY: MPI's contract: `recvbuf` holds n blocks, the program's alone.
            let out = unsafe { bytes_mut(recvbuf, rlen * n) }?;
            let sends: Vec<(u32, &[u8])> = (0..n)
                .filter(|&r| r != me)
                .map(|r| (r as u32, block(all, slen, r)))
                .collect();
            let mut recvs: Vec<(u32, &mut [u8])> = Vec::with_capacity(n);
            for (r, b) in blocks_mut(out, rlen, n).enumerate() {
                if r != me {
                    recvs.push((r as u32, b));
                } else {
                    own_block(b, block(all, slen, me))?;
                }
            }
            c.exchange(g, &sends, &mut recvs)
        })
    }
}
