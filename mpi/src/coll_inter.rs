//! The collectives on an inter-communicator (MPI 4.1 §6.2.2 and each collective's
//! inter-communicator paragraph): `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`,
//! `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`, `MPI_Alltoall` and the v variants.
//! The entry points of `coll` and `collv` hand an inter-communicator's calls here.
//!
//! Their messages travel over the communicator both groups share underneath the
//! inter-communicator's collective twin (`InterComm::union`, so that a wildcard
//! receive on the program's inter-communicator never takes one), remote rank `r` being
//! union rank `remote_offset + r`. Rooted calls: the root passes `MPI_ROOT`, the rest
//! of its group `MPI_PROC_NULL` (they take no part), the other group the root's rank
//! in it. The algorithms:
//! - bcast: the root sends to remote rank 0, which broadcasts in its group (binomial,
//!   `coll_rounds`);
//! - reduce: the non-root group reduces at its rank 0 (binomial, so in rank order, as
//!   a non-commutative operation needs), which sends the result to the root;
//! - allreduce: each group reduces at its rank 0, the two leaders swap their results,
//!   each broadcasts the other group's in its own;
//! - gather, scatter, allgather, alltoall and the v variants: every message straight
//!   between the buffers, all posted at once (`Coll::exchange`).
//!
//! Each kind of call takes the same number of tags at every member of both groups
//! (`MPI_PROC_NULL` ones included), so the two groups' tag sequences stay in step. The
//! waits are those of the intra-communicator collectives: the lock released between
//! polls under `MPI_THREAD_MULTIPLE`, `MPI_ERR_PROC_FAILED` once any member of either
//! group is known failed, `MPI_ERR_REVOKED` on a revoke. `MPI_IN_PLACE`, which MPI
//! does not allow on an inter-communicator, is `MPI_ERR_BUFFER`.

use std::ffi::{c_int, c_void};

use crate::coll::{block, blocks_mut, root_arg, Coll};
use crate::coll_rounds::{Rounds, Scratch};
use crate::collv::{blocks_of, disjoint_blocks};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::op::Reduction;
use crate::state::{CommKind, Guard};
use crate::util::{bytes, bytes_mut};

/// A send buffer argument as the program passed it.
#[derive(Clone, Copy)]
pub(crate) struct SendArg {
    pub ptr: *const c_void,
    pub count: c_int,
    pub dt: Handle,
}

/// A receive buffer argument as the program passed it.
#[derive(Clone, Copy)]
pub(crate) struct RecvArg {
    pub ptr: *mut c_void,
    pub count: c_int,
    pub dt: Handle,
}

/// A v variant's send side as passed: one count and displacement per remote rank.
#[derive(Clone, Copy)]
pub(crate) struct SendVArg {
    pub ptr: *const c_void,
    pub counts: *const c_int,
    pub displs: *const c_int,
    pub dt: Handle,
}

/// A v variant's receive side as passed: one count and displacement per remote rank.
#[derive(Clone, Copy)]
pub(crate) struct RecvVArg {
    pub ptr: *mut c_void,
    pub counts: *const c_int,
    pub displs: *const c_int,
    pub dt: Handle,
}

/// Whether `comm` is an inter-communicator (its collectives are this module's).
pub(crate) fn is_inter(g: &mut Guard, comm: Handle) -> R<bool> {
    Ok(matches!(g.lib()?.comm(comm)?.kind, CommKind::Inter { .. }))
}

/// Whether `comm` is an inter-communicator, asked before an entry point takes the
/// lock (`false` for anything the entry point's own path reports).
pub(crate) fn is_inter_comm(comm: Handle) -> bool {
    let mut inter = false;
    crate::state::call(comm, |g| {
        inter = is_inter(g, comm).unwrap_or(false);
        Ok(())
    });
    inter
}

/// A blocking collective run as its non-blocking form (`start` given the request to
/// write) and `MPI_Wait`: the inter-communicator `MPI_Reduce_scatter`,
/// `MPI_Reduce_scatter_block` and `MPI_Alltoallw` (the same schedule, so the same
/// tags and messages at every member, whichever form each called).
pub(crate) fn blocking(start: impl FnOnce(*mut Handle) -> c_int) -> c_int {
    let mut req = MPI_REQUEST_NULL;
    let code = start(&mut req);
    if code != MPI_SUCCESS {
        return code;
    }
    // SAFETY: `req` is the request the start just wrote; no status is asked for.
    unsafe { crate::wait::PMPI_Wait(&mut req, std::ptr::null_mut()) }
}

/// What this process does in a rooted call, from its `root` argument.
pub(crate) enum Role {
    /// `MPI_ROOT`: the root.
    Root,
    /// `MPI_PROC_NULL`: in the root's group, no part in the call.
    Idle,
    /// In the other group; the root is rank `root` of the remote group.
    Member { root: u32 },
}

pub(crate) fn role(root: c_int, remote_size: u32) -> R<Role> {
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r => Ok(Role::Member {
            root: root_arg(r, remote_size)?,
        }),
    }
}

/// `MPI_ERR_BUFFER` for `MPI_IN_PLACE`, which no inter-communicator collective takes.
pub(crate) fn no_in_place(p: *const c_void) -> R<()> {
    if p as usize == IN_PLACE {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "MPI_IN_PLACE is not allowed on an inter-communicator",
        ));
    }
    Ok(())
}

/// `n` blocks of `len` bytes, or `MPI_ERR_COUNT` when that overflows.
pub(crate) fn span(len: usize, n: u32) -> R<usize> {
    len.checked_mul(n as usize)
        .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "count times group size overflows"))
}

/// One call on an inter-communicator.
pub(crate) struct Inter {
    comm: Handle,
    /// The call on the unions underneath: `me` is this process's rank in its group,
    /// `n` the remote group's size; its ranks are union ranks.
    pub(crate) c: Coll,
    pub(crate) local_size: u32,
    pub(crate) local_offset: u32,
    pub(crate) remote_offset: u32,
}

impl Inter {
    /// Starts a call of `phases` phases on inter-communicator `comm`: all its tags are
    /// taken now (as `Coll::start_phases`), at every member of both groups.
    pub(crate) fn start(g: &mut Guard, comm: Handle, phases: u32) -> R<Inter> {
        let lib = g.lib()?;
        let e = lib.comm(comm)?;
        let CommKind::Inter { p2p, coll } = &e.kind else {
            return Err(Fail::new(MPI_ERR_INTERN, "not an inter-communicator"));
        };
        let (me, n) = (e.rank, e.size);
        let (local_size, local_offset, remote_offset) =
            (coll.local_size(), coll.local_offset(), coll.remote_offset());
        let (p2p, coll) = (p2p.union().clone(), coll.union().clone());
        let tag = lib.coll_tag(comm)?;
        for _ in 1..phases {
            lib.coll_tag(comm)?;
        }
        Ok(Inter {
            comm,
            c: Coll::new(p2p, coll, tag, me, n),
            local_size,
            local_offset,
            remote_offset,
        })
    }

    /// Union rank of remote rank `r`.
    fn remote(&self, r: u32) -> u32 {
        self.remote_offset + r
    }

    /// The tree rounds of the current phase within this process's group.
    fn group(&self) -> Rounds {
        Rounds::in_group(
            self.comm,
            self.c.tag,
            self.local_offset,
            self.c.me,
            self.local_size,
            self.c.clock.clone(),
        )
    }

    /// The receives of `n` consecutive blocks of `len` bytes of `out`, block `r` from
    /// remote rank `r`.
    fn recv_each<'a>(&self, out: &'a mut [u8], len: usize) -> Vec<(u32, &'a mut [u8])> {
        (0..self.c.n)
            .zip(blocks_mut(out, len, self.c.n as usize))
            .map(|(r, b)| (self.remote(r), b))
            .collect()
    }

    /// A member of the non-root group sends its block to the root (gather, gatherv).
    ///
    /// # Safety
    /// `send` follows MPI's rules for a send buffer.
    unsafe fn send_to_root(&self, g: &mut Guard, send: SendArg, root: u32) -> R<()> {
        no_in_place(send.ptr)?;
        let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
        // SAFETY: the caller's contract: `sendbuf` holds `sendcount` items, unchanged
        // during the call.
        let data = unsafe { bytes(send.ptr, slen) }?;
        self.c.exchange(g, &[(self.remote(root), data)], &mut [])
    }

    /// A member of the non-root group receives its block from the root (scatter,
    /// scatterv).
    ///
    /// # Safety
    /// `recv` follows MPI's rules for a receive buffer.
    unsafe fn recv_from_root(&self, g: &mut Guard, recv: RecvArg, root: u32) -> R<()> {
        no_in_place(recv.ptr.cast_const())?;
        let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
        // SAFETY: the caller's contract: `recvbuf` holds `recvcount` items, the
        // program's alone during the call.
        let out = unsafe { bytes_mut(recv.ptr, rlen) }?;
        self.c.exchange(g, &[], &mut [(self.remote(root), out)])
    }
}

/// `MPI_Bcast` on inter-communicator `comm` (2 phases: root to remote rank 0, then a
/// binomial broadcast in that group).
///
/// # Safety
/// `buf` follows MPI's rules for `MPI_Bcast`'s buffer (significant at the root and in
/// the other group).
pub(crate) unsafe fn bcast(g: &mut Guard, comm: Handle, buf: RecvArg, root: c_int) -> R<()> {
    let mut ic = Inter::start(g, comm, 2)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            let (len, _) = g.lib()?.byte_len(buf.count, buf.dt)?;
            // SAFETY: the caller's contract: the root's buffer holds `count` items,
            // unchanged during the call.
            let data = unsafe { bytes(buf.ptr.cast_const(), len) }?;
            ic.c.exchange(g, &[(ic.remote(0), data)], &mut [])
        }
        Role::Member { root } => {
            let (len, _) = g.lib()?.byte_len(buf.count, buf.dt)?;
            // SAFETY: the caller's contract: the buffer holds `count` items, the
            // program's alone during the call.
            let data = unsafe { bytes_mut(buf.ptr, len) }?;
            if ic.c.me == 0 {
                ic.c.exchange(g, &[], &mut [(ic.remote(root), &mut *data)])?;
            }
            ic.c.next_phase();
            ic.group().bcast(g, data, 0)
        }
    }
}

/// `MPI_Reduce` on inter-communicator `comm` (2 phases: a binomial reduction at rank 0
/// of the non-root group, then its result to the root). `recv` carries the count and
/// type of both buffers.
///
/// # Safety
/// `sendbuf` and `recv` follow MPI's rules for `MPI_Reduce` (`sendbuf` significant in
/// the non-root group, `recvbuf` at the root).
pub(crate) unsafe fn reduce(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recv: RecvArg,
    op: Handle,
    root: c_int,
) -> R<()> {
    let mut ic = Inter::start(g, comm, 2)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            let lib = g.lib()?;
            let (len, t) = lib.byte_len(recv.count, recv.dt)?;
            Reduction::new(lib, op, recv.dt, &t)?;
            // SAFETY: the caller's contract: the root's `recvbuf` holds `count` items,
            // the program's alone during the call.
            let out = unsafe { bytes_mut(recv.ptr, len) }?;
            ic.c.next_phase();
            ic.c.exchange(g, &[], &mut [(ic.remote(0), out)])
        }
        Role::Member { root } => {
            no_in_place(sendbuf)?;
            let lib = g.lib()?;
            let (len, t) = lib.byte_len(recv.count, recv.dt)?;
            let op = Reduction::new(lib, op, recv.dt, &t)?;
            let mut acc = Scratch::new();
            let acc = acc.get(len);
            // SAFETY: the caller's contract: `sendbuf` holds `count` items.
            acc.copy_from_slice(unsafe { bytes(sendbuf, len) }?);
            let mut tmp = Scratch::new();
            ic.group().reduce(g, acc, tmp.get(len), &op, 0)?;
            ic.c.next_phase();
            if ic.c.me == 0 {
                ic.c.exchange(g, &[(ic.remote(root), &*acc)], &mut [])?;
            }
            Ok(())
        }
    }
}

/// `MPI_Allreduce` on inter-communicator `comm`: each group gets the reduction of the
/// other's inputs (3 phases: a binomial reduction at each group's rank 0, the leaders'
/// swap, a binomial broadcast in each group).
///
/// # Safety
/// `sendbuf` and `recv` follow MPI's rules for `MPI_Allreduce`.
pub(crate) unsafe fn allreduce(
    g: &mut Guard,
    comm: Handle,
    sendbuf: *const c_void,
    recv: RecvArg,
    op: Handle,
) -> R<()> {
    let mut ic = Inter::start(g, comm, 3)?;
    no_in_place(sendbuf)?;
    let lib = g.lib()?;
    let (len, t) = lib.byte_len(recv.count, recv.dt)?;
    let op = Reduction::new(lib, op, recv.dt, &t)?;
    let mut acc = Scratch::new();
    let acc = acc.get(len);
    // SAFETY: the caller's contract: `sendbuf` holds `count` items.
    acc.copy_from_slice(unsafe { bytes(sendbuf, len) }?);
    let mut tmp = Scratch::new();
    ic.group().reduce(g, acc, tmp.get(len), &op, 0)?;
    ic.c.next_phase();
    // SAFETY: the caller's contract: `recvbuf` holds `count` items, the program's
    // alone during the call (and not `sendbuf`, read above).
    let out = unsafe { bytes_mut(recv.ptr, len) }?;
    if ic.c.me == 0 {
        let leader = ic.remote(0);
        ic.c.exchange(g, &[(leader, &*acc)], &mut [(leader, &mut *out)])?;
    }
    ic.c.next_phase();
    ic.group().bcast(g, out, 0)
}

/// `MPI_Gather` on inter-communicator `comm`: every member of the non-root group sends
/// its block straight into its place at the root.
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Gather` (`send` significant in the
/// non-root group, `recv` at the root).
pub(crate) unsafe fn gather(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    root: c_int,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
            // SAFETY: the caller's contract: the root's `recvbuf` holds a block per
            // remote rank, the program's alone during the call.
            let out = unsafe { bytes_mut(recv.ptr, span(rlen, ic.c.n)?) }?;
            let mut recvs = ic.recv_each(out, rlen);
            ic.c.exchange(g, &[], &mut recvs)
        }
        // SAFETY: the caller's contract, for the send side.
        Role::Member { root } => unsafe { ic.send_to_root(g, send, root) },
    }
}

/// `MPI_Scatter` on inter-communicator `comm`: the root sends block `r` straight from
/// its place to remote rank `r`.
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Scatter` (`send` significant at the
/// root, `recv` in the non-root group).
pub(crate) unsafe fn scatter(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvArg,
    root: c_int,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
            // SAFETY: the caller's contract: the root's `sendbuf` holds a block per
            // remote rank, unchanged during the call.
            let all = unsafe { bytes(send.ptr, span(slen, ic.c.n)?) }?;
            let sends: Vec<(u32, &[u8])> = (0..ic.c.n)
                .map(|r| (ic.remote(r), block(all, slen, r as usize)))
                .collect();
            ic.c.exchange(g, &sends, &mut [])
        }
        // SAFETY: the caller's contract, for the receive side.
        Role::Member { root } => unsafe { ic.recv_from_root(g, recv, root) },
    }
}

/// `MPI_Allgather` on inter-communicator `comm`: every process sends its block to
/// every remote one and receives each remote block into its place, all at once.
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Allgather`.
pub(crate) unsafe fn allgather(g: &mut Guard, comm: Handle, send: SendArg, recv: RecvArg) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    no_in_place(send.ptr)?;
    let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
    let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    // SAFETY: the caller's contract: `sendbuf` holds `sendcount` items, unchanged
    // during the call (and not `recvbuf`).
    let mine = unsafe { bytes(send.ptr, slen) }?;
    // SAFETY: the caller's contract: `recvbuf` holds a block per remote rank, the
    // program's alone during the call.
    let out = unsafe { bytes_mut(recv.ptr, span(rlen, ic.c.n)?) }?;
    let sends: Vec<(u32, &[u8])> = (0..ic.c.n).map(|r| (ic.remote(r), mine)).collect();
    let mut recvs = ic.recv_each(out, rlen);
    ic.c.exchange(g, &sends, &mut recvs)
}

/// `MPI_Alltoall` on inter-communicator `comm`: block `r` of `sendbuf` goes to remote
/// rank `r`, block `r` of `recvbuf` comes from it, all at once.
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Alltoall`.
pub(crate) unsafe fn alltoall(g: &mut Guard, comm: Handle, send: SendArg, recv: RecvArg) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    no_in_place(send.ptr)?;
    let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
    let (rlen, _) = g.lib()?.byte_len(recv.count, recv.dt)?;
    // SAFETY: the caller's contract: `sendbuf` holds a block per remote rank,
    // unchanged during the call (and not `recvbuf`).
    let all = unsafe { bytes(send.ptr, span(slen, ic.c.n)?) }?;
    // SAFETY: the caller's contract: `recvbuf` holds a block per remote rank, the
    // program's alone during the call.
    let out = unsafe { bytes_mut(recv.ptr, span(rlen, ic.c.n)?) }?;
    let sends: Vec<(u32, &[u8])> = (0..ic.c.n)
        .map(|r| (ic.remote(r), block(all, slen, r as usize)))
        .collect();
    let mut recvs = ic.recv_each(out, rlen);
    ic.c.exchange(g, &sends, &mut recvs)
}

/// `(union rank, block)` for each `(remote rank, block)` of `parts`.
fn to_union<'a>(ic: &Inter, parts: Vec<(u32, &'a mut [u8])>) -> Vec<(u32, &'a mut [u8])> {
    parts.into_iter().map(|(r, b)| (ic.remote(r), b)).collect()
}

/// `MPI_Gatherv` on inter-communicator `comm` (as [`gather`], the root's blocks laid
/// out by counts and displacements, one per remote rank).
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Gatherv`.
pub(crate) unsafe fn gatherv(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvVArg,
    root: c_int,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            // SAFETY: the caller's contract: at the root, a count and a displacement
            // per remote rank.
            let (blocks, len) = unsafe { blocks_of(g, recv.counts, recv.displs, ic.c.n, recv.dt) }?;
            // SAFETY: the caller's contract: `recvbuf` spans every block, the program's
            // alone during the call.
            let out = unsafe { bytes_mut(recv.ptr, len) }?;
            let mut recvs = to_union(&ic, disjoint_blocks(out, &blocks)?);
            ic.c.exchange(g, &[], &mut recvs)
        }
        // SAFETY: the caller's contract, for the send side.
        Role::Member { root } => unsafe { ic.send_to_root(g, send, root) },
    }
}

/// `MPI_Scatterv` on inter-communicator `comm` (as [`scatter`], the root's blocks laid
/// out by counts and displacements, one per remote rank).
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Scatterv`.
pub(crate) unsafe fn scatterv(
    g: &mut Guard,
    comm: Handle,
    send: SendVArg,
    recv: RecvArg,
    root: c_int,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    match role(root, ic.c.n)? {
        Role::Idle => Ok(()),
        Role::Root => {
            // SAFETY: the caller's contract: at the root, a count and a displacement
            // per remote rank.
            let (blocks, len) = unsafe { blocks_of(g, send.counts, send.displs, ic.c.n, send.dt) }?;
            // SAFETY: the caller's contract: `sendbuf` spans every block, unchanged
            // during the call.
            let all = unsafe { bytes(send.ptr, len) }?;
            let sends: Vec<(u32, &[u8])> = (0..ic.c.n)
                .zip(&blocks)
                .map(|(r, &(start, len))| (ic.remote(r), &all[start..start + len]))
                .collect();
            ic.c.exchange(g, &sends, &mut [])
        }
        // SAFETY: the caller's contract, for the receive side.
        Role::Member { root } => unsafe { ic.recv_from_root(g, recv, root) },
    }
}

/// `MPI_Allgatherv` on inter-communicator `comm` (as [`allgather`], the received
/// blocks laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Allgatherv`.
pub(crate) unsafe fn allgatherv(
    g: &mut Guard,
    comm: Handle,
    send: SendArg,
    recv: RecvVArg,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    no_in_place(send.ptr)?;
    let (slen, _) = g.lib()?.byte_len(send.count, send.dt)?;
    // SAFETY: the caller's contract: a count and a displacement per remote rank.
    let (blocks, len) = unsafe { blocks_of(g, recv.counts, recv.displs, ic.c.n, recv.dt) }?;
    // SAFETY: the caller's contract: `sendbuf` holds `sendcount` items, unchanged
    // during the call (and not `recvbuf`).
    let mine = unsafe { bytes(send.ptr, slen) }?;
    // SAFETY: the caller's contract: `recvbuf` spans every block, the program's alone
    // during the call.
    let out = unsafe { bytes_mut(recv.ptr, len) }?;
    let sends: Vec<(u32, &[u8])> = (0..ic.c.n).map(|r| (ic.remote(r), mine)).collect();
    let mut recvs = to_union(&ic, disjoint_blocks(out, &blocks)?);
    ic.c.exchange(g, &sends, &mut recvs)
}

/// `MPI_Alltoallv` on inter-communicator `comm` (as [`alltoall`], both sides' blocks
/// laid out by counts and displacements, one per remote rank).
///
/// # Safety
/// `send` and `recv` follow MPI's rules for `MPI_Alltoallv`.
pub(crate) unsafe fn alltoallv(
    g: &mut Guard,
    comm: Handle,
    send: SendVArg,
    recv: RecvVArg,
) -> R<()> {
    let ic = Inter::start(g, comm, 1)?;
    no_in_place(send.ptr)?;
    // SAFETY: the caller's contract: a count and a displacement per remote rank on
    // each side.
    let (sblocks, slen) = unsafe { blocks_of(g, send.counts, send.displs, ic.c.n, send.dt) }?;
    // SAFETY: as above.
    let (rblocks, rlen) = unsafe { blocks_of(g, recv.counts, recv.displs, ic.c.n, recv.dt) }?;
    // SAFETY: the caller's contract: `sendbuf` spans every send block, unchanged
    // during the call (and not `recvbuf`).
    let all = unsafe { bytes(send.ptr, slen) }?;
    // SAFETY: the caller's contract: `recvbuf` spans every receive block, the
    // program's alone during the call.
    let out = unsafe { bytes_mut(recv.ptr, rlen) }?;
    let sends: Vec<(u32, &[u8])> = (0..ic.c.n)
        .zip(&sblocks)
        .map(|(r, &(start, len))| (ic.remote(r), &all[start..start + len]))
        .collect();
    let mut recvs = to_union(&ic, disjoint_blocks(out, &rblocks)?);
    ic.c.exchange(g, &sends, &mut recvs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_argument_names_the_role() {
        assert!(matches!(role(MPI_ROOT, 3), Ok(Role::Root)));
        assert!(matches!(role(MPI_PROC_NULL, 3), Ok(Role::Idle)));
        assert!(matches!(role(2, 3), Ok(Role::Member { root: 2 })));
        assert_eq!(role(3, 3).err().map(|f| f.class), Some(MPI_ERR_ROOT));
        assert_eq!(role(-7, 3).err().map(|f| f.class), Some(MPI_ERR_ROOT));
    }

    #[test]
    fn in_place_is_refused_and_spans_overflow_to_an_error() {
        let in_place = IN_PLACE as *const c_void;
        assert_eq!(
            no_in_place(in_place).err().map(|f| f.class),
            Some(MPI_ERR_BUFFER)
        );
        assert!(no_in_place(std::ptr::null()).is_ok());
        assert_eq!(span(4, 3).ok(), Some(12));
        assert_eq!(
            span(usize::MAX, 2).err().map(|f| f.class),
            Some(MPI_ERR_COUNT)
        );
    }
}
