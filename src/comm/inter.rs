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
//! the same outcome; on failure the union communicator is revoked.

use std::sync::Arc;

use steadfast_agreement::pair::{PairAction, PairAgreement};
use steadfast_agreement::{CommId, CommKey, Rank};

use super::{Comm, CommError, Status};

/// The points of a uniform creation, reported to an observer (for instrumentation and
/// failure-injection tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Entering the creation.
    Start,
    /// The groups were exchanged and handed out.
    Exchanged,
    /// The first local agreement decided.
    FirstLocalAgreement,
    /// This leader sent its flag to the remote leader (leaders only).
    LeaderFlagSent,
    /// The leaders' two-party agreement decided (leaders only).
    LeaderPair,
    /// The second local agreement decided.
    SecondLocalAgreement,
    /// The union agreement decided: the creation returns.
    Done,
}

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
    g.iter().flat_map(|r| r.to_le_bytes()).collect()
}

fn decode_group(b: &[u8], world_size: u32) -> Option<Vec<u32>> {
    if b.is_empty() || b.len() % 4 != 0 {
        return None;
    }
    let g: Vec<u32> = b
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    g.iter().all(|&r| r < world_size).then_some(g)
}

const PAIR_VALUE: u8 = 1;
const PAIR_ACK: u8 = 2;

impl Comm {
    fn world_group(&self) -> Vec<u32> {
        self.with(|c| c.group().to_vec())
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
        observe(Stage::Start);
        let me = self.rank();
        let n = self.size();
        if local_leader >= n || remote_leader >= bridge.size() {
            return Err(CommError::InvalidArgument(
                "leader outside its communicator".into(),
            ));
        }
        let world_size = self.engine.lock().size();
        let leader = me == local_leader;
        let local_group = self.world_group();
        // 1. Create: the leaders swap groups; each hands the remote group out.
        let remote_group: Option<Vec<u32>> = if leader {
            let mine = encode_group(&local_group);
            let mut buf = vec![0u8; 4 * world_size as usize];
            let my_world = local_group[me as usize];
            let peer_world = bridge.world_rank(remote_leader).unwrap_or(u32::MAX);
            let got = if my_world < peer_world {
                bridge
                    .send(remote_leader, tag, &mine)
                    .and_then(|_| bridge.recv(Some(remote_leader), Some(tag), &mut buf))
            } else {
                bridge
                    .recv(Some(remote_leader), Some(tag), &mut buf)
                    .and_then(|st| bridge.send(remote_leader, tag, &mine).map(|_| st))
            };
            let remote = got
                .ok()
                .and_then(|st| decode_group(&buf[..st.len], world_size));
            let remote = remote.filter(|g| g.iter().all(|r| !local_group.contains(r)));
            let out = remote.as_deref().map(encode_group).unwrap_or_default();
            for r in (0..n).filter(|&r| r != me) {
                // A member that cannot be told fails the first agreement anyway.
                let _ = self.send(r, tag, &out);
            }
            remote
        } else {
            let mut buf = vec![0u8; 4 * world_size as usize];
            self.recv(Some(local_leader), Some(tag), &mut buf)
                .ok()
                .and_then(|st| decode_group(&buf[..st.len], world_size))
        };
        observe(Stage::Exchanged);
        // 2. First local agreement: does every member know the remote group?
        let a1 = self.agree_full(remote_group.is_some() as u64)?;
        let d1 = a1.all_acked && a1.value == 1;
        observe(Stage::FirstLocalAgreement);
        // 3. The leaders' two-party agreement over the bridge.
        let flag2 = if leader {
            self.leader_pair(bridge, remote_leader, tag, d1, observe)?
        } else {
            d1
        };
        if leader {
            observe(Stage::LeaderPair);
        }
        // 4. Second local agreement: the pair's outcome to every member.
        let a2 = self.agree_full(flag2 as u64)?;
        let d2 = a2.all_acked && a2.value == 1;
        observe(Stage::SecondLocalAgreement);
        // 5. One agreement over the union seals the outcome on both sides.
        let Some(remote_group) = remote_group else {
            return Err(self.creation_failed());
        };
        let inter = self.build_inter(&local_group, &remote_group, tag)?;
        if !d2 {
            // Say no to the other side without waiting for it, then revoke.
            let mut e = self.engine.lock();
            e.start_agreement(inter.union.id, 0);
            drop(e);
            inter.union.revoke();
            return Err(self.creation_failed());
        }
        let a = inter.union.agree_full(1)?;
        if a.all_acked && a.value == 1 {
            // Every survivor of both sides sealed it, so all of them get here. The two
            // groups share no communicator to reduce over: the union agrees on its
            // context through its own agreements (`context.rs`), keyed by its id (the
            // same at every member of both groups).
            super::context::set_agreed_context(&inter.union, inter.union.id.0)?;
            observe(Stage::Done);
            Ok(inter)
        } else {
            observe(Stage::Done);
            inter.union.revoke();
            Err(self.creation_failed())
        }
    }

    fn creation_failed(&self) -> CommError {
        CommError::ProcFailed {
            ranks: self.failed_ranks(),
        }
    }

    /// Drives the two-party agreement with the remote leader over `bridge`.
    fn leader_pair(
        &self,
        bridge: &Comm,
        remote_leader: u32,
        tag: u32,
        flag: bool,
        observe: &mut dyn FnMut(Stage),
    ) -> Result<bool, CommError> {
        let mut pair = PairAgreement::new(Rank(remote_leader));
        let mut out = Vec::new();
        pair.start(flag, &mut out);
        let mut sent_flag = false;
        loop {
            for a in out.drain(..) {
                let msg = match a {
                    PairAction::SendValue(v) => [PAIR_VALUE, v as u8],
                    PairAction::SendAck => [PAIR_ACK, 0],
                    PairAction::Decided { value, .. } => return Ok(value),
                };
                // A failed send shows as the receive's failure below.
                let _ = bridge.send(remote_leader, tag, &msg);
                if msg[0] == PAIR_VALUE && !sent_flag {
                    sent_flag = true;
                    observe(Stage::LeaderFlagSent);
                }
            }
            if let Some(v) = pair.decided() {
                return Ok(v);
            }
            let mut b = [0u8; 2];
            match bridge.recv(Some(remote_leader), Some(tag), &mut b) {
                Ok(st) if st.len == 2 && b[0] == PAIR_VALUE && b[1] <= 1 => {
                    pair.on_value(Rank(remote_leader), b[1] == 1, &mut out)
                }
                Ok(st) if st.len == 2 && b[0] == PAIR_ACK => {
                    pair.on_ack(Rank(remote_leader), &mut out)
                }
                Ok(_) => return Err(CommError::InvalidArgument("malformed pair message".into())),
                Err(CommError::Excluded) => return Err(CommError::Excluded),
                // The remote leader failed, or the bridge was revoked: decide without it.
                Err(_) => pair.on_failure(Rank(remote_leader), &mut out),
            }
        }
    }

    fn build_inter(&self, local: &[u32], remote: &[u32], tag: u32) -> Result<InterComm, CommError> {
        let low_side = local.iter().min() < remote.iter().min();
        let (first, second) = if low_side {
            (local, remote)
        } else {
            (remote, local)
        };
        let union: Vec<u32> = first.iter().chain(second).copied().collect();
        let mut words = encode_group(&union);
        words.extend_from_slice(&tag.to_le_bytes());
        let id = CommId(steadfast_os::fnv1a64(&words).max(2));
        let key = CommKey {
            comm: id,
            epoch: Default::default(),
        };
        let mut e = self.engine.lock();
        if e.has_comm(id) {
            return Err(CommError::InvalidArgument(format!(
                "an inter-communicator of these groups with tag {tag} already exists"
            )));
        }
        e.add_comm(key, super::context::UNAGREED, union)
            .ok_or(CommError::Excluded)?;
        drop(e);
        let (local_offset, remote_offset) = if low_side {
            (0, local.len() as u32)
        } else {
            (remote.len() as u32, 0)
        };
        Ok(InterComm {
            union: Comm::new(Arc::clone(&self.engine), id),
            local_size: local.len() as u32,
            remote_size: remote.len() as u32,
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

    /// The communicator over both groups underneath (read-only use: `merge.rs`).
    pub(super) fn union_comm(&self) -> &Comm {
        &self.union
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

    /// Revokes the inter-communicator on both sides.
    pub fn revoke(&self) {
        self.union.revoke();
    }

    /// Whether it is revoked here.
    pub fn is_revoked(&self) -> bool {
        self.union.is_revoked()
    }

    /// Acknowledges the failures known now (union ranks).
    pub fn ack_failed(&self) -> usize {
        self.union.ack_failed()
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
