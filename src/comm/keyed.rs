//! Exchanges among some members of a communicator that several threads of a process may
//! run at once on it, told apart by a key: [`Comm::create_group`]'s, whose tag tells
//! apart the creations that may run at the same time on one parent (MPI 4.1 §7.4.2:
//! `MPI_Comm_create_group` is collective over the group only, and concurrent calls on
//! one parent differ in their tags).
//!
//! Every keyed exchange's messages travel on one tag of the communicator ([`TAG`]),
//! the key in front. A receive takes whatever message of that tag its source sent
//! (`Engine::take_envelope`, with the engine held, so no other thread takes it
//! meanwhile) and, when the key is another exchange's, sets it aside in the engine's
//! [`Mail`] for that exchange, which looks there first. Between two members at most one
//! message of a key is on its way at a time: the exchanges that share a key are the
//! rounds of one creation, and the later creations with the same group and tag, and
//! each round of a pair begins only after the pair's previous one is over at both ends
//! ([`Comm::exchange_keyed`] sends and receives in `exchange_live`'s order: the lower
//! rank sends first, and a member sends its next round only once it has received the
//! current one from every member). A message set aside thus never overtakes another of
//! its key.
//!
//! The messages set aside for an exchange that failed stay until the communicator is
//! freed (`Engine::remove_comm` forgets them).

use std::collections::{HashMap, VecDeque};

use steadfast_agreement::CommId;

use super::give_up::GiveUpClock;
use super::{Comm, CommError, Spin};
use crate::world::engine::Engine;

/// The tag of the keyed exchanges' messages. `split`'s exchange uses it too (its
/// messages have no key): a split of a communicator at the same time as a creation of a
/// subgroup's on it, from another thread, could take each other's messages, as before
/// the creations had keys.
const TAG: u32 = crate::world::tags::MAX_TAG - 1;

/// Bytes of the key in front of each message.
const KEY_LEN: usize = 16;

/// An exchange's key: the creation's (a hash of its group and tag) and its step.
pub(crate) type Key = (u64, u64);

/// Messages taken by a keyed exchange for another: per (communicator, source comm
/// rank, key), in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Mail(HashMap<(CommId, u32, Key), VecDeque<Vec<u8>>>);

impl Mail {
    fn take(&mut self, comm: CommId, src: u32, key: Key) -> Option<Vec<u8>> {
        let slot = (comm, src, key);
        let queue = self.0.get_mut(&slot)?;
        let body = queue.pop_front();
        if queue.is_empty() {
            self.0.remove(&slot);
        }
        body
    }

    fn keep(&mut self, comm: CommId, src: u32, key: Key, body: Vec<u8>) {
        self.0.entry((comm, src, key)).or_default().push_back(body);
    }

    /// Drops what was set aside on communicator `comm` (freed).
    pub(crate) fn forget(&mut self, comm: CommId) {
        if !self.0.is_empty() {
            self.0.retain(|(c, _, _), _| *c != comm);
        }
    }
}

impl Comm {
    /// Sends `mine` under `key` to every rank of `live` but this one and hands each
    /// one's message under the same key (exactly `mine.len()` bytes, else `Protocol`
    /// naming `what`) to `take`, as `exchange_live` does; other threads may run keyed
    /// exchanges with other keys on this communicator meanwhile (module doc).
    ///
    /// # Errors
    /// `ProcFailed` once a rank of `live` is known failed while a message is awaited
    /// (after the grace of [`GiveUpClock`] when the failure came during the call);
    /// `Revoked`; `Protocol` for a message of the wrong length.
    pub(super) fn exchange_keyed(
        &self,
        live: &[u32],
        key: Key,
        mine: &[u8],
        what: &'static str,
        mut take: impl FnMut(u32, &[u8]),
    ) -> Result<(), CommError> {
        let me = self.rank();
        let clock = GiveUpClock::start(self.failed_ranks().iter().any(|r| live.contains(r)));
        let mut msg = Vec::with_capacity(KEY_LEN + mine.len());
        msg.extend_from_slice(&key.0.to_le_bytes());
        msg.extend_from_slice(&key.1.to_le_bytes());
        msg.extend_from_slice(mine);
        for &r in live {
            if r == me {
                continue;
            }
            let got = if me < r {
                self.send(r, TAG, &msg)?;
                self.recv_keyed(r, key, live, &clock)?
            } else {
                let got = self.recv_keyed(r, key, live, &clock)?;
                self.send(r, TAG, &msg)?;
                got
            };
            if got.len() != mine.len() {
                return Err(CommError::Protocol {
                    rank: r,
                    problem: what,
                });
            }
            take(r, &got);
        }
        Ok(())
    }

    /// The body of `src`'s next message under `key`, waiting for it; gives up as
    /// `exchange_live`'s receives do when a rank of `live` is known failed.
    fn recv_keyed(
        &self,
        src: u32,
        key: Key,
        live: &[u32],
        clock: &GiveUpClock,
    ) -> Result<Vec<u8>, CommError> {
        Spin::until(self, || {
            match self.engine.try_lock() {
                Some(mut e) => {
                    if let Some(body) = self.take_keyed(&mut e, src, key)? {
                        return Ok(Some(body));
                    }
                }
                None if self.is_revoked() => return Err(CommError::Revoked),
                None => {}
            }
            if self.any_failed()
                && self.failed_ranks().iter().any(|r| live.contains(r))
                && clock.expired()
            {
                return Err(CommError::ProcFailed {
                    ranks: self.failed_ranks(),
                });
            }
            Ok(None)
        })
    }

    /// `src`'s next message under `key` if one arrived, with the engine held: first
    /// one set aside for it, else the messages of [`TAG`] from `src` in order, each
    /// other key's set aside.
    fn take_keyed(&self, e: &mut Engine, src: u32, key: Key) -> Result<Option<Vec<u8>>, CommError> {
        if let Some(body) = e.keyed_mail_mut().take(self.id, src, key) {
            return Ok(Some(body));
        }
        let ctx = self.probe_plan(e, Some(src), Some(TAG))?;
        loop {
            let env = match e.take_envelope(ctx, Some(src), Some(TAG)) {
                Ok(Some(env)) => env,
                Ok(None) => return Ok(None),
                Err(err) => return Err(self.probe_error(e, err)),
            };
            let mut buf = vec![0u8; env.len];
            super::p2p::outcome_result(e.receive_taken(env, &mut buf))?;
            if buf.len() < KEY_LEN {
                return Err(CommError::Protocol {
                    rank: src,
                    problem: "a keyed exchange's message shorter than its key",
                });
            }
            let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            let theirs = (word(0), word(8));
            let body = buf[KEY_LEN..].to_vec();
            if theirs == key {
                return Ok(Some(body));
            }
            e.keyed_mail_mut().keep(self.id, src, theirs, body);
        }
    }
}
