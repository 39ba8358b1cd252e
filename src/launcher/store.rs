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
        }
    }

    /// How `rank` ended, if it has.
    pub(crate) fn dead(&self, rank: u32) -> Option<&str> {
        self.dead.get(&rank).map(String::as_str)
    }

    /// The value `rank` stored under `key`.
    pub(crate) fn value(&self, rank: u32, key: &str) -> Option<&[u8]> {
        self.values.get(rank as usize)?.get(key).map(Vec::as_slice)
    }

    /// Records that `rank` ended (`how` says how); its values stay readable.
    pub(crate) fn rank_died(&mut self, rank: u32, how: &str) {
        if rank < self.size {
            self.dead.insert(rank, how.to_string());
        }
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
            Frame::Fence => {
                self.fenced[rank as usize] = true;
                let pending = Pending::Fence {
                    generation: self.fence_generation,
                };
                self.step(rank, pending, now)
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
        }
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
        s.rank_died(1, "exited");
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
        s.rank_died(2, "killed by signal 9");
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

    fn get_frame(owner: u32, key: &str) -> Frame {
        Frame::Get {
            rank: owner,
            key: key.into(),
        }
    }
}
