//! Non-overtaking over transports that may reorder: per-sender sequence numbers.
//!
//! The engine keeps arrival order, so a transport that delivers one sender's messages on
//! one context out of send order (several fabric paths, a rendezvous RTS overtaking an
//! eager message, a provider without `FI_ORDER_SAS`) would break MPI's non-overtaking
//! rule. The sender numbers its messages per `(context, destination)` with a
//! [`SendSequencer`]; the receiver passes each arrival through an [`OrderGate`], which
//! hands messages to the engine in sequence order and holds early ones (bounded), as
//! Open MPI's ob1 does with its per-peer sequence numbers.
//!
//! ```
//! use steadfast_matching::{ContextId, Envelope, OrderGate, Rank, SendSequencer, Tag};
//! let ctx = ContextId(4);
//! let mut tx = SendSequencer::default();
//! let (s0, s1) = (tx.next(ctx, Rank(1)), tx.next(ctx, Rank(1)));
//! let env = |id| Envelope { context: ctx, source: Rank(0), tag: Tag(0), len: 0, payload: id };
//! let mut gate = OrderGate::new(64);
//! let mut out = Vec::new();
//! gate.admit(s1, env("second"), |e| out.push(e.payload)).unwrap(); // early: held
//! assert!(out.is_empty());
//! gate.admit(s0, env("first"), |e| out.push(e.payload)).unwrap();
//! assert_eq!(out, ["first", "second"]);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use crate::list::FxHasher;
use crate::types::{ContextId, Envelope, MatchError, QueueKind, Rank, Rejected};

type StreamKey = (ContextId, Rank);
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The sending side: the next sequence number per `(context, destination)`.
#[derive(Debug, Default, Clone)]
pub struct SendSequencer {
    next: FxMap<StreamKey, u64>,
}

impl SendSequencer {
    /// The sequence number of the next message to `dest` on `context`.
    pub fn next(&mut self, context: ContextId, dest: Rank) -> u64 {
        let n = self.next.entry((context, dest)).or_insert(0);
        let seq = *n;
        *n += 1;
        seq
    }

    /// Forgets `context` (its communicator was freed; a later one with the same id starts
    /// at 0, as its receivers' gates do).
    pub fn close(&mut self, context: ContextId) {
        self.next.retain(|(c, _), _| *c != context);
    }
}

#[derive(Debug)]
struct Stream<P> {
    next: u64,
    held: BTreeMap<u64, Envelope<P>>,
}

/// The receiving side: releases each sender's messages in sequence order (see the
/// module docs).
#[derive(Debug)]
pub struct OrderGate<P> {
    streams: FxMap<StreamKey, Stream<P>>,
    held: usize,
    max_held: usize,
}

impl<P> OrderGate<P> {
    /// A gate holding at most `max_held` early messages over all senders.
    pub fn new(max_held: usize) -> Self {
        OrderGate {
            streams: FxMap::default(),
            held: 0,
            max_held,
        }
    }

    /// Early messages held now.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Admits message number `seq` of its sender on its context: if it is the next one,
    /// it and every held message that follows it go to `deliver`, in order; if it is
    /// early, it is held. Returns how many messages went to `deliver`.
    ///
    /// # Errors
    /// The message comes back with [`MatchError::QueueFull`] (`QueueKind::OutOfOrder`) if
    /// `max_held` early messages are held, or [`MatchError::Duplicate`] if its number
    /// was already admitted (a transport bug; nothing is delivered twice).
    pub fn admit(
        &mut self,
        seq: u64,
        env: Envelope<P>,
        mut deliver: impl FnMut(Envelope<P>),
    ) -> Result<usize, Rejected<Envelope<P>>> {
        let key = (env.context, env.source);
        let stream = self.streams.entry(key).or_insert_with(|| Stream {
            next: 0,
            held: BTreeMap::new(),
        });
        if seq < stream.next || stream.held.contains_key(&seq) {
            return Err(Rejected {
                error: MatchError::Duplicate {
                    context: key.0,
                    sender: key.1,
                    seq,
                },
                item: env,
            });
        }
        if seq > stream.next {
            if self.held >= self.max_held {
                return Err(Rejected {
                    error: MatchError::QueueFull {
                        context: key.0,
                        queue: QueueKind::OutOfOrder,
                        limit: self.max_held,
                    },
                    item: env,
                });
            }
            stream.held.insert(seq, env);
            self.held += 1;
            return Ok(0);
        }
        deliver(env);
        stream.next += 1;
        let mut n = 1;
        while let Some(env) = stream.held.remove(&stream.next) {
            deliver(env);
            stream.next += 1;
            self.held -= 1;
            n += 1;
        }
        Ok(n)
    }

    /// The sender `source` of `context` failed: the messages held after a gap that will
    /// now never be filled go to `deliver` in sequence order (each was sent after the lost
    /// ones, so order among delivered messages still holds), and the stream is forgotten.
    /// Returns how many.
    pub fn flush_source(
        &mut self,
        context: ContextId,
        source: Rank,
        mut deliver: impl FnMut(Envelope<P>),
    ) -> usize {
        let Some(stream) = self.streams.remove(&(context, source)) else {
            return 0;
        };
        let n = stream.held.len();
        self.held -= n;
        stream.held.into_values().for_each(&mut deliver);
        n
    }

    /// Forgets `context` (its communicator was freed), handing out what was held.
    pub fn close(&mut self, context: ContextId, mut dropped: impl FnMut(Envelope<P>)) {
        let keys: Vec<StreamKey> = self
            .streams
            .keys()
            .filter(|(c, _)| *c == context)
            .copied()
            .collect();
        for key in keys {
            self.flush_source(key.0, key.1, &mut dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Tag;
    use proptest::prelude::*;

    fn env(ctx: u32, src: u32, id: u64) -> Envelope<u64> {
        Envelope {
            context: ContextId(ctx),
            source: Rank(src),
            tag: Tag(0),
            len: 0,
            payload: id,
        }
    }

    proptest! {
        /// Any interleaving of three senders' streams, each shuffled by the transport,
        /// comes out with every sender's messages in send order, none lost or doubled.
        #[test]
        fn any_arrival_order_comes_out_in_send_order(
            order in Just((0..60u64).collect::<Vec<_>>()).prop_shuffle()
        ) {
            // Message i is number i / 3 of sender i % 3.
            let mut gate = OrderGate::new(60);
            let mut out: Vec<u64> = Vec::new();
            for i in order {
                gate.admit(i / 3, env(1, (i % 3) as u32, i), |e| out.push(e.payload)).unwrap();
            }
            prop_assert_eq!(out.len(), 60);
            prop_assert_eq!(gate.held(), 0);
            for s in 0..3 {
                let mine: Vec<u64> = out.iter().copied().filter(|i| i % 3 == s).collect();
                let want: Vec<u64> = (0..20).map(|k| k * 3 + s).collect();
                prop_assert_eq!(mine, want);
            }
        }
    }

    #[test]
    fn bounded_and_duplicates_refused() {
        let mut gate = OrderGate::new(1);
        let mut out = Vec::new();
        gate.admit(2, env(1, 0, 2), |e| out.push(e.payload))
            .unwrap();
        let full = gate
            .admit(3, env(1, 0, 3), |e| out.push(e.payload))
            .unwrap_err();
        assert_eq!(full.item.payload, 3);
        assert!(matches!(
            full.error,
            MatchError::QueueFull {
                queue: QueueKind::OutOfOrder,
                limit: 1,
                ..
            }
        ));
        let dup = gate
            .admit(2, env(1, 0, 9), |e| out.push(e.payload))
            .unwrap_err();
        assert_eq!(
            dup.error.to_string(),
            "message 2 from rank 0 of context 1 was already admitted"
        );
        assert_eq!(gate.admit(0, env(1, 0, 0), |e| out.push(e.payload)), Ok(1));
        assert_eq!(gate.admit(1, env(1, 0, 1), |e| out.push(e.payload)), Ok(2));
        assert!(
            gate.admit(1, env(1, 0, 1), |_| {}).is_err(),
            "already delivered"
        );
        assert_eq!(out, [0, 1, 2]);
    }

    #[test]
    fn a_dead_senders_held_messages_are_flushed_in_order() {
        let mut gate = OrderGate::new(8);
        let mut out = Vec::new();
        for seq in [3, 1, 2] {
            gate.admit(seq, env(1, 2, seq), |e| out.push(e.payload))
                .unwrap();
        }
        gate.admit(1, env(2, 2, 1), |_| {}).unwrap();
        assert!(out.is_empty(), "message 0 never came");
        assert_eq!(
            gate.flush_source(ContextId(1), Rank(2), |e| out.push(e.payload)),
            3
        );
        assert_eq!(out, [1, 2, 3]);
        let mut dropped = Vec::new();
        gate.close(ContextId(2), |e| dropped.push(e.payload));
        assert_eq!(dropped, [1]);
        assert_eq!(gate.held(), 0);
    }

    #[test]
    fn sequencer_counts_per_context_and_destination() {
        let mut tx = SendSequencer::default();
        let (c, d) = (ContextId(1), ContextId(2));
        assert_eq!(tx.next(c, Rank(0)), 0);
        assert_eq!(tx.next(c, Rank(0)), 1);
        assert_eq!(tx.next(c, Rank(1)), 0);
        assert_eq!(tx.next(d, Rank(0)), 0);
        tx.close(c);
        assert_eq!(tx.next(c, Rank(0)), 0);
        assert_eq!(tx.next(d, Rank(0)), 1);
    }
}
