//! Unit tests of `matching.rs`: posting order, rank translation, held messages,
//! retired contexts, failures and revoke.

use super::*;

fn bytes(d: &Delivery) -> Option<(RecvKey, u32)> {
    match d {
        Delivery::Matched(m) => match &m.message.payload {
            Payload::Bytes(v, _) => Some((m.recv, v[0] as u32)),
            _ => None,
        },
        _ => None,
    }
}

fn posted(p: Posting) -> RecvKey {
    match p {
        Posting::Slot(k) => k,
        Posting::Matched(_) => panic!("expected a posted receive"),
    }
}

/// The buffer a placement names.
fn buffer_of(p: Option<(*mut u8, usize, Placement)>) -> Option<(*mut u8, usize)> {
    p.map(|(ptr, cap, _)| (ptr, cap))
}

#[test]
fn a_placed_message_completes_the_receive_placement_named() {
    let mut m = matching();
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    let ka = posted(m.post(7, None, Some(5), a.as_mut_ptr(), 8));
    let kb = posted(m.post(7, Some(1), None, b.as_mut_ptr(), 8));
    // World rank 1 is comm rank 1: the wildcard receive, posted first, is named.
    let (ptr, cap, p) = m.placement(7, 1, 5).expect("a receive fits");
    assert_eq!((ptr, cap, p.source, p.cap), (a.as_mut_ptr(), 8, 1, 8));
    let got = Got {
        source: p.source,
        tag: 5,
        len: 3,
    };
    m.finish_placed(p, Ok(got));
    assert!(matches!(m.take(ka), Some(Ok(g)) if g == got));
    // It left the matcher: the next message from rank 1 goes to the second one.
    let d = m.deliver(7, 1, 6, 1, Payload::Bytes(vec![7], None));
    assert_eq!(bytes(&d), Some((kb, 7)));
    assert!(m.placement(7, 1, 5).is_none(), "nothing is posted any more");
}

/// World of 4; context 7 over world ranks [3, 1] (comm ranks 0, 1).
fn matching() -> Matching {
    let mut m = Matching::new(4);
    m.open(7, &[3, 1], &[], false);
    m
}

#[test]
fn posting_order_decides_and_sources_are_comm_ranks() {
    let mut m = matching();
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    let ka = posted(m.post(7, None, None, a.as_mut_ptr(), 8));
    let kb = posted(m.post(7, None, None, b.as_mut_ptr(), 8));
    let d = m.deliver(7, 1, 5, 1, Payload::Bytes(vec![42], None));
    assert_eq!(bytes(&d), Some((ka, 42)));
    let Delivery::Matched(mt) = d else {
        unreachable!()
    };
    assert_eq!(mt.message.source, Rank(1), "world rank 1 is comm rank 1");
    assert_eq!(buffer_of(m.placement(7, 3, 5)), Some((b.as_mut_ptr(), 8)));
    assert!(m.placement(7, 2, 5).is_none(), "not a member");
    m.finish(
        ka,
        Ok(Got {
            source: 1,
            tag: 5,
            len: 1,
        }),
    );
    assert!(m.take(ka).is_some());
    assert!(m.take(ka).is_none(), "an outcome is taken once");
    assert!(m.cancel(kb).is_none(), "withdrawn while posted");
    assert!(m.take(kb).is_none(), "a cancelled key is stale");
}

#[test]
fn a_context_reopened_over_another_group_translates_ranks_anew() {
    let mut m = matching();
    let mut buf = [0u8; 8];
    let k = posted(m.post(7, Some(1), None, buf.as_mut_ptr(), 8));
    // World rank 1 is comm rank 1 in [3, 1]: the lookup is remembered.
    assert_eq!(buffer_of(m.placement(7, 1, 5)), Some((buf.as_mut_ptr(), 8)));
    assert!(m.cancel(k).is_none());
    m.close(7, false);
    assert!(m.placement(7, 1, 5).is_none(), "closed");
    // The same id over [1, 3]: world rank 1 is comm rank 0 now.
    m.open(7, &[1, 3], &[], false);
    let k = posted(m.post(7, Some(0), None, buf.as_mut_ptr(), 8));
    let d = m.deliver(7, 1, 5, 1, Payload::Bytes(vec![9], None));
    assert_eq!(bytes(&d), Some((k, 9)));
    let Delivery::Matched(mt) = d else {
        unreachable!()
    };
    assert_eq!(mt.message.source, Rank(0));
    assert!(m.placement(7, 2, 5).is_none(), "not a member");
}

#[test]
fn messages_before_their_context_are_held_in_order() {
    let mut m = Matching::new(4);
    for i in 0..3 {
        assert!(matches!(
            m.deliver(9, 2, 1, 1, Payload::Bytes(vec![i], None)),
            Delivery::Kept
        ));
    }
    let mut out = Vec::new();
    m.retry_held(&mut out);
    assert!(out.is_empty(), "context 9 is not open yet");
    m.open(9, &[0, 2], &[], false);
    m.retry_held(&mut out);
    assert!(out.is_empty(), "nothing posted: unexpected now");
    let mut buf = [0u8; 4];
    for i in 0..3 {
        match m.post(9, Some(1), Some(1), buf.as_mut_ptr(), 4) {
            Posting::Matched(mt) => {
                assert!(matches!(&mt.message.payload, Payload::Bytes(v, _) if v[0] == i))
            }
            Posting::Slot(_) => panic!("message {i} was not delivered"),
        }
    }
}

#[test]
fn retired_contexts_drop_and_failures_and_revoke_complete_receives() {
    let mut m = matching();
    let mut a = [0u8; 8];
    let named = posted(m.post(7, Some(0), None, a.as_mut_ptr(), 8));
    let wild = posted(m.post(7, None, Some(3), a.as_mut_ptr(), 8));
    m.notify_failure(3);
    assert!(matches!(
        m.take(named),
        Some(Err(RecvFailure::ProcFailed(0)))
    ));
    assert!(m.failure_pending(wild), "a wildcard receive stays posted");
    m.ack_first(7, 0);
    assert!(m.failure_pending(wild), "nothing acknowledged");
    m.ack_first(7, 1);
    assert!(!m.failure_pending(wild));
    m.revoke(7);
    assert!(matches!(m.take(wild), Some(Err(RecvFailure::Revoked))));
    m.close(7, true);
    assert!(matches!(
        m.deliver(7, 1, 1, 1, Payload::Bytes(vec![1], None)),
        Delivery::Dropped(_)
    ));
}
