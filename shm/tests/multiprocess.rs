//! Multi-process tests of the shared-memory transport: real processes, real segments,
//! real SIGKILL. Each test is rank 0 of its own job and checks /dev/shm is clean after.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;
use steadfast_shm::{CopyPath, Endpoint, EndpointConfig, ShmError, ANY_TAG};

const STOP: u64 = 0xdead;

fn new_job() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // ORDERING: Relaxed; only uniqueness of the counter matters, nothing is published.
    ((std::process::id() as u64) << 24) | NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A peer process that dies with the test (kill on drop, PDEATHSIG).
struct Peer(Child);

impl Peer {
    fn start(job: u64, rank: u32, ranks: u32, scenario: &str) -> Peer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shm-test-peer"));
        cmd.args([
            format!("{job:x}"),
            rank.to_string(),
            ranks.to_string(),
            scenario.into(),
        ])
        .stdout(Stdio::piped());
        // The child dies with this process (and never outlives a parent that died first).
        cmd.die_with_parent();
        Peer(cmd.spawn().expect("spawn shm-test-peer"))
    }

    fn wait_ready(&mut self) {
        let mut line = String::new();
        BufReader::new(self.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "peer failed to start");
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn assert_clean(job: u64) {
    let prefix = format!("steadfast-{job:016x}-");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "segments left in /dev/shm: {left:?}");
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn every_size_round_trips_byte_for_byte() {
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "echo");
        ep.connect().unwrap();
        peer.wait_ready();
        let inline = steadfast_shm::message::INLINE_MAX;
        let mut back = vec![0u8; 64 << 20];
        for (i, &len) in [
            0,
            1,
            8,
            inline - 1,
            inline,
            inline + 1,
            steadfast_shm::ring::CELL_BYTES - 1,
            steadfast_shm::ring::CELL_BYTES,
            steadfast_shm::ring::CELL_BYTES + 1,
            4095,
            1 << 20,
            64 << 20,
        ]
        .iter()
        .enumerate()
        {
            let msg = pattern(len, i as u8);
            ep.send(1, i as u64, &msg).unwrap();
            let r = ep.recv(Some(1), i as u64, 0, &mut back).unwrap();
            assert_eq!((r.source, r.tag, r.len), (1, i as u64, len));
            assert!(back[..len] == msg[..], "content differs at size {len}");
        }
        // The 64 MiB send waited while the echo copied it: it wrote chunks itself.
        assert!(
            ep.split_chunks_written() > 0,
            "the sender never shared a copy"
        );
        // Truncation: the echo of 4 KiB into a 100-byte buffer is an error, consumed.
        ep.send(1, 77, &pattern(4096, 9)).unwrap();
        let err = ep.recv(Some(1), 77, 0, &mut back[..100]).unwrap_err();
        assert!(
            matches!(
                err,
                ShmError::Truncated {
                    len: 4096,
                    capacity: 100
                }
            ),
            "{err}"
        );
        ep.send(1, 78, &pattern(100, 1)).unwrap();
        let err = ep.recv(Some(1), 78, 0, &mut back[..10]).unwrap_err();
        assert!(
            matches!(
                err,
                ShmError::Truncated {
                    len: 100,
                    capacity: 10
                }
            ),
            "{err}"
        );
        ep.send(1, STOP, &[]).unwrap();
        assert!(peer.0.wait().unwrap().success());
    }
    assert_clean(job);
}

/// A large message whose sender is away (isend, then 5 s elsewhere) is copied by the
/// receiver alone: the shared copy never waits for the sender to start helping.
#[test]
fn a_split_copy_does_not_wait_for_an_absent_sender() {
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "isend-late");
        ep.connect().unwrap();
        peer.wait_ready();
        let mut buf = vec![0u8; 4 << 20];
        let start = Instant::now();
        let r = ep.recv(Some(1), 3, 0, &mut buf).unwrap();
        let took = start.elapsed();
        assert_eq!(r.len, 4 << 20);
        let expect: Vec<u8> = (0..4usize << 20)
            .map(|i| (i * 13 + i / 4096) as u8)
            .collect();
        assert!(buf == expect, "content");
        // The sender sleeps 5 s before waiting: a receive that waited for its help
        // would take that long.
        assert!(took < Duration::from_secs(4), "took {took:?}");
        ep.send(1, STOP, &[]).unwrap();
        assert!(peer.0.wait().unwrap().success());
    }
    assert_clean(job);
}

#[test]
fn two_ranks_streaming_eager_messages_at_each_other_do_not_deadlock() {
    // Regression: a sender draining its own ring while waiting for room used to wait
    // there for the rest of an eager message whose sender was doing the same.
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "exchange-eager");
        ep.connect().unwrap();
        peer.wait_ready();
        let msg = vec![0u8; 1024];
        for _ in 0..300 {
            ep.send(1, 7, &msg).unwrap();
        }
        let mut buf = vec![0u8; 1024];
        for _ in 0..300 {
            let r = ep.recv(Some(1), 7, 0, &mut buf).unwrap();
            assert_eq!(r.len, 1024);
            assert!(buf.iter().all(|&b| b == 1));
        }
        ep.send(1, STOP, &[]).unwrap();
        assert!(peer.0.wait().unwrap().success());
    }
    assert_clean(job);
}

#[test]
fn refused_single_copy_falls_back_to_the_ring_and_is_reported() {
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "echo-pipelined");
        ep.connect().unwrap();
        peer.wait_ready();
        assert_eq!(ep.copy_path(1), Some(CopyPath::SingleCopy));
        let mut back = vec![0u8; 64 << 20];
        for (i, &len) in [1usize << 20, 64 << 20, 5000].iter().enumerate() {
            let msg = pattern(len, 40 + i as u8);
            ep.send(1, i as u64, &msg).unwrap();
            // The peer refused to read our memory: we switched to the ring.
            assert_eq!(ep.copy_path(1), Some(CopyPath::Pipelined));
            let r = ep.recv(Some(1), i as u64, 0, &mut back).unwrap();
            assert_eq!(r.len, len);
            assert!(back[..len] == msg[..], "content differs at {len}");
        }
        ep.send(1, STOP, &[]).unwrap();
        assert!(peer.0.wait().unwrap().success());
    }
    assert_clean(job);
}

#[test]
fn eight_senders_keep_per_sender_order_through_full_rings() {
    let job = new_job();
    {
        let ranks = 9;
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, ranks)).unwrap();
        let mut peers: Vec<Peer> = (1..ranks)
            .map(|r| Peer::start(job, r, ranks, "stream"))
            .collect();
        ep.connect().unwrap();
        for p in &mut peers {
            p.wait_ready();
        }
        // A slow start: every sender's 64-cell ring fills and they wait (backpressure).
        std::thread::sleep(Duration::from_millis(200));
        let mut next = vec![0u64; ranks as usize];
        let mut buf = vec![0u8; 8192];
        for _ in 0..(ranks - 1) * 1000 {
            let r = ep.recv(None, 0, ANY_TAG, &mut buf).unwrap();
            assert_eq!(r.tag, r.source as u64);
            let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
            assert_eq!(seq, next[r.source as usize], "order from rank {}", r.source);
            let expect_len = if seq % 3 == 0 { 5000 } else { 16 };
            assert_eq!(r.len, expect_len);
            assert!(buf[8..r.len].iter().all(|&b| b == r.source as u8));
            next[r.source as usize] += 1;
        }
        assert!(next[1..].iter().all(|&n| n == 1000));
        for r in 1..ranks {
            ep.send(r, STOP, &[]).unwrap();
        }
        for p in &mut peers {
            assert!(p.0.wait().unwrap().success());
        }
    }
    assert_clean(job);
}

#[test]
fn killed_peer_becomes_peer_dead_and_its_segment_goes() {
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "hang");
        ep.connect().unwrap();
        peer.wait_ready();
        ep.send(1, 1, b"hello").unwrap();
        // SAFETY: plain kill of our own child.
        unsafe { libc::kill(peer.pid() as libc::pid_t, libc::SIGKILL) };
        let _ = peer.0.wait();
        let start = Instant::now();
        let err = ep.recv(Some(1), 0, ANY_TAG, &mut [0u8; 16]).unwrap_err();
        assert!(matches!(err, ShmError::PeerDead(1)), "{err}");
        // A large send to the dead peer fails too instead of waiting for a FIN.
        let big = vec![0u8; 1 << 20];
        assert!(matches!(ep.send(1, 2, &big), Err(ShmError::PeerDead(1))));
        // Detection is a pidfd poll every 1024 spins: milliseconds; 10 s is the bound a
        // busy 2-core machine can always meet.
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "took {:?}",
            start.elapsed()
        );
    }
    assert_clean(job);
}

/// A 1 GiB message each way, single copy, when the machine has the memory for it
/// (three 1 GiB buffers across the two processes); skipped with a message otherwise.
#[test]
fn one_gib_message_round_trips() {
    let available_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    if available_kib < 6 << 20 {
        eprintln!("skipped: needs 6 GiB available, {available_kib} KiB here");
        return;
    }
    let job = new_job();
    {
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        let mut peer = Peer::start(job, 1, 2, "echo-1g");
        ep.connect().unwrap();
        peer.wait_ready();
        let len = 1usize << 30;
        let msg = pattern(len, 3);
        ep.send(1, 9, &msg).unwrap();
        drop(msg);
        let mut back = vec![0u8; len];
        let r = ep.recv(Some(1), 9, 0, &mut back).unwrap();
        assert_eq!(r.len, len);
        assert!(back == pattern(len, 3), "1 GiB content differs");
        ep.send(1, STOP, &[]).unwrap();
        assert!(peer.0.wait().unwrap().success());
    }
    assert_clean(job);
}

#[test]
fn bad_arguments_are_errors() {
    let job = new_job();
    {
        assert!(matches!(
            Endpoint::open(EndpointConfig::new(job, 3, 2)),
            Err(ShmError::InvalidArgument(_))
        ));
        let mut ep = Endpoint::open(EndpointConfig::new(job, 0, 2)).unwrap();
        assert!(matches!(
            ep.send(1, 0, b"x"),
            Err(ShmError::InvalidArgument(_))
        ));
        assert!(matches!(
            ep.send(0, 0, b"x"),
            Err(ShmError::InvalidArgument(_))
        ));
        assert!(matches!(
            ep.recv(Some(5), 0, 0, &mut []),
            Err(ShmError::InvalidArgument(_))
        ));
        // A second endpoint for the same rank of the same job is refused.
        assert!(Endpoint::open(EndpointConfig::new(job, 0, 2)).is_err());
    }
    assert_clean(job);
}
