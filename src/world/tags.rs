//! The runtime's 40-bit message tag, the same on shm and on fabric (whose user tags
//! have 40 bits):
//!
//! | bits | field |
//! |---|---|
//! | 39 | control (agreement, revoke, suspicions, heartbeats) |
//! | 38..24 | communicator context (15 bits) |
//! | 23..0 | the application's tag (24 bits) |
//!
//! Control messages all carry tag [`CONTROL`] and name their communicator in their own
//! header (`steadfast_agreement::wire`); user messages of different communicators never
//! match each other's receives.

/// Bits of an application tag.
pub const USER_TAG_BITS: u32 = 24;
/// Largest application tag.
pub const MAX_TAG: u32 = (1 << USER_TAG_BITS) - 1;
/// Bits of a communicator context.
pub const CONTEXT_BITS: u32 = 15;
/// Mask of a context value.
pub const CONTEXT_MASK: u64 = (1 << CONTEXT_BITS) - 1;
/// The tag of every control message.
pub const CONTROL: u64 = 1 << 39;
/// Ignore mask matching every control message.
pub const CONTROL_IGNORE: u64 = CONTROL - 1;

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
}
