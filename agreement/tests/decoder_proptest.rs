//! Property tests of every decoder: arbitrary bytes never panic; valid messages survive
//! a round trip; a valid message with any byte changed or cut is refused or re-encodes
//! to exactly the bytes given.

use proptest::prelude::*;
use steadfast_agreement::bcast::Topic;
use steadfast_agreement::era::{Contribution, Decision, Outcome};
use steadfast_agreement::wire::{EraMsg, FtMsg};
use steadfast_agreement::{CommId, CommKey, Epoch, Rank, RankSet};

const SIZE: u32 = 64;

fn rank_set() -> impl Strategy<Value = RankSet> {
    proptest::collection::vec(0..SIZE, 0..8).prop_map(|v| v.into_iter().map(Rank).collect())
}

fn era_msg() -> impl Strategy<Value = EraMsg> {
    prop_oneof![
        (any::<u64>(), any::<u32>(), rank_set(), rank_set()).prop_map(|(value, d, k, a)| {
            EraMsg::Up(Contribution {
                value,
                decided_below: d,
                known_failed: k,
                acked: a,
            })
        }),
        (any::<u64>(), any::<bool>(), any::<u32>(), rank_set()).prop_map(|(value, pf, gc, f)| {
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

fn ft_msg() -> impl Strategy<Value = FtMsg> {
    prop_oneof![
        Just(FtMsg::Bcast(Topic::Revoke)),
        (0..SIZE, any::<u32>()).prop_map(|(r, incarnation)| FtMsg::Bcast(Topic::Suspicion {
            rank: Rank(r),
            incarnation
        })),
        Just(FtMsg::Heartbeat),
        Just(FtMsg::Observe),
        any::<bool>().prop_map(FtMsg::PairValue),
        Just(FtMsg::PairAck),
    ]
}

fn key() -> impl Strategy<Value = (CommKey, u32)> {
    (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(c, e, s)| {
        (
            CommKey {
                comm: CommId(c),
                epoch: Epoch(e),
            },
            s,
        )
    })
}

/// Decodes with both decoders; whatever either accepts must re-encode identically.
fn decode_both(bytes: &[u8]) {
    if let Ok((h, m)) = EraMsg::decode(bytes, SIZE) {
        let mut again = Vec::new();
        m.encode(h.key, h.seq, &mut again);
        assert_eq!(again, bytes);
    }
    if let Ok((h, m)) = FtMsg::decode(bytes, SIZE) {
        let mut again = Vec::new();
        m.encode(h.key, h.seq, &mut again);
        assert_eq!(again, bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
        decode_both(&bytes);
    }

    #[test]
    fn era_round_trip_and_damage((k, seq) in key(), m in era_msg(), at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = Vec::new();
        m.encode(k, seq, &mut bytes);
        let (h, back) = EraMsg::decode(&bytes, SIZE).unwrap();
        prop_assert_eq!((h.key, h.seq), (k, seq));
        prop_assert_eq!(&back, &m);
        let mut damaged = bytes.clone();
        let i = at % damaged.len();
        damaged[i] = byte;
        decode_both(&damaged);
        decode_both(&bytes[..cut % bytes.len()]);
        prop_assert!(EraMsg::decode(&bytes[..cut % bytes.len()], SIZE).is_err());
    }

    #[test]
    fn ft_round_trip_and_damage((k, seq) in key(), m in ft_msg(), at in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = Vec::new();
        m.encode(k, seq, &mut bytes);
        prop_assert_eq!(FtMsg::decode(&bytes, SIZE).unwrap().1, m);
        let mut damaged = bytes.clone();
        let i = at % damaged.len();
        damaged[i] = byte;
        decode_both(&damaged);
    }
}
