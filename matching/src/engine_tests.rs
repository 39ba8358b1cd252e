//! The engine's rules, one scenario each, with the expected outcome spelled out (the
//! random comparison against the reference model is `tests/model.rs`).

use super::*;
use crate::types::{Rank, Tag};

const C: ContextId = ContextId(5);

fn engine() -> Engine<&'static str, u32> {
    let mut e = Engine::new(Limits::default());
    e.open_context(C, 4).unwrap();
    e
}

fn msg(source: u32, tag: u32, id: u32) -> Envelope<u32> {
    Envelope {
        context: C,
        source: Rank(source),
        tag: Tag(tag),
        len: 4,
        payload: id,
    }
}

fn spec(source: Option<u32>, tag: Option<u32>) -> RecvSpec {
    RecvSpec::new(source.map(Rank), tag.map(Tag))
}

fn posted(o: PostOutcome<&'static str, u32>) -> (RecvId, bool) {
    match o {
        PostOutcome::Posted {
            id,
            failure_pending,
        } => (id, failure_pending),
        PostOutcome::Matched(m) => panic!("expected posted, got {m:?}"),
    }
}

fn matched(a: Arrival<&'static str, u32>) -> (&'static str, u32) {
    match a {
        Arrival::Matched(m) => (m.recv, m.message.payload),
        Arrival::Queued => panic!("expected a match"),
    }
}

fn events(e: &mut Engine<&'static str, u32>) -> Vec<Event<&'static str, u32>> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

#[test]
fn arrival_takes_the_earliest_posted_receive_that_fits() {
    let mut e = engine();
    posted(e.post_recv(C, spec(Some(2), Some(9)), "other").unwrap());
    posted(e.post_recv(C, spec(None, None), "wild").unwrap());
    posted(e.post_recv(C, spec(Some(1), Some(5)), "exact").unwrap());
    assert_eq!(matched(e.deliver(msg(1, 5, 0)).unwrap()), ("wild", 0));
    assert_eq!(matched(e.deliver(msg(1, 5, 1)).unwrap()), ("exact", 1));
    assert_eq!(e.deliver(msg(1, 5, 2)).unwrap(), Arrival::Queued);
    assert_eq!(e.posted_len(C).unwrap(), 1);
}

#[test]
fn would_match_predicts_deliver() {
    let mut e = engine();
    assert_eq!(e.would_match(C, Rank(1), Tag(5)), Ok(false));
    posted(e.post_recv(C, spec(None, Some(5)), "w").unwrap());
    assert_eq!(e.would_match(C, Rank(1), Tag(5)), Ok(true));
    assert_eq!(e.would_match(C, Rank(1), Tag(6)), Ok(false));
    assert_eq!(matched(e.deliver(msg(1, 5, 0)).unwrap()), ("w", 0));
    assert_eq!(e.would_match(C, Rank(1), Tag(5)), Ok(false));
    assert!(e.would_match(C, Rank(4), Tag(5)).is_err());
}

#[test]
fn peek_match_names_the_receive_deliver_completes() {
    let mut e = engine();
    assert_eq!(e.peek_match(C, Rank(1), Tag(5)), Ok(None));
    posted(e.post_recv(C, spec(Some(1), Some(5)), "exact").unwrap());
    posted(e.post_recv(C, spec(None, None), "any").unwrap());
    assert_eq!(e.peek_match(C, Rank(1), Tag(5)), Ok(Some(&"exact")));
    assert_eq!(e.peek_match(C, Rank(2), Tag(5)), Ok(Some(&"any")));
    assert_eq!(matched(e.deliver(msg(1, 5, 0)).unwrap()), ("exact", 0));
    assert_eq!(e.peek_match(C, Rank(1), Tag(5)), Ok(Some(&"any")));
    assert!(e.peek_match(C, Rank(4), Tag(5)).is_err());
    e.revoke(C).unwrap();
    assert_eq!(
        e.peek_match(C, Rank(1), Tag(5)),
        Err(MatchError::Revoked(C))
    );
}

#[test]
fn one_senders_messages_do_not_overtake() {
    let mut e = engine();
    for i in 0..3 {
        e.deliver(msg(3, 7, i)).unwrap();
    }
    e.deliver(msg(2, 7, 9)).unwrap();
    let order: Vec<u32> = (0..3)
        .map(
            |_| match e.post_recv(C, spec(Some(3), None), "r").unwrap() {
                PostOutcome::Matched(m) => m.message.payload,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(order, [0, 1, 2]);
    match e.post_recv(C, spec(None, Some(7)), "w").unwrap() {
        PostOutcome::Matched(m) => assert_eq!(m.message.payload, 9),
        other => panic!("{other:?}"),
    }
}

#[test]
fn mprobe_takes_the_message_so_no_receive_can() {
    let mut e = engine();
    e.deliver(msg(1, 1, 10)).unwrap();
    e.deliver(msg(1, 1, 11)).unwrap();
    assert_eq!(e.probe(C, spec(None, None)).unwrap().unwrap().payload, 10);
    assert_eq!(
        e.mprobe(C, spec(Some(1), Some(1)))
            .unwrap()
            .unwrap()
            .payload,
        10
    );
    match e.post_recv(C, spec(None, None), "r").unwrap() {
        PostOutcome::Matched(m) => assert_eq!(m.message.payload, 11),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.mprobe(C, spec(None, None)).unwrap(), None);
}

#[test]
fn cancel_succeeds_only_while_unmatched() {
    let mut e = engine();
    let (a, _) = posted(e.post_recv(C, spec(Some(1), None), "a").unwrap());
    let (b, _) = posted(e.post_recv(C, spec(Some(1), None), "b").unwrap());
    assert_eq!(e.cancel(b), Some("b"));
    assert_eq!(e.cancel(b), None, "cancelled once");
    assert_eq!(matched(e.deliver(msg(1, 0, 1)).unwrap()), ("a", 1));
    assert_eq!(e.cancel(a), None, "already matched");
    // A stale id never names a receive of a later opening of the same context.
    e.close_context(C).unwrap();
    e.open_context(C, 4).unwrap();
    posted(e.post_recv(C, spec(Some(1), None), "new").unwrap());
    assert_eq!(e.cancel(a), None);
    assert_eq!(e.posted_len(C).unwrap(), 1);
}

#[test]
fn wildcard_receive_reports_pending_failure_and_stays_posted() {
    let mut e = engine();
    let (_, pending) = posted(e.post_recv(C, spec(None, Some(1)), "w").unwrap());
    assert!(!pending);
    e.notify_failure(C, Rank(2)).unwrap();
    assert_eq!(events(&mut e), [Event::FailurePending { recv: "w" }]);
    assert!(e.failure_pending(C).unwrap());
    let (w2, pending) = posted(e.post_recv(C, spec(None, None), "w2").unwrap());
    assert!(pending, "posted while a failure is unacknowledged");
    assert_eq!(
        e.probe(C, spec(None, None)).unwrap_err(),
        MatchError::ProcFailedPending(C)
    );
    // Still posted: a live sender's message completes it.
    assert_eq!(matched(e.deliver(msg(0, 1, 3)).unwrap()), ("w", 3));
    assert_eq!(e.ack_failures(C).unwrap(), 1);
    assert!(!e.failure_pending(C).unwrap());
    let (_, pending) = posted(e.post_recv(C, spec(None, None), "w3").unwrap());
    assert!(!pending, "acknowledged");
    assert_eq!(
        e.cancel(w2),
        Some("w2"),
        "a pending wildcard can be cancelled"
    );
}

#[test]
fn named_dead_source_fails_but_its_waiting_messages_are_delivered() {
    let mut e = engine();
    e.deliver(msg(2, 4, 20)).unwrap();
    posted(e.post_recv(C, spec(Some(2), Some(5)), "named").unwrap());
    posted(e.post_recv(C, spec(Some(1), Some(5)), "live").unwrap());
    e.notify_failure(C, Rank(2)).unwrap();
    let err = MatchError::ProcFailed {
        context: C,
        rank: Rank(2),
    };
    assert_eq!(
        events(&mut e),
        [Event::RecvFailed {
            recv: "named",
            error: err
        }]
    );
    e.notify_failure(C, Rank(2)).unwrap();
    assert!(events(&mut e).is_empty(), "a second notice changes nothing");
    assert!(e.has_message_from(C, Rank(2)).unwrap());
    match e.post_recv(C, spec(Some(2), None), "late").unwrap() {
        PostOutcome::Matched(m) => assert_eq!(m.message.payload, 20),
        other => panic!("{other:?}"),
    }
    let r = e.post_recv(C, spec(Some(2), None), "again").unwrap_err();
    assert_eq!((r.error, r.item), (err, "again"));
    assert_eq!(e.probe(C, spec(Some(2), None)).unwrap_err(), err);
    assert_eq!(e.failed_ranks(C).unwrap(), [Rank(2)]);
    assert_eq!(e.posted_len(C).unwrap(), 1, "the live receive is untouched");
}

#[test]
fn revoke_completes_everything_with_revoked() {
    let mut e = engine();
    posted(e.post_recv(C, spec(None, None), "a").unwrap());
    e.deliver(msg(0, 0, 1)).unwrap(); // matches "a"
    posted(e.post_recv(C, spec(Some(1), None), "b").unwrap());
    e.deliver(msg(3, 3, 2)).unwrap();
    e.revoke(C).unwrap();
    let r = MatchError::Revoked(C);
    assert_eq!(
        events(&mut e),
        [
            Event::RecvFailed {
                recv: "b",
                error: r
            },
            Event::MessageDropped {
                message: msg(3, 3, 2),
                error: r
            },
        ]
    );
    assert!(e.is_revoked(C).unwrap());
    assert_eq!(e.post_recv(C, spec(None, None), "c").unwrap_err().error, r);
    assert_eq!(e.deliver(msg(1, 1, 3)).unwrap_err().item.payload, 3);
    assert_eq!(e.probe(C, spec(None, None)).unwrap_err(), r);
    e.revoke(C).unwrap();
    assert!(events(&mut e).is_empty());
}

#[test]
fn early_messages_wait_for_their_context() {
    let mut e: Engine<&str, u32> = Engine::new(Limits {
        max_early: 2,
        ..Limits::default()
    });
    let d = ContextId(9);
    let early = |s, id| Envelope {
        context: d,
        source: Rank(s),
        tag: Tag(0),
        len: 0,
        payload: id,
    };
    assert_eq!(e.deliver(early(1, 1)).unwrap(), Arrival::Queued);
    assert_eq!(e.deliver(early(5, 2)).unwrap(), Arrival::Queued);
    let full = e.deliver(early(1, 3)).unwrap_err();
    assert_eq!(
        (full.error, full.item.payload),
        (
            MatchError::QueueFull {
                context: d,
                queue: QueueKind::Early,
                limit: 2
            },
            3
        )
    );
    e.open_context(d, 2).unwrap();
    assert_eq!(e.early_len(), 0);
    assert_eq!(e.unexpected_len(d).unwrap(), 1);
    assert!(matches!(
        events(&mut e).as_slice(),
        [Event::MessageDropped {
            error: MatchError::RankOutOfRange { .. },
            ..
        }]
    ));
    assert_eq!(e.open_context(d, 2), Err(MatchError::ContextExists(d)));
}

#[test]
fn queues_are_bounded_and_hand_back_what_they_refuse() {
    let mut e: Engine<&str, u32> = Engine::new(Limits {
        max_posted: 1,
        max_unexpected: 1,
        max_early: 0,
    });
    e.open_context(C, 2).unwrap();
    posted(e.post_recv(C, spec(Some(0), Some(0)), "a").unwrap());
    let r = e.post_recv(C, spec(Some(0), Some(1)), "b").unwrap_err();
    assert_eq!(r.item, "b");
    assert!(matches!(
        r.error,
        MatchError::QueueFull {
            queue: QueueKind::Posted,
            limit: 1,
            ..
        }
    ));
    e.deliver(msg(1, 1, 1)).unwrap();
    let r = e.deliver(msg(1, 1, 2)).unwrap_err();
    assert_eq!(r.item.payload, 2);
    assert_eq!(
        r.error.to_string(),
        "the unexpected-message queue of context 5 is full (1 entries)"
    );
    let r = e.deliver(msg(2, 0, 3)).unwrap_err();
    assert_eq!(
        r.error.to_string(),
        "rank 2 is outside context 5 (size 2)",
        "names the value and the bound"
    );
}

#[test]
fn close_fails_what_is_left() {
    let mut e = engine();
    posted(e.post_recv(C, spec(None, None), "a").unwrap());
    e.close_context(C).unwrap();
    assert_eq!(
        events(&mut e),
        [Event::RecvFailed {
            recv: "a",
            error: MatchError::UnknownContext(C)
        }]
    );
    assert_eq!(
        e.post_recv(C, spec(None, None), "b").unwrap_err().error,
        MatchError::UnknownContext(C)
    );
    assert_eq!(e.close_context(C), Err(MatchError::UnknownContext(C)));
}

#[test]
fn a_readmitted_rank_is_live_again_and_its_old_messages_are_dropped() {
    let mut e = engine();
    // Two failures, the first acknowledged; the old incarnation of 2 left two messages.
    e.deliver(msg(2, 4, 20)).unwrap();
    e.deliver(msg(1, 4, 10)).unwrap();
    e.deliver(msg(2, 7, 21)).unwrap();
    e.notify_failure(C, Rank(2)).unwrap();
    assert_eq!(e.ack_failures(C).unwrap(), 1);
    e.notify_failure(C, Rank(3)).unwrap();
    events(&mut e);
    assert_eq!(e.readmit(C, Rank(2)).unwrap(), 2);
    let err = MatchError::ProcFailed {
        context: C,
        rank: Rank(2),
    };
    assert_eq!(
        events(&mut e),
        [
            Event::MessageDropped {
                message: msg(2, 4, 20),
                error: err
            },
            Event::MessageDropped {
                message: msg(2, 7, 21),
                error: err
            }
        ]
    );
    assert_eq!(e.failed_ranks(C).unwrap(), [Rank(3)]);
    assert!(e.failure_pending(C).unwrap(), "3 is still unacknowledged");
    assert_eq!(
        e.ack_failures(C).unwrap(),
        1,
        "only 3 is left to acknowledge"
    );
    // A receive naming 2 posts again and takes the new incarnation's message, not an old one.
    let (_, pending) = posted(e.post_recv(C, spec(Some(2), None), "new").unwrap());
    assert!(!pending);
    assert_eq!(matched(e.deliver(msg(2, 4, 22)).unwrap()), ("new", 22));
    // Rank 1's message stayed.
    assert!(e.has_message_from(C, Rank(1)).unwrap());
    assert_eq!(
        e.readmit(C, Rank(9)).unwrap_err(),
        MatchError::RankOutOfRange {
            context: C,
            rank: Rank(9),
            size: 4
        }
    );
}

#[test]
fn ack_first_acknowledges_a_prefix_of_the_failure_order_and_never_less() {
    let mut e = engine();
    e.notify_failure(C, Rank(2)).unwrap();
    e.notify_failure(C, Rank(0)).unwrap();
    assert_eq!(e.ack_first_failures(C, 1).unwrap(), 1);
    assert!(e.failure_pending(C).unwrap(), "rank 0's failure is second");
    assert_eq!(
        e.ack_first_failures(C, 0).unwrap(),
        1,
        "never un-acknowledged"
    );
    assert_eq!(
        e.ack_first_failures(C, 5).unwrap(),
        2,
        "at most the known ones"
    );
    assert!(!e.failure_pending(C).unwrap());
}
