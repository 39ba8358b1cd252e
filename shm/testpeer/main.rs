//! Peer process for the multi-process tests of steadfast-shm (not a user tool).
//!
//! `shm-test-peer JOB RANK RANKS SCENARIO`: opens rank RANK of RANKS local ranks in job
//! JOB, connects, prints `ready`, then plays SCENARIO against rank 0.

use steadfast_shm::{Endpoint, EndpointConfig, ANY_TAG};

/// Tag that ends the echo scenario.
const STOP: u64 = 0xdead;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: shm-test-peer JOB RANK RANKS echo|echo-pipelined|echo-1g|hang|stream");
        std::process::exit(2);
    }
    let job = u64::from_str_radix(&args[1], 16).expect("job in hex");
    let rank: u32 = args[2].parse().expect("rank");
    let ranks: u32 = args[3].parse().expect("ranks");
    let mut config = EndpointConfig::new(job, rank, ranks);
    // "echo-pipelined": this process refuses single copy, as under a strict ptrace
    // policy; senders must fall back to streaming through the ring.
    config.single_copy = args[4] != "echo-pipelined";
    let mut ep = Endpoint::open(config).expect("open");
    ep.connect().expect("connect");
    println!("ready");
    match args[4].as_str() {
        "echo" | "echo-pipelined" | "echo-1g" => {
            let cap = if args[4] == "echo-1g" {
                1 << 30
            } else {
                (64 << 20) + 1
            };
            let mut buf = vec![0u8; cap];
            loop {
                let r = ep.recv(Some(0), 0, ANY_TAG, &mut buf).expect("recv");
                if r.tag == STOP {
                    break;
                }
                ep.send(0, r.tag, &buf[..r.len]).expect("send back");
            }
        }
        "hang" => {
            let mut buf = vec![0u8; 1 << 20];
            let _ = ep.recv(Some(0), 0, ANY_TAG, &mut buf);
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
        "stream" => {
            // 1000 messages to rank 0, tag = our rank, payload = sequence number then
            // filler: small (inline) and large (single copy) alternate.
            let big = vec![rank as u8; 5000];
            for seq in 0u64..1000 {
                let mut msg = if seq % 3 == 0 {
                    big.clone()
                } else {
                    vec![rank as u8; 16]
                };
                msg[..8].copy_from_slice(&seq.to_le_bytes());
                ep.send(0, rank as u64, &msg).expect("stream send");
            }
            // Wait for rank 0's goodbye so our buffers stay valid until it is done.
            let _ = ep.recv(Some(0), STOP, 0, &mut []);
        }
        "exchange-eager" => {
            // Both sides send 300 eager (1 KiB, five cells) messages before receiving
            // any: the rings fill both ways, and each side drains the other's messages
            // while it waits for room.
            let msg = vec![rank as u8; 1024];
            for _ in 0..300 {
                ep.send(0, 7, &msg).expect("exchange send");
            }
            let mut buf = vec![0u8; 1024];
            for _ in 0..300 {
                let r = ep.recv(Some(0), 7, 0, &mut buf).expect("exchange recv");
                assert_eq!(r.len, 1024);
                assert!(buf.iter().all(|&b| b == 0), "content from rank 0");
            }
            let _ = ep.recv(Some(0), STOP, 0, &mut []);
        }
        "isend-late" => {
            // A 4 MiB message whose sender does not come back to wait for 5 s: the
            // receiver must copy it alone (no help from a sender that is elsewhere).
            let msg: Vec<u8> = (0..4usize << 20)
                .map(|i| (i * 13 + i / 4096) as u8)
                .collect();
            // SAFETY: `msg` outlives the request (waited below).
            let req = unsafe { ep.isend(0, 3, &msg) }.expect("isend");
            std::thread::sleep(std::time::Duration::from_secs(5));
            ep.wait_send(req).expect("wait_send");
            let _ = ep.recv(Some(0), STOP, 0, &mut []);
        }
        other => panic!("unknown scenario {other}"),
    }
}
