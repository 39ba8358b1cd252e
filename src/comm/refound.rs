//! Re-founding a saved communicator that has no survivor (`docs/restart.md`, "A
//! communicator with no survivor"): every member died (a group aborted with
//! [`Comm::abort`], or all killed together), so no live member can
//! [`readmit`](Comm::readmit) the restarted ones, which `World::rejoin` waits for.
//!
//! Each restarted process that rejoins announces, in its own store keys, that it
//! waits to rejoin the communicator (`sf.rejoin.<id>` = waiting and its incarnation),
//! and once it is a member again says so (member). The keys are its incarnation's: the
//! launcher drops them when the rank is restarted again. While it polls for the new
//! epoch, a waiting process checks every other member:
//!
//! - dead here: skipped, unless its key names a later incarnation than this process
//!   knows of (it joined and is not admitted here yet, or died and the launcher's word
//!   of it has not arrived): then nothing is decided this round;
//! - alive with no key, or a member: a survivor (or a restarted process that has not
//!   called `rejoin` yet): keep waiting for its readmission;
//! - alive and waiting: a restarted member like this one.
//!
//! When every live member is waiting and this process has the lowest comm rank among
//! them, it re-founds: it registers the communicator at a new epoch (one past every
//! epoch a member saved) with itself as the only live member (the others at the
//! incarnations of its record, so failed in it), stores it as its saved record, says it
//! is a member, and readmits the waiting ones ([`Comm::readmit`] alone: it publishes
//! the next epoch for each, as any survivor does). From then on it is a survivor: a
//! member restarted later comes back through its (the application's) `readmit`.
//!
//! Two processes never both re-found: a waiting one defers to a live waiting one of a
//! lower comm rank, and one that sees a dead member whose key names an unknown
//! incarnation waits until it has admitted that incarnation or learnt of its death.

use super::rejoin::{saved_key, Saved};
use super::{Comm, CommError};
use crate::bootstrap::BootstrapError;
use crate::world::World;

/// What a restarted process's `sf.rejoin.<id>` key says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RejoinState {
    /// It waits in `World::rejoin` for the survivors' readmission.
    Waiting,
    /// It is a member again (rejoined or re-founded).
    Member,
}

impl RejoinState {
    fn code(self) -> u32 {
        match self {
            RejoinState::Waiting => 1,
            RejoinState::Member => 2,
        }
    }
}

/// The store key of a restarted process's rejoin state for communicator `id`.
fn rejoin_key(id: u64) -> String {
    format!("sf.rejoin.{id:016x}")
}

/// `[state, incarnation]`, little-endian u32 each.
fn encode(state: RejoinState, generation: u32) -> Vec<u8> {
    [state.code().to_le_bytes(), generation.to_le_bytes()].concat()
}

/// The state and incarnation of a key's value; `None` for anything else.
fn decode(b: &[u8]) -> Option<(RejoinState, u32)> {
    let word = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    if b.len() != 8 {
        return None;
    }
    let state = match word(0)? {
        1 => RejoinState::Waiting,
        2 => RejoinState::Member,
        _ => return None,
    };
    Some((state, word(4)?))
}

/// What a waiting process makes of another member (see the module doc).
#[derive(Debug, PartialEq, Eq)]
enum Member {
    /// Dead here, for good as far as this process knows.
    Dead,
    /// Dead here, but its key names an incarnation not known here yet.
    Unsettled,
    /// Alive and not waiting: it readmits.
    Survivor,
    /// Alive and waiting to rejoin.
    Waiting,
}

/// Classifies a member: `failed` here, `known` its incarnation here, `key` its rejoin
/// key's value.
fn classify(failed: bool, known: u32, key: Option<&[u8]>) -> Member {
    let state = key.and_then(decode);
    match (failed, state) {
        (true, Some((_, g))) if g > known => Member::Unsettled,
        (true, _) => Member::Dead,
        (false, Some((RejoinState::Waiting, _))) => Member::Waiting,
        (false, _) => Member::Survivor,
    }
}

/// Whether the process of comm rank `me` re-founds, given every other member's
/// (comm rank, class).
fn decide(me: usize, others: &[(usize, Member)]) -> bool {
    others.iter().all(|(r, m)| match m {
        Member::Dead => true,
        Member::Waiting => *r > me,
        Member::Unsettled | Member::Survivor => false,
    })
}

impl World {
    /// Stores this incarnation's rejoin state for communicator `id`.
    pub(super) fn announce(&self, id: u64, state: RejoinState) -> Result<(), BootstrapError> {
        let value = encode(state, self.generation());
        self.shared().lock().boot_mut().put(&rejoin_key(id), &value)
    }

    /// Whether this waiting process re-founds the communicator of `saved` now (see the
    /// module doc).
    pub(super) fn founds(&self, saved: &Saved) -> Result<bool, BootstrapError> {
        let me = self.rank();
        let Some(my_rank) = saved.group.iter().position(|&w| w == me) else {
            return Ok(false);
        };
        let key = rejoin_key(saved.id);
        let mut e = self.shared().lock();
        let mut others = Vec::with_capacity(saved.group.len());
        for (r, &w) in saved.group.iter().enumerate() {
            if w == me {
                continue;
            }
            let (failed, known) = (e.is_failed(w), e.generation_of(w));
            let value = e.boot_mut().lookup(w, &key)?;
            let class = classify(failed, known, value.as_deref());
            if matches!(class, Member::Survivor | Member::Unsettled) {
                return Ok(false);
            }
            others.push((r, class));
        }
        Ok(decide(my_rank, &others))
    }

    /// Re-founds the communicator of `saved`, registered nowhere alive (see the module
    /// doc), and readmits the members waiting for it.
    pub(super) fn refound(&self, name: &str, saved: &Saved) -> Result<Comm, CommError> {
        let me = self.rank();
        // One past every epoch a member saved (the survivors' epochs went no further
        // than the records their readmitted members stored).
        let mut epoch = saved.epoch;
        {
            let mut e = self.shared().lock();
            for &w in &saved.group {
                let record = e.boot_mut().lookup(w, &saved_key(name)).map_err(|err| {
                    CommError::Launcher(format!("re-founding communicator {name:?}: {err}"))
                })?;
                if let Some(s) = record.and_then(|b| Saved::decode(&b).ok()) {
                    if s.id == saved.id {
                        epoch = epoch.max(s.epoch);
                    }
                }
            }
        }
        let mut record = saved.clone();
        record.epoch = epoch.wrapping_add(1);
        if let Some(r) = record.group.iter().position(|&w| w == me) {
            record.incarnations[r] = self.generation();
        }
        let comm = self.register(name, &record)?;
        log::info!(
            "re-founded communicator {name:?} ({:#x}) at epoch {}: no member survived",
            record.id,
            record.epoch
        );
        match comm.readmit() {
            Ok(back) if !back.is_empty() => {
                log::debug!("re-founded communicator {name:?} readmitted comm ranks {back:?}");
            }
            Ok(_) => {}
            Err(err) => {
                log::warn!(
                    "re-founded communicator {name:?}: readmitting the waiting members: {err}"
                );
            }
        }
        Ok(comm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_anything_else_is_no_state() {
        assert_eq!(
            decode(&encode(RejoinState::Waiting, 3)),
            Some((RejoinState::Waiting, 3))
        );
        assert_eq!(
            decode(&encode(RejoinState::Member, 0)),
            Some((RejoinState::Member, 0))
        );
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[1, 0, 0, 0]), None);
        assert_eq!(decode(&[9, 0, 0, 0, 1, 0, 0, 0]), None);
    }

    #[test]
    fn members_are_classified_by_liveness_key_and_incarnation() {
        let waiting = encode(RejoinState::Waiting, 2);
        let member = encode(RejoinState::Member, 2);
        assert_eq!(classify(true, 1, None), Member::Dead);
        assert_eq!(classify(true, 2, Some(&waiting)), Member::Dead);
        // Joined at incarnation 2, not admitted here yet (or its death not heard of).
        assert_eq!(classify(true, 1, Some(&waiting)), Member::Unsettled);
        assert_eq!(classify(false, 0, None), Member::Survivor);
        assert_eq!(classify(false, 2, Some(&member)), Member::Survivor);
        assert_eq!(classify(false, 2, Some(&waiting)), Member::Waiting);
    }

    #[test]
    fn only_the_lowest_waiting_member_with_no_survivor_refounds() {
        use Member::*;
        assert!(decide(0, &[]), "alone");
        assert!(decide(0, &[(1, Dead), (2, Dead)]));
        assert!(decide(1, &[(0, Dead), (2, Waiting)]));
        assert!(
            !decide(2, &[(0, Dead), (1, Waiting)]),
            "defers to a lower one"
        );
        assert!(!decide(0, &[(1, Survivor), (2, Dead)]));
        assert!(!decide(0, &[(1, Unsettled)]));
        // Whoever sees the others waiting, exactly one of them re-founds.
        let all = [0usize, 1, 2];
        let founders = all
            .iter()
            .filter(|&&me| {
                let others: Vec<(usize, Member)> = all
                    .iter()
                    .filter(|&&r| r != me)
                    .map(|&r| (r, Waiting))
                    .collect();
                decide(me, &others)
            })
            .count();
        assert_eq!(founders, 1);
    }
}
