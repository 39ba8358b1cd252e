//! A peer replaced by newer incarnations of itself (restart in place, over tcp on
//! loopback): each incarnation leaves messages nobody received before it goes away,
//! and the survivor's receives, specific and wildcard, only ever get the current
//! incarnation's messages, across two replacements (the incarnation after next has the
//! first one's tag bit, so what the first left must have been drained).

mod common;

use std::time::Duration;

use common::{HangGuard, HANG_LIMIT};
use steadfast_fabric::{Error, FabricConfig, Messenger, MessengerConfig};

const TAG: u64 = 5;

fn open(id: u32, generation: u32) -> Messenger {
    let mut c = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), id);
    c.operation_timeout = Some(Duration::from_secs(60));
    c.generation = generation;
    Messenger::open(c).expect("open a tcp messenger on lo")
}

/// Incarnation `generation` of peer 1, connected to `survivor`'s address.
fn stale_incarnation(survivor: &Messenger, generation: u32) -> Messenger {
    let mut m = open(1, generation);
    m.add_peer(0, &survivor.address().to_bytes()).unwrap();
    m
}

/// Leaves two messages with `TAG` (one short, one eager) and one with the wildcard
/// receive's tag, then goes away.
fn leave_stale_messages(mut m: Messenger, generation: u32) {
    m.send(0, TAG, format!("stale {generation}").as_bytes())
        .unwrap();
    m.send(0, TAG, &[0xee; 3000]).unwrap();
    m.send(0, TAG + 1, b"stale wildcard").unwrap();
    drop(m);
}

/// Progresses `m` until `thread` ended, then a little more (stale messages land).
fn progress_until_done(m: &mut Messenger, thread: std::thread::JoinHandle<()>) {
    while !thread.is_finished() {
        m.progress().unwrap();
        std::thread::yield_now();
    }
    thread.join().unwrap();
    for _ in 0..50 {
        m.progress().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_replaced_peer_is_fenced_across_two_restarts() {
    let _guard = HangGuard::new("fencing over tcp".into(), HANG_LIMIT);
    let mut survivor = open(0, 0);
    let first = stale_incarnation(&survivor, 0);
    survivor.add_peer(1, &first.address().to_bytes()).unwrap();
    assert_eq!(survivor.peer_generation(1), Some(0));
    let leaving = std::thread::spawn(move || leave_stale_messages(first, 0));
    progress_until_done(&mut survivor, leaving);
    for generation in 1..=2u32 {
        let mut next = open(1, generation);
        next.add_peer(0, &survivor.address().to_bytes()).unwrap();
        let address = next.address().to_bytes();
        let sender = std::thread::spawn(move || {
            // Waits until the survivor admitted it, then answers; then leaves stale
            // messages for the next round, unless it is the last.
            let answer = format!("incarnation {generation}");
            next.send(0, TAG + 1, answer.as_bytes()).unwrap();
            next.send(0, TAG, answer.as_bytes()).unwrap();
            let mut done = [0u8; 1];
            next.recv(Some(0), TAG + 2, 0, &mut done).unwrap();
            next
        });
        // Posted before the replacement: it meets the dead incarnation's messages first.
        let mut early = vec![0u8; 4096];
        // SAFETY: `early` outlives the request, waited for below.
        let early_request = unsafe { survivor.irecv(None, TAG + 1, 0, &mut early) }.unwrap();
        survivor.replace_peer(1, &address).unwrap();
        assert_eq!(survivor.peer_generation(1), Some(generation));
        let want = format!("incarnation {generation}");
        let mut buf = [0u8; 4096];
        let got = survivor.recv(Some(1), TAG, 0, &mut buf).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&buf[..got.len]),
            want,
            "a specific receive after the replacement by incarnation {generation}"
        );
        let got = survivor.wait(early_request).unwrap();
        assert_eq!(
            (
                got.source,
                String::from_utf8_lossy(&early[..got.len]).into_owned()
            ),
            (1, want.clone()),
            "a wildcard receive posted before the replacement by incarnation {generation}"
        );
        survivor.send(1, TAG + 2, b"d").unwrap();
        let next = sender.join().unwrap();
        if generation < 2 {
            let leaving = std::thread::spawn(move || leave_stale_messages(next, generation));
            progress_until_done(&mut survivor, leaving);
        }
    }
    assert!(
        survivor.stats().fenced >= 4,
        "the stale messages were dropped: {:?}",
        survivor.stats()
    );
}

#[test]
fn an_older_incarnation_is_refused_and_a_new_one_is_admitted() {
    let _guard = HangGuard::new("replace refusal over tcp".into(), HANG_LIMIT);
    let mut survivor = open(0, 0);
    let second = open(1, 1);
    let first = open(1, 0);
    survivor.add_peer(1, &second.address().to_bytes()).unwrap();
    match survivor.replace_peer(1, &first.address().to_bytes()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("not newer"), "{m}"),
        other => panic!("an older incarnation replaced a newer one: {other:?}"),
    }
    // Still the known incarnation, alive.
    assert_eq!(survivor.peer_generation(1), Some(1));
    assert!(survivor.peer_failure(1).is_none());
}

#[test]
fn a_restarted_process_whose_peer_never_admits_it_gets_a_clear_error_at_the_bound() {
    let _guard = HangGuard::new("admission bound over tcp".into(), HANG_LIMIT);
    let mut survivor = open(0, 0);
    // No operation timeout: the admission bound alone ends the wait (without it the
    // send waited for ever, and the guard aborted the test).
    let mut c = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), 1);
    c.generation = 1;
    c.operation_timeout = None;
    c.admission_timeout = Duration::from_millis(300);
    let mut restarted = Messenger::open(c).expect("open a tcp messenger on lo");
    restarted
        .add_peer(0, &survivor.address().to_bytes())
        .unwrap();
    // The survivor knows the new incarnation's address but does not admit it yet.
    survivor
        .add_peer(1, &restarted.address().to_bytes())
        .unwrap();
    let (refused_tx, refused_rx) = std::sync::mpsc::channel();
    let sender = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let refused = restarted.send(0, TAG, b"too early");
        let waited = started.elapsed();
        refused_tx.send(()).unwrap();
        // Admitted meanwhile: a send goes through now.
        restarted.send(0, TAG, b"admitted").unwrap();
        (refused, waited)
    });
    while refused_rx.try_recv().is_err() {
        survivor.progress().unwrap();
        std::thread::yield_now();
    }
    survivor.admit(1).unwrap();
    let mut buf = [0u8; 64];
    let got = survivor.recv(Some(1), TAG, 0, &mut buf).unwrap();
    assert_eq!(&buf[..got.len], b"admitted");
    let (refused, waited) = sender.join().unwrap();
    match refused {
        Err(Error::NotAdmitted {
            peer: 0,
            generation: 1,
            after,
        }) => assert_eq!(after, Duration::from_millis(300)),
        other => panic!("a send never admitted: {other:?}"),
    }
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(30),
        "waited {waited:?}"
    );
    let text = Error::NotAdmitted {
        peer: 0,
        generation: 1,
        after: Duration::from_millis(300),
    }
    .to_string();
    assert!(
        text.contains("peer 0 did not admit") && text.contains("incarnation 1"),
        "{text}"
    );
}
