//! The engine's fabric half of point-to-point: every user message from a rank reached
//! through the fabric comes from the messenger's software-matching pool
//! (`steadfast_fabric::Messenger::take_arrival`) into the process's one matcher, as the
//! shm arrivals do; a rendezvous message matched by a receive is read into its buffer
//! afterwards (`Messenger::pull`), the receive staying in progress until the read ends.
//!
//! Control messages keep their own posted receive (`poll_control`): the pool takes user
//! tags only (bit 39, `tags::CONTROL`, clear).

use std::sync::Arc;

use steadfast_fabric::{ArrivalData, Error as FabricError, RemoteMessage, Request};

use super::{Engine, DRAIN_MAX};
use crate::world::matching::{withdrawn, Got, Payload, Placement, RecvFailure, RecvKey, SyncToken};
use crate::world::tags::{
    fabric_sync_word, user_tag, CONTEXT_MASK, FABRIC_SYNC, FABRIC_SYNC_ACK, SYNC_SEQ_MASK,
    USER_TAG_BITS,
};

/// What [`Engine::drain_fabric`] makes of one arrival.
enum Taken {
    /// A synchronous send's answer from (world rank, sequence number).
    Answer(u32, u32),
    /// Copied into the receive `p` names (nothing copied when `truncated`).
    Placed {
        p: Placement,
        tag: u32,
        len: usize,
        truncated: bool,
        sync: Option<SyncToken>,
    },
    /// To deliver: (context, world rank, tag, length, payload).
    Deliver(u32, u32, u32, usize, Payload),
}

impl Engine {
    /// Takes what the messenger's pool received (at most [`DRAIN_MAX`]) into the
    /// matcher: an eager message straight into the buffer of the receive it completes
    /// when one is posted (completed there, as the shm latency path does), else copied
    /// out; a rendezvous message as a [`Payload::FabricPull`]; a synchronous send's
    /// answer is taken before matching. `stop_at_placed`: stop once a message was
    /// placed (`drain_for_receive`). Returns how many.
    pub(super) fn drain_fabric(&mut self, stop_at_placed: bool) -> usize {
        let Some(fab) = self.fab.as_mut() else {
            return 0;
        };
        if let Err(e) = fab.progress() {
            log::debug!("fabric progress: {e}");
            return 0;
        }
        let mut taken = 0;
        while taken < DRAIN_MAX && !self.matching.held_full() {
            let Some(fab) = self.fab.as_mut() else { break };
            let matching = &self.matching;
            let arrived = fab.take_arrival(|a| {
                let w = a.source;
                let word = a.extra.unwrap_or(0);
                if word & FABRIC_SYNC_ACK != 0 {
                    return Taken::Answer(w, word & SYNC_SEQ_MASK);
                }
                let sync = (word & FABRIC_SYNC != 0).then_some(SyncToken {
                    world: w,
                    seq: word & SYNC_SEQ_MASK,
                });
                let ctx = ((a.tag >> USER_TAG_BITS) & CONTEXT_MASK) as u32;
                let tag = user_tag(a.tag);
                let payload = match a.data {
                    ArrivalData::Eager(bytes) => match matching.placement(ctx, w, tag) {
                        Some((ptr, cap, p)) => {
                            let truncated = bytes.len() > cap;
                            if !truncated {
                                // SAFETY: `ptr` is a posted receive's buffer, valid for
                                // `cap` bytes while posted (`matching.rs`); `bytes` is the
                                // messenger's staging buffer, a distinct allocation.
                                unsafe {
                                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len())
                                };
                            }
                            return Taken::Placed {
                                p,
                                tag,
                                len: a.len,
                                truncated,
                                sync,
                            };
                        }
                        None => Payload::Bytes(bytes.to_vec(), sync),
                    },
                    ArrivalData::Remote(message) => Payload::FabricPull { message, sync },
                };
                Taken::Deliver(ctx, w, tag, a.len, payload)
            });
            let Some(arrived) = arrived else { break };
            taken += 1;
            match arrived {
                Taken::Answer(w, seq) => self.sync_answer_arrived(w, seq),
                Taken::Placed {
                    p,
                    tag,
                    len,
                    truncated,
                    sync,
                } => {
                    // The receive has started: a synchronous sender may complete.
                    if let Some(t) = sync {
                        self.sync_matched(t);
                    }
                    let got = Got {
                        source: p.source,
                        tag,
                        len,
                    };
                    let outcome = if truncated {
                        Err(RecvFailure::Truncated {
                            got,
                            capacity: p.cap,
                        })
                    } else {
                        Ok(got)
                    };
                    // No other call since `placement`: still the receive it matches.
                    self.matching.finish_placed(p, outcome);
                    if stop_at_placed {
                        break;
                    }
                }
                Taken::Deliver(ctx, w, tag, len, payload) => {
                    let d = self.matching.deliver(ctx, w, tag, len, payload);
                    self.handle_delivery(d);
                }
            }
        }
        taken
    }

    /// Starts reading a matched rendezvous message into its receive's buffer; the
    /// receive completes when the read does ([`Engine::pull_outcome`]).
    pub(super) fn start_fabric_pull(
        &mut self,
        key: RecvKey,
        message: RemoteMessage,
        got: Got,
        ctx: u32,
        (ptr, cap): (*mut u8, usize),
    ) {
        let Some(fab) = self.fab.as_mut() else {
            return self.matching.finish(key, Err(RecvFailure::Freed));
        };
        let world = message.source();
        // SAFETY: `ptr` is the matched receive's buffer, valid for `cap` bytes until the
        // receive completes or is cancelled (`matching.rs`); a cancel waits for the read
        // to end (`cancel_pull`).
        match unsafe { fab.pull(message, ptr, cap) } {
            Ok(req) => self.matching.start_pull(key, req, got, ctx, world),
            Err(e) => {
                let failure = self.fabric_failure(e, got, cap);
                self.matching.finish(key, Err(failure));
            }
        }
    }

    /// Ends the receive `key` whose read of message `got` failed with `e`; a message
    /// its sender withdrew leaves the receive waiting for why (`Matching::withdraw`).
    fn finish_pull_failed(&mut self, key: RecvKey, e: FabricError, got: Got, cap: usize) {
        if let FabricError::Withdrawn { .. } = e {
            return self.matching.withdraw(key);
        }
        let failure = self.fabric_failure(e, got, cap);
        self.matching.finish(key, Err(failure));
    }

    /// Tests the read of a receive matched with a rendezvous message, if it has one:
    /// records its outcome once done.
    pub(super) fn pull_outcome(&mut self, key: RecvKey) {
        let Some((req, got)) = self.matching.pulling(key) else {
            return;
        };
        let Some(fab) = self.fab.as_mut() else {
            return self.matching.finish(key, Err(RecvFailure::Freed));
        };
        let cap = self.matching.buffer(key).1;
        match fab.test(req) {
            Ok(None) => {}
            Ok(Some(_)) => self.matching.finish(key, Ok(got)),
            Err(e) => self.finish_pull_failed(key, e, got, cap),
        }
    }

    /// Finishes the read of a receive being cancelled: a matched receive is no longer
    /// cancellable (MPI), and cutting the read short would fail its sender's send, so
    /// the read is waited for (the messenger watches the sender meanwhile); its outcome
    /// is recorded.
    pub(super) fn cancel_pull(&mut self, key: RecvKey) {
        let Some((req, got)) = self.matching.pulling(key) else {
            return;
        };
        let cap = self.matching.buffer(key).1;
        match self.fab.as_mut().map(|f| f.wait(req)) {
            Some(Ok(_)) => self.matching.finish(key, Ok(got)),
            None => self.matching.finish(key, Err(RecvFailure::Freed)),
            Some(Err(e)) => self.finish_pull_failed(key, e, got, cap),
        }
    }

    /// Reads a rendezvous message taken out of the matcher (`MPI_Mrecv`), sent on
    /// context `ctx`, into `(ptr, cap)`, waiting for the read; the engine runs a round
    /// now and then.
    pub(super) fn pull_now(
        &mut self,
        message: RemoteMessage,
        (ptr, cap): (*mut u8, usize),
        got: Got,
        ctx: u32,
    ) -> Result<(), RecvFailure> {
        let world = message.source();
        let Some(fab) = self.fab.as_mut() else {
            return Err(RecvFailure::Freed);
        };
        // SAFETY: `(ptr, cap)` is the caller's receive buffer (`move_payload`'s
        // contract), written only by this read, which ends before we return (or the
        // messenger fences the buffer: `Error::Broken`).
        let req: Request = match unsafe { fab.pull(message, ptr, cap) } {
            Ok(r) => r,
            Err(e) => return Err(self.fabric_failure(e, got, cap)),
        };
        let mut polls: u32 = 0;
        loop {
            let Some(fab) = self.fab.as_mut() else {
                return Err(RecvFailure::Freed);
            };
            match fab.test(req) {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {}
                Err(FabricError::Withdrawn { .. }) => {
                    return Err(self.withdrawn_end(ctx, world, got))
                }
                Err(e) => return Err(self.fabric_failure(e, got, cap)),
            }
            polls = polls.wrapping_add(1);
            if polls % 64 == 0 {
                self.progress();
            }
        }
    }

    /// How a receive of message `got` from world rank `world` on `ctx`, withdrawn by
    /// its sender, ends (`matching_withdrawn.rs`): waits, running the engine, until
    /// this process learns of the revoke or of the sender's failure, at most
    /// `WITHDRAWN_WAIT`.
    fn withdrawn_end(&mut self, ctx: u32, world: u32, got: Got) -> RecvFailure {
        let since = std::time::Instant::now();
        loop {
            if self.excluded() {
                return RecvFailure::Excluded;
            }
            if self.matching.is_revoked(ctx) {
                return RecvFailure::Revoked;
            }
            if self.is_failed(world) {
                return RecvFailure::ProcFailed(got.source);
            }
            if since.elapsed() >= withdrawn::WITHDRAWN_WAIT {
                return withdrawn::unexplained(world);
            }
            self.progress();
            std::thread::yield_now();
        }
    }

    /// Answers synchronous send `seq` of world rank `w`, reached through the fabric: a
    /// zero-byte message (injected: done at once) with tag 0 and the answer's word.
    pub(super) fn answer_over_fabric(&mut self, w: u32, seq: u32) {
        let Some(fab) = self.fab.as_mut() else {
            return;
        };
        let word = fabric_sync_word(FABRIC_SYNC_ACK, seq);
        // SAFETY: an empty message: no buffer to keep alive (it is injected, and a
        // request, if any, is waited for below).
        match unsafe { fab.isend_with(w, 0, &[], word) } {
            Ok(None) => {}
            Ok(Some(req)) => {
                if let Err(e) = fab.wait(req) {
                    log::debug!("answering a synchronous send of rank {w}: {e}");
                }
            }
            // A dead sender needs no answer; its wait ends through its failure checks.
            Err(e) => log::debug!("answering a synchronous send of rank {w}: {e}"),
        }
    }

    /// Lets a rendezvous sender go (its message will never be received).
    pub(super) fn decline_fabric(&mut self, message: RemoteMessage) {
        if let Some(fab) = self.fab.as_mut() {
            fab.decline(message);
        }
    }

    /// The failure of a receive of message `got` from a fabric error; a dead sender is
    /// reported.
    fn fabric_failure(&mut self, e: FabricError, got: Got, cap: usize) -> RecvFailure {
        match e {
            FabricError::Truncated { message_len, .. } => RecvFailure::Truncated {
                got: Got {
                    len: message_len.unwrap_or(got.len),
                    ..got
                },
                capacity: cap,
            },
            FabricError::PeerUnreachable { peer, ref reason } => {
                self.report_failure(peer, format!("fabric: {reason}"));
                RecvFailure::ProcFailed(got.source)
            }
            other => RecvFailure::Fabric(Arc::new(other)),
        }
    }
}
