//! Fuzzing every decoder with random and mutated input: decoding must never panic, and
//! whatever it accepts must re-encode to the very same bytes (nothing is invented).

use steadfast_agreement::bcast::Topic;
use steadfast_agreement::era::{Contribution, Decision, Outcome};
use steadfast_agreement::sim::SimRng;
use steadfast_agreement::wire::{EraMsg, FtMsg};
use steadfast_agreement::{CommId, CommKey, Epoch, Rank, RankSet};

const SIZE: u32 = 64;

fn cases() -> u64 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300_000)
}

fn valid_messages(rng: &mut SimRng) -> Vec<Vec<u8>> {
    let key = CommKey {
        comm: CommId(rng.next_u64()),
        epoch: Epoch(rng.next_u64() as u32),
    };
    let set = |rng: &mut SimRng| -> RankSet {
        (0..rng.below(6))
            .map(|_| Rank(rng.below(SIZE as u64) as u32))
            .collect()
    };
    let era = [
        EraMsg::Up(Contribution {
            value: rng.next_u64(),
            decided_below: rng.next_u64() as u32,
            known_failed: set(rng),
            acked: set(rng),
        }),
        EraMsg::Down(Decision {
            value: rng.next_u64(),
            outcome: Outcome::ProcFailed,
            gc_below: 3,
            failed: set(rng),
        }),
        EraMsg::ResultRequest {
            known_failed: set(rng),
        },
    ];
    let ft = [
        FtMsg::Bcast(Topic::Revoke),
        FtMsg::Bcast(Topic::Suspicion {
            rank: Rank(rng.below(SIZE as u64) as u32),
            incarnation: rng.below(4) as u32,
        }),
        FtMsg::Heartbeat,
        FtMsg::Observe,
        FtMsg::PairValue(rng.chance(0.5)),
        FtMsg::PairAck,
    ];
    let mut all = Vec::new();
    for m in era {
        let mut b = Vec::new();
        m.encode(key, rng.next_u64() as u32, &mut b);
        all.push(b);
    }
    for m in ft {
        let mut b = Vec::new();
        m.encode(key, rng.next_u64() as u32, &mut b);
        all.push(b);
    }
    all
}

fn mutate(rng: &mut SimRng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.range(1, 4) {
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] = rng.next_u64() as u8;
            }
            2 => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
            3 => bytes.push(rng.next_u64() as u8),
            _ => {
                // A count field blown up: the decoder must not allocate for it.
                if bytes.len() >= 24 {
                    let at = 20 + rng.below((bytes.len() - 23) as u64) as usize;
                    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
                }
            }
        }
    }
    bytes
}

fn check(bytes: &[u8]) {
    if let Ok((h, m)) = EraMsg::decode(bytes, SIZE) {
        let mut again = Vec::new();
        m.encode(h.key, h.seq, &mut again);
        assert_eq!(again, bytes, "ERA decode/encode changed the bytes");
    }
    if let Ok((h, m)) = FtMsg::decode(bytes, SIZE) {
        let mut again = Vec::new();
        m.encode(h.key, h.seq, &mut again);
        assert_eq!(again, bytes, "FT decode/encode changed the bytes");
    }
}

#[test]
fn decoders_survive_random_and_mutated_input() {
    let mut rng = SimRng::new(0xf022);
    let mut accepted = 0u64;
    for case in 0..cases() {
        let bytes = if case % 8 == 0 {
            (0..rng.below(64)).map(|_| rng.next_u64() as u8).collect()
        } else {
            let valid = valid_messages(&mut rng);
            let pick = valid[rng.below(valid.len() as u64) as usize].clone();
            mutate(&mut rng, pick)
        };
        check(&bytes);
        accepted += EraMsg::decode(&bytes, SIZE).is_ok() as u64;
    }
    // Some mutations (a flipped value bit) stay valid; most must be refused.
    assert!(
        accepted > 0 && accepted < cases() / 2,
        "{accepted} accepted"
    );
}
