//! Fuzzing of everything the shared-memory transport decodes from another process: the
//! segment header a peer wrote, and the cell headers it pushes into our rings. Decoding
//! must never panic, and what it accepts must be self-consistent (a geometry whose every
//! offset fits in the file, a cell header that writes back to itself).
//!
//! Cases per property: `STEADFAST_FUZZ_CASES` (default 20000), so CI bounds the time.

use proptest::prelude::*;
use steadfast_shm::message::{Header, INLINE_MAX};
use steadfast_shm::ring::{Cell, RingHeader, CELL_BYTES};
use steadfast_shm::segment::{validate_header, HeaderFields, HEADER_BYTES, MAGIC, VERSION};

/// Size of a ring header in the segment.
const RING_HEADER: usize = std::mem::size_of::<RingHeader>();
/// Split slots per sender times their size.
const SLOTS: usize = 64 * 64;

fn cases() -> u32 {
    std::env::var("STEADFAST_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

/// A field that is often what a correct owner writes and otherwise anything.
fn mostly<T: std::fmt::Debug + Clone + 'static>(
    good: T,
    any: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<T> {
    prop_oneof![3 => Just(good), 1 => any].boxed()
}

fn header_fields() -> impl Strategy<Value = (HeaderFields, usize)> {
    (
        mostly(MAGIC, any::<u64>()),
        mostly(VERSION, any::<u32>()),
        mostly(HEADER_BYTES as u32, any::<u32>()),
        mostly(CELL_BYTES as u32, any::<u32>()),
        prop_oneof![(0u32..20).prop_map(|b| 1 << b), any::<u32>(), Just(1 << 31)],
        prop_oneof![1u32..300, any::<u32>(), Just(u32::MAX)],
        mostly(3u32, any::<u32>()),
        mostly(7u64, any::<u64>()),
        any::<u64>(),
        any::<usize>(),
        any::<bool>(),
    )
        .prop_map(
            |(magic, version, hb, cb, ring_cells, senders, rank, job, total, len, consistent)| {
                let mut h = HeaderFields {
                    magic,
                    version,
                    header_bytes: hb,
                    cell_bytes: cb,
                    ring_cells,
                    senders,
                    owner_rank: rank,
                    job,
                    total_bytes: total,
                };
                // Half of the cases claim a size that matches what the fields imply (as
                // a hostile peer would), computed with wrapping arithmetic.
                let len = if consistent {
                    let stride = (ring_cells as usize)
                        .wrapping_mul(CELL_BYTES)
                        .wrapping_add(RING_HEADER);
                    let l = HEADER_BYTES
                        .wrapping_add((senders as usize).wrapping_mul(stride))
                        .wrapping_add((senders as usize).wrapping_mul(SLOTS));
                    h.total_bytes = l as u64;
                    l
                } else {
                    len
                };
                (h, len)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// A header is accepted only when its sizes really describe a file of that length:
    /// no overflow, no wrap-around, every ring and slot inside the file.
    #[test]
    fn segment_headers_never_panic_and_accept_only_consistent_sizes((h, len) in header_fields()) {
        if let Ok(g) = validate_header(&h, 7, 3, len) {
            prop_assert_eq!(h.magic, MAGIC);
            prop_assert!(g.senders > 0 && g.ring_cells.is_power_of_two());
            let stride = RING_HEADER as u128 + u128::from(g.ring_cells) * CELL_BYTES as u128;
            let exact = HEADER_BYTES as u128
                + u128::from(g.senders) * stride
                + u128::from(g.senders) * SLOTS as u128;
            prop_assert_eq!(exact, len as u128, "accepted sizes must add up without wrapping");
        }
    }

    /// Any words in a cell: reading its header never panics, and an accepted header is
    /// exactly what writing it produces (nothing invented from stray bits), with an
    /// inline length that fits the cell.
    #[test]
    fn cell_headers_never_panic_and_are_canonical(words in proptest::collection::vec(any::<u64>(), 6)) {
        let cell = Cell::new();
        for (i, w) in words.iter().enumerate() {
            cell.set(i, *w);
        }
        if let Some(h) = Header::read(&cell) {
            if let Header::Inline { len, .. } = h {
                prop_assert!(len <= INLINE_MAX);
            }
            let again = Cell::new();
            let payload = vec![0u8; INLINE_MAX];
            let len = match h {
                Header::Inline { len, .. } => len,
                _ => 0,
            };
            h.write(&again, &payload[..len]);
            prop_assert_eq!(Header::read(&again), Some(h));
        }
    }
}

#[test]
fn a_wrapping_hostile_geometry_is_refused() {
    // senders * stride wraps to a small number on 64 bits: without checked arithmetic
    // the recorded size would match and ring offsets would point outside the file.
    let ring_cells = 1u32 << 31;
    let senders = u32::MAX;
    let stride = (ring_cells as usize)
        .wrapping_mul(CELL_BYTES)
        .wrapping_add(RING_HEADER);
    let len = HEADER_BYTES
        .wrapping_add((senders as usize).wrapping_mul(stride))
        .wrapping_add((senders as usize).wrapping_mul(SLOTS));
    let h = HeaderFields {
        magic: MAGIC,
        version: VERSION,
        header_bytes: HEADER_BYTES as u32,
        cell_bytes: CELL_BYTES as u32,
        ring_cells,
        senders,
        owner_rank: 3,
        job: 7,
        total_bytes: len as u64,
    };
    assert!(validate_header(&h, 7, 3, len).is_err());
    let ok = HeaderFields {
        ring_cells: 64,
        senders: 2,
        total_bytes: (HEADER_BYTES + 2 * (RING_HEADER + 64 * CELL_BYTES) + 2 * SLOTS) as u64,
        ..h
    };
    let len = ok.total_bytes as usize;
    assert!(validate_header(&ok, 7, 3, len).is_ok());
    assert!(
        validate_header(&ok, 8, 3, len).is_err(),
        "another job's segment"
    );
}
