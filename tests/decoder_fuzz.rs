//! Fuzzing of what the runtime decodes from other processes: bootstrap frames from the
//! launcher (or from anyone who connects to its port), and PMI-1 answer lines and hex
//! values from Hydra or Slurm. Decoding must never panic; what it accepts must encode
//! back to the very same bytes (nothing invented, nothing ignored).
//!
//! Cases per property: `STEADFAST_FUZZ_CASES` (default 20000), so CI bounds the time.

use proptest::prelude::*;
use steadfast::bootstrap::pmi1::{hex, parse_line, unhex};
use steadfast::bootstrap::wire::{Frame, MAX_FRAME};

fn cases() -> u32 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

fn frame() -> impl Strategy<Value = Frame> {
    let key = "[a-z0-9/_-]{0,40}";
    let bytes = proptest::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        (any::<u16>(), any::<u32>(), any::<u32>(), any::<[u8; 32]>()).prop_map(
            |(version, rank, generation, secret)| Frame::Hello {
                version,
                rank,
                generation,
                secret,
            }
        ),
        (key, bytes.clone()).prop_map(|(key, value)| Frame::Put { key, value }),
        (any::<u32>(), key).prop_map(|(rank, key)| Frame::Get { rank, key }),
        (any::<u32>(), key).prop_map(|(rank, key)| Frame::Lookup { rank, key }),
        Just(Frame::Fence),
        Just(Frame::Ok),
        bytes.prop_map(Frame::Value),
        ".{0,60}".prop_map(Frame::Error),
        (any::<u32>(), any::<u32>(), ".{0,60}").prop_map(|(rank, generation, how)| {
            Frame::Failed {
                rank,
                generation,
                how,
            }
        }),
        (any::<u32>(), any::<u32>())
            .prop_map(|(rank, generation)| Frame::Restart { rank, generation }),
        Just(Frame::Joined),
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(rank, generation, pid)| {
            Frame::Restarted {
                rank,
                generation,
                pid,
            }
        }),
        (any::<u32>(), any::<u32>())
            .prop_map(|(rank, generation)| Frame::Rejoined { rank, generation }),
    ]
}

/// A valid frame's bytes, then changed: one byte flipped, cut short, or extended.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (frame(), any::<usize>(), any::<u8>(), 0u8..3).prop_map(|(f, at, x, how)| {
        let mut b = f.encode();
        let i = at % b.len();
        match how {
            0 => b[i] ^= x | 1,
            1 => b.truncate(i),
            _ => b.push(x),
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn frames_round_trip(f in frame()) {
        let bytes = f.encode();
        prop_assert_eq!(Frame::read_from(&mut &bytes[..]).unwrap(), f);
    }

    /// Whatever arrives on the socket: an error or a frame that is exactly those bytes.
    #[test]
    fn any_stream_is_refused_or_read_exactly(bytes in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        mutated(),
    ]) {
        if let Ok(f) = Frame::read_from(&mut &bytes[..]) {
            let again = f.encode();
            prop_assert!(again.len() <= MAX_FRAME + 4);
            prop_assert_eq!(&Frame::read_from(&mut &again[..]).unwrap(), &f);
            // Messages for people (errors, how a rank ended) are decoded leniently
            // (invalid UTF-8 shown as U+FFFD); everything else is exactly its bytes.
            if !matches!(f, Frame::Error(_) | Frame::Failed { .. }) {
                prop_assert_eq!(&bytes[..again.len()], &again[..], "accepted bytes re-encode exactly");
            }
        }
    }

    #[test]
    fn frame_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(f) = Frame::decode(&body) {
            if !matches!(f, Frame::Error(_) | Frame::Failed { .. }) {
                prop_assert_eq!(&f.encode()[4..], &body[..]);
            }
        }
    }

    /// PMI answers: parsing never panics, every word is split at its first `=`.
    #[test]
    fn pmi_lines_never_panic(line in ".{0,200}") {
        if let Ok(words) = parse_line(&line) {
            for (k, v) in words {
                prop_assert!(!k.contains('='));
                let word = format!("{k}={v}");
                prop_assert!(line.contains(&word));
            }
        }
    }

    /// Hex values: only what `hex` writes (case aside) is accepted.
    #[test]
    fn hex_values_are_canonical(s in "[0-9a-fA-F+ -]{0,40}", bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        prop_assert_eq!(unhex(&hex(&bytes)), Some(bytes));
        if let Some(v) = unhex(&s) {
            prop_assert_eq!(hex(&v), s.to_ascii_lowercase());
        }
    }
}

#[test]
fn a_signed_hex_digit_is_refused() {
    assert_eq!(unhex("+f"), None);
    assert_eq!(unhex("0f"), Some(vec![15]));
}
