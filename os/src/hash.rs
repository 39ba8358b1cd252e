//! FNV-1a, 64-bit: the one hash for identities that every process must derive alike
//! (segment names, communicator ids, provider names in addresses). Not for hash
//! tables fed by untrusted input.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a (64-bit) of `bytes`.
///
/// ```
/// // The reference values of the FNV test suite.
/// assert_eq!(steadfast_os::fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(steadfast_os::fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_parts(&[bytes])
}

/// FNV-1a (64-bit) of the concatenation of `parts`, without building it.
///
/// ```
/// use steadfast_os::hash::{fnv1a64, fnv1a64_parts};
/// assert_eq!(fnv1a64_parts(&[b"foo", b"bar"]), fnv1a64(b"foobar"));
/// ```
pub fn fnv1a64_parts(parts: &[&[u8]]) -> u64 {
    let mut hash = OFFSET_BASIS;
    for part in parts {
        for &b in *part {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a64_parts(&[b"fo", b"", b"obar"]), fnv1a64(b"foobar"));
    }
}
