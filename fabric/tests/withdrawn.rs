//! A rendezvous message withdrawn by its live sender while the receiver was about to
//! read it: the read ends with `Error::Withdrawn`, the sender is not taken for dead,
//! and later messages between the two still flow.

mod common;

use common::{connect, pattern, tag, HangGuard, HANG_LIMIT};
use steadfast_fabric::{ArrivalData, Error, Messenger, RemoteMessage};

/// Waits for the next arrival of the software-matching pool and hands it out as
/// (tag, rendezvous message or eager bytes).
fn next_arrival(m: &mut Messenger) -> (u64, Result<RemoteMessage, Vec<u8>>) {
    loop {
        m.progress().expect("progress");
        let taken = m.take_arrival(|a| {
            let data = match a.data {
                ArrivalData::Remote(message) => Ok(message),
                ArrivalData::Eager(bytes) => Err(bytes.to_vec()),
            };
            (a.tag, data)
        });
        if let Some(t) = taken {
            return t;
        }
        std::thread::yield_now();
    }
}

fn withdrawn_read(provider: &str) {
    let _guard = HangGuard::new(format!("withdrawn_read on {provider}"), HANG_LIMIT);
    let (mut m, peer) = connect(provider, "withdraw");
    if let Err(e) = m.enable_software_matching(0x100, 0xff, 8) {
        // Refused on libfabric's shm (quirk `UnexpectedIgnoresMask`), which the
        // runtime never uses for its fabric route.
        assert!(
            provider == "shm" && matches!(e, Error::Unsupported { .. }),
            "{provider}: software matching refused: {e}"
        );
        return;
    }
    let (t, message) = next_arrival(&mut m);
    assert_eq!(t, 0x100, "{provider}: the rendezvous message first");
    let message = message.expect("a 1 MiB message is offered by rendezvous");
    m.send(1, tag::GO, &[]).expect("go");
    let mut ok = [0u8; 16];
    m.recv(Some(1), tag::OK, 0, &mut ok)
        .expect("the peer withdrew its send");
    let mut buf = vec![0u8; 1 << 20];
    // SAFETY: `buf` outlives the request, waited for below.
    let outcome =
        unsafe { m.pull(message, buf.as_mut_ptr(), buf.len()) }.and_then(|request| m.wait(request));
    match outcome {
        Err(Error::Withdrawn { peer: 1 }) => {}
        // A provider whose reads ignore a revoked registration reads the bytes, still
        // there: the sender keeps them until it exits.
        Ok(c) => assert!(
            c.len == buf.len() && buf == pattern(1 << 20, 5),
            "{provider}: a read that succeeded must bring the message"
        ),
        other => panic!("{provider}: reading a withdrawn message gave {other:?}"),
    }
    assert!(
        m.peer_failure(1).is_none(),
        "{provider}: a withdrawn message made its live sender dead: {:?}",
        m.peer_failure(1)
    );
    let (t, eager) = next_arrival(&mut m);
    assert_eq!(t, 0x101, "{provider}: the eager message after");
    assert_eq!(
        eager.expect_err("100 bytes come eagerly"),
        pattern(100, 6),
        "{provider}: the eager message's content"
    );
    m.send(1, tag::STOP, &[]).expect("stop");
    peer.expect_success();
}
per_provider!(a_withdrawn_message_is_no_death, super::withdrawn_read);
