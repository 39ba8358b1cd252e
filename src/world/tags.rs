//! The runtime's 40-bit message tag, the same on shm and on fabric (whose user tags
//! have 40 bits):
//!
//! | bits | field |
//! |---|---|
//! | 39 | control (agreement, revoke, suspicions, heartbeats) |
//! | 38..23 | communicator context (16 bits) |
//! | 22..0 | the application's tag (23 bits: `MPI_TAG_UB` is [`MAX_TAG`], 8 388 607) |
//!
//! Over shared memory and to self, the bits above 39 carry the synchronous-send
//! protocol ([`SYNC`], [`SYNC_ACK`], a sequence number in bits 61..40). The fabric's
//! tags have no such room: there the same protocol travels in the messenger's word
//! beside the tag (remote CQ data, `Messenger::isend_with`): [`FABRIC_SYNC`] or
//! [`FABRIC_SYNC_ACK`] with the sequence number below ([`fabric_sync_word`]). An
//! answer over the fabric is a zero-byte message with tag 0 (context 0, never a
//! communicator's), taken before matching.
//!
//! Every user message of the fabric, whatever its context, is matched by the process's
//! matcher (`engine_fabric.rs`): the messenger's software-matching pool takes the tags
//! with bit 39 clear; control messages keep a posted receive of their own.
//!
//! Control messages all carry tag [`CONTROL`] and name their communicator in their own
//! header (`steadfast_agreement::wire`); user messages of different communicators never
//! match each other's receives: their contexts are agreed among the members from
//! `steadfast_matching::ContextAllocator` (`docs/matching.md`, section 3), so two live
//! communicators of a process never share one.

/// Bits of an application tag.
pub const USER_TAG_BITS: u32 = 23;
/// Largest application tag (`MPI_TAG_UB`); the runtime's own collectives use the top
/// three ([`MAX_TAG`] - 2 ..= [`MAX_TAG`]).
pub const MAX_TAG: u32 = (1 << USER_TAG_BITS) - 1;
/// Bits of a communicator context.
pub const CONTEXT_BITS: u32 = 16;
/// Mask of a context value.
pub const CONTEXT_MASK: u64 = (1 << CONTEXT_BITS) - 1;
/// Contexts below this are fixed, never agreed: 0 the failure detector's, 1 the world's.
pub const RESERVED_CONTEXTS: u32 = 2;
/// The tag of every control message.
pub const CONTROL: u64 = 1 << 39;
/// Ignore mask matching every control message.
pub const CONTROL_IGNORE: u64 = CONTROL - 1;

/// Set on the message of a synchronous send (self and shm only): its receiver answers
/// with a [`SYNC_ACK`] message once a receive matched it (MPI 4.1, 3.4).
pub const SYNC: u64 = 1 << 63;
/// The tag of a synchronous send's acknowledgement (no bytes); the send's sequence
/// number is in the same bits as in the message ([`sync_seq`]).
pub const SYNC_ACK: u64 = 1 << 62;
/// Where a synchronous send's sequence number starts in the tag.
const SYNC_SEQ_SHIFT: u32 = 40;
/// Mask of a synchronous send's sequence number (22 bits, bits 61..40).
pub const SYNC_SEQ_MASK: u32 = (1 << 22) - 1;

/// The fabric word's flag of a synchronous send's message (see the module doc).
pub const FABRIC_SYNC: u32 = 1 << 29;
/// The fabric word's flag of a synchronous send's answer.
pub const FABRIC_SYNC_ACK: u32 = 1 << 28;

/// The fabric word of a synchronous send's message (`flag` [`FABRIC_SYNC`]) or answer
/// ([`FABRIC_SYNC_ACK`]) with sequence number `seq`.
#[inline]
pub fn fabric_sync_word(flag: u32, seq: u32) -> u32 {
    flag | (seq & SYNC_SEQ_MASK)
}

/// The bits a synchronous send with sequence number `seq` adds to its wire tag (or
/// to [`SYNC_ACK`], for its acknowledgement).
#[inline]
pub fn sync_bits(seq: u32) -> u64 {
    u64::from(seq & SYNC_SEQ_MASK) << SYNC_SEQ_SHIFT
}

/// The sequence number in a synchronous send's (or its acknowledgement's) tag.
#[inline]
pub fn sync_seq(wire: u64) -> u32 {
    ((wire >> SYNC_SEQ_SHIFT) as u32) & SYNC_SEQ_MASK
}

/// The (tag, ignore) pair matching `tag` (any if `None`) on context `ctx`.
#[inline]
pub fn user_match(ctx: u64, tag: Option<u32>) -> (u64, u64) {
    let base = (ctx & CONTEXT_MASK) << USER_TAG_BITS;
    match tag {
        Some(t) => (base | t as u64, 0),
        None => (base, MAX_TAG as u64),
    }
}

/// The application tag inside a wire tag.
#[inline]
pub fn user_tag(wire: u64) -> u32 {
    (wire & MAX_TAG as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_and_control_never_match_each_other() {
        let (t1, _) = user_match(1, Some(5));
        let (t2, i2) = user_match(2, None);
        assert_ne!(t1 & !i2, t2 & !i2, "context 2's wildcard matches context 1");
        assert_ne!(t1 & !CONTROL_IGNORE, CONTROL);
        assert_eq!(user_tag(t1), 5);
        assert_eq!((t2 | MAX_TAG as u64) & !CONTROL_IGNORE, 0);
    }

    #[test]
    fn sync_bits_stay_above_the_control_bit_and_out_of_the_user_tag() {
        let (t, _) = user_match(CONTEXT_MASK, Some(MAX_TAG));
        for seq in [0, 1, SYNC_SEQ_MASK, SYNC_SEQ_MASK + 1] {
            let wire = t | SYNC | sync_bits(seq);
            assert_eq!(wire & CONTROL, 0, "a sync message looks like control");
            assert_eq!(user_tag(wire), MAX_TAG);
            assert_eq!((wire >> USER_TAG_BITS) & CONTEXT_MASK, CONTEXT_MASK);
            assert_eq!(sync_seq(wire), seq & SYNC_SEQ_MASK);
            assert_eq!(sync_seq(SYNC_ACK | sync_bits(seq)), seq & SYNC_SEQ_MASK);
            assert_eq!((SYNC_ACK | sync_bits(seq)) & (SYNC | CONTROL), 0);
        }
    }

    #[test]
    fn fabric_sync_words_fit_the_messengers_word_and_keep_the_sequence() {
        for seq in [0, 1, SYNC_SEQ_MASK] {
            for flag in [FABRIC_SYNC, FABRIC_SYNC_ACK] {
                let w = fabric_sync_word(flag, seq);
                assert!(w <= steadfast_fabric::MAX_EXTRA);
                assert_eq!(w & SYNC_SEQ_MASK, seq);
                assert_eq!(w & (FABRIC_SYNC | FABRIC_SYNC_ACK), flag);
            }
        }
    }

    #[test]
    fn every_context_and_tag_fit_below_the_control_bit() {
        assert_eq!(
            CONTEXT_BITS + USER_TAG_BITS + 1,
            40,
            "the fabric's user tag"
        );
        let top = CONTEXT_MASK;
        let (t, i) = user_match(top, Some(MAX_TAG));
        assert_eq!(
            t & CONTROL,
            0,
            "the largest context reaches the control bit"
        );
        assert_eq!(user_tag(t), MAX_TAG);
        assert_eq!(i, 0);
        // Neighbouring contexts differ in the wire tag whatever the application tag.
        let (a, wild) = user_match(top - 1, None);
        assert_ne!(a & !wild, t & !wild);
    }
}
