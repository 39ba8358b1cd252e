//! Criterion benches of the agreement core: CPU cost of a failure-free ERA per process,
//! of a whole agreement through the control plane at the sizes of one node (the part of
//! the runtime's agreement that is not waiting for the others), simulator throughput,
//! broadcast fan-out, and the wire codec.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::collections::VecDeque;
use std::hint::black_box;
use steadfast_agreement::bcast::{BcastAction, Broadcaster, Topic};
use steadfast_agreement::control::{ControlPlane, Output};
use steadfast_agreement::detector::{Detector, DetectorConfig};
use steadfast_agreement::sim::{run, Scenario};
use steadfast_agreement::{CommId, CommKey, Epoch, Era, EraAction, EraConfig, Rank, RankSet};

const KEY: CommKey = CommKey {
    comm: CommId(1),
    epoch: Epoch(0),
};

/// One failure-free agreement over `n` engines, messages carried as bytes in FIFO order:
/// every engine step, encode and decode, nothing else.
fn agree_once(eras: &mut [Era], seq: u32, queue: &mut VecDeque<(u32, u32, Vec<u8>)>) -> u64 {
    let mut out = Vec::new();
    let mut value = u64::MAX;
    let none = RankSet::new();
    let mut route = |from: u32, out: &mut Vec<EraAction>, queue: &mut VecDeque<_>| {
        for a in out.drain(..) {
            match a {
                EraAction::Send { to, seq, msg } => {
                    let mut buf = Vec::with_capacity(48);
                    msg.encode(KEY, seq, &mut buf);
                    queue.push_back((from, to.0, buf));
                }
                EraAction::Decided { decision, .. } => value &= decision.value,
                EraAction::Excluded { .. } => unreachable!(),
            }
        }
    };
    for (r, era) in eras.iter_mut().enumerate() {
        era.start(seq, r as u64 | 1 << 40, &none, &mut out).unwrap();
        route(r as u32, &mut out, queue);
    }
    while let Some((from, to, bytes)) = queue.pop_front() {
        eras[to as usize]
            .on_bytes(Rank(from), &bytes, &mut out)
            .unwrap();
        route(to, &mut out, queue);
    }
    value
}

fn era_per_process(c: &mut Criterion) {
    let n = 1024u32;
    let mut g = c.benchmark_group("era_failure_free");
    // Throughput in processes: the reported time per element is the CPU cost of one
    // agreement at one process.
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("agree", n), |b| {
        let mut eras: Vec<Era> = (0..n)
            .map(|r| Era::new(Rank(r), n, KEY, EraConfig::default()))
            .collect();
        let mut queue = VecDeque::new();
        let mut seq = 0;
        b.iter(|| {
            seq += 1;
            black_box(agree_once(&mut eras, seq - 1, &mut queue))
        });
    });
    g.finish();
}

/// One failure-free agreement over `n` control planes (the runtime's whole control path
/// but the transport: start, encode, dispatch, decode, ERA or the two-party exchange,
/// decision), messages carried in FIFO order. The time is the CPU work of all `n`
/// processes together; at 4 ranks on 2 cores an agreement took ~10 µs, so what remains
/// is the scheduling of the processes, not this.
fn control_plane_agree(c: &mut Criterion) {
    let mut g = c.benchmark_group("control_plane_agree");
    for n in [2u32, 4, 8] {
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            let config = DetectorConfig::new(1_000_000_000, 10_000_000_000);
            let mut cps: Vec<ControlPlane> = (0..n)
                .map(|r| {
                    let d = Detector::new(Rank(r), n, config).expect("valid configuration");
                    let mut cp = ControlPlane::new(r, n, d);
                    cp.add_comm(KEY, 0, (0..n).collect());
                    cp
                })
                .collect();
            let mut wire: VecDeque<(u32, u32, Vec<u8>)> = VecDeque::new();
            let mut spare: Vec<Vec<u8>> = Vec::new();
            b.iter(|| {
                let mut seqs = Vec::with_capacity(n as usize);
                for (r, cp) in cps.iter_mut().enumerate() {
                    seqs.push(cp.start_agreement(KEY.comm, 1).expect("registered"));
                    drain(r as u32, cp, &mut wire, &mut spare);
                }
                while let Some((from, to, bytes)) = wire.pop_front() {
                    let cp = &mut cps[to as usize];
                    cp.on_control(from, &bytes, 0);
                    spare.push(bytes);
                    drain(to, cp, &mut wire, &mut spare);
                }
                for (cp, &seq) in cps.iter_mut().zip(&seqs) {
                    let d = cp.comm_mut(KEY.comm).and_then(|c| c.take_decision(seq));
                    assert_eq!(d.map(|d| d.value), Some(1), "every process decided");
                }
            });
        });
    }
    g.finish();
}

/// Moves `cp`'s outputs onto the wire (reusing buffers from `spare`).
fn drain(
    from: u32,
    cp: &mut ControlPlane,
    wire: &mut VecDeque<(u32, u32, Vec<u8>)>,
    spare: &mut Vec<Vec<u8>>,
) {
    while let Some(out) = cp.next_output() {
        if let Output::Send { to, range } = out {
            let mut buf = spare.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(cp.bytes(range));
            wire.push_back((from, to, buf));
        }
    }
}

fn simulator_throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulator");
    for (n, crashes) in [(4096u32, 0u32), (4096, 8)] {
        let scenario = Scenario::failure_free(n, 3).with_spread_crashes(crashes);
        let events = run(&scenario).events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(
            BenchmarkId::new(format!("events_{crashes}_crashes"), n),
            |b| b.iter(|| black_box(run(&scenario).messages)),
        );
    }
    g.finish();
}

/// One process receiving a revoke for the first time and producing its fan-out (the
/// per-hop CPU cost of the reliable broadcast), at n = 2^20 (40 neighbours).
fn bmg_fan_out(c: &mut Criterion) {
    let n = 1u32 << 20;
    let mut g = c.benchmark_group("bmg");
    g.bench_function(BenchmarkId::new("first_receipt_fan_out", n), |b| {
        let mut out: Vec<BcastAction> = Vec::with_capacity(64);
        b.iter(|| {
            let mut p = Broadcaster::new(Rank(12345), n);
            out.clear();
            p.on_message(Rank(12344), Topic::Revoke, &mut out);
            black_box(out.len())
        })
    });
    g.finish();
}

/// Encoding and decoding one ERA UP message (the most frequent control message): with
/// no failures, and carrying 10 failed ranks.
fn codec(c: &mut Criterion) {
    use steadfast_agreement::era::Contribution;
    use steadfast_agreement::wire::EraMsg;
    let mut g = c.benchmark_group("codec");
    for failed in [0u32, 10] {
        let mut known = RankSet::new();
        for r in 0..failed {
            known.insert(Rank(r * 97 + 3));
        }
        let msg = EraMsg::Up(Contribution {
            value: 0xfeed,
            decided_below: 7,
            known_failed: known.clone(),
            acked: known,
        });
        let mut buf = Vec::with_capacity(256);
        g.bench_function(BenchmarkId::new("era_up_encode", failed), |b| {
            b.iter(|| {
                buf.clear();
                black_box(&msg).encode(KEY, 9, &mut buf);
                black_box(buf.len())
            })
        });
        buf.clear();
        msg.encode(KEY, 9, &mut buf);
        g.bench_function(BenchmarkId::new("era_up_decode", failed), |b| {
            b.iter(|| EraMsg::decode(black_box(&buf), 4096).unwrap())
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    era_per_process,
    control_plane_agree,
    simulator_throughput,
    bmg_fan_out,
    codec
);
criterion_main!(benches);
