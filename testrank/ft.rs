//! A rank program for the runtime's multi-process tests (not a user tool). Each scenario
//! prints lines the test checks; every failure of an expectation panics (exit 101).
//!
//! - `p2p`: every pair exchanges messages of several sizes (content checked), wildcard
//!   receives, a self-send, a truncated receive; prints `P2P OK` and the route counters.
//! - `agree-loop N VICTIM SEED`: N agreements; VICTIM SIGKILLs itself from a thread after
//!   a random delay; survivors ack and go on; each prints `DIGEST <hex>` of every
//!   agreement's (value, failed set, outcome) and `FAILED <ranks>`.
//! - `revoke`: everyone but rank 0 blocks in a receive nobody matches; rank 0 revokes
//!   after 200 ms; everyone prints `REVOKED after <µs>`.
//! - `detect VICTIM`: VICTIM sends everyone a time stamp and SIGKILLs itself; the others
//!   block in a receive from it and print `DETECTED in <µs>` when it fails.
//! - `hang VICTIM`: VICTIM computes for 3 s without progressing; the others are told by
//!   the heartbeat detector (`SUSPECTED after <ms>`), shrink; VICTIM, resuming, finds
//!   itself excluded (`EXCLUDED`).
//! - `shrink VICTIM`: VICTIM dies; survivors agree (ProcFailed), shrink, run a ring
//!   exchange and an agreement on the new communicator, print `SHRUNK <size> RING OK`.
//! - `contexts N SEED`: N communicators created (dup, split, now and then shrink) and
//!   freed (now and then after a revoke), up to 8 live at once; each carries one message
//!   per rank that stays unreceived until just before its free, and each new one's
//!   wildcard receive must get its own message: a context shared with a live (or a
//!   revoked, freed) communicator shows as a crossed message. Prints `CONTEXTS OK ...`.
//! - `split-after-failure VICTIM`: VICTIM dies; the survivors acknowledge it, split (the
//!   context agreed among the live ranks only), exchange on the new communicator, free
//!   it; print `SPLIT OK <size>`.
//! - `order`, `deadsource`, `revokepending`, `overtake`: MPI matching order and its ULFM rules
//!   (`matching.rs`); `direct`: blocking receives that wait unposted (`direct.rs`).
//! - `ssend`, `ssend-fail`, `mprobe`: synchronous sends and matched
//!   probes (`ssend.rs`).
//! - `threads T ROUNDS VICTIM`: T threads per rank on shared and private communicators,
//!   VICTIM (or `none`) SIGKILLed mid-exchange (`threads.rs`).
//! - `lane-ft`: an agreement start and a revoke queued while another thread holds the
//!   engine return at once and take effect once it lets go (`lane_ft.rs`).
//! - `lane-queries`: rank 1 dies; rank 0's queries, `ack_failed` and a wildcard
//!   receive while another thread holds its engine return at once (`lane_ft.rs`).
//! - `exhaust`: dups without freeing until `ContextsExhausted`; prints `EXHAUSTED after
//!   <n>: <error>`, then frees one and dups again (`REUSED`).
//!
//! The scenarios by file: `p2p.rs` (`p2p`, `waitall`), `failures.rs` (`agree-loop`,
//! `revoke`, `shrink`, `detect`, `hang`, `netsplit`, `compute`, `anysource`), `rma.rs`
//! (`window`, `stream`, `bigput`), `comms.rs` (`intercomm`, `contexts`,
//! `split-after-failure`, `exhaust`); `matching.rs`, `ssend.rs`, `threads.rs` as above.

mod comms;
mod direct;
mod failures;
mod held;
mod idup;
mod lane_ft;
mod matching;
mod p2p;
mod rma;
mod segments;
mod ssend;
mod threads;

use std::time::Instant;
use steadfast::World;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed) as u8)
        .collect()
}

fn die_now() -> ! {
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGKILL) };
    unreachable!("SIGKILL returned")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let big_data = match args.get(1).map(String::as_str) {
        Some("bigput") => rma::big_put_data(args[2].parse().expect("numeric argument")),
        _ => Vec::new(),
    };
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("init: {e}");
        std::process::exit(3)
    });
    let comm = world.comm();
    let arg = |i: usize| -> u64 { args[i].parse().expect("numeric argument") };
    match args.get(1).map(String::as_str) {
        Some("p2p") => p2p::p2p(&world, &comm),
        Some("agree-loop") => failures::agree_loop(&comm, arg(2) as u32, arg(3) as u32, arg(4)),
        Some("revoke") => failures::revoke(&world, &comm),
        Some("shrink") => failures::shrink(&world, &comm, arg(2) as u32),
        Some("detect") => failures::detect(&comm, arg(2) as u32),
        Some("hang") => failures::hang(&world, &comm, arg(2) as u32),
        Some("hang-send") => failures::hang_send(&world, &comm, arg(2) as u32),
        Some("netsplit") => failures::netsplit(&world, &comm),
        Some("anysource") => failures::anysource(&world, &comm, arg(2) as u32),
        Some("compute") => failures::compute(&world, &comm, arg(2) as u32),
        Some("stream") => rma::stream(&world, &comm, arg(2)),
        Some("window") => rma::window(&world, &comm, arg(2) as u32),
        Some("bigput") => rma::big_put(&world, &comm, arg(2), &big_data),
        Some("bigexchange") => rma::big_exchange(&world, &comm, arg(2)),
        Some("waitall") => p2p::wait_all_with_a_dead_peer(&world, &comm),
        Some("intercomm") => comms::intercomm(&world, &comm, &args[2], arg(3) as u32),
        Some("contexts") => comms::contexts(&world, &comm, arg(2), arg(3)),
        Some("exhaust") => comms::exhaust(&comm),
        Some("idup") => idup::idup(&world, &comm, arg(2)),
        Some("split-after-failure") => comms::split_after_failure(&world, &comm, arg(2) as u32),
        Some("order") => matching::order(&world, &comm, &args[2]),
        Some("deadsource") => matching::deadsource(&world, &comm),
        Some("direct") => direct::direct(&world, &comm),
        Some("revokepending") => matching::revoke_pending(&world, &comm),
        Some("overtake") => matching::overtake(&comm, &args[2]),
        Some("ssend") => ssend::ssend(&world, &comm),
        Some("ssend-fail") => ssend::ssend_fail(&world, &comm),
        Some("mprobe") => ssend::mprobe(&world, &comm),
        Some("mprobe-withdrawn") => ssend::mprobe_withdrawn(&comm),
        Some("threads") => threads::threads(&world, &comm, &args),
        Some("lane-ft") => lane_ft::lane_ft(&world, &comm),
        Some("lane-queries") => lane_ft::lane_queries(&comm),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2)
        }
    }
    drop(comm);
    let t = Instant::now();
    world.finalize();
    println!("FINALIZED in {} us", t.elapsed().as_micros());
}
