//! The non-blocking collectives on an inter-communicator (MPI 4.1 §6.2.2, §6.12 and
//! each collective's inter-communicator paragraph): `MPI_Ibarrier`, `MPI_Ibcast`,
//! `MPI_Ireduce`, `MPI_Iallreduce`, `MPI_Igather`, `MPI_Iscatter`, `MPI_Iallgather`,
//! `MPI_Ialltoall`, the `v` forms `MPI_Igatherv`, `MPI_Iscatterv`, `MPI_Iallgatherv`,
//! `MPI_Ialltoallv`, and `MPI_Ireduce_scatter_block`, `MPI_Ireduce_scatter`. The entry
//! points of `coll`, `nbc`, `nbc_v` and `nbc_scan` hand an inter-communicator's calls
//! here.
//!
//! Each call is a schedule of `nbc` ([`Nbc`]) over the communicator both groups share
//! under the inter-communicator's collective twin (`InterComm::union`, as the blocking
//! ones of `coll_inter`): a union rank per peer, remote rank `r` being union rank
//! `remote_offset + r`, local rank `r` union rank `local_offset + r`. Every call takes
//! one tag of the inter-communicator's collective sequence at every member of both
//! groups (`MPI_PROC_NULL` ones included), so the two groups' sequences stay in step
//! with each other and with the blocking collectives; its steps all use that tag (a
//! pair of processes never exchanges two messages in one direction within a call).
//! Rooted calls: the root passes `MPI_ROOT`, the rest of its group `MPI_PROC_NULL`
//! (an empty schedule), the other group the root's rank in it. The algorithms:
//! - ibarrier: empty messages up a binomial tree to each group's rank 0, between the
//!   two, down the tree;
//! - ibcast: the root sends to remote rank 0, which broadcasts in its group (binomial);
//! - ireduce: the non-root group reduces at its rank 0 (binomial, in rank order, as a
//!   non-commutative operation needs), which sends the result to the root;
//! - iallreduce: each group reduces at its rank 0, the two leaders swap their results,
//!   each broadcasts the other group's in its own;
//! - ireduce_scatter(_block): each group reduces its whole vector at its rank 0, the
//!   leaders swap them, each scatters the other group's among its group by this
//!   group's counts (MPI 4.1 §6.11: both groups' vectors have the same length);
//! - gather, scatter, allgather, alltoall and the `v` forms: every message straight
//!   between the program's buffers, all posted at once.
//!
//! `MPI_IN_PLACE`, which MPI does not allow on an inter-communicator, is
//! `MPI_ERR_BUFFER`; reductions take the predefined operations and the program's
//! (`nbc::reduction`), each group reducing in its rank order.

use std::ffi::{c_int, c_void};

use crate::coll::Coll;
use crate::coll_inter::{
    no_in_place, role, span, Inter, RecvArg, RecvVArg, Role, SendArg, SendVArg,
};
use crate::collv::blocks_of;
use crate::consts::*;
use crate::error::R;
use crate::nbc::{reduction, reduction_input, Nbc, Span, Step};
use crate::nbc_v::disjoint;
use crate::state::Guard;

/// A schedule over an inter-communicator's union, with what places the two groups in
/// it.
struct Sched {
    s: Nbc,
    /// This process's rank in its group.
    me: u32,
    local_size: u32,
    local_offset: u32,
    remote_size: u32,
    remote_offset: u32,
}

impl Sched {
    /// Starts a call on inter-communicator `comm`: its one tag is taken now.
    fn start(g: &mut Guard, comm: Handle) -> R<Sched> {
        let ic = Inter::start(g, comm, 1)?;
        Ok(Sched::of(ic))
    }

    fn of(ic: Inter) -> Sched {
        let (me, remote_size) = (ic.c.me, ic.c.n);
        Sched {
            me,
            local_size: ic.local_size,
            local_offset: ic.local_offset,
            remote_size,
            remote_offset: ic.remote_offset,
            s: Nbc::new(ic.c),
        }
    }

    /// Union rank of remote rank `r`.
    fn remote(&self, r: u32) -> u32 {
        self.remote_offset + r
    }

    /// Union rank of local rank `r`.
    fn local(&self, r: u32) -> u32 {
        self.local_offset + r
    }

    fn exchange(&mut self, sends: Vec<(u32, Span)>, recvs: Vec<(u32, Span)>) {
        self.s.steps.push(Step::Exchange { sends, recvs });
    }

    /// A binomial broadcast of `buf` from local rank 0 within this group (as
    /// `Nbc::bcast` from rank 0, over the group's union ranks).
    fn group_bcast(&mut self, buf: Span) {
        let (me, n) = (self.me, self.local_size);
        let low = if me == 0 {
            n.next_power_of_two()
        } else {
            me & me.wrapping_neg()
        };
        if me != 0 {
            let parent = self.local(me - low);
            self.exchange(Vec::new(), vec![(parent, buf)]);
        }
        let mut sends = Vec::new();
        let mut mask = 1u32;
        while mask < low {
            if me + mask < n {
                sends.push((self.local(me + mask), buf));
            }
            mask <<= 1;
        }
        if !sends.is_empty() {
            self.exchange(sends, Vec::new());
        }
    }

    /// Reduces `acc` (this process's input, in scratch) up a binomial tree over this
    /// group's ranks in order: local rank 0 ends with the group's reduction in rank
    /// order (as `Nbc::reduce_to_zero`, over the group's union ranks).
    fn group_reduce(&mut self, acc: Span) {
        self.group_up(acc, true);
    }

    /// The messages of [`Sched::group_reduce`]'s tree, each process's after its
    /// children's; `combine`: with the reductions (else `acc` is empty: a barrier's
    /// gathering).
    fn group_up(&mut self, acc: Span, combine: bool) {
        let (me, n) = (self.me, self.local_size);
        let mut children = Vec::new();
        let mut mask = 1u32;
        while mask < n && me & mask == 0 {
            if me + mask < n {
                children.push(self.local(me + mask));
            }
            mask <<= 1;
        }
        if !children.is_empty() {
            let tmps: Vec<Span> = children
                .iter()
                .map(|_| self.s.scratch(acc.len, None))
                .collect();
            let recvs = children.into_iter().zip(tmps.iter().copied()).collect();
            self.exchange(Vec::new(), recvs);
            // Each child holds the ranks just above those `acc` holds by then.
            for other in tmps.into_iter().filter(|_| combine) {
                self.s.steps.push(Step::Reduce {
                    acc,
                    other,
                    other_lower: false,
                });
            }
        }
        if me != 0 {
            let parent = self.local(me - (me & me.wrapping_neg()));
            self.exchange(vec![(parent, acc)], Vec::new());
        }
    }

    /// The receives of `n` consecutive blocks of `len` bytes of `out`, block `r` from
    /// remote rank `r`.
    fn recv_each(&self, out: Span, len: usize) -> Vec<(u32, Span)> {
        (0..self.remote_size)
            .map(|r| (self.remote(r), out.sub(r as usize * len, len)))
            .collect()
    }

    /// The sends of `n` consecutive blocks of `len` bytes of `all`, block `r` to
    /// remote rank `r`.
    fn send_each(&self, all: Span, len: usize) -> Vec<(u32, Span)> {
        (0..self.remote_size)
            .map(|r| (self.remote(r), all.sub(r as usize * len, len)))
            .collect()
    }

    /// `(union rank, block)` for each remote rank's `(start, len)` block of `buf`.
    fn per_remote(&self, buf: Span, blocks: &[(usize, usize)]) -> Vec<(u32, Span)> {
        (0..self.remote_size)
            .zip(blocks)
            .map(|(r, &(start, len))| (self.remote(r), buf.sub(start, len)))
            .collect()
    }

    /// Sets the schedule's operation for a reduction of `len`-byte vectors of type
    /// `dt` (a predefined operation defined on it, or the program's, as the
    /// intra-communicator calls check) and copies this process's input (`sendbuf`, never `MPI_IN_PLACE`) into
    /// scratch.
    fn reduction(
        &mut self,
        g: &mut Guard,
        sendbuf: *const c_void,
        len: usize,
        dt: Handle,
        op: Handle,
    ) -> R<Span> {
        no_in_place(sendbuf)?;
        let t = g.lib()?.datatype(dt)?;
        self.s.reduction = Some(reduction(g.lib()?, op, dt, &t)?);
        reduction_input(&mut self.s, sendbuf, std::ptr::null_mut(), len)
    }

    fn submit(self, g: &mut Guard, comm: Handle, slot: &mut Handle) -> R<()> {
        self.s.submit(g, comm, slot)
    }
}

/// A send buffer of `count` items as a span (`MPI_IN_PLACE` refused).
fn send_span(g: &mut Guard, send: SendArg) -> R<Span> {
    no_in_place(send.ptr)?;
    let (len, _) = g.lib()?.byte_len(send.count, send.dt)?;
    Span::at(send.ptr.cast_mut().cast(), len)
}

/// A receive buffer of `count` items as a span (`MPI_IN_PLACE` refused).
fn recv_span(g: &mut Guard, recv: RecvArg) -> R<Span> {
    no_in_place(recv.ptr.cast_const())?;
    let (len, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    Span::at(recv.ptr.cast(), len)
}

/// `MPI_Ibarrier` on inter-communicator `comm`: complete at a process once every
/// process of both groups started it (empty messages: up a tree to each group's rank
/// 0, between the two, down the tree).
pub(crate) fn ibarrier(g: &mut Guard, comm: Handle, slot: &mut Handle) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    let none = Span::at(std::ptr::null_mut(), 0)?;
    s.group_up(none, false);
    if s.me == 0 {
        let leader = s.remote(0);
        s.exchange(vec![(leader, none)], vec![(leader, none)]);
    }
    s.group_bcast(none);
    s.submit(g, comm, slot)
}

/// `MPI_Ibcast` on inter-communicator `comm`.
pub(crate) fn ibcast(
    g: &mut Guard,
    comm: Handle,
    buf: RecvArg,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            let (len, _) = g.lib()?.byte_len(buf.count, buf.dt)?;
            let data = Span::at(buf.ptr.cast(), len)?;
            let to = s.remote(0);
            s.exchange(vec![(to, data)], Vec::new());
        }
        Role::Member { root } => {
            let data = recv_span(g, buf)?;
            if s.me == 0 {
                let from = s.remote(root);
                s.exchange(Vec::new(), vec![(from, data)]);
            }
            s.group_bcast(data);
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Ireduce` on inter-communicator `comm` (`recv` carries the count and type of
/// both buffers).
pub(crate) fn ireduce(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recv: RecvArg,
    op: Handle,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            let (_, t) = g.lib()?.byte_len(recv.count, recv.dt)?;
            reduction(g.lib()?, op, recv.dt, &t)?;
            let out = recv_span(g, recv)?;
            let from = s.remote(0);
            s.exchange(Vec::new(), vec![(from, out)]);
        }
        Role::Member { root } => {
            let (len, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
            let acc = s.reduction(g, sendbuf, len, recv.dt, op)?;
            s.group_reduce(acc);
            if s.me == 0 {
                let to = s.remote(root);
                s.exchange(vec![(to, acc)], Vec::new());
            }
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Iallreduce` on inter-communicator `comm`: each group gets the reduction of
/// the other's inputs.
pub(crate) fn iallreduce(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recv: RecvArg,
    op: Handle,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    let (len, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    let acc = s.reduction(g, sendbuf, len, recv.dt, op)?;
    let out = recv_span(g, recv)?;
    s.group_reduce(acc);
    if s.me == 0 {
        let leader = s.remote(0);
        s.exchange(vec![(leader, acc)], vec![(leader, out)]);
    }
    s.group_bcast(out);
    s.submit(g, comm, slot)
}

/// `MPI_Ireduce_scatter_block` and `MPI_Ireduce_scatter` on inter-communicator
/// `comm`: `blocks` gives this group's blocks (`(start, len)` bytes of each local
/// rank's part, and the vector's length) from a context whose `n` is this group's
/// size and from the type's size.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ireduce_scatter(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    blocks: impl FnOnce(&Coll, usize) -> R<(Vec<(usize, usize)>, usize)>,
    datatype: Handle,
    op: Handle,
    slot: &mut Handle,
) -> R<()> {
    let mut ic = Inter::start(g, comm, 1)?;
    let size = g.lib()?.datatype(datatype)?.size;
    // The counts are this group's, one per local rank.
    let remote_size = ic.c.n;
    ic.c.n = ic.local_size;
    let (blocks, total) = blocks(&ic.c, size)?;
    ic.c.n = remote_size;
    let mut s = Sched::of(ic);
    let acc = s.reduction(g, sendbuf, total, datatype, op)?;
    let (start, len) = blocks[s.me as usize];
    let out = Span::at(recvbuf.cast(), len)?;
    s.group_reduce(acc);
    if s.me == 0 {
        // The other group's reduction, whose blocks this group shares out.
        let theirs = s.s.scratch(total, None);
        let leader = s.remote(0);
        s.exchange(vec![(leader, acc)], vec![(leader, theirs)]);
        s.s.steps.push(Step::Copy {
            from: theirs.sub(start, len),
            to: out,
        });
        let sends = (1..s.local_size)
            .map(|r| {
                let (start, len) = blocks[r as usize];
                (s.local(r), theirs.sub(start, len))
            })
            .collect();
        s.exchange(sends, Vec::new());
    } else {
        let leader = s.local(0);
        s.exchange(Vec::new(), vec![(leader, out)]);
    }
    s.submit(g, comm, slot)
}

/// `MPI_Igather` on inter-communicator `comm`: every member of the non-root group
/// sends its block straight into its place at the root.
pub(crate) fn igather(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            no_in_place(recv.ptr.cast_const())?;
            let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
            let out = Span::at(recv.ptr.cast(), span(rlen, s.remote_size)?)?;
            let recvs = s.recv_each(out, rlen);
            s.exchange(Vec::new(), recvs);
        }
        Role::Member { root } => {
            let mine = send_span(g, send)?;
            let to = s.remote(root);
            s.exchange(vec![(to, mine)], Vec::new());
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Iscatter` on inter-communicator `comm`: the root sends block `r` straight
/// from its place to remote rank `r`.
pub(crate) fn iscatter(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            no_in_place(send.ptr)?;
            let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
            let all = Span::at(send.ptr.cast_mut().cast(), span(slen, s.remote_size)?)?;
            let sends = s.send_each(all, slen);
            s.exchange(sends, Vec::new());
        }
        Role::Member { root } => {
            let out = recv_span(g, recv)?;
            let from = s.remote(root);
            s.exchange(Vec::new(), vec![(from, out)]);
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Iallgather` on inter-communicator `comm`: this process's block to every remote
/// one, each remote block into its place, all at once.
pub(crate) fn iallgather(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    let mine = send_span(g, send)?;
    let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    let out = Span::at(recv.ptr.cast(), span(rlen, s.remote_size)?)?;
    let sends = (0..s.remote_size).map(|r| (s.remote(r), mine)).collect();
    let recvs = s.recv_each(out, rlen);
    s.exchange(sends, recvs);
    s.submit(g, comm, slot)
}

/// `MPI_Ialltoall` on inter-communicator `comm`: block `r` of the send buffer to
/// remote rank `r`, block `r` of the receive buffer from it, all at once.
pub(crate) fn ialltoall(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    no_in_place(send.ptr)?;
    let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
    let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    let all = Span::at(send.ptr.cast_mut().cast(), span(slen, s.remote_size)?)?;
    let out = Span::at(recv.ptr.cast(), span(rlen, s.remote_size)?)?;
    let sends = s.send_each(all, slen);
    let recvs = s.recv_each(out, rlen);
    s.exchange(sends, recvs);
    s.submit(g, comm, slot)
}

/// The `(start, len)` blocks of a `v` argument, one per remote rank, and their span.
///
/// # Safety
/// `counts` and `displs` hold one int per remote rank.
unsafe fn remote_blocks(
    g: &mut Guard,
    s: &Sched,
    counts: *const c_int,
    displs: *const c_int,
    dt: Handle,
) -> R<(Vec<(usize, usize)>, usize)> {
    // SAFETY: the caller's contract.
    unsafe { blocks_of(g, counts, displs, s.remote_size, dt) }
}

/// `MPI_Igatherv` on inter-communicator `comm` (as [`igather`], the root's blocks
/// laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// At the root, `recv`'s counts and displacements hold one int per remote rank.
pub(crate) unsafe fn igatherv(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvVArg,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            no_in_place(recv.ptr.cast_const())?;
            // SAFETY: the caller's contract.
            let (blocks, len) = unsafe { remote_blocks(g, &s, recv.counts, recv.displs, recv.dt) }?;
            disjoint(&blocks)?;
            let out = Span::at(recv.ptr.cast(), len)?;
            let recvs = s.per_remote(out, &blocks);
            s.exchange(Vec::new(), recvs);
        }
        Role::Member { root } => {
            let mine = send_span(g, send)?;
            let to = s.remote(root);
            s.exchange(vec![(to, mine)], Vec::new());
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Iscatterv` on inter-communicator `comm` (as [`iscatter`], the root's blocks
/// laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// At the root, `send`'s counts and displacements hold one int per remote rank.
pub(crate) unsafe fn iscatterv(
    g: &mut Guard,
    comm: Handle,
    send: SendVArg,
    recv: RecvArg,
    root: c_int,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    match role(root, s.remote_size)? {
        Role::Idle => {}
        Role::Root => {
            no_in_place(send.ptr)?;
            // SAFETY: the caller's contract.
            let (blocks, len) = unsafe { remote_blocks(g, &s, send.counts, send.displs, send.dt) }?;
            let all = Span::at(send.ptr.cast_mut().cast(), len)?;
            let sends = s.per_remote(all, &blocks);
            s.exchange(sends, Vec::new());
        }
        Role::Member { root } => {
            let out = recv_span(g, recv)?;
            let from = s.remote(root);
            s.exchange(Vec::new(), vec![(from, out)]);
        }
    }
    s.submit(g, comm, slot)
}

/// `MPI_Iallgatherv` on inter-communicator `comm` (as [`iallgather`], the received
/// blocks laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// `recv`'s counts and displacements hold one int per remote rank.
pub(crate) unsafe fn iallgatherv(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvVArg,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    let mine = send_span(g, send)?;
    // SAFETY: the caller's contract.
    let (blocks, len) = unsafe { remote_blocks(g, &s, recv.counts, recv.displs, recv.dt) }?;
    disjoint(&blocks)?;
    let out = Span::at(recv.ptr.cast(), len)?;
    let sends = (0..s.remote_size).map(|r| (s.remote(r), mine)).collect();
    let recvs = s.per_remote(out, &blocks);
    s.exchange(sends, recvs);
    s.submit(g, comm, slot)
}

/// `MPI_Ialltoallv` on inter-communicator `comm` (as [`ialltoall`], both sides'
/// blocks laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// Each side's counts and displacements hold one int per remote rank.
pub(crate) unsafe fn ialltoallv(
    g: &mut Guard,
    comm: Handle,
    send: SendVArg,
    recv: RecvVArg,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    no_in_place(send.ptr)?;
    // SAFETY: the caller's contract.
    let (sblocks, slen) = unsafe { remote_blocks(g, &s, send.counts, send.displs, send.dt) }?;
    // SAFETY: as above.
    let (rblocks, rlen) = unsafe { remote_blocks(g, &s, recv.counts, recv.displs, recv.dt) }?;
    disjoint(&rblocks)?;
    let all = Span::at(send.ptr.cast_mut().cast(), slen)?;
    let out = Span::at(recv.ptr.cast(), rlen)?;
    let sends = s.per_remote(all, &sblocks);
    let recvs = s.per_remote(out, &rblocks);
    s.exchange(sends, recvs);
    s.submit(g, comm, slot)
}

/// The `(start, len)` blocks of each side of an `MPI_Ialltoallw`, one per remote rank,
/// and the bytes each side spans.
pub(crate) type WBlocks = ((Vec<(usize, usize)>, usize), (Vec<(usize, usize)>, usize));

/// `MPI_Ialltoallw` on inter-communicator `comm` (as [`ialltoallv`], each block of its
/// own type: `blocks` gives the send and receive blocks for the remote group's size).
pub(crate) fn ialltoallw(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    blocks: impl FnOnce(&mut Guard, u32) -> R<WBlocks>,
    slot: &mut Handle,
) -> R<()> {
    let mut s = Sched::start(g, comm)?;
    no_in_place(sendbuf)?;
    let ((sblocks, slen), (rblocks, rlen)) = blocks(g, s.remote_size)?;
    disjoint(&rblocks)?;
    let all = Span::at(sendbuf.cast_mut().cast(), slen)?;
    let out = Span::at(recvbuf.cast(), rlen)?;
    let sends = s.per_remote(all, &sblocks);
    let recvs = s.per_remote(out, &rblocks);
    s.exchange(sends, recvs);
    s.submit(g, comm, slot)
}
