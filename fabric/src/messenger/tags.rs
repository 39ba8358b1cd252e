//! The 64-bit libfabric tag as steadfast lays it out.
//!
//! | bits | field |
//! |---|---|
//! | 63 | reserved, always zero (control messages travel untagged since they left the tagged queue) |
//! | 62 | incarnation bit: the sender's generation, modulo 2 |
//! | 61..40 | source id of the sender (22 bits) |
//! | 39..0 | user tag (40 bits) |
//!
//! Carrying the source in the tag makes wildcard and source-specific receives work on
//! providers without `FI_SOURCE` or `FI_DIRECTED_RECV` (ofi_rxm has neither), as MPI
//! implementations over libfabric do.
//!
//! Eager messages and rendezvous headers (RTS) carry the same tag; an RTS is flagged by
//! remote CQ data ([`RTS_CQ_DATA`]). Control messages all carry one tag and name their
//! sender in the payload. So every receive the messenger posts for itself, and every
//! user receive without wildcards, matches by exact tag: libfabric 1.17's shm provider
//! does not apply the ignore mask to messages that arrived before their receive was
//! posted (measured here; see docs/architecture.md).
//!
//! The incarnation bit fences a restarted peer's dead incarnation (`docs/restart.md`):
//! a receive from a specific source matches only the incarnation bit of the peer's
//! current incarnation, so a message the dead one left in the provider's queues never
//! matches it; a wildcard receive ignores the bit and the messenger drops (and
//! re-posts the receive on) a message whose bit is not its sender's current one; what
//! the old incarnation left unmatched is drained by a receive posted for its bit
//! (`incarnation.rs`), so that the incarnation after next, which has the same bit,
//! never sees it.

use crate::PeerId;

/// Bits of the user tag.
pub const USER_TAG_BITS: u32 = 40;
/// Largest user tag.
pub const MAX_USER_TAG: u64 = (1 << USER_TAG_BITS) - 1;
/// Bits of the source id.
pub const SOURCE_BITS: u32 = 22;
/// Largest peer id.
pub const MAX_PEER_ID: PeerId = (1 << SOURCE_BITS) - 1;

const SOURCE_SHIFT: u32 = USER_TAG_BITS;
const SOURCE_MASK: u64 = (MAX_PEER_ID as u64) << SOURCE_SHIFT;

/// The incarnation bit (see the module doc).
pub(crate) const INCARNATION_BIT: u64 = 1 << 62;

/// The reserved top bit: no user tag and no match pattern sets it.
#[cfg(test)]
const RESERVED_BIT: u64 = 1 << 63;

/// Remote CQ data that marks a message as a rendezvous header ("SFRV").
pub(crate) const RTS_CQ_DATA: u64 = 0x5346_5256;

/// Largest word a message may carry besides its tag ([`Messenger::isend_with`]).
///
/// [`Messenger::isend_with`]: super::Messenger::isend_with
pub const MAX_EXTRA: u32 = (1 << 30) - 1;
/// Remote CQ data of an eager (or injected) message carrying a word: `10` in bits
/// 31..30, the word below. (`RTS_CQ_DATA` has `01` there.)
const EXTRA_EAGER: u64 = 0b10 << 30;
/// Remote CQ data of a rendezvous header carrying a word: `11` in bits 31..30.
const EXTRA_RTS: u64 = 0b11 << 30;

/// The remote CQ data of a message: `None` for an eager message without a word, else
/// the data (`rts`: of a rendezvous header).
#[inline]
pub(crate) fn cq_data(rts: bool, extra: Option<u32>) -> Option<u64> {
    match (rts, extra) {
        (false, None) => None,
        (true, None) => Some(RTS_CQ_DATA),
        (false, Some(x)) => Some(EXTRA_EAGER | u64::from(x & MAX_EXTRA)),
        (true, Some(x)) => Some(EXTRA_RTS | u64::from(x & MAX_EXTRA)),
    }
}

/// (whether a header, its word) of a received message with remote CQ `data`, if any.
#[inline]
pub(crate) fn classify(data: Option<u64>) -> (bool, Option<u32>) {
    let extra = |d: u64| Some((d & u64::from(MAX_EXTRA)) as u32);
    match data {
        Some(RTS_CQ_DATA) => (true, None),
        Some(d) if d >> 30 & 0b11 == 0b11 && d >> 32 == 0 => (true, extra(d)),
        Some(d) if d >> 30 & 0b11 == 0b10 && d >> 32 == 0 => (false, extra(d)),
        _ => (false, None),
    }
}

/// The incarnation bit of generation `generation`.
#[inline]
pub(crate) fn incarnation_bit(generation: u32) -> u64 {
    if generation & 1 == 1 {
        INCARNATION_BIT
    } else {
        0
    }
}

/// Encodes the tag of a user message (eager or RTS) sent by incarnation `generation`
/// of `source`; `source` and `user_tag` must be in range (checked by the caller).
#[inline]
pub(crate) fn encode(source: PeerId, generation: u32, user_tag: u64) -> u64 {
    debug_assert!(source <= MAX_PEER_ID && user_tag <= MAX_USER_TAG);
    incarnation_bit(generation) | ((source as u64) << SOURCE_SHIFT) | user_tag
}

/// The incarnation bit a user message's tag carries.
#[inline]
pub(crate) fn sent_incarnation_bit(tag: u64) -> u64 {
    tag & INCARNATION_BIT
}

/// The (tag, ignore) pair that matches every user message of incarnation `generation`
/// of `source` (and of every incarnation with the same bit).
#[inline]
pub(crate) fn drain_match(source: PeerId, generation: u32) -> (u64, u64) {
    (
        incarnation_bit(generation) | ((source as u64) << SOURCE_SHIFT),
        MAX_USER_TAG,
    )
}

/// Splits a user message's tag into source and user tag.
#[inline]
pub(crate) fn decode(tag: u64) -> (PeerId, u64) {
    (
        ((tag & SOURCE_MASK) >> SOURCE_SHIFT) as PeerId,
        tag & MAX_USER_TAG,
    )
}

/// The (tag, ignore) pair of a user receive from `source` (any if `None`; else the
/// source's id and current generation) whose user tag equals `user_tag` on the bits not
/// set in `user_ignore`. Control messages never match (bit 63 is never ignored).
#[inline]
pub(crate) fn user_match(
    source: Option<(PeerId, u32)>,
    user_tag: u64,
    user_ignore: u64,
) -> (u64, u64) {
    let mut ignore = user_ignore & MAX_USER_TAG;
    let tag_bits = user_tag & !ignore & MAX_USER_TAG;
    match source {
        Some((s, generation)) => (
            incarnation_bit(generation) | ((s as u64) << SOURCE_SHIFT) | tag_bits,
            ignore,
        ),
        None => {
            ignore |= SOURCE_MASK | INCARNATION_BIT;
            (tag_bits, ignore)
        }
    }
}

/// Would a message with tag `sent` match a receive posted with `(tag, ignore)`?
/// (libfabric's rule, for tests.)
#[cfg(test)]
fn matches(sent: u64, tag: u64, ignore: u64) -> bool {
    (sent | ignore) == (tag | ignore)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cq_data_tells_headers_and_words_apart() {
        for rts in [false, true] {
            for extra in [None, Some(0), Some(5), Some(MAX_EXTRA)] {
                assert_eq!(classify(cq_data(rts, extra)), (rts, extra));
            }
        }
        assert_eq!(classify(Some(7)), (false, None), "foreign data: eager");
    }

    #[test]
    fn round_trip() {
        for g in [0, 1, 2, 7] {
            let tag = encode(MAX_PEER_ID, g, MAX_USER_TAG);
            assert_eq!(decode(tag), (MAX_PEER_ID, MAX_USER_TAG));
            assert_eq!(tag & RESERVED_BIT, 0);
            assert_eq!(sent_incarnation_bit(tag), incarnation_bit(g));
        }
        assert_eq!(decode(encode(3, 1, 0x55)), (3, 0x55));
    }

    #[test]
    fn specific_receives_match_exactly_and_only_the_current_incarnation() {
        let (tag, ignore) = user_match(Some((3, 2)), 7, 0);
        assert_eq!(ignore, 0, "no wildcard: exact match");
        assert!(matches(encode(3, 2, 7), tag, ignore));
        assert!(
            !matches(encode(3, 1, 7), tag, ignore),
            "the dead incarnation"
        );
        assert!(!matches(RESERVED_BIT, tag, ignore));
        assert!(!matches(encode(4, 2, 7), tag, ignore));
        assert!(!matches(encode(3, 2, 8), tag, ignore));
    }

    #[test]
    fn wildcards_take_every_incarnation() {
        let (tag, ignore) = user_match(None, 0, MAX_USER_TAG);
        assert!(matches(encode(9, 0, 1234), tag, ignore));
        assert!(matches(encode(9, 1, 1234), tag, ignore));
        assert!(!matches(RESERVED_BIT, tag, ignore));
        // Ignore the low byte only.
        let (tag, ignore) = user_match(None, 0x100, 0xff);
        assert!(matches(encode(1, 0, 0x1ab), tag, ignore));
        assert!(!matches(encode(1, 0, 0x2ab), tag, ignore));
    }

    #[test]
    fn a_drain_takes_one_incarnation_bit_of_one_source() {
        let (tag, ignore) = drain_match(5, 1);
        assert!(matches(encode(5, 1, 77), tag, ignore));
        assert!(matches(encode(5, 3, 0), tag, ignore));
        assert!(!matches(encode(5, 2, 77), tag, ignore));
        assert!(!matches(encode(6, 1, 77), tag, ignore));
        assert!(!matches(RESERVED_BIT, tag, ignore));
    }
}
