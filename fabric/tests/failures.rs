//! A peer SIGKILLed in the middle of large transfers: our side gets
//! `PeerUnreachable` within a bounded time, never a hang.

mod common;

use std::time::{Duration, Instant};

use common::{connect, pattern};
use steadfast_fabric::{Error, ANY_TAG};

/// Generous for a busy 2-core machine; the detection itself takes milliseconds.
const BOUND: Duration = Duration::from_secs(60);

fn expect_unreachable<T: std::fmt::Debug>(provider: &str, what: &str, result: Result<T, Error>) {
    match result {
        Err(Error::PeerUnreachable { peer: 1, .. }) => {}
        other => panic!("{provider}: {what} after the peer was killed gave {other:?}"),
    }
}

/// We send 64 MiB messages; the receiving peer is killed mid-stream.
fn killed_receiver(provider: &str) {
    let (mut m, mut peer) = connect(provider, "sink");
    let data = pattern(64 << 20, 3);
    m.send(1, 1, &data).expect("first message before the kill");
    let pid = peer.pid();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        // SAFETY: kill with a pid and a signal number.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let start = Instant::now();
    let result = loop {
        match m.send(1, 1, &data) {
            Ok(()) => assert!(start.elapsed() < BOUND, "{provider}: sends kept succeeding"),
            Err(e) => break Err::<(), _>(e),
        }
    };
    killer.join().unwrap();
    assert!(
        start.elapsed() < BOUND,
        "{provider}: took {:?}",
        start.elapsed()
    );
    expect_unreachable(provider, "send", result);
    // Later operations to the dead peer fail at once.
    expect_unreachable(provider, "a later send", m.send(1, 1, b"x"));
    assert!(m.peer_failure(1).is_some());
    peer.kill();
}
// Not on shm: a receiver killed while holding the shm provider's lock in the shared
// region leaves our fi_cq_read spinning on it forever (docs/architecture.md).
per_provider!(
    killed_receiver_fails_the_sender,
    super::killed_receiver,
    ignore_shm = "libfabric 1.17 shm spins forever on a lock held by a SIGKILLed peer"
);

/// The peer streams 64 MiB messages to us and is killed mid-stream.
fn killed_sender(provider: &str) {
    let (mut m, mut peer) = connect(provider, "flood");
    let mut buf = vec![0u8; 64 << 20];
    m.recv(Some(1), 1, 0, &mut buf)
        .expect("first message before the kill");
    assert!(
        buf == pattern(64 << 20, 1),
        "{provider}: content before the kill"
    );
    peer.kill();
    let start = Instant::now();
    let result = loop {
        match m.recv(Some(1), 0, ANY_TAG, &mut buf) {
            Ok(_) => assert!(
                start.elapsed() < BOUND,
                "{provider}: receives kept succeeding"
            ),
            Err(e) => break Err::<(), _>(e),
        }
    };
    assert!(
        start.elapsed() < BOUND,
        "{provider}: took {:?}",
        start.elapsed()
    );
    expect_unreachable(provider, "recv", result);
    let pid = peer.pid();
    drop(peer);
    let leftover = std::fs::read_dir("/dev/shm").unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with(&format!("{pid}:"))
    });
    assert!(
        !leftover,
        "{provider}: the killed peer's shm region is left in /dev/shm"
    );
}
per_provider!(killed_sender_fails_the_receiver, super::killed_sender);
