//! Synchronous sends (`MPI_Ssend`, MPI 4.1 section 3.4: complete only once the
//! matching receive has started), over self, shared memory and the fabric.
//!
//! The sender gives its message a sequence number and sets `tags::SYNC` with the
//! number in the wire tag's upper bits (over the fabric: in the messenger's word,
//! `tags::FABRIC_SYNC`); it registers `(destination, seq)` as pending.
//! The receiver's engine answers when the matcher matches the message with a receive
//! (at arrival against a posted receive, or when a receive is posted, or taken by a
//! matched probe): a zero-byte shm message with tag `SYNC_ACK | seq`, a zero-byte
//! fabric message with word `FABRIC_SYNC_ACK | seq`, or, to itself, a mark in its own
//! table. The send's request completes when its bytes left and its
//! answer came; a dead receiver or a revoke ends it through the usual checks
//! (`Comm::interrupted`), so it never hangs.
//!
//! Bounds: one pending entry per live synchronous send request (removed when the
//! request ends, or is dropped); at most one queued answer per synchronous message
//! received whose sender's ring was full, answers to dead peers are dropped.

use std::collections::{HashMap, VecDeque};

use steadfast_shm::ShmError;

use super::{Engine, Route};
use crate::world::matching::SyncToken;
use crate::world::tags::{sync_bits, sync_seq, SYNC, SYNC_ACK, SYNC_SEQ_MASK};

/// The synchronous sends of this process and the answers it owes.
#[derive(Debug, Default)]
pub(crate) struct SyncSends {
    next_seq: u32,
    /// (destination world rank, seq) -> answered.
    pending: HashMap<(u32, u32), bool>,
    /// Answers that found the sender's ring full: (its local rank, wire tag).
    answers_out: VecDeque<(u32, u64)>,
}

impl SyncSends {
    /// Registers a synchronous send to world rank `w`; its sequence number, one not in
    /// use towards `w` (at most `pending.len()` are, so the search is bounded).
    fn start(&mut self, w: u32) -> u32 {
        let mut seq = self.next_seq & SYNC_SEQ_MASK;
        while self.pending.contains_key(&(w, seq)) {
            seq = (seq + 1) & SYNC_SEQ_MASK;
        }
        self.next_seq = (seq + 1) & SYNC_SEQ_MASK;
        self.pending.insert((w, seq), false);
        seq
    }

    fn answered(&mut self, w: u32, seq: u32) {
        // An answer to a request already gone (dropped) is ignored.
        if let Some(done) = self.pending.get_mut(&(w, seq)) {
            *done = true;
        }
    }
}

impl Engine {
    /// Starts a synchronous send to world rank `w`: its sequence number, and the bits
    /// its wire tag gets.
    pub fn sync_start(&mut self, w: u32) -> (u32, u64) {
        let seq = self.sync.start(w);
        (seq, SYNC | sync_bits(seq))
    }

    /// Whether the synchronous send `(w, seq)` was answered (its receive started).
    pub fn sync_answered(&self, w: u32, seq: u32) -> bool {
        self.sync.pending.get(&(w, seq)).copied().unwrap_or(false)
    }

    /// Forgets the synchronous send `(w, seq)` (its request ended).
    pub fn sync_end(&mut self, w: u32, seq: u32) {
        self.sync.pending.remove(&(w, seq));
    }

    /// The synchronous sender a message from world rank `w` with `wire_tag` answers to.
    pub(super) fn sync_token(w: u32, wire_tag: u64) -> Option<SyncToken> {
        (wire_tag & SYNC != 0).then(|| SyncToken {
            world: w,
            seq: sync_seq(wire_tag),
        })
    }

    /// A message of a synchronous send was matched: answer its sender.
    pub(super) fn sync_matched(&mut self, t: SyncToken) {
        if t.world == self.rank {
            self.sync_answer_arrived(t.world, t.seq);
            return;
        }
        match self.routes[t.world as usize] {
            Route::Shm(l) => {
                let tag = SYNC_ACK | sync_bits(t.seq);
                if !self.sync.answers_out.is_empty() || !self.try_answer(l, tag) {
                    self.sync.answers_out.push_back((l, tag));
                }
            }
            Route::Fabric => self.answer_over_fabric(t.world, t.seq),
            Route::Local => log::warn!("a synchronous message of this rank off its own path"),
        }
    }

    /// Sends one answer; `false` when the ring is full (kept for later).
    fn try_answer(&mut self, l: u32, tag: u64) -> bool {
        let Some(shm) = self.shm.as_mut() else {
            return true;
        };
        match shm.try_send(l, tag, &[]) {
            Ok(()) => true,
            Err(ShmError::WouldBlock) => false,
            // A dead sender needs no answer; other errors are logged and dropped (the
            // sender's wait still ends through its failure checks).
            Err(e) => {
                log::debug!("answering a synchronous send of local rank {l}: {e}");
                true
            }
        }
    }

    /// Retries the answers that found a full ring, in order (from `progress`).
    pub(super) fn flush_sync_answers(&mut self) {
        while let Some(&(l, tag)) = self.sync.answers_out.front() {
            if !self.try_answer(l, tag) {
                break;
            }
            self.sync.answers_out.pop_front();
        }
    }

    /// The answer to synchronous send `seq` arrived from world rank `w`.
    pub(super) fn sync_answer_arrived(&mut self, w: u32, seq: u32) {
        self.sync.answered(w, seq);
    }

    /// Whether an arrival's tag is a synchronous send's answer.
    pub(super) fn is_sync_answer(wire_tag: u64) -> bool {
        wire_tag & SYNC_ACK != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_skip_those_in_use_and_wrap() {
        let mut s = SyncSends {
            next_seq: SYNC_SEQ_MASK,
            ..SyncSends::default()
        };
        s.pending.insert((3, 0), false);
        assert_eq!(s.start(3), SYNC_SEQ_MASK);
        assert_eq!(s.start(3), 1, "0 is in use towards rank 3");
        assert_eq!(s.start(4), 2);
        assert_eq!(s.pending.len(), 4);
    }

    #[test]
    fn answers_mark_only_pending_sends() {
        let mut s = SyncSends::default();
        let a = s.start(1);
        s.answered(2, a);
        assert_eq!(
            s.pending.get(&(1, a)),
            Some(&false),
            "another rank's answer"
        );
        s.answered(1, a);
        assert_eq!(s.pending.get(&(1, a)), Some(&true));
        s.pending.remove(&(1, a));
        s.answered(1, a);
        assert!(s.pending.is_empty(), "a late answer creates no entry");
    }
}
