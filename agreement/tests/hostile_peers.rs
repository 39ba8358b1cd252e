//! The state machines under whatever a peer can send: random sequences of decoded
//! messages from any rank (in range or not, the process itself included), failure
//! notices and local calls, for ERA (both tree shapes), the reliable broadcast, the
//! two-party agreement and the detector. None may panic: the `expect`s in the ERA
//! engine guard states that only local calls reach, and this test keeps it so.

use proptest::prelude::*;
use steadfast_agreement::bcast::{Broadcaster, Topic};
use steadfast_agreement::detector::{Detector, DetectorConfig};
use steadfast_agreement::era::{Contribution, Decision, Era, EraConfig, Outcome};
use steadfast_agreement::pair::PairAgreement;
use steadfast_agreement::tree::TreeShape;
use steadfast_agreement::wire::EraMsg;
use steadfast_agreement::{CommId, CommKey, Epoch, Rank, RankSet};

/// Ranks in a communicator of this size; generated ranks go a little beyond it.
const N: u32 = 6;

fn rank() -> impl Strategy<Value = Rank> {
    (0..N + 2).prop_map(Rank)
}

fn rank_set() -> impl Strategy<Value = RankSet> {
    proptest::collection::vec(0..N + 2, 0..N as usize + 2)
        .prop_map(|v| v.into_iter().map(Rank).collect())
}

fn seq() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0..4u32, 1 => any::<u32>()]
}

fn era_msg() -> impl Strategy<Value = EraMsg> {
    prop_oneof![
        (any::<u64>(), seq(), rank_set(), rank_set()).prop_map(|(value, d, k, a)| {
            EraMsg::Up(Contribution {
                value,
                decided_below: d,
                known_failed: k,
                acked: a,
            })
        }),
        (any::<u64>(), any::<bool>(), seq(), rank_set()).prop_map(|(value, pf, gc, f)| {
            EraMsg::Down(Decision {
                value,
                outcome: if pf {
                    Outcome::ProcFailed
                } else {
                    Outcome::Success
                },
                gc_below: gc,
                failed: f,
            })
        }),
        rank_set().prop_map(|known_failed| EraMsg::ResultRequest { known_failed }),
    ]
}

#[derive(Debug, Clone)]
enum EraOp {
    Start(u32, u64, RankSet),
    Failure(Rank),
    Message(Rank, u32, EraMsg),
}

fn era_op() -> impl Strategy<Value = EraOp> {
    prop_oneof![
        1 => (seq(), any::<u64>(), rank_set()).prop_map(|(s, v, a)| EraOp::Start(s, v, a)),
        1 => rank().prop_map(EraOp::Failure),
        4 => (rank(), seq(), era_msg()).prop_map(|(r, s, m)| EraOp::Message(r, s, m)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn era_survives_any_peer_input(
        me in 0..N,
        rebuilt in any::<bool>(),
        ops in proptest::collection::vec(era_op(), 0..40),
    ) {
        let key = CommKey { comm: CommId(7), epoch: Epoch(1) };
        let shape = if rebuilt { TreeShape::Rebuilt } else { TreeShape::Lazy };
        let mut era = Era::new(Rank(me), N, key, EraConfig { shape });
        let mut out = Vec::new();
        for op in ops {
            out.clear();
            match op {
                // Starting twice is the caller's error, answered with Err.
                EraOp::Start(s, v, acked) => { let _ = era.start(s, v, &acked, &mut out); }
                EraOp::Failure(r) => era.on_failure(r, &mut out),
                EraOp::Message(from, s, m) => era.on_message(from, s, m, &mut out),
            }
        }
        prop_assert!(!era.known_failed().contains(Rank(me)));
    }

    #[test]
    fn broadcast_pair_and_detector_survive_any_peer_input(
        me in 0..N,
        ops in proptest::collection::vec((0..6u8, rank(), rank(), any::<bool>(), any::<u64>()), 0..60),
    ) {
        let mut bc = Broadcaster::new(Rank(me), N);
        let mut pair = PairAgreement::new(Rank((me + 1) % N));
        let mut det = Detector::new(Rank(me), N, DetectorConfig::new(100, 350)).unwrap();
        let (mut bo, mut po, mut dout) = (Vec::new(), Vec::new(), Vec::new());
        det.start(0, &mut dout);
        let mut now = 0u64;
        for (kind, a, b, flag, t) in ops {
            now = now.saturating_add(t % 500);
            let incarnation = (t % 3) as u32;
            let topic = if flag { Topic::Revoke } else { Topic::Suspicion { rank: b, incarnation } };
            match kind {
                0 => bc.on_message(a, topic, &mut bo),
                1 if flag => bc.readmit(a, incarnation),
                1 => bc.on_failure(a, &mut bo),
                2 => pair.on_value(a, flag, &mut po),
                3 => pair.on_ack(a, &mut po),
                4 => { pair.on_failure(a, &mut po); det.on_failure(a, now, &mut dout); }
                _ => { det.on_heartbeat(a, now); det.on_observe(b, now, &mut dout); det.tick(now, &mut dout); }
            }
        }
        if pair.decided().is_none() {
            pair.start(true, &mut po);
        }
    }
}
