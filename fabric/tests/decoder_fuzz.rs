//! Fuzzing of the descriptors peers send through the runtime: endpoint addresses and
//! remote regions. Decoding never panics; an accepted address re-encodes to exactly the
//! bytes given (version 2 has no reserved bytes left: the generation took them); mutated
//! valid encodings are refused or re-encode exactly.
//!
//! Cases per property: `STEADFAST_FUZZ_CASES` (default 20000).

use proptest::prelude::*;
use steadfast_fabric::{PeerAddress, RemoteRegion};

fn cases() -> u32 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

fn address() -> impl Strategy<Value = PeerAddress> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        // A real name: 1 to 64 bytes (empty names are refused by design).
        proptest::collection::vec(any::<u8>(), 1..64),
    )
        .prop_map(
            |(addr_format, provider_hash, pid, host, generation, raw)| PeerAddress {
                addr_format,
                provider_hash,
                pid,
                host,
                generation,
                raw,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn addresses_round_trip(a in address()) {
        prop_assert_eq!(PeerAddress::from_bytes(&a.to_bytes()).unwrap(), a);
    }

    #[test]
    fn mutated_addresses_are_refused_or_exact(a in address(), at in any::<usize>(), x in any::<u8>(), how in 0u8..3) {
        let mut b = a.to_bytes();
        let i = at % b.len();
        match how {
            0 => b[i] ^= x | 1,
            1 => b.truncate(i),
            _ => b.push(x),
        }
        if let Ok(decoded) = PeerAddress::from_bytes(&b) {
            prop_assert_eq!(decoded.to_bytes(), b);
        }
    }

    #[test]
    fn random_addresses_never_panic(b in proptest::collection::vec(any::<u8>(), 0..96)) {
        if let Ok(decoded) = PeerAddress::from_bytes(&b) {
            prop_assert_eq!(decoded.to_bytes(), b);
        }
    }

    #[test]
    fn remote_regions_are_exact(b in proptest::collection::vec(any::<u8>(), 0..32)) {
        if let Ok(r) = RemoteRegion::from_bytes(&b) {
            prop_assert_eq!(&r.to_bytes()[..], &b[..]);
        }
    }
}
