//! `MPI_Comm_create_group`: a communicator over a subgroup of a parent, created by the
//! subgroup's members alone (MPI 4.1, section 7.4.2); the parent's other members take
//! no part and may be doing anything else.
//!
//! The parent's creation counter (`next_child`, which `dup` and `split` use) cannot
//! number it, since only some members would count it. The id is derived instead from
//! the parent, the members (in the new order) and the tag, plus an attempt number: the
//! lowest one above every attempt this process used on the parent whose id is not in
//! use here, the largest among the members (one pairwise exchange among them), so a
//! repeated creation with the same group and tag gets a new id, whether the earlier one
//! lives or was freed (ids are never reused: the control plane drops the late messages
//! of a removed communicator, and would drop a new one's under the same id). The context is agreed among the members only
//! (`context::Over::Keyed`). Every exchange is point to point between members, naming
//! its source, so the parent's other traffic never mixes in, and carries the creation's
//! key (`keyed.rs`: a hash of the members and the tag), so creations with different
//! tags may run at once on one parent from several threads (MPI 4.1, 7.4.2), each
//! exchange taking only its own messages.

use std::sync::Arc;

use steadfast_agreement::CommKey;

use super::{context, derive, Comm, CommError};

/// The `derive` kind of these communicators (dup 1, shrink 3, split 5).
const KIND: u8 = 7;
/// The step of the attempt exchange in the creation's key (the context rounds are
/// `context::KEYED_PROPOSAL`).
const ATTEMPT_STEP: u64 = 0;
/// Live communicators from earlier creations with the same group and tag that one
/// creation steps over at most.
const MAX_ATTEMPTS: u64 = 1 << 16;

/// Checks the members (comm ranks of a parent of `n`, in the new order, distinct, with
/// `me`); `me`'s position.
fn check_members(members: &[u32], n: u32, me: u32) -> Result<u32, CommError> {
    let mut seen = vec![false; n as usize];
    for &r in members {
        let slot = seen.get_mut(r as usize).ok_or_else(|| {
            CommError::InvalidArgument(format!("member {r} outside a communicator of {n}"))
        })?;
        if std::mem::replace(slot, true) {
            return Err(CommError::InvalidArgument(format!(
                "member {r} named twice"
            )));
        }
    }
    members
        .iter()
        .position(|&r| r == me)
        .map(|p| p as u32)
        .ok_or_else(|| {
            CommError::InvalidArgument(
                "only the group's members call create_group, and this rank is not one".into(),
            )
        })
}

impl Comm {
    /// Creates a communicator over `members` (ranks of this communicator, in the new
    /// communicator's order), called by the members only (`MPI_Comm_create_group`);
    /// `tag` tells apart creations that may run at the same time on one parent.
    ///
    /// # Errors
    /// [`CommError::InvalidArgument`] for a bad member list or tag, or when this rank is
    /// not a member; [`CommError::ProcFailed`] when a member has failed;
    /// [`CommError::Revoked`]; [`CommError::ContextsExhausted`]; `Excluded`.
    pub fn create_group(&self, members: &[u32], tag: u32) -> Result<Comm, CommError> {
        Self::check_tag(tag)?;
        check_members(members, self.size(), self.rank())?;
        let (parent_key, parent_ctx, group, floor) = self.with(|c| {
            let g = members.iter().map(|&r| c.group()[r as usize]).collect();
            (c.key(), c.context(), g, c.group_attempt_floor())
        });
        let mut words = super::words::to_bytes(members);
        words.extend_from_slice(&tag.to_le_bytes());
        let salt = steadfast_os::fnv1a64(&words);
        let id_of = |attempt: u64| derive(parent_key, KIND, salt.wrapping_add(attempt));
        let free_here = {
            let e = self.engine.lock();
            (floor..floor.saturating_add(MAX_ATTEMPTS)).find(|&k| !e.has_comm(id_of(k)))
        };
        let mine = free_here.ok_or_else(|| {
            CommError::InvalidArgument(
                "too many live communicators from create_group with this group and tag".into(),
            )
        })?;
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        let mut attempt = mine;
        self.exchange_keyed(
            &sorted,
            (salt, ATTEMPT_STEP),
            &mine.to_le_bytes(),
            "create_group: an attempt message that is not 8 bytes",
            |_, b| attempt = attempt.max(u64::from_le_bytes(b.try_into().expect("8 bytes"))),
        )?;
        let id = id_of(attempt);
        let in_use = {
            let mut e = self.engine.lock();
            e.comm_mut(self.id).group_attempt_used(attempt);
            e.has_comm(id)
        };
        if in_use {
            return Err(CommError::InvalidArgument(format!(
                "create_group: communicator id {:#x} is in use here but not at another member",
                id.0
            )));
        }
        // Numbered apart from dup/split (whose creation numbers count from 0).
        let op = context::op_key(parent_ctx, (1 << 31) | (id.0 & 0x7fff_ffff));
        let ctx = context::agree_context(context::Over::Keyed(self, &sorted, salt), op)?;
        let key = CommKey {
            comm: id,
            epoch: Default::default(),
        };
        let mut e = self.engine.lock();
        if e.add_comm(key, ctx, group).is_none() {
            let _ = e.contexts_mut().release((ctx as u32).into());
            return Err(CommError::Excluded);
        }
        let facts = e.facts(id);
        drop(e);
        Ok(Comm::new(Arc::clone(&self.engine), facts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_checked() {
        assert_eq!(check_members(&[3, 1], 4, 1), Ok(1));
        assert!(check_members(&[3, 1], 4, 0).is_err(), "not a member");
        assert!(check_members(&[3, 3], 4, 3).is_err(), "named twice");
        assert!(check_members(&[4], 4, 0).is_err(), "out of range");
    }
}
