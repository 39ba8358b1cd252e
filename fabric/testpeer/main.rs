//! The peer process of steadfast-fabric's multi-process tests:
//! `fabric-test-peer PROVIDER SCENARIO`. It prints its address, reads the test's
//! address from stdin, then plays its scenario as peer 1 against peer 0.

#[path = "../tests/common/shared.rs"]
mod common;

use std::io::Write;

use common::{pattern, tag};
use steadfast_fabric::{Messenger, RemoteRegion, ANY_TAG};

const BIG: usize = (64 << 20) + 1;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (provider, scenario) = (&args[1], args[2].as_str());
    let mut m = Messenger::open(common::messenger_config(provider, 1)).expect("open");
    println!("{}", common::hex(&m.address().to_bytes()));
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    m.add_peer(0, &common::unhex(line.trim()))
        .expect("add peer 0");
    match scenario {
        "echo" => echo(&mut m),
        "tags" => tags(&mut m),
        "wildcard" => wildcard(&mut m),
        "truncate" => truncate(&mut m),
        "rma" => rma(&mut m),
        "burst" => burst(&mut m),
        "withdraw" => withdraw(&mut m),
        "sink" => loop {
            let mut buf = vec![0u8; BIG];
            if m.recv(Some(0), 0, ANY_TAG, &mut buf).is_err() {
                return;
            }
        },
        "flood" => {
            let data = pattern(64 << 20, 1);
            while m.send(0, 1, &data).is_ok() {}
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// Returns every message to its sender with the same tag, until STOP. The next
/// receive is posted before the echo goes out, so the test's next message always finds
/// it posted (libfabric 1.17's shm does not match a wildcard receive against a message
/// that arrived before it; docs/architecture.md).
fn echo(m: &mut Messenger) {
    let mut buffers = [vec![0u8; BIG], vec![0u8; BIG]];
    let (first, second) = buffers.split_at_mut(1);
    let (mut current, mut next) = (&mut first[0], &mut second[0]);
    // SAFETY: each buffer outlives its request, waited for before the buffer is reused.
    let mut request = unsafe { m.irecv(Some(0), 0, ANY_TAG, current) }.expect("echo recv");
    loop {
        let status = m.wait(request).expect("echo recv");
        if status.tag == tag::STOP {
            return;
        }
        // SAFETY: as above.
        request = unsafe { m.irecv(Some(0), 0, ANY_TAG, next) }.expect("echo recv");
        m.send(0, status.tag, &current[..status.len])
            .expect("echo send");
        std::mem::swap(&mut current, &mut next);
    }
}

/// Messages of the `burst` scenario, each [`BURST_LEN`] bytes.
const BURST: u64 = 24;
const BURST_LEN: usize = (2 << 20) + 1;

/// After GO, sends [`BURST`] rendezvous messages at once (tag i, pattern seed i), waits
/// for them all, then for STOP.
fn burst(m: &mut Messenger) {
    let mut go = [0u8; 1];
    m.recv(Some(0), tag::GO, 0, &mut go).expect("burst go");
    let messages: Vec<Vec<u8>> = (0..BURST).map(|i| pattern(BURST_LEN, i)).collect();
    // SAFETY: every message outlives its request, each waited for below.
    let requests: Vec<_> = messages
        .iter()
        .enumerate()
        .map(|(i, data)| unsafe { m.isend(0, i as u64, data) }.expect("burst send"))
        .collect();
    for r in requests.into_iter().flatten() {
        m.wait(r).expect("burst send completes");
    }
    let mut stop = [0u8; 1];
    m.recv(Some(0), tag::STOP, 0, &mut stop)
        .expect("burst stop");
}

/// Offers a rendezvous message (tag 0x100), withdraws it once the test says GO
/// (cancelling the send), says OK, then sends an eager message (tag 0x101) and waits
/// for STOP.
fn withdraw(m: &mut Messenger) {
    let data = pattern(1 << 20, 5);
    // SAFETY: `data` outlives the request, cancelled below.
    let request = unsafe { m.isend(0, 0x100, &data) }
        .expect("withdraw send")
        .expect("a rendezvous send has a request");
    m.recv(Some(0), tag::GO, 0, &mut []).expect("withdraw go");
    assert!(
        m.cancel(request).expect("withdraw cancel").is_none(),
        "the send completed before its message was read"
    );
    m.send(0, tag::OK, b"withdrawn").expect("withdraw ok");
    m.send(0, 0x101, &pattern(100, 6)).expect("eager after");
    m.recv(Some(0), tag::STOP, 0, &mut [])
        .expect("withdraw stop");
}

/// Sends 200 messages cycling through 4 tags (payload: the message's index), then
/// waits for STOP.
fn tags(m: &mut Messenger) {
    // Non-blocking: the test receives tag by tag, so a blocking rendezvous send
    // would wait for a receive posted only after later messages.
    let messages: Vec<Vec<u8>> = (0..200u64)
        .map(|i| {
            let mut data = pattern(if i % 5 == 0 { 100_000 } else { 8 }, i);
            data[..8].copy_from_slice(&i.to_le_bytes());
            data
        })
        .collect();
    let mut requests = Vec::new();
    for (i, data) in messages.iter().enumerate() {
        // SAFETY: `messages` outlives every request, all waited for below.
        if let Some(r) = unsafe { m.isend(0, i as u64 % 4, data) }.expect("tags send") {
            requests.push(r);
        }
    }
    for r in requests {
        m.wait(r).expect("tags send completes");
    }
    m.recv(Some(0), tag::STOP, 0, &mut []).expect("stop");
}

/// After GO, sends tags 0x1ab, 0x2cd and 0x1ef (small) and 0x3ff (large), then waits STOP.
fn wildcard(m: &mut Messenger) {
    m.recv(Some(0), tag::GO, 0, &mut []).expect("go");
    for (t, len) in [(0x1ab, 5), (0x2cd, 5), (0x1ef, 5), (0x3ff, 1 << 20)] {
        m.send(0, t, &pattern(len, t)).expect("wildcard send");
    }
    m.recv(Some(0), tag::STOP, 0, &mut []).expect("stop");
}

/// Sends an eager and a rendezvous message that the test receives into too-small
/// buffers, then a last message saying both sends completed.
fn truncate(m: &mut Messenger) {
    m.send(0, 1, &pattern(100, 1)).expect("eager send");
    m.send(0, 2, &pattern(1 << 20, 2))
        .expect("rendezvous send completes after the receiver truncates");
    m.send(0, tag::OK, b"sent").expect("ok");
    m.recv(Some(0), tag::STOP, 0, &mut []).expect("stop");
}

/// Exposes 4 KiB filled with a pattern, sends its descriptor, waits DONE, returns the
/// region's content.
fn rma(m: &mut Messenger) {
    let mut memory = pattern(4096, 77);
    memory[..16].fill(0);
    let region = m.expose_owned(memory).expect("expose");
    let descriptor: RemoteRegion = region.remote();
    m.send(0, tag::DESCRIPTOR, &descriptor.to_bytes())
        .expect("descriptor");
    m.recv(Some(0), tag::DONE, 0, &mut []).expect("done");
    let content = m.unexpose_owned(region).expect("unexpose");
    m.send(0, tag::CONTENT, &content).expect("content");
    m.recv(Some(0), tag::STOP, 0, &mut []).expect("stop");
}
