//! A peer SIGKILLed in the middle of large transfers: our side gets
//! `PeerUnreachable` within a bounded time, never a hang.

mod common;

use std::time::{Duration, Instant};

use common::{connect, pattern, HangGuard, HANG_LIMIT};
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
    let _guard = HangGuard::new(format!("killed_receiver on {provider}"), HANG_LIMIT);
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
// On shm (libfabric 1.17) a receiver killed while holding the provider's lock of our
// shared region would leave us spinning on it; the messenger's lock rescue frees it
// (about one run in ten needs it; `shm_locks_released` counts it).
per_provider!(killed_receiver_fails_the_sender, super::killed_receiver);

/// The peer streams 64 MiB messages to us and is killed mid-stream.
fn killed_sender(provider: &str) {
    let _guard = HangGuard::new(format!("killed_sender on {provider}"), HANG_LIMIT);
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
