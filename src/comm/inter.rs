//! Inter-communicators, created uniformly.
//!
//! An [`InterComm`] joins two disjoint groups; point-to-point addresses the remote
//! group. Underneath it is one communicator over the union of the two groups (lower
//! side first: the side holding the smaller world rank), so revoke is the union's
//! reliable broadcast and [`InterComm::agree`] is one ERA agreement over the union in
//! which each side contributes its flag in its own half of the value: every survivor of
//! both sides decides the same, and each side reads the AND of the remote group's flags.
//!
//! [`Comm::intercomm_create_uniform`] follows the ULFM recipe for uniform creation:
//! create (the leaders exchange their groups over the bridge, each hands the remote
//! group to its side); agree on the local communicator; the two leaders run the
//! two-party agreement over the bridge; agree on the local communicator again; then
//! one agreement over the union seals it. A process whose side said no contributes 0 to
//! that last agreement without waiting (its engine answers in the background), so the
//! other side never waits for it, and every surviving process of both sides returns
//! the same outcome; on failure the union communicator is revoked. The recipe is the
//! agreement crate's sans-IO state machine
//! ([`steadfast_agreement::control::intercomm`]), which the simulator runs with crashes
//! at every stage; this module performs its steps with blocking point-to-point calls
//! and agreements.

use std::collections::VecDeque;
use std::sync::Arc;

pub use steadfast_agreement::control::intercomm::Stage;
use steadfast_agreement::control::intercomm::{IntercommCreate, PairMsg, Step, Waiting};
use steadfast_agreement::{CommId, CommKey};

use super::{Comm, CommError, Status};

/// An inter-communicator (see the module doc).
#[derive(Debug, Clone)]
pub struct InterComm {
    union: Comm,
    local_size: u32,
    remote_size: u32,
    /// Union index of remote rank 0.
    remote_offset: u32,
    /// Union index of local rank 0.
    local_offset: u32,
    low_side: bool,
}

fn encode_group(g: &[u32]) -> Vec<u8> {
    super::words::to_bytes(g)
}

fn decode_group(b: &[u8], world_size: u32) -> Option<Vec<u32>> {
    let g = super::words::from_bytes(b)?;
    (!g.is_empty() && g.iter().all(|&r| r < world_size)).then_some(g)
}

/// The state machine asked for nothing this driver can give (a broken invariant of
/// the agreement crate; reported, not a panic).
fn stalled() -> CommError {
    CommError::InvalidArgument("inter-communicator creation stalled".into())
}

const PAIR_VALUE: u8 = 1;
const PAIR_ACK: u8 = 2;

impl Comm {
    fn world_group(&self) -> Vec<u32> {
        self.group().to_vec()
    }

    /// Creates an inter-communicator with the group whose leader is `remote_leader` of
    /// `bridge`, uniformly: every surviving process of both groups gets the same
    /// outcome (see the module doc). `local_leader` is a rank of this communicator that
    /// is also in `bridge`; `tag` distinguishes concurrent creations.
    ///
    /// # Errors
    /// [`CommError::ProcFailed`] when the creation failed somewhere (a failure during
    /// it, on either side); `InvalidArgument`; `Excluded`.
    pub fn intercomm_create_uniform(
        &self,
        local_leader: u32,
        bridge: &Comm,
        remote_leader: u32,
        tag: u32,
    ) -> Result<InterComm, CommError> {
        self.intercomm_create_observed(local_leader, bridge, remote_leader, tag, &mut |_| {})
    }

    /// As [`intercomm_create_uniform`](Self::intercomm_create_uniform), calling
    /// `observe` at each [`Stage`].
    ///
    /// # Errors
    /// As [`intercomm_create_uniform`](Self::intercomm_create_uniform).
    pub fn intercomm_create_observed(
        &self,
        local_leader: u32,
        bridge: &Comm,
        remote_leader: u32,
        tag: u32,
        observe: &mut dyn FnMut(Stage),
    ) -> Result<InterComm, CommError> {
        let me = self.rank();
        if remote_leader >= bridge.size() {
            return Err(CommError::InvalidArgument(
                "leader outside its communicator".into(),
            ));
        }
        let Some(mut ic) = IntercommCreate::new(self.world_group(), me, local_leader) else {
            return Err(CommError::InvalidArgument(
                "leader outside its communicator".into(),
            ));
        };
        let world_size = self.engine.lock().size();
        let mut steps = VecDeque::new();
        let mut more = Vec::new();
        let mut inter: Option<InterComm> = None;
        ic.start(&mut more);
        loop {
            steps.extend(more.drain(..));
            while let Some(step) = steps.pop_front() {
                match step {
                    Step::Observe(stage) => observe(stage),
                    Step::ExchangeGroups(mine) => {
                        let remote = self.exchange_groups(bridge, remote_leader, tag, &mine);
                        ic.on_remote_group(
                            remote.and_then(|b| decode_group(&b, world_size)),
                            &mut more,
                        );
                    }
                    Step::HandOut { to, group } => {
                        let out = group.as_deref().map(encode_group).unwrap_or_default();
                        // A member that cannot be told fails the first agreement anyway.
                        let _ = self.send(to, tag, &out);
                    }
                    Step::AgreeLocal(value) => {
                        let a = self.agree_full(value)?;
                        ic.on_local_decision(a.value, a.all_acked, &mut more);
                    }
                    Step::SendPair(msg) => {
                        let b = match msg {
                            PairMsg::Value(v) => [PAIR_VALUE, v as u8],
                            PairMsg::Ack => [PAIR_ACK, 0],
                        };
                        // A failed send shows as the receive's failure.
                        let _ = bridge.send(remote_leader, tag, &b);
                    }
                    Step::AgreeUnion {
                        union,
                        low_side,
                        value,
                    } => {
                        let built = self.build_inter(self.size(), union, low_side, tag)?;
                        if value == 0 {
                            // Say no to the other side without waiting for it.
                            self.engine.lock().start_agreement(built.union.id, 0);
                        } else {
                            let a = built.union.agree_full(1)?;
                            ic.on_union_decision(a.value, a.all_acked, &mut more);
                        }
                        inter = Some(built);
                    }
                    Step::RevokeUnion => {
                        if let Some(inter) = &inter {
                            inter.union.revoke();
                        }
                    }
                    Step::Done(Some(_)) => {
                        let inter = inter.take().ok_or_else(stalled)?;
                        // Every survivor of both sides sealed it, so all of them get
                        // here. The two groups share no communicator to reduce over:
                        // the union agrees on its context through its own agreements
                        // (`context.rs`), keyed by its id (the same at every member of
                        // both groups).
                        super::context::set_agreed_context(&inter.union, inter.union.id.0)?;
                        observe(Stage::Done);
                        return Ok(inter);
                    }
                    Step::Done(None) => {
                        observe(Stage::Done);
                        return Err(self.creation_failed());
                    }
                }
                steps.extend(more.drain(..));
            }
            match ic.waiting() {
                Waiting::RemoteGroup => {
                    // A member: the leader hands the remote group out.
                    let mut buf = vec![0u8; 4 * world_size as usize];
                    let got = self
                        .recv(Some(local_leader), Some(tag), &mut buf)
                        .ok()
                        .and_then(|st| decode_group(&buf[..st.len], world_size));
                    ic.on_remote_group(got, &mut more);
                }
                Waiting::PairMessage => {
                    let mut b = [0u8; 2];
                    match bridge.recv(Some(remote_leader), Some(tag), &mut b) {
                        Ok(st) if st.len == 2 && b[0] == PAIR_VALUE && b[1] <= 1 => {
                            ic.on_pair_message(PairMsg::Value(b[1] == 1), &mut more)
                        }
                        Ok(st) if st.len == 2 && b[0] == PAIR_ACK => {
                            ic.on_pair_message(PairMsg::Ack, &mut more)
                        }
                        Ok(_) => {
                            return Err(CommError::InvalidArgument("malformed pair message".into()))
                        }
                        Err(CommError::Excluded) => return Err(CommError::Excluded),
                        // The remote leader failed, or the bridge was revoked: decide
                        // without it.
                        Err(_) => ic.on_pair_failure(&mut more),
                    }
                }
                // Agreements are performed where they are asked for, and the machine
                // ends with `Done`, so nothing else can be awaited here.
                Waiting::LocalDecision | Waiting::UnionDecision | Waiting::Nothing => {
                    return Err(stalled())
                }
            }
        }
    }

    fn creation_failed(&self) -> CommError {
        CommError::ProcFailed {
            ranks: self.failed_ranks(),
        }
    }

    /// A leader's half of the exchange of groups with the remote leader over `bridge`:
    /// the remote group's bytes, or `None` when the remote leader could not be reached.
    fn exchange_groups(
        &self,
        bridge: &Comm,
        remote_leader: u32,
        tag: u32,
        mine: &[u32],
    ) -> Option<Vec<u8>> {
        let world_size = self.engine.lock().size();
        let bytes = encode_group(mine);
        let mut buf = vec![0u8; 4 * world_size as usize];
        let my_world = mine[self.rank() as usize];
        let peer_world = bridge.world_rank(remote_leader).unwrap_or(u32::MAX);
        // The lower world rank sends first, so two blocking leaders never wait on each
        // other.
        let got = if my_world < peer_world {
            bridge
                .send(remote_leader, tag, &bytes)
                .and_then(|_| bridge.recv(Some(remote_leader), Some(tag), &mut buf))
        } else {
            bridge
                .recv(Some(remote_leader), Some(tag), &mut buf)
                .and_then(|st| bridge.send(remote_leader, tag, &bytes).map(|_| st))
        };
        got.ok().map(|st| buf[..st.len].to_vec())
    }

    /// Registers the union communicator (`union`: lower side first; this side holds
    /// `local_len` of its ranks).
    fn build_inter(
        &self,
        local_len: u32,
        union: Vec<u32>,
        low_side: bool,
        tag: u32,
    ) -> Result<InterComm, CommError> {
        let remote_len = union.len() as u32 - local_len;
        let mut words = encode_group(&union);
        words.extend_from_slice(&tag.to_le_bytes());
        let mut e = self.engine.lock();
        let n = e.next_intercomm(steadfast_os::fnv1a64(&words));
        words.extend_from_slice(&n.to_le_bytes());
        let id = CommId(steadfast_os::fnv1a64(&words).max(2));
        let key = CommKey {
            comm: id,
            epoch: Default::default(),
        };
        if e.has_comm(id) {
            return Err(CommError::InvalidArgument(format!(
                "inter-communicator id {:#x} (tag {tag}) already in use",
                id.0
            )));
        }
        e.add_comm(key, super::context::UNAGREED, union)
            .ok_or(CommError::Excluded)?;
        let facts = e.facts(id);
        drop(e);
        let (local_offset, remote_offset) = if low_side {
            (0, local_len)
        } else {
            (remote_len, 0)
        };
        Ok(InterComm {
            union: Comm::new(Arc::clone(&self.engine), facts),
            local_size: local_len,
            remote_size: remote_len,
            remote_offset,
            local_offset,
            low_side,
        })
    }
}

impl InterComm {
    /// Frees the inter-communicator (`MPI_Comm_free`): collective over both groups, as
    /// [`Comm::free`] on the union underneath.
    ///
    /// # Errors
    /// As [`Comm::free`].
    pub fn free(self) -> Result<(), CommError> {
        self.union.free()
    }

    /// The communicator over both groups underneath, on which this inter-communicator's
    /// messages travel: rank `r` of the remote group is its rank
    /// [`remote_offset`](Self::remote_offset)` + r`, rank `r` of this group
    /// [`local_offset`](Self::local_offset)` + r`. A layer that builds its own
    /// operations on the inter-communicator (the C library's non-blocking calls, probes
    /// and collectives) uses it with those offsets; a message it sends to a member of
    /// this process's own group is one this inter-communicator could never carry, so
    /// it should not.
    ///
    /// ```no_run
    /// # fn show(ic: &steadfast::comm::InterComm) -> Result<(), steadfast::CommError> {
    /// // The same as `ic.send(0, 7, b"hi")`.
    /// ic.union().send(ic.remote_offset(), 7, b"hi")?;
    /// # Ok(()) }
    /// ```
    pub fn union(&self) -> &Comm {
        &self.union
    }

    /// The rank in [`union`](Self::union) of rank 0 of the remote group.
    pub fn remote_offset(&self) -> u32 {
        self.remote_offset
    }

    /// The rank in [`union`](Self::union) of rank 0 of this process's group.
    pub fn local_offset(&self) -> u32 {
        self.local_offset
    }

    /// A new inter-communicator with the same groups and a context of its own
    /// (`MPI_Comm_dup` on an inter-communicator): collective over both groups, as
    /// [`Comm::dup`] over the union underneath.
    ///
    /// # Errors
    /// As [`Comm::dup`].
    pub fn dup(&self) -> Result<InterComm, CommError> {
        Ok(self.over(self.union.dup()?))
    }

    /// As [`dup`](Self::dup), made as [`Comm::twin`]: neither a revoke of this
    /// inter-communicator nor a failure interrupts it, so every member of both groups
    /// that calls it gets it (the C library pairs each inter-communicator with one for
    /// its collectives so).
    ///
    /// # Errors
    /// As [`Comm::twin`].
    pub fn twin(&self) -> Result<InterComm, CommError> {
        Ok(self.over(self.union.twin()?))
    }

    /// The survivors of both groups (`MPIX_Comm_shrink` on an inter-communicator): the
    /// union underneath shrunk as [`Comm::shrink`] (every survivor of both groups gets
    /// the same members, in the same order), each group keeping its own survivors in
    /// order. Works on a revoked inter-communicator.
    ///
    /// # Errors
    /// `ProcFailed` when every member of one group failed (no inter-communicator is
    /// left: the survivors, all of one group, get this error alike); `Excluded`.
    pub fn shrink(&self) -> Result<InterComm, CommError> {
        let old = self.union.group().to_vec();
        let union = self.union.shrink()?;
        // The union lists the lower side first; so does the shrunk one.
        let (low_from, low_len) = if self.low_side {
            (self.local_offset, self.local_size)
        } else {
            (self.remote_offset, self.remote_size)
        };
        let low = &old[low_from as usize..(low_from + low_len) as usize];
        let n = union.group().len() as u32;
        let n_low = union.group().iter().filter(|w| low.contains(w)).count() as u32;
        let (local_size, remote_size) = if self.low_side {
            (n_low, n - n_low)
        } else {
            (n - n_low, n_low)
        };
        if local_size == 0 || remote_size == 0 {
            let ranks = (0..old.len() as u32)
                .filter(|&i| !union.group().contains(&old[i as usize]))
                .collect();
            return Err(CommError::ProcFailed { ranks });
        }
        let (local_offset, remote_offset) = if self.low_side {
            (0, n_low)
        } else {
            (n_low, 0)
        };
        Ok(InterComm {
            union,
            local_size,
            remote_size,
            remote_offset,
            local_offset,
            low_side: self.low_side,
        })
    }

    /// This inter-communicator's groups over another communicator of the same union.
    /// This inter-communicator's shape over another union of the same groups.
    pub(super) fn with_union(&self, union: Comm) -> InterComm {
        self.over(union)
    }

    fn over(&self, union: Comm) -> InterComm {
        InterComm {
            union,
            local_size: self.local_size,
            remote_size: self.remote_size,
            remote_offset: self.remote_offset,
            local_offset: self.local_offset,
            low_side: self.low_side,
        }
    }

    /// Whether this group comes first in the union (it holds the smaller world rank).
    pub(super) fn is_low_side(&self) -> bool {
        self.low_side
    }

    /// This process's rank in its own group.
    pub fn rank(&self) -> u32 {
        self.union.rank() - self.local_offset
    }

    /// Size of this process's group.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// Size of the remote group.
    pub fn remote_size(&self) -> u32 {
        self.remote_size
    }

    /// Sends to rank `dest` of the remote group.
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn send(&self, dest: u32, tag: u32, data: &[u8]) -> Result<(), CommError> {
        if dest >= self.remote_size {
            return Err(CommError::InvalidArgument(format!(
                "destination {dest} outside a remote group of {}",
                self.remote_size
            )));
        }
        self.union.send(self.remote_offset + dest, tag, data)
    }

    /// Receives from rank `source` of the remote group (any if `None`); the status
    /// names the remote rank.
    ///
    /// # Errors
    /// As [`Comm::recv`].
    pub fn recv(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
        buf: &mut [u8],
    ) -> Result<Status, CommError> {
        if source.is_some_and(|s| s >= self.remote_size) {
            return Err(CommError::InvalidArgument(
                "source outside the remote group".into(),
            ));
        }
        let st = self
            .union
            .recv(source.map(|s| self.remote_offset + s), tag, buf)?;
        Ok(Status {
            source: st.source - self.remote_offset,
            ..st
        })
    }

    /// Waits until every process of both groups has called it (`MPI_Barrier` on an
    /// inter-communicator): a barrier over the union of the groups, which gives up with
    /// `ProcFailed` once a member of either group is known failed (as
    /// [`Comm::barrier`]). Its messages carry the runtime's collective tag on the union:
    /// a wildcard-tag receive on this inter-communicator running at the same time could
    /// take one.
    ///
    /// # Errors
    /// `ProcFailed`, `Revoked`, `Excluded`.
    pub fn barrier(&self) -> Result<(), CommError> {
        self.union.barrier()
    }

    /// Agrees over both groups: returns the AND of the remote group's `flag`s (32
    /// bits), the same at every survivor of this group.
    ///
    /// # Errors
    /// `ProcFailed` (union ranks) when a failure was not acknowledged by every
    /// contributor; `Excluded`.
    pub fn agree(&self, flag: u32) -> Result<u32, CommError> {
        let value = if self.low_side {
            0xffff_ffff_0000_0000 | flag as u64
        } else {
            ((flag as u64) << 32) | 0xffff_ffff
        };
        let a = self.union.agree_full(value)?;
        if !a.all_acked {
            return Err(CommError::ProcFailed { ranks: a.failed });
        }
        Ok(if self.low_side {
            (a.value >> 32) as u32
        } else {
            a.value as u32
        })
    }

    /// Revokes the inter-communicator on both sides; never waits for another thread
    /// (as [`Comm::revoke`]).
    pub fn revoke(&self) {
        self.union.revoke();
    }

    /// Whether it is revoked here.
    pub fn is_revoked(&self) -> bool {
        self.union.is_revoked()
    }

    /// Acknowledges the failures known now (union ranks); how many are acknowledged
    /// (as [`Comm::ack_failed`]).
    pub fn ack_failed(&self) -> usize {
        self.union.ack_failed()
    }

    /// Acknowledges the failures known now, without the count; never waits for
    /// another thread (as [`Comm::failure_ack`]).
    pub fn failure_ack(&self) {
        self.union.failure_ack();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A group from a peer: never a panic; accepted only when whole and in range,
        /// and then exactly the ranks sent.
        #[test]
        fn groups_from_peers_are_checked(b in proptest::collection::vec(any::<u8>(), 0..64), size in 1u32..100) {
            if let Some(g) = decode_group(&b, size) {
                prop_assert!(!g.is_empty() && g.iter().all(|&r| r < size));
                prop_assert_eq!(encode_group(&g), b);
            }
        }
    }
}
