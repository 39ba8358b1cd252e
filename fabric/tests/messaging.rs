//! Tagged messaging between two processes on every provider: all protocol boundaries
//! with content checked byte for byte, tag interleaving, wildcards, truncation.

mod common;

use common::{connect, connect_with, messenger_config, pattern, tag, HangGuard, HANG_LIMIT};
use steadfast_fabric::{Error, ANY_TAG};

/// Every size across the inject, eager and rendezvous boundaries goes to the echo
/// peer and back; both directions are checked byte for byte.
fn sizes_round_trip(provider: &str) {
    let (mut m, peer) = connect(provider, "echo");
    let inject = m.inject_limit();
    let eager = m.eager_limit().min(1 << 30);
    let mut sizes = vec![0, 1, 8, inject.saturating_sub(1), inject, inject + 1];
    sizes.extend([eager - 1, eager, eager + 1, 64 << 10, 4 << 20, 64 << 20]);
    let mut back = vec![0u8; (64 << 20) + 1];
    for (i, &size) in sizes.iter().enumerate() {
        let data = pattern(size, i as u64 + 1);
        m.send(1, i as u64 + 1, &data)
            .unwrap_or_else(|e| panic!("{provider}: send {size}: {e}"));
        back[..size].fill(0xee);
        let status = m
            .recv(Some(1), i as u64 + 1, 0, &mut back)
            .unwrap_or_else(|e| panic!("{provider}: recv {size}: {e}"));
        assert_eq!(status.len, size, "{provider}: length of {size}");
        assert_eq!(status.source, 1);
        assert!(
            back[..size] == data[..],
            "{provider}: content of {size} bytes differs"
        );
    }
    let stats = m.stats();
    let has_eager_range = m.eager_limit() > m.inject_limit();
    assert!(
        stats.injected > 0 && (stats.eager > 0 || !has_eager_range) && stats.rendezvous > 0,
        "{provider}: every protocol used: {stats:?}"
    );
    m.send(1, tag::STOP, &[]).unwrap();
    peer.expect_success();
}
per_provider!(sizes_cross_every_protocol, super::sizes_round_trip);

/// 200 messages on 4 interleaved tags, received tag by tag in the reverse order of
/// tags: each tag's messages arrive in order, none lost or mixed up.
fn interleaved_tags(provider: &str) {
    let _guard = HangGuard::new(format!("interleaved_tags on {provider}"), HANG_LIMIT);
    let (mut m, peer) = connect(provider, "tags");
    let mut buf = vec![0u8; 100_000];
    for t in (0..4u64).rev() {
        for i in (0..200u64).filter(|i| i % 4 == t) {
            let status = m.recv(Some(1), t, 0, &mut buf).unwrap();
            let len = if i % 5 == 0 { 100_000 } else { 8 };
            assert_eq!(
                (status.tag, status.len),
                (t, len),
                "{provider}: message {i}"
            );
            let mut expected = pattern(len, i);
            expected[..8].copy_from_slice(&i.to_le_bytes());
            assert!(
                buf[..len] == expected[..],
                "{provider}: content of message {i}"
            );
        }
    }
    m.send(1, tag::STOP, &[]).unwrap();
    peer.expect_success();
}
// On net (1.17) this hangs unless the provider may hold more than 4 unexpected
// messages per connection: the messenger raises FI_NET_MAX_SAVED (fabric/src/info.rs).
per_provider!(interleaved_tags_keep_order_per_tag, super::interleaved_tags);

/// Wildcard receives: a masked tag, then any tag from any source.
fn wildcard_receives(provider: &str) {
    let (mut m, peer) = connect(provider, "wildcard");
    let mut a = vec![0u8; 64];
    let mut b = vec![0u8; 64];
    let mut c = vec![0u8; 64];
    let mut d = vec![0u8; 1 << 20];
    // SAFETY: every buffer outlives its request, each waited for below.
    let (ra, rb, rc, rd) = unsafe {
        (
            m.irecv(None, 0x100, 0xff, &mut a).unwrap(), // 0x1ab, then 0x1ef: low byte ignored
            m.irecv(Some(1), 0x100, 0xff, &mut b).unwrap(),
            m.irecv(None, 0, ANY_TAG, &mut c).unwrap(), // 0x2cd: the first not taken above
            m.irecv(None, 0x3ff, 0, &mut d).unwrap(),
        )
    };
    m.send(1, tag::GO, &[]).unwrap();
    let sa = m.wait(ra).unwrap();
    let sb = m.wait(rb).unwrap();
    let sc = m.wait(rc).unwrap();
    let sd = m.wait(rd).unwrap();
    assert_eq!((sa.tag, sa.source, sa.len), (0x1ab, 1, 5), "{provider}");
    assert_eq!((sb.tag, sb.len), (0x1ef, 5), "{provider}");
    assert_eq!((sc.tag, sc.len), (0x2cd, 5), "{provider}");
    assert_eq!((sd.tag, sd.len), (0x3ff, 1 << 20), "{provider}");
    assert_eq!(&a[..5], &pattern(5, 0x1ab)[..]);
    assert_eq!(&c[..5], &pattern(5, 0x2cd)[..]);
    assert!(
        d == pattern(1 << 20, 0x3ff),
        "{provider}: rendezvous into a wildcard receive"
    );
    m.send(1, tag::STOP, &[]).unwrap();
    peer.expect_success();
}
per_provider!(
    wildcard_receives_match_masked_tags,
    super::wildcard_receives
);

/// Too-small receive buffers: `Truncated` with both lengths, for an eager and for a
/// rendezvous message; the sender's sends complete and later traffic is intact.
fn truncation(provider: &str) {
    let (mut m, peer) = connect(provider, "truncate");
    let mut small = [0u8; 10];
    match m.recv(Some(1), 1, 0, &mut small) {
        Err(Error::Truncated {
            message_len: None | Some(100),
            buffer_len: 10,
        }) => {}
        other => panic!("{provider}: eager into 10 bytes gave {other:?}"),
    }
    let mut medium = vec![0u8; 1000];
    match m.recv(Some(1), 2, 0, &mut medium) {
        Err(Error::Truncated {
            message_len: Some(len),
            buffer_len: 1000,
        }) if len == 1 << 20 => {}
        other => panic!("{provider}: rendezvous into 1000 bytes gave {other:?}"),
    }
    let mut ok = [0u8; 4];
    let status = m.recv(Some(1), tag::OK, 0, &mut ok).unwrap();
    assert_eq!(
        (&ok, status.len),
        (b"sent", 4),
        "{provider}: traffic after truncation"
    );
    m.send(1, tag::STOP, &[]).unwrap();
    peer.expect_success();
}
per_provider!(short_buffers_give_truncated, super::truncation);

/// 24 rendezvous messages of 2 MiB + 1 land in 24 receives posted at once, each read
/// in 256 KiB reads, 8 in flight per receive, with room for only 16 reads in flight
/// over all of them (256 request slots): receives that find the budget spent wait
/// for it (deferred, retried from progress) and every byte arrives, on every
/// provider.
fn receives_share_the_read_budget(provider: &str) {
    let _guard = HangGuard::new(format!("read budget on {provider}"), HANG_LIMIT);
    let mut config = messenger_config(provider, 0);
    config.rendezvous_chunk = Some(256 << 10);
    config.rendezvous_pipeline = Some(8);
    config.request_slots = 256;
    let (mut m, peer) = connect_with(config, provider, "burst");
    const MESSAGES: u64 = 24;
    const LEN: usize = (2 << 20) + 1;
    let mut buffers: Vec<Vec<u8>> = (0..MESSAGES).map(|_| vec![0u8; LEN]).collect();
    // SAFETY: every buffer outlives its request, each waited for below.
    let requests: Vec<_> = buffers
        .iter_mut()
        .enumerate()
        .map(|(i, b)| unsafe { m.irecv(Some(1), i as u64, 0, b) }.unwrap())
        .collect();
    m.send(1, tag::GO, &[1]).unwrap();
    // Waited for last to first: completions come in any order.
    for (i, r) in requests.into_iter().enumerate().rev() {
        let status = m
            .wait(r)
            .unwrap_or_else(|e| panic!("{provider}: message {i}: {e}"));
        assert_eq!((status.tag, status.len), (i as u64, LEN), "{provider}");
    }
    for (i, b) in buffers.iter().enumerate() {
        assert!(
            b[..] == pattern(LEN, i as u64)[..],
            "{provider}: content of message {i}"
        );
    }
    m.send(1, tag::STOP, &[1]).unwrap();
    peer.expect_success();
}
per_provider!(
    many_receives_share_the_read_budget,
    super::receives_share_the_read_budget
);
