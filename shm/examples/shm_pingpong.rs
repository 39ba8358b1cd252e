//! Two-process ping-pong and streaming bandwidth over steadfast-shm, OSU-style table.
//!
//! ```text
//! cargo run --release -p steadfast-shm --example shm_pingpong -- [--min 8] [--max 64M] [-i N] [--no-single-copy] [--no-pin]
//! ```
//! The two processes are pinned to the first two allowed cores unless `--no-pin`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;
use steadfast_os::DieWithParent;
use steadfast_shm::{Endpoint, EndpointConfig};

const TAG_PING: u64 = 1;
const TAG_BW: u64 = 2;
const TAG_ACK: u64 = 3;
const WINDOW: usize = 64;

struct Options {
    min: usize,
    max: usize,
    iterations: Option<usize>,
    pin: bool,
    peer: Option<u64>,
    eager: Option<usize>,
    single_copy: bool,
}

fn die(msg: &str) -> ! {
    eprintln!("shm_pingpong: {msg}");
    std::process::exit(1)
}

fn parse_size(s: &str) -> usize {
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .map(|n| n * mult)
        .unwrap_or_else(|_| die(&format!("bad size {s:?}")))
}

fn parse_args() -> Options {
    let mut o = Options {
        min: 8,
        max: 64 << 20,
        iterations: None,
        pin: true,
        peer: None,
        eager: None,
        single_copy: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--min" => o.min = parse_size(&value()),
            "--max" => o.max = parse_size(&value()),
            "--iterations" | "-i" => {
                o.iterations = Some(
                    value()
                        .parse()
                        .unwrap_or_else(|_| die("bad iteration count")),
                )
            }
            "--no-pin" => o.pin = false,
            "--no-single-copy" => o.single_copy = false,
            "--eager" => o.eager = Some(parse_size(&value())),
            "--peer" => {
                o.peer = Some(u64::from_str_radix(&value(), 16).unwrap_or_else(|_| die("bad job")))
            }
            "--help" | "-h" => {
                println!("usage: shm_pingpong [--min SIZE] [--max SIZE] [--iterations N] [--eager SIZE] [--no-single-copy] [--no-pin]");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?}")),
        }
    }
    o
}

/// Pins to the `nth` CPU this process may use, if it may use at least two.
fn pin_to_nth_cpu(nth: usize) -> Option<usize> {
    let allowed = steadfast_os::affinity::allowed_cpus();
    if allowed.len() < 2 || nth >= allowed.len() {
        return None;
    }
    steadfast_os::affinity::bind_to_allowed_cpu(nth)
}

fn sizes(o: &Options) -> Vec<usize> {
    let mut v = Vec::new();
    if o.min == 0 {
        v.push(0);
    }
    let mut s = o.min.max(1);
    while s <= o.max {
        v.push(s);
        s *= 2;
    }
    v
}

fn iterations(o: &Options, size: usize) -> usize {
    o.iterations.unwrap_or(if size <= 8192 {
        100_000
    } else {
        ((400usize << 20) / size).clamp(20, 50_000)
    })
}

fn config(o: &Options, job: u64, rank: u32) -> EndpointConfig {
    let mut c = EndpointConfig::new(job, rank, 2);
    if let Some(e) = o.eager {
        c.eager_max = e;
    }
    c.single_copy = o.single_copy;
    c
}

fn main() {
    let o = parse_args();
    match o.peer {
        Some(job) => peer(&o, job),
        None => leader(&o),
    }
}

fn leader(o: &Options) {
    let job = 0x5150_0000_0000 | std::process::id() as u64;
    let mut ep = Endpoint::open(config(o, job, 0)).unwrap_or_else(|e| die(&e.to_string()));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(std::env::args().skip(1))
        .args(["--peer", &format!("{job:x}")])
        .stdout(Stdio::piped());
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot start the peer: {e}")));
    ep.connect().unwrap_or_else(|e| die(&e.to_string()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pinned = if o.pin { pin_to_nth_cpu(0) } else { None };
    println!(
        "# steadfast-shm ping-pong: inline <= {} B, eager through cells <= {} B, single copy above",
        steadfast_shm::message::INLINE_MAX,
        config(o, job, 0).eager_max
    );
    match pinned {
        Some(c) => {
            println!("# processes pinned: this one to cpu {c}, the peer to the next allowed cpu")
        }
        None => println!("# processes not pinned"),
    }
    println!(
        "{:<12}{:>16}{:>18}{:>18}",
        "# Size", "Latency (us)", "PP BW (MB/s)", "Stream BW (MB/s)"
    );
    let buf: Vec<u8> = (0..o.max.max(1)).map(|i| i as u8).collect();
    let mut rbuf = vec![0u8; o.max.max(1)];
    for size in sizes(o) {
        let n = iterations(o, size);
        let warm = (n / 10).max(2);
        let mut start = Instant::now();
        for i in 0..n + warm {
            if i == warm {
                start = Instant::now();
            }
            ep.send(1, TAG_PING, &buf[..size]).unwrap();
            ep.recv(Some(1), TAG_PING, 0, &mut rbuf[..size]).unwrap();
        }
        let one_way_us = start.elapsed().as_secs_f64() * 1e6 / (2 * n) as f64;
        let windows = n.div_ceil(WINDOW).max(2);
        let mut start = Instant::now();
        for w in 0..windows {
            if w == 1 {
                start = Instant::now();
            }
            for _ in 0..WINDOW {
                ep.send(1, TAG_BW, &buf[..size]).unwrap();
            }
            ep.recv(Some(1), TAG_ACK, 0, &mut []).unwrap();
        }
        let stream = (size * WINDOW * (windows - 1)) as f64 / start.elapsed().as_secs_f64() / 1e6;
        println!(
            "{size:<12}{one_way_us:>16.2}{:>18.2}{stream:>18.2}",
            size as f64 / one_way_us
        );
        std::io::stdout().flush().unwrap();
    }
    let _ = child.wait();
}

fn peer(o: &Options, job: u64) {
    let mut ep = Endpoint::open(config(o, job, 1)).unwrap_or_else(|e| die(&e.to_string()));
    ep.connect().unwrap_or_else(|e| die(&e.to_string()));
    if o.pin {
        pin_to_nth_cpu(1);
    }
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut buf = vec![0u8; o.max.max(1)];
    for size in sizes(o) {
        let n = iterations(o, size);
        let warm = (n / 10).max(2);
        for _ in 0..n + warm {
            ep.recv(Some(0), TAG_PING, 0, &mut buf[..size]).unwrap();
            ep.send(0, TAG_PING, &buf[..size]).unwrap();
        }
        let windows = n.div_ceil(WINDOW).max(2);
        for _ in 0..windows {
            for _ in 0..WINDOW {
                ep.recv(Some(0), TAG_BW, 0, &mut buf[..size]).unwrap();
            }
            ep.send(0, TAG_ACK, &[]).unwrap();
        }
    }
}
