//! Two-process ping-pong over one libfabric provider, printing an OSU-style table of
//! one-way latency and bandwidth (ping-pong and streaming with a window of 64).
//!
//! ```text
//! cargo run --release -p steadfast-fabric --example pingpong -- --provider tcp
//! ```
//!
//! The process starts its own peer (itself, with `--peer`), exchanges addresses over
//! the peer's stdin/stdout, and kills the peer if it exits early.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use steadfast_fabric::{FabricConfig, Messenger, MessengerConfig, Request};
use steadfast_os::DieWithParent;

const TAG_PING: u64 = 1;
const TAG_BW: u64 = 2;
const TAG_ACK: u64 = 3;
const WINDOW: usize = 64;

struct Options {
    provider: String,
    domain: Option<String>,
    min: usize,
    max: usize,
    iterations: Option<usize>,
    eager: Option<usize>,
    peer: bool,
    pin: bool,
}

fn parse_size(s: &str) -> usize {
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .unwrap_or_else(|_| die(&format!("bad size {s:?}")))
        * mult
}

fn die(msg: &str) -> ! {
    eprintln!("pingpong: {msg}");
    std::process::exit(2)
}

fn parse_args() -> Options {
    let mut o = Options {
        provider: "tcp".into(),
        domain: None,
        min: 8,
        max: 4 << 20,
        iterations: None,
        eager: None,
        peer: false,
        pin: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--provider" | "-p" => o.provider = value(),
            "--domain" | "-d" => o.domain = Some(value()),
            "--min" => o.min = parse_size(&value()),
            "--max" => o.max = parse_size(&value()),
            "--iterations" | "-i" => {
                o.iterations = Some(
                    value()
                        .parse()
                        .unwrap_or_else(|_| die("bad iteration count")),
                )
            }
            "--eager" => o.eager = Some(parse_size(&value())),
            "--peer" => o.peer = true,
            "--no-pin" => o.pin = false,
            "--help" | "-h" => {
                println!("usage: pingpong [--provider NAME] [--domain NAME] [--min SIZE] [--max SIZE] [--iterations N] [--eager SIZE] [--no-pin]");
                println!(
                    "  the two processes are pinned to the first two allowed cores unless --no-pin"
                );
                println!(
                    "  providers: tcp (the fastest TCP path), net, tcp;ofi_rxm, shm, verbs, ..."
                );
                println!("  socket providers default to the loopback domain (lo)");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?} (try --help)")),
        }
    }
    o
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| {
            u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|_| die("bad address"))
        })
        .collect()
}

fn fabric_config(o: &Options) -> FabricConfig {
    let mut config = FabricConfig::new(&o.provider);
    let socket_provider = !o.provider.starts_with("shm");
    match &o.domain {
        Some(d) => config = config.domain(d),
        None if socket_provider => config = config.domain("lo"),
        None => {}
    }
    config
}

fn open(o: &Options, id: u32) -> Messenger {
    // The provider workarounds' environment (net's saved-message limit).
    steadfast_fabric::apply_quirk_environment();
    let mut config = MessengerConfig::new(fabric_config(o), id);
    config.eager_threshold = o.eager;
    Messenger::open(config).unwrap_or_else(|e| die(&e.to_string()))
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

fn iterations(o: &Options, size: usize) -> (usize, usize) {
    let n = o.iterations.unwrap_or(
        if size <= 8192 {
            50_000
        } else {
            (400 << 20) / size.max(1)
        }
        .clamp(200, 50_000),
    );
    (n, (n / 10).max(2))
}

fn peer_main(o: &Options) {
    let mut m = open(o, 1);
    if o.pin {
        pin_to_nth_cpu(1);
    }
    println!("{}", hex(&m.address().to_bytes()));
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    m.add_peer(0, &unhex(line.trim()))
        .unwrap_or_else(|e| die(&e.to_string()));
    // Two buffers: the next ping's receive is posted (into one) before the reply
    // leaves (from the other).
    let mut bufs = [vec![0u8; o.max.max(1)], vec![0u8; o.max.max(1)]];
    for size in sizes(o) {
        let (n, warm) = iterations(o, size);
        let [a, b] = &mut bufs;
        let (mut cur, mut next) = (a, b);
        // SAFETY: each buffer is not touched until its request is waited for.
        let mut r = unsafe { m.irecv(Some(0), TAG_PING, 0, &mut cur[..size]) }.unwrap();
        for i in 0..n + warm {
            m.wait(r).unwrap();
            if i + 1 < n + warm {
                // SAFETY: as above; `next` is free (its previous receive completed).
                r = unsafe { m.irecv(Some(0), TAG_PING, 0, &mut next[..size]) }.unwrap();
            }
            m.send(0, TAG_PING, &cur[..size]).unwrap();
            std::mem::swap(&mut cur, &mut next);
        }
        let windows = n.div_ceil(WINDOW).max(2);
        let mut slots: Vec<Vec<u8>> = (0..WINDOW).map(|_| vec![0u8; size]).collect();
        for _ in 0..windows {
            let mut requests: Vec<Request> = Vec::with_capacity(WINDOW);
            for s in slots.iter_mut() {
                // SAFETY: each buffer outlives its request, waited for just below.
                requests.push(unsafe { m.irecv(Some(0), TAG_BW, 0, s) }.unwrap());
            }
            for r in requests {
                m.wait(r).unwrap();
            }
            m.send(0, TAG_ACK, &[]).unwrap();
        }
    }
    // The parent's goodbye: everything we sent has arrived.
    m.recv(Some(0), TAG_ACK, 0, &mut []).unwrap();
}

struct PeerGuard(Child);

impl Drop for PeerGuard {
    fn drop(&mut self) {
        if let Ok(Some(status)) = self.0.try_wait() {
            if !status.success() {
                eprintln!("pingpong: the peer process ended with {status}");
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Pins the calling process to the `nth` CPU it is allowed on (as a launcher's
/// `--bind-to core` would); returns that CPU, or `None` when there are not enough CPUs
/// or the call is refused (then nothing changes).
fn pin_to_nth_cpu(nth: usize) -> Option<usize> {
    let allowed = steadfast_os::affinity::allowed_cpus();
    if allowed.len() < 2 || nth >= allowed.len() {
        return None;
    }
    steadfast_os::affinity::bind_to_allowed_cpu(nth)
}

fn spawn_peer() -> PeerGuard {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(std::env::args().skip(1))
        .arg("--peer")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    PeerGuard(
        cmd.spawn()
            .unwrap_or_else(|e| die(&format!("cannot start the peer: {e}"))),
    )
}

fn main() {
    let o = parse_args();
    if o.peer {
        return peer_main(&o);
    }
    if let Err(message) = std::panic::catch_unwind(|| run(&o)) {
        let _ = message;
        std::process::exit(1);
    }
}

fn run(o: &Options) {
    let mut m = open(o, 0);
    let mut guard = spawn_peer();
    let mut line = String::new();
    BufReader::new(guard.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if line.trim().is_empty() {
        die("the peer did not start");
    }
    m.add_peer(1, &unhex(line.trim()))
        .unwrap_or_else(|e| die(&e.to_string()));
    let mut stdin = guard.0.stdin.take().unwrap();
    writeln!(stdin, "{}", hex(&m.address().to_bytes())).unwrap();

    // Pinned after opening: libfabric's topology probe resets the affinity mask.
    let pinned = if o.pin { pin_to_nth_cpu(0) } else { None };
    let info = m.info();
    println!(
        "# steadfast-fabric ping-pong: {}, domain {}",
        info.resolution(),
        info.domain_name()
    );
    match pinned {
        Some(cpu) => {
            println!("# processes pinned: this one to cpu {cpu}, the peer to the next allowed cpu")
        }
        None => println!("# processes not pinned"),
    }
    println!(
        "# inject <= {} B, eager <= {} B, rendezvous (RMA read) above",
        m.inject_limit(),
        m.eager_limit()
    );
    println!(
        "{:<12}{:>16}{:>18}{:>18}",
        "# Size", "Latency (us)", "PP BW (MB/s)", "Stream BW (MB/s)"
    );
    let buf: Vec<u8> = (0..o.max.max(1)).map(|i| i as u8).collect();
    let mut rbuf = vec![0u8; o.max.max(1)];
    let ack = &mut [0u8; 1][..0];
    for size in sizes(o) {
        let (n, warm) = iterations(o, size);
        let mut start = Instant::now();
        for i in 0..n + warm {
            if i == warm {
                start = Instant::now();
            }
            // The reply's receive is posted before the ping leaves, as fi_pingpong does,
            // so the reply never arrives unexpected.
            // SAFETY: `rbuf` is not touched until the request is waited for.
            let r = unsafe { m.irecv(Some(1), TAG_PING, 0, &mut rbuf[..size]) }.unwrap();
            m.send(1, TAG_PING, &buf[..size]).unwrap();
            m.wait(r).unwrap();
        }
        let one_way_us = start.elapsed().as_secs_f64() * 1e6 / (2 * n) as f64;
        let pp_bw = size as f64 / one_way_us;

        let windows = n.div_ceil(WINDOW).max(2);
        let mut start = Instant::now();
        for w in 0..windows {
            if w == 1 {
                start = Instant::now();
            }
            let mut requests: Vec<Request> = Vec::with_capacity(WINDOW);
            for _ in 0..WINDOW {
                // SAFETY: buf is not touched until every request is waited for below.
                if let Some(r) = unsafe { m.isend(1, TAG_BW, &buf[..size]) }.unwrap() {
                    requests.push(r);
                }
            }
            for r in requests {
                m.wait(r).unwrap();
            }
            // Exact tag: libfabric 1.17 shm never matches a message that arrived before a
            // wildcard receive was posted (docs/architecture.md, provider defects).
            m.recv(Some(1), TAG_ACK, 0, ack).unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        let stream_bw = (size * WINDOW * (windows - 1)) as f64 / secs / 1e6;
        println!("{size:<12}{one_way_us:>16.2}{pp_bw:>18.2}{stream_bw:>18.2}");
    }
    m.send(1, TAG_ACK, &[]).unwrap();
    let _ = guard.0.wait();
}
