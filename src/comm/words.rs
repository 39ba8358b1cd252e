//! Lists of `u32` (world ranks, tags) as little-endian bytes, the form they take in the
//! launcher's store and in the messages communicator creation exchanges.

/// `words` as little-endian bytes.
pub(crate) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The words of `b` (little endian); `None` when its length is not a multiple of 4.
pub(crate) fn from_bytes(b: &[u8]) -> Option<Vec<u32>> {
    if b.len() % 4 != 0 {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_a_ragged_length_is_refused() {
        let w = [0, 1, u32::MAX, 0x0102_0304];
        let b = to_bytes(&w);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[12..], &[4, 3, 2, 1]);
        assert_eq!(from_bytes(&b).as_deref(), Some(&w[..]));
        assert_eq!(from_bytes(&[]).as_deref(), Some(&[][..]));
        assert_eq!(from_bytes(&b[..5]), None);
    }
}
