//! The launcher's key-value store and fence, without I/O: requests go in with `now`,
//! answers come out, and a request that must wait becomes a [`Pending`] the event loop
//! asks about again ([`Store::poll`]) after every change and at its deadline.
//!
//! A `Get` waits for its value, but is answered with an error as soon as the value
//! cannot come: its owner is dead or gone, its owner waits at a fence the asker has not
//! reached (the fence cannot complete while the asker waits, so neither can the owner
//! put again), the asker asks for its own missing key, or [`Limits::get_timeout`]
//! passes. Stored bytes are bounded per rank and in total.

use super::Limits;
use crate::bootstrap::wire::Frame;
use crate::bootstrap::{SpawnCommand, SAVED_PREFIX, SLOT_TAKEN, SPAWNED_BY_KEY, SPAWN_COMMAND_KEY};
use std::collections::HashMap;
use std::time::Instant;

/// A request that waits for the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pending {
    /// A get of `key` from `owner`, failed at `deadline`.
    Get {
        /// Owner rank.
        owner: u32,
        /// Key.
        key: String,
        /// When the get is answered with an error.
        deadline: Instant,
    },
    /// A fence entered at `generation`.
    Fence {
        /// The fence generation when the rank entered.
        generation: u64,
    },
    /// A restart of `rank`, whose incarnation `generation` failed, asked at `asked`.
    Restart {
        /// The rank to restart.
        rank: u32,
        /// The incarnation the asker knows failed.
        generation: u32,
        /// When it was asked.
        asked: Instant,
    },
}

/// What a request turned into.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Answer at once.
    Answer(Frame),
    /// Ask [`Store::poll`] again after the next change.
    Wait(Pending),
}

/// Bytes a rank has stored.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    keys: usize,
    bytes: usize,
}

/// The store and fence state of one job.
#[derive(Debug)]
pub(crate) struct Store {
    size: u32,
    limits: Limits,
    /// Each rank's values by key.
    values: Vec<HashMap<String, Vec<u8>>>,
    usage: Vec<Usage>,
    total_bytes: usize,
    dead: HashMap<u32, String>,
    fence_generation: u64,
    fenced: Vec<bool>,
    /// Each rank's current incarnation.
    generations: Vec<u32>,
    /// Whether each rank's current incarnation has joined (first starts have).
    joined: Vec<bool>,
    /// Each rank's process id, when a restart told it.
    pids: Vec<u32>,
    /// Whether a spawner exists (restarts are refused otherwise).
    can_spawn: bool,
    /// Incarnations to start, (rank, generation), for the event loop.
    spawns: Vec<(u32, u32)>,
    /// Incarnations that joined, (rank, generation), to announce to the others.
    rejoined: Vec<(u32, u32)>,
    /// The first spare slot of the universe (`docs/spawn.md`; `size`: none).
    first_spare: u32,
    /// The spare slots started, with the rank whose spawn started each.
    claims: HashMap<u32, u32>,
    /// The command of each spare slot its spawn started with one (every incarnation of
    /// the slot runs it; the others run the job's program).
    commands: HashMap<u32, SpawnCommand>,
}

impl Store {
    /// An empty store for `size` ranks.
    pub(crate) fn new(size: u32, limits: Limits) -> Store {
        Store {
            size,
            limits,
            values: vec![HashMap::new(); size as usize],
            usage: vec![Usage::default(); size as usize],
            total_bytes: 0,
            dead: HashMap::new(),
            fence_generation: 0,
            fenced: vec![false; size as usize],
            generations: vec![0; size as usize],
            joined: vec![true; size as usize],
            pids: vec![0; size as usize],
            can_spawn: false,
            spawns: Vec::new(),
            rejoined: Vec::new(),
            first_spare: size,
            claims: HashMap::new(),
            commands: HashMap::new(),
        }
    }

    /// Ranks `first..size` are spare slots of the universe: dead (never started) until
    /// a spawn starts one; a slot is started by one spawn only.
    pub(crate) fn set_spares(&mut self, first: u32) {
        self.first_spare = first.min(self.size);
        for r in self.first_spare..self.size {
            self.dead.insert(r, "a spare slot, not started".into());
        }
    }

    /// Restarts are possible (the service has a spawner).
    pub(crate) fn allow_spawns(&mut self) {
        self.can_spawn = true;
    }

    /// `rank`'s current incarnation.
    pub(crate) fn generation(&self, rank: u32) -> u32 {
        self.generations.get(rank as usize).copied().unwrap_or(0)
    }

    /// Every rank that has ended, with its incarnation and how.
    pub(crate) fn dead_ranks(&self) -> Vec<(u32, u32, String)> {
        let mut d: Vec<(u32, u32, String)> = self
            .dead
            .iter()
            .map(|(&r, how)| (r, self.generation(r), how.clone()))
            .collect();
        d.sort();
        d
    }

    /// Incarnations to start now, with the command of their slot (`None`: the job's
    /// program); each is then [`spawned`](Self::spawned) or
    /// [`rank_died`](Self::rank_died) with why it could not start.
    pub(crate) fn take_spawns(&mut self) -> Vec<(u32, u32, Option<SpawnCommand>)> {
        std::mem::take(&mut self.spawns)
            .into_iter()
            .map(|(r, g)| (r, g, self.commands.get(&r).cloned()))
            .collect()
    }

    /// Incarnations that joined since the last call.
    pub(crate) fn take_rejoined(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.rejoined)
    }

    /// Incarnation `generation` of `rank` was started as process `pid`.
    pub(crate) fn spawned(&mut self, rank: u32, generation: u32, pid: u32) {
        if self.generation(rank) == generation {
            self.pids[rank as usize] = pid;
        }
    }

    /// Starts incarnation `generation + 1` of the dead `rank`: its values are dropped
    /// (a get waits for the new incarnation's) but for the saved communicators (keys
    /// under [`SAVED_PREFIX`], which the new incarnation reads back); it is alive and
    /// not joined yet.
    fn respawn(&mut self, rank: u32, generation: u32) {
        let r = rank as usize;
        let before = self.values[r].len();
        let freed: usize = self.values[r]
            .iter()
            .filter(|(k, _)| !k.starts_with(SAVED_PREFIX))
            .map(|(k, v)| k.len() + v.len())
            .sum();
        self.values[r].retain(|k, _| k.starts_with(SAVED_PREFIX));
        let usage = &mut self.usage[r];
        usage.keys -= before - self.values[r].len();
        usage.bytes -= freed;
        self.total_bytes -= freed;
        self.dead.remove(&rank);
        self.fenced[r] = false;
        self.generations[r] = generation + 1;
        self.joined[r] = false;
        self.pids[r] = 0;
        self.spawns.push((rank, generation + 1));
    }

    /// How `rank` ended, if it has.
    pub(crate) fn dead(&self, rank: u32) -> Option<&str> {
        self.dead.get(&rank).map(String::as_str)
    }

    /// The value `rank` stored under `key`.
    pub(crate) fn value(&self, rank: u32, key: &str) -> Option<&[u8]> {
        self.values.get(rank as usize)?.get(key).map(Vec::as_slice)
    }

    /// Records that incarnation `generation` of `rank` ended (`how` says how; `None`:
    /// the current one); its values stay readable. The end of an incarnation already
    /// replaced is ignored. Returns whether it was the current one.
    pub(crate) fn rank_died(&mut self, rank: u32, generation: Option<u32>, how: &str) -> bool {
        if rank >= self.size || generation.is_some_and(|g| g != self.generation(rank)) {
            return false;
        }
        self.dead.insert(rank, how.to_string());
        true
    }

    /// Handles one request of the authenticated `rank`.
    pub(crate) fn request(&mut self, rank: u32, frame: Frame, now: Instant) -> Step {
        match frame {
            Frame::Put { key, value } => Step::Answer(match self.put(rank, key, value) {
                Ok(()) => Frame::Ok,
                Err(why) => Frame::Error(why),
            }),
            Frame::Get { rank: owner, key } => {
                if owner >= self.size {
                    return Step::Answer(Frame::Error(format!(
                        "no rank {owner} in a job of {}",
                        self.size
                    )));
                }
                let pending = Pending::Get {
                    owner,
                    key,
                    deadline: now + self.limits.get_timeout,
                };
                self.step(rank, pending, now)
            }
            Frame::Lookup { rank: owner, key } => Step::Answer(
                match self.values.get(owner as usize).and_then(|v| v.get(&key)) {
                    Some(v) => Frame::Value(v.clone()),
                    None => Frame::Error(format!("absent: rank {owner} has no {key:?} now")),
                },
            ),
            Frame::Fence => {
                self.fenced[rank as usize] = true;
                let pending = Pending::Fence {
                    generation: self.fence_generation,
                };
                self.step(rank, pending, now)
            }
            Frame::Restart {
                rank: target,
                generation,
            } => {
                if target >= self.size || target == rank {
                    return Step::Answer(Frame::Error(format!(
                        "cannot restart rank {target}: not another rank of a job of {}",
                        self.size
                    )));
                }
                if !self.can_spawn {
                    return Step::Answer(Frame::Error(format!(
                        "cannot restart rank {target}: this launcher service has no spawner"
                    )));
                }
                let pending = Pending::Restart {
                    rank: target,
                    generation,
                    asked: now,
                };
                self.step(rank, pending, now)
            }
            Frame::Joined => {
                let r = rank as usize;
                if !self.joined[r] {
                    self.joined[r] = true;
                    self.rejoined.push((rank, self.generations[r]));
                }
                Step::Answer(Frame::Ok)
            }
            other => Step::Answer(Frame::Error(format!("not a request: {other:?}"))),
        }
    }

    fn step(&mut self, rank: u32, pending: Pending, now: Instant) -> Step {
        match self.poll(rank, &pending, now) {
            Some(answer) => Step::Answer(answer),
            None => Step::Wait(pending),
        }
    }

    /// The answer to `rank`'s waiting request, if it has one now.
    pub(crate) fn poll(&mut self, rank: u32, pending: &Pending, now: Instant) -> Option<Frame> {
        match pending {
            Pending::Get {
                owner,
                key,
                deadline,
            } => {
                if let Some(v) = self.values[*owner as usize].get(key) {
                    return Some(Frame::Value(v.clone()));
                }
                if let Some(how) = self.dead.get(owner) {
                    return Some(Frame::Error(format!("dead: {how}")));
                }
                if *owner == rank {
                    return Some(Frame::Error(format!(
                        "rank {rank} asked for its own key {key:?}, which it never put"
                    )));
                }
                if self.fenced[*owner as usize] {
                    return Some(Frame::Error(format!(
                        "rank {owner} reached a fence without putting {key:?}, and the fence \
                         cannot complete while rank {rank} waits for it"
                    )));
                }
                if now >= *deadline {
                    return Some(Frame::Error(format!(
                        "rank {owner} put no {key:?} within {:?}",
                        self.limits.get_timeout
                    )));
                }
                None
            }
            Pending::Fence { generation } => {
                if self.fence_generation != *generation {
                    return Some(Frame::Ok);
                }
                let all =
                    (0..self.size).all(|r| self.fenced[r as usize] || self.dead.contains_key(&r));
                if all {
                    self.fence_generation += 1;
                    self.fenced.iter_mut().for_each(|f| *f = false);
                    return Some(Frame::Ok);
                }
                None
            }
            Pending::Restart {
                rank: target,
                generation,
                asked,
            } => self.poll_restart(rank, *target, *generation, *asked, now),
        }
    }

    /// When a waiting request must be looked at again by its deadline (`None`: only
    /// after a change).
    pub(crate) fn deadline(&self, pending: &Pending) -> Option<Instant> {
        match pending {
            Pending::Get { deadline, .. } => Some(*deadline),
            Pending::Fence { .. } => None,
            Pending::Restart {
                rank,
                generation,
                asked,
            } => Some(if self.generation(*rank) == *generation {
                *asked + self.limits.restart_death_wait
            } else {
                *asked + self.limits.restart_timeout
            }),
        }
    }

    fn poll_restart(
        &mut self,
        asker: u32,
        rank: u32,
        generation: u32,
        asked: Instant,
        now: Instant,
    ) -> Option<Frame> {
        let current = self.generation(rank);
        let spare_start = rank >= self.first_spare && generation == 0;
        if spare_start && current > 0 && self.claims.get(&rank) != Some(&asker) {
            let by = self.claims.get(&rank).copied().unwrap_or(u32::MAX);
            return Some(Frame::Error(format!(
                "{SLOT_TAKEN} rank {by}'s spawn started slot {rank}"
            )));
        }
        if current < generation {
            return Some(Frame::Error(format!(
                "rank {rank} has no incarnation {generation} (its current one is {current})"
            )));
        }
        if current == generation {
            if self.dead.contains_key(&rank) {
                if spare_start {
                    // What the asker's spawn runs (docs/spawn.md, "The command").
                    match self
                        .value(asker, SPAWN_COMMAND_KEY)
                        .map(|b| (b.is_empty(), b))
                    {
                        None | Some((true, _)) => {}
                        Some((false, b)) => match SpawnCommand::decode(b) {
                            Some(c) => {
                                self.commands.insert(rank, c);
                            }
                            None => {
                                return Some(Frame::Error(format!(
                                    "rank {asker}'s {SPAWN_COMMAND_KEY:?} does not decode"
                                )))
                            }
                        },
                    }
                }
                // Two survivors asking for the same incarnation: the first starts it,
                // the second finds `current` above `generation` and waits with it.
                self.respawn(rank, generation);
                if spare_start {
                    // The spawned process learns its root from its own slot.
                    self.claims.insert(rank, asker);
                    if let Err(why) =
                        self.put(rank, SPAWNED_BY_KEY.into(), asker.to_le_bytes().to_vec())
                    {
                        log::warn!("launcher service: slot {rank}: {why}");
                    }
                }
                return None;
            }
            if now >= asked + self.limits.restart_death_wait {
                return Some(Frame::Error(format!(
                    "rank {rank} (incarnation {generation}) is alive: only a failed rank is restarted"
                )));
            }
            // The launcher may learn of the death after the asker did.
            return None;
        }
        let r = rank as usize;
        // An incarnation that joined and died since is still an answer: the restart
        // worked (the asker will see the new death as a failure).
        if self.joined[r] {
            return Some(Frame::Restarted {
                rank,
                generation: current,
                pid: self.pids[r],
            });
        }
        if let Some(how) = self.dead.get(&rank) {
            return Some(Frame::Error(format!(
                "incarnation {current} of rank {rank} {how} before it joined"
            )));
        }
        if now >= asked + self.limits.restart_timeout {
            return Some(Frame::Error(format!(
                "incarnation {current} of rank {rank} did not join within {:?}",
                self.limits.restart_timeout
            )));
        }
        None
    }

    fn put(&mut self, rank: u32, key: String, value: Vec<u8>) -> Result<(), String> {
        let l = &self.limits;
        if value.len() > l.max_value {
            return Err(format!(
                "value of {} bytes for key {key:?} exceeds the launcher's limit of {} bytes",
                value.len(),
                l.max_value
            ));
        }
        let old = self.values[rank as usize]
            .get(&key)
            .map(|v| key.len() + v.len());
        let new = key.len() + value.len();
        let usage = self.usage[rank as usize];
        let keys = usage.keys + usize::from(old.is_none());
        let bytes = usage.bytes - old.unwrap_or(0) + new;
        let total = self.total_bytes - old.unwrap_or(0) + new;
        if keys > l.max_keys_per_rank {
            return Err(format!(
                "rank {rank} would store {keys} keys, over the launcher's limit of {}",
                l.max_keys_per_rank
            ));
        }
        if bytes > l.max_bytes_per_rank {
            return Err(format!(
                "rank {rank} would store {bytes} bytes, over the launcher's limit of {} per rank",
                l.max_bytes_per_rank
            ));
        }
        if total > l.max_total_bytes {
            return Err(format!(
                "the job would store {total} bytes, over the launcher's limit of {}",
                l.max_total_bytes
            ));
        }
        self.usage[rank as usize] = Usage { keys, bytes };
        self.total_bytes = total;
        self.values[rank as usize].insert(key, value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn put(s: &mut Store, rank: u32, key: &str, len: usize) -> Step {
        let f = Frame::Put {
            key: key.into(),
            value: vec![7; len],
        };
        s.request(rank, f, Instant::now())
    }

    fn get(s: &mut Store, rank: u32, owner: u32, key: &str, now: Instant) -> Step {
        let f = Frame::Get {
            rank: owner,
            key: key.into(),
        };
        s.request(rank, f, now)
    }

    fn is_error(step: &Step, wanted: &str) -> bool {
        matches!(step, Step::Answer(Frame::Error(m)) if m.contains(wanted))
    }

    #[test]
    fn a_get_waits_for_its_put_then_answers() {
        let mut s = Store::new(2, Limits::default());
        let now = Instant::now();
        let Step::Wait(p) = get(&mut s, 0, 1, "addr", now) else {
            panic!("answered before the put")
        };
        assert_eq!(s.poll(0, &p, now), None);
        assert_eq!(put(&mut s, 1, "addr", 3), Step::Answer(Frame::Ok));
        assert_eq!(s.poll(0, &p, now), Some(Frame::Value(vec![7; 3])));
    }

    #[test]
    fn a_key_that_cannot_come_is_an_error() {
        let now = Instant::now();
        // The owner waits at a fence the asker has not reached.
        let mut s = Store::new(2, Limits::default());
        assert!(matches!(s.request(1, Frame::Fence, now), Step::Wait(_)));
        assert!(is_error(
            &get(&mut s, 0, 1, "never", now),
            "reached a fence"
        ));
        // One's own missing key.
        assert!(is_error(&get(&mut s, 0, 0, "never", now), "its own key"));
        // The owner died.
        let mut s = Store::new(2, Limits::default());
        let Step::Wait(p) = get(&mut s, 0, 1, "never", now) else {
            panic!("answered at once")
        };
        s.rank_died(1, None, "exited");
        assert_eq!(
            s.poll(0, &p, now),
            Some(Frame::Error("dead: exited".into()))
        );
        // The deadline passed.
        let mut s = Store::new(2, Limits::default());
        let Step::Wait(p) = get(&mut s, 0, 1, "never", now) else {
            panic!("answered at once")
        };
        let late = now + Limits::default().get_timeout;
        assert!(matches!(s.poll(0, &p, late), Some(Frame::Error(m)) if m.contains("within")));
    }

    #[test]
    fn a_fence_completes_when_every_live_rank_is_there() {
        let mut s = Store::new(3, Limits::default());
        let now = Instant::now();
        let Step::Wait(p0) = s.request(0, Frame::Fence, now) else {
            panic!("fence of one of three completed")
        };
        s.rank_died(2, None, "killed by signal 9");
        assert_eq!(s.poll(0, &p0, now), None);
        assert_eq!(s.request(1, Frame::Fence, now), Step::Answer(Frame::Ok));
        assert_eq!(s.poll(0, &p0, now), Some(Frame::Ok));
    }

    #[test]
    fn stored_bytes_are_bounded() {
        let limits = Limits {
            max_keys_per_rank: 2,
            max_bytes_per_rank: 100,
            max_total_bytes: 150,
            ..Limits::default()
        };
        let mut s = Store::new(2, limits);
        let big = Limits::default().max_value + 1;
        assert!(is_error(
            &put(&mut s, 0, "k", big),
            "exceeds the launcher's limit"
        ));
        assert_eq!(put(&mut s, 0, "a", 50), Step::Answer(Frame::Ok));
        // Replacing a value counts the new size, not both.
        assert_eq!(put(&mut s, 0, "a", 90), Step::Answer(Frame::Ok));
        assert!(is_error(&put(&mut s, 0, "b", 20), "per rank"));
        assert_eq!(put(&mut s, 0, "b", 5), Step::Answer(Frame::Ok));
        assert!(is_error(&put(&mut s, 0, "c", 1), "keys"));
        assert!(is_error(&put(&mut s, 1, "x", 60), "the job would store"));
        assert_eq!(
            s.request(
                1,
                get_frame(0, "a"),
                Instant::now() + Duration::from_secs(1)
            ),
            Step::Answer(Frame::Value(vec![7; 90]))
        );
    }

    fn restart(s: &mut Store, asker: u32, rank: u32, generation: u32, now: Instant) -> Step {
        s.request(asker, Frame::Restart { rank, generation }, now)
    }

    #[test]
    fn a_lookup_never_waits_and_saved_keys_outlive_a_restart() {
        let mut s = Store::new(3, Limits::default());
        s.allow_spawns();
        let now = Instant::now();
        let lookup = |s: &mut Store, key: &str| {
            let f = Frame::Lookup {
                rank: 2,
                key: key.into(),
            };
            s.request(0, f, now)
        };
        assert!(is_error(&lookup(&mut s, "addr"), "absent"));
        put(&mut s, 2, "addr", 4);
        let saved = format!("{SAVED_PREFIX}group");
        put(&mut s, 2, &saved, 5);
        assert_eq!(
            lookup(&mut s, "addr"),
            Step::Answer(Frame::Value(vec![7; 4]))
        );
        s.rank_died(2, None, "killed by signal 9");
        let _ = restart(&mut s, 0, 2, 0, now);
        assert_eq!(s.take_spawns(), vec![(2, 1, None)]);
        // The new incarnation reads its saved communicator back; the rest is gone.
        assert_eq!(s.value(2, "addr"), None);
        assert_eq!(s.value(2, &saved), Some(&[7u8; 5][..]));
        assert_eq!(s.usage[2].keys, 1);
        assert_eq!(s.usage[2].bytes, saved.len() + 5);
        assert_eq!(s.total_bytes, saved.len() + 5);
    }

    #[test]
    fn a_restart_without_a_spawner_is_refused_by_name() {
        let mut s = Store::new(3, Limits::default());
        s.rank_died(2, None, "killed by signal 9");
        let step = restart(&mut s, 0, 2, 0, Instant::now());
        assert!(is_error(&step, "has no spawner"), "{step:?}");
    }

    #[test]
    fn two_restarts_of_one_incarnation_start_one_process_and_both_are_answered() {
        let mut s = Store::new(3, Limits::default());
        s.allow_spawns();
        let now = Instant::now();
        put(&mut s, 2, "addr", 4);
        s.rank_died(2, None, "killed by signal 9");
        let Step::Wait(p0) = restart(&mut s, 0, 2, 0, now) else {
            panic!("answered before the new incarnation joined")
        };
        let Step::Wait(p1) = restart(&mut s, 1, 2, 0, now) else {
            panic!("answered before the new incarnation joined")
        };
        assert_eq!(s.take_spawns(), vec![(2, 1, None)]);
        assert_eq!(s.generation(2), 1);
        // The old incarnation's values are gone: a get waits for the new one's.
        assert_eq!(s.value(2, "addr"), None);
        assert_eq!(s.poll(0, &p0, now), None);
        s.spawned(2, 1, 77);
        // The old incarnation's death reported late changes nothing.
        assert!(!s.rank_died(2, Some(0), "late"));
        assert_eq!(s.dead(2), None);
        assert_eq!(s.request(2, Frame::Joined, now), Step::Answer(Frame::Ok));
        assert_eq!(s.take_rejoined(), vec![(2, 1)]);
        let joined = Frame::Restarted {
            rank: 2,
            generation: 1,
            pid: 77,
        };
        assert_eq!(s.poll(0, &p0, now), Some(joined.clone()));
        assert_eq!(s.poll(1, &p1, now), Some(joined.clone()));
        assert!(s.take_spawns().is_empty());
        // Asked again later for the same incarnation: the same answer at once.
        assert_eq!(restart(&mut s, 1, 2, 0, now), Step::Answer(joined));
    }

    #[test]
    fn a_restart_that_dies_before_joining_or_of_a_live_rank_is_an_error() {
        let mut s = Store::new(2, Limits::default());
        s.allow_spawns();
        let now = Instant::now();
        s.rank_died(1, None, "killed by signal 9");
        let Step::Wait(p) = restart(&mut s, 0, 1, 0, now) else {
            panic!("answered at once")
        };
        assert_eq!(s.take_spawns(), vec![(1, 1, None)]);
        assert!(s.rank_died(1, Some(1), "exited with status 3"));
        assert!(
            matches!(s.poll(0, &p, now), Some(Frame::Error(m)) if m.contains("exited with status 3 before it joined"))
        );
        // A live incarnation: waits for its death a while, then refused.
        let mut s = Store::new(2, Limits::default());
        s.allow_spawns();
        let Step::Wait(p) = restart(&mut s, 0, 1, 0, now) else {
            panic!("answered at once")
        };
        assert_eq!(s.poll(0, &p, now), None);
        let late = now + Limits::default().restart_death_wait;
        assert!(matches!(s.poll(0, &p, late), Some(Frame::Error(m)) if m.contains("is alive")));
        // An incarnation that does not exist yet; oneself; out of range.
        assert!(is_error(&restart(&mut s, 0, 1, 5, now), "no incarnation 5"));
        assert!(is_error(&restart(&mut s, 0, 0, 0, now), "not another rank"));
        assert!(is_error(&restart(&mut s, 0, 9, 0, now), "not another rank"));
    }

    #[test]
    fn a_spare_slot_is_started_by_one_spawn_and_knows_whose() {
        let mut s = Store::new(4, Limits::default());
        s.allow_spawns();
        s.set_spares(2);
        let now = Instant::now();
        assert!(s.dead(2).is_some() && s.dead(3).is_some() && s.dead(1).is_none());
        // A fence does not wait for the spare slots.
        assert_eq!(
            s.request(0, Frame::Fence, now),
            Step::Wait(Pending::Fence { generation: 0 })
        );
        assert_eq!(s.request(1, Frame::Fence, now), Step::Answer(Frame::Ok));
        let Step::Wait(p) = restart(&mut s, 1, 3, 0, now) else {
            panic!("answered before the spawned process joined")
        };
        assert_eq!(s.take_spawns(), vec![(3, 1, None)]);
        assert_eq!(s.value(3, SPAWNED_BY_KEY), Some(&1u32.to_le_bytes()[..]));
        // Another rank's spawn asking for the same slot is told to pick another.
        assert!(is_error(&restart(&mut s, 0, 3, 0, now), SLOT_TAKEN));
        assert_eq!(s.request(3, Frame::Joined, now), Step::Answer(Frame::Ok));
        assert!(matches!(
            s.poll(1, &p, now),
            Some(Frame::Restarted {
                rank: 3,
                generation: 1,
                ..
            })
        ));
        // A first rank restarted by two survivors is still answered to both.
        s.rank_died(1, None, "killed by signal 9");
        let _ = restart(&mut s, 0, 1, 0, now);
        let _ = restart(&mut s, 3, 1, 0, now);
        assert_eq!(s.take_spawns(), vec![(1, 1, None)]);
    }

    fn get_frame(owner: u32, key: &str) -> Frame {
        Frame::Get {
            rank: owner,
            key: key.into(),
        }
    }

    #[test]
    fn a_spawned_slot_runs_its_roots_command_in_every_incarnation() {
        let mut s = Store::new(4, Limits::default());
        s.allow_spawns();
        s.set_spares(2);
        let now = Instant::now();
        let c = SpawnCommand::new("/bin/worker").args(["-x"]);
        let put = |s: &mut Store, rank: u32, value: Vec<u8>| {
            let f = Frame::Put {
                key: SPAWN_COMMAND_KEY.into(),
                value,
            };
            assert_eq!(s.request(rank, f, now), Step::Answer(Frame::Ok));
        };
        put(&mut s, 1, c.encode());
        let _ = restart(&mut s, 1, 3, 0, now);
        assert_eq!(s.take_spawns(), vec![(3, 1, Some(c.clone()))]);
        // An empty command: the job's program.
        put(&mut s, 0, Vec::new());
        let _ = restart(&mut s, 0, 2, 0, now);
        assert_eq!(s.take_spawns(), vec![(2, 1, None)]);
        // A restart in place of the spawned slot, by another rank, runs it again.
        assert_eq!(s.request(3, Frame::Joined, now), Step::Answer(Frame::Ok));
        s.rank_died(3, None, "killed by signal 9");
        let _ = restart(&mut s, 0, 3, 1, now);
        assert_eq!(s.take_spawns(), vec![(3, 2, Some(c))]);
        // Bytes that are no command refuse the start; the slot stays free.
        let mut s = Store::new(3, Limits::default());
        s.allow_spawns();
        s.set_spares(2);
        put(&mut s, 0, vec![1, 2, 3]);
        assert!(is_error(&restart(&mut s, 0, 2, 0, now), "does not decode"));
        assert!(s.take_spawns().is_empty() && s.dead(2).is_some());
    }
}
