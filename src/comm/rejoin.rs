//! Saved communicators and restarted members coming back into them (the MPI Forum
//! draft's `MPIX_Comm_save` / `MPIX_Comm_rejoin`; `docs/restart.md`, "Communicators").
//!
//! - [`Comm::save`] (collective over the live members): each member stores the
//!   communicator's record (id, epoch, context, group with each member's incarnation)
//!   in the launcher's store under `sf.saved.<name>`, a key the launcher keeps when the
//!   member is restarted; an agreement then tells every member that every live one has
//!   stored it.
//! - [`Comm::readmit`] (collective over the survivors): they agree, on the current epoch
//!   (which the restarted members are not part of), on which restarted members every one
//!   of them has admitted, then all move the communicator to the next epoch with them
//!   in it and publish the new record under `sf.epoch.<id>.<rank>.<generation>` for
//!   each readmitted member.
//! - [`World::rejoin`] in a restarted process: reads its saved record back, polls the
//!   members' stores for the new epoch naming its incarnation (never blocking its
//!   progress: heartbeats keep flowing), registers the communicator at that epoch and
//!   stores the new record as its own saved one (so it can rejoin again after another
//!   restart).

use std::time::{Duration, Instant};

use steadfast_agreement::{CommId, CommKey, Epoch};

use super::refound::RejoinState;
use super::{Comm, CommError};
use crate::bootstrap::SAVED_PREFIX;
use crate::world::{World, WORLD_COMM};

/// Magic of a saved record ("SFSV", little-endian).
const MAGIC: u32 = 0x5653_4653;
/// Version of the record's layout.
const VERSION: u32 = 1;
/// Longest communicator name.
pub const MAX_NAME: usize = 128;
/// Rounds of [`Comm::readmit`] (two agreements each) before it gives up.
const READMIT_ROUNDS: u32 = 5000;
/// First pause between two rounds of [`Comm::readmit`] that did not agree, and between
/// two polls of the stores by [`World::rejoin`]; it doubles up to [`MAX_PAUSE`]. A
/// survivor hears of a rejoined rank within 200 µs (the engine's slow checks).
const FIRST_PAUSE: Duration = Duration::from_micros(100);
/// Longest pause between rounds or polls.
const MAX_PAUSE: Duration = Duration::from_millis(10);
/// How long [`World::rejoin`] waits for the survivors' readmission.
const REJOIN_WAIT: Duration = Duration::from_secs(300);

/// A communicator as saved in the launcher's store: what a restarted member needs to
/// take its place in it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Saved {
    /// Communicator id.
    pub id: u64,
    /// Its epoch.
    pub epoch: u32,
    /// Its message context.
    pub context: u64,
    /// Comm rank -> world rank.
    pub group: Vec<u32>,
    /// Comm rank -> incarnation of that member in this epoch.
    pub incarnations: Vec<u32>,
}

impl Saved {
    /// magic u32, version u32, id u64, epoch u32, context u64, n u32, then n
    /// (world rank u32, incarnation u32); little-endian.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + 8 * self.group.len());
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&self.id.to_le_bytes());
        b.extend_from_slice(&self.epoch.to_le_bytes());
        b.extend_from_slice(&self.context.to_le_bytes());
        b.extend_from_slice(&(self.group.len() as u32).to_le_bytes());
        for (w, g) in self.group.iter().zip(&self.incarnations) {
            b.extend_from_slice(&w.to_le_bytes());
            b.extend_from_slice(&g.to_le_bytes());
        }
        b
    }

    /// Decodes a record; every length is checked against the bytes.
    pub(crate) fn decode(b: &[u8]) -> Result<Saved, &'static str> {
        let u32_at = |at: usize| -> Result<u32, &'static str> {
            let s = b.get(at..at + 4).ok_or("truncated")?;
            Ok(u32::from_le_bytes(s.try_into().map_err(|_| "truncated")?))
        };
        let u64_at = |at: usize| -> Result<u64, &'static str> {
            let s = b.get(at..at + 8).ok_or("truncated")?;
            Ok(u64::from_le_bytes(s.try_into().map_err(|_| "truncated")?))
        };
        if u32_at(0)? != MAGIC {
            return Err("not a saved communicator");
        }
        if u32_at(4)? != VERSION {
            return Err("unknown version");
        }
        let n = u32_at(28)? as usize;
        if b.len() != 32 + n.checked_mul(8).ok_or("too many members")? {
            return Err("length does not match the member count");
        }
        let mut group = Vec::with_capacity(n);
        let mut incarnations = Vec::with_capacity(n);
        for i in 0..n {
            group.push(u32_at(32 + 8 * i)?);
            incarnations.push(u32_at(36 + 8 * i)?);
        }
        Ok(Saved {
            id: u64_at(8)?,
            epoch: u32_at(16)?,
            context: u64_at(20)?,
            group,
            incarnations,
        })
    }

    /// The record of communicator `id` as registered now.
    fn of(comm: &Comm) -> Saved {
        comm.with(|c| Saved {
            id: c.key().comm.0,
            epoch: c.key().epoch.0,
            context: c.context(),
            group: c.group().to_vec(),
            incarnations: c.incarnations().to_vec(),
        })
    }
}

/// The store key of a saved communicator.
pub(super) fn saved_key(name: &str) -> String {
    format!("{SAVED_PREFIX}{name}")
}

/// The store key of the epoch that readmitted incarnation `generation` of world rank
/// `rank` into communicator `id`.
fn epoch_key(id: u64, rank: u32, generation: u32) -> String {
    format!("sf.epoch.{id:016x}.{rank}.{generation}")
}

/// A name is 1 to [`MAX_NAME`] printable ASCII characters, the first not a dot (names
/// beginning with one are the runtime's: `sf.saved..node` keeps a rank's node).
fn check_name(name: &str) -> Result<(), CommError> {
    if name.is_empty()
        || name.len() > MAX_NAME
        || name.starts_with('.')
        || !name.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(CommError::InvalidArgument(format!(
            "communicator name {name:?}: 1 to {MAX_NAME} printable ASCII characters, no spaces, not beginning with a dot"
        )));
    }
    Ok(())
}

/// A digest of the candidates (comm rank, incarnation), the same wherever they are.
fn digest(candidates: &[(u32, u32)]) -> u64 {
    let bytes: Vec<u8> = candidates
        .iter()
        .flat_map(|(r, g)| [r.to_le_bytes(), g.to_le_bytes()].concat())
        .collect();
    steadfast_os::fnv1a64(&bytes)
}

impl Comm {
    /// Saves this communicator under `name` in the launcher's store
    /// (`MPIX_Comm_save` of the Forum's draft), so that a member restarted in place
    /// gets it back with [`World::rejoin`]. Collective over the live members: when it
    /// returns, every live member has stored it. Saving again under the same name
    /// replaces the record.
    ///
    /// The world communicator is saved like any other: a restarted process's
    /// [`World::rejoin`] of that name switches its own world (the one of its init,
    /// [`CommError::RestoredWorld`] for agreements until then) to the survivors' epoch.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name; [`CommError::Launcher`] when the store
    /// refuses; `Excluded`; `RestoredWorld` on the world of a restarted process that
    /// has not rejoined it.
    pub fn save(&self, name: &str) -> Result<(), CommError> {
        check_name(name)?;
        if self.id == WORLD_COMM && self.engine.lock().world_restored() {
            return Err(CommError::RestoredWorld);
        }
        let record = Saved::of(self).encode();
        self.engine
            .lock()
            .boot_mut()
            .put(&saved_key(name), &record)
            .map_err(|e| CommError::Launcher(format!("saving communicator {name:?}: {e}")))?;
        // Every live member has stored it once the agreement decides.
        self.agree_full(1)?;
        Ok(())
    }

    /// Brings the restarted members of this communicator back into it (the survivors'
    /// side of the Forum draft's `MPIX_Comm_rejoin`; collective over the live members
    /// that were not restarted). The survivors agree on which restarted incarnations
    /// every one of them has admitted (waiting, in bounded rounds, until they all have
    /// the same), then move the communicator to its next epoch with them in it:
    /// agreement, shrink and revoke include them again; the restarted processes get it
    /// with [`World::rejoin`]. Returns the readmitted comm ranks (empty: nobody to
    /// readmit, nothing changed). Acknowledged failures of other members stay
    /// acknowledged; a revocation stays. On the world communicator the same: the
    /// restarted processes' `rejoin` then replaces their own world's state.
    ///
    /// # Errors
    /// [`CommError::Restart`] when the survivors do not come to admit the same
    /// incarnations within the rounds; [`CommError::Launcher`] when the new epoch
    /// cannot be published; `Excluded`; `RestoredWorld` on the world of a restarted
    /// process that has not rejoined it.
    pub fn readmit(&self) -> Result<Vec<u32>, CommError> {
        let mut pause = FIRST_PAUSE;
        for _ in 0..READMIT_ROUNDS {
            let candidates = {
                let mut e = self.engine.lock();
                e.progress();
                e.readmit_candidates(self.id)
            };
            let h = digest(&candidates);
            // Everyone contributed the same digest iff AND(h) == !AND(!h).
            let all = self.agree_full(h)?.value;
            let none = self.agree_full(!h)?.value;
            if all == !none {
                if candidates.is_empty() {
                    return Ok(Vec::new());
                }
                return self.switch_epoch(&candidates);
            }
            let end = Instant::now() + pause;
            while Instant::now() < end {
                self.engine.lock().progress();
                std::thread::yield_now();
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
        Err(CommError::Restart(format!(
            "the survivors of communicator {:#x} did not all admit the same restarted members within {READMIT_ROUNDS} rounds",
            self.id.0
        )))
    }

    /// Moves to the next epoch with `readmitted` (comm rank, incarnation) and publishes
    /// it for them.
    fn switch_epoch(&self, readmitted: &[(u32, u32)]) -> Result<Vec<u32>, CommError> {
        let ranks: Vec<u32> = readmitted.iter().map(|&(r, _)| r).collect();
        let record = {
            let mut e = self.engine.lock();
            e.new_comm_epoch(self.id, &ranks)
                .expect("a Comm handle's communicator is registered");
            drop(e);
            Saved::of(self)
        };
        let bytes = record.encode();
        let mut e = self.engine.lock();
        for &(r, g) in readmitted {
            let w = record.group[r as usize];
            e.boot_mut()
                .put(&epoch_key(record.id, w, g), &bytes)
                .map_err(|err| {
                    CommError::Launcher(format!(
                        "publishing epoch {} of communicator {:#x} for rank {w}: {err}",
                        record.epoch, record.id
                    ))
                })?;
        }
        log::debug!(
            "communicator {:#x} at epoch {} readmitted comm ranks {ranks:?}",
            record.id,
            record.epoch
        );
        Ok(ranks)
    }
}

impl World {
    /// In a restarted process ([`is_restored`](Self::is_restored)), the communicator its
    /// earlier incarnation saved as `name` ([`Comm::save`]), with its old rank in it
    /// (the Forum draft's `MPIX_Comm_rejoin`). Waits (progressing: heartbeats keep
    /// flowing) until the survivors [`readmit`](Comm::readmit) this incarnation into
    /// it, then returns it at their new epoch: point to point, agreement, revoke and
    /// shrink work among all its members.
    ///
    /// When `name` is the world communicator (the survivors saved
    /// [`World::comm`]), this process's own world is switched to the survivors' epoch
    /// (same id and context: every handle to it, [`World::comm`]'s included, sees the
    /// switch), after which its agreement, shrink and [`World::finalize`]'s agreement
    /// work again (no more [`CommError::RestoredWorld`]); the handle returned is one
    /// more handle to it.
    ///
    /// # Errors
    /// `InvalidArgument` when this process is not a restarted one, the name is bad, or
    /// nothing was saved under it by this rank; [`CommError::Restart`] when the
    /// survivors do not readmit it within 300 s or a record does not decode;
    /// [`CommError::Launcher`] when the launcher cannot be asked.
    pub fn rejoin(&self, name: &str) -> Result<Comm, CommError> {
        check_name(name)?;
        if !self.is_restored() {
            return Err(CommError::InvalidArgument(
                "rejoin is for a restarted process (World::is_restored); this is the first incarnation".into(),
            ));
        }
        let shared = self.shared();
        let (me, generation) = (self.rank(), self.generation());
        let launcher = |e: crate::bootstrap::BootstrapError| {
            CommError::Launcher(format!("rejoining communicator {name:?}: {e}"))
        };
        let saved = shared
            .lock()
            .boot_mut()
            .lookup(me, &saved_key(name))
            .map_err(launcher)?
            .ok_or_else(|| {
                CommError::InvalidArgument(format!(
                    "no communicator was saved as {name:?} by rank {me}"
                ))
            })?;
        let saved = Saved::decode(&saved)
            .map_err(|p| CommError::Restart(format!("the record of communicator {name:?}: {p}")))?;
        if !saved.group.contains(&me) {
            return Err(CommError::InvalidArgument(format!(
                "rank {me} is not a member of the communicator saved as {name:?}"
            )));
        }
        let held = {
            let e = shared.lock();
            if CommId(saved.id) == WORLD_COMM {
                !e.world_restored()
            } else {
                e.has_comm(CommId(saved.id))
            }
        };
        if held {
            return Err(CommError::InvalidArgument(format!(
                "communicator {name:?} is rejoined already"
            )));
        }
        // The other restarted members see that this one waits (`refound`).
        self.announce(saved.id, RejoinState::Waiting)
            .map_err(launcher)?;
        let key = epoch_key(saved.id, me, generation);
        let deadline = Instant::now() + REJOIN_WAIT;
        let mut pause = FIRST_PAUSE;
        let record = loop {
            if let Some(bytes) = self.poll_members(&saved.group, &key).map_err(launcher)? {
                break Saved::decode(&bytes).map_err(|p| {
                    CommError::Restart(format!("the new epoch of communicator {name:?}: {p}"))
                })?;
            }
            if self.founds(&saved).map_err(launcher)? {
                return self.refound(name, &saved);
            }
            if Instant::now() >= deadline {
                return Err(CommError::Restart(format!(
                    "the survivors of communicator {name:?} did not readmit rank {me} incarnation {generation} within {REJOIN_WAIT:?} (do they call Comm::readmit?)"
                )));
            }
            self.progress_for(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        };
        let r = record.group.iter().position(|&w| w == me);
        if record.id != saved.id
            || r.is_none_or(|r| record.incarnations.get(r) != Some(&generation))
            || record.incarnations.len() != record.group.len()
        {
            return Err(CommError::Restart(format!(
                "the new epoch of communicator {name:?} does not name rank {me} incarnation {generation}"
            )));
        }
        let comm = self.register(name, &record)?;
        log::debug!(
            "rejoined communicator {name:?} ({:#x}) at epoch {}",
            record.id,
            record.epoch
        );
        Ok(comm)
    }

    /// Registers the communicator of `record` (this process's place in it at its
    /// epoch), stores the record as this incarnation's saved one (a later incarnation
    /// rejoins at this epoch or a later one) and says this process is a member again.
    pub(super) fn register(&self, name: &str, record: &Saved) -> Result<Comm, CommError> {
        self.await_incarnations(name, record)?;
        let shared = self.shared();
        let launcher = |e: crate::bootstrap::BootstrapError| {
            CommError::Launcher(format!("rejoining communicator {name:?}: {e}"))
        };
        let id = CommId(record.id);
        let mut e = shared.lock();
        if id == WORLD_COMM {
            if !e.world_restored() {
                return Err(CommError::InvalidArgument(format!(
                    "communicator {name:?} (the world) is rejoined already"
                )));
            }
            let key = CommKey {
                comm: id,
                epoch: Epoch(record.epoch),
            };
            e.rejoin_world(
                key,
                record.context,
                record.group.clone(),
                record.incarnations.clone(),
            )
            .ok_or_else(|| {
                CommError::Restart(format!(
                    "communicator {name:?}: the record does not fit this process's world (group, context or epoch)"
                ))
            })?;
        } else {
            claim_and_add(&mut e, name, record)?;
        }
        e.boot_mut()
            .put(&saved_key(name), &record.encode())
            .map_err(launcher)?;
        let facts = e.facts(id);
        drop(e);
        self.announce(record.id, RejoinState::Member)
            .map_err(launcher)?;
        Ok(Comm::new(std::sync::Arc::clone(shared), facts))
    }

    /// Waits (progressing) until this process knows every other member of `record` at
    /// the incarnation the record names, or a later one: admitted here, or reported
    /// dead. Registering the epoch earlier would count a member restarted alongside
    /// this one (named in the record, not admitted here yet) as failed in it, and an
    /// agreement would then report the new incarnation failed at the other members.
    fn await_incarnations(&self, name: &str, record: &Saved) -> Result<(), CommError> {
        let me = self.rank();
        let deadline = Instant::now() + REJOIN_WAIT;
        let mut pause = FIRST_PAUSE;
        loop {
            let behind = {
                let e = self.shared().lock();
                record
                    .group
                    .iter()
                    .zip(&record.incarnations)
                    .find(|&(&w, &g)| w != me && e.generation_of(w) < g)
                    .map(|(&w, &g)| (w, g))
            };
            let Some((w, g)) = behind else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                return Err(CommError::Restart(format!(
                    "communicator {name:?} names rank {w} incarnation {g}, which never joined here within {REJOIN_WAIT:?}"
                )));
            }
            self.progress_for(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// The first value found under `key` at a live member of `group` (never waits).
    fn poll_members(
        &self,
        group: &[u32],
        key: &str,
    ) -> Result<Option<Vec<u8>>, crate::bootstrap::BootstrapError> {
        let me = self.rank();
        let mut e = self.shared().lock();
        for &w in group {
            if w == me || e.is_failed(w) {
                continue;
            }
            if let Some(v) = e.boot_mut().lookup(w, key)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// Registers the (non-world) communicator of `record` here: claims its context and
/// adds it at the record's epoch with the record's incarnations.
fn claim_and_add(
    e: &mut crate::world::engine::Engine,
    name: &str,
    record: &Saved,
) -> Result<(), CommError> {
    let id = CommId(record.id);
    if e.has_comm(id) {
        return Err(CommError::InvalidArgument(format!(
            "communicator {name:?} is rejoined already"
        )));
    }
    let ctx = u32::try_from(record.context)
        .map_err(|_| CommError::Restart(format!("communicator {name:?}: context out of range")))?;
    e.contexts_mut()
        .claim(ctx.into())
        .map_err(|err| CommError::Restart(format!("communicator {name:?}: {err}")))?;
    let key = CommKey {
        comm: id,
        epoch: Epoch(record.epoch),
    };
    e.add_comm_at(
        key,
        record.context,
        record.group.clone(),
        record.incarnations.clone(),
    )
    .ok_or_else(|| CommError::Restart(format!("communicator {name:?}: not a member")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Saved {
        Saved {
            id: 0x1234_5678_9abc,
            epoch: 3,
            context: 17,
            group: vec![4, 0, 2],
            incarnations: vec![0, 1, 2],
        }
    }

    #[test]
    fn a_record_round_trips_and_every_cut_or_change_of_length_is_refused() {
        let s = sample();
        let b = s.encode();
        assert_eq!(Saved::decode(&b), Ok(s));
        for cut in 0..b.len() {
            assert!(Saved::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(Saved::decode(&longer).is_err());
        let mut huge = b.clone();
        huge[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Saved::decode(&huge).is_err());
        let mut magic = b;
        magic[0] ^= 1;
        assert_eq!(Saved::decode(&magic), Err("not a saved communicator"));
    }

    #[test]
    fn random_bytes_never_panic_the_decoder() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..2000usize {
            let mut b: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if b.len() >= 8 && len % 2 == 0 {
                b[..4].copy_from_slice(&MAGIC.to_le_bytes());
                b[4..8].copy_from_slice(&VERSION.to_le_bytes());
            }
            if let Ok(s) = Saved::decode(&b) {
                assert_eq!(s.encode(), b);
            }
        }
    }

    #[test]
    fn names_are_checked_and_digests_tell_candidates_apart() {
        assert!(check_name("group-1").is_ok());
        for bad in ["", "a b", "é", ".node", &"x".repeat(MAX_NAME + 1)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_ne!(digest(&[(1, 1)]), digest(&[(1, 2)]));
        assert_ne!(digest(&[]), digest(&[(0, 0)]));
        assert_eq!(digest(&[(2, 1), (3, 1)]), digest(&[(2, 1), (3, 1)]));
    }
}
