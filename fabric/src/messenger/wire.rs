//! Byte layouts of the rendezvous header and of control messages (little-endian).
//!
//! RTS, 40 bytes: magic `SFRV` (4) | version (2) | reserved (2) | message length (8) |
//! remote address (8) | key (8) | sender's token (8).
//!
//! Control, 24 bytes: magic `SFCT` (4) | op (1) | status (1) | reserved (2) |
//! sender's id (4) | reserved (4) | token (8).

/// Size of an RTS header.
pub(crate) const RTS_LEN: usize = 40;
/// Size of a control message.
pub(crate) const CONTROL_LEN: usize = 24;

const RTS_MAGIC: [u8; 4] = *b"SFRV";
const CONTROL_MAGIC: [u8; 4] = *b"SFCT";
const VERSION: u16 = 1;

/// What a rendezvous sender tells the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rts {
    pub message_len: u64,
    pub remote_addr: u64,
    pub key: u64,
    pub token: u64,
}

impl Rts {
    pub(crate) fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&RTS_MAGIC);
        out[4..6].copy_from_slice(&VERSION.to_le_bytes());
        out[6..8].fill(0);
        out[8..16].copy_from_slice(&self.message_len.to_le_bytes());
        out[16..24].copy_from_slice(&self.remote_addr.to_le_bytes());
        out[24..32].copy_from_slice(&self.key.to_le_bytes());
        out[32..40].copy_from_slice(&self.token.to_le_bytes());
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != RTS_LEN
            || bytes[0..4] != RTS_MAGIC
            || bytes[4..6] != VERSION.to_le_bytes()
        {
            return None;
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        Some(Rts {
            message_len: u64_at(8),
            remote_addr: u64_at(16),
            key: u64_at(24),
            token: u64_at(32),
        })
    }
}

/// Control operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ControlOp {
    /// The receiver is done with a rendezvous buffer.
    Fin = 1,
    /// A liveness probe; the receiver ignores it.
    Probe = 2,
    /// The sender has admitted the receiver's incarnation (the token): user messages
    /// may flow to the sender (see `incarnation.rs`).
    Admit = 3,
}

/// Status carried by a FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinStatus {
    /// The payload was read.
    Done = 0,
    /// The receive buffer was too small; nothing was read.
    Truncated = 1,
    /// The read failed.
    Failed = 2,
}

/// A control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Control {
    pub op: ControlOp,
    pub status: FinStatus,
    pub source: u32,
    pub token: u64,
}

impl Control {
    pub(crate) fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&CONTROL_MAGIC);
        out[4] = self.op as u8;
        out[5] = self.status as u8;
        out[6..8].fill(0);
        out[8..12].copy_from_slice(&self.source.to_le_bytes());
        out[12..16].fill(0);
        out[16..24].copy_from_slice(&self.token.to_le_bytes());
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != CONTROL_LEN || bytes[0..4] != CONTROL_MAGIC {
            return None;
        }
        let op = match bytes[4] {
            1 => ControlOp::Fin,
            2 => ControlOp::Probe,
            3 => ControlOp::Admit,
            _ => return None,
        };
        let status = match bytes[5] {
            0 => FinStatus::Done,
            1 => FinStatus::Truncated,
            2 => FinStatus::Failed,
            _ => return None,
        };
        Some(Control {
            op,
            status,
            source: u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")),
            token: u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rts_round_trip_and_rejects() {
        let rts = Rts {
            message_len: 1 << 30,
            remote_addr: 0xdead_beef,
            key: 77,
            token: 5 << 32 | 9,
        };
        let mut buf = [0u8; RTS_LEN];
        rts.encode(&mut buf);
        assert_eq!(Rts::decode(&buf), Some(rts));
        assert_eq!(Rts::decode(&buf[..RTS_LEN - 1]), None);
        buf[0] ^= 1;
        assert_eq!(Rts::decode(&buf), None);
    }

    #[test]
    fn control_round_trip_and_rejects() {
        let c = Control {
            op: ControlOp::Fin,
            status: FinStatus::Truncated,
            source: 7,
            token: 42,
        };
        let mut buf = [0u8; CONTROL_LEN];
        c.encode(&mut buf);
        assert_eq!(Control::decode(&buf), Some(c));
        let mut bad = buf;
        bad[4] = 9;
        assert_eq!(Control::decode(&bad), None);
        let mut bad = buf;
        bad[5] = 9;
        assert_eq!(Control::decode(&bad), None);
        assert_eq!(Control::decode(&buf[..8]), None);
    }

    /// Cases per fuzz property (`STEADFAST_FUZZ_CASES`, default 20000).
    fn cases() -> u32 {
        std::env::var("STEADFAST_FUZZ_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20_000)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: cases(),
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Bytes from a peer: never a panic; an accepted header re-encodes to the same
        /// bytes except the reserved ones (which decoding ignores).
        #[test]
        fn rts_headers_are_fuzzed(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48),
            magic in proptest::prelude::any::<bool>(),
        ) {
            let mut bytes = bytes;
            if magic && bytes.len() >= 6 {
                bytes[0..4].copy_from_slice(&RTS_MAGIC);
                bytes[4..6].copy_from_slice(&VERSION.to_le_bytes());
            }
            if let Some(rts) = Rts::decode(&bytes) {
                let mut again = [0u8; RTS_LEN];
                rts.encode(&mut again);
                proptest::prop_assert_eq!(&again[..6], &bytes[..6]);
                proptest::prop_assert_eq!(&again[8..], &bytes[8..]);
            }
        }

        #[test]
        fn control_messages_are_fuzzed(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..32),
            magic in proptest::prelude::any::<bool>(),
        ) {
            let mut bytes = bytes;
            if magic && bytes.len() >= 4 {
                bytes[0..4].copy_from_slice(&CONTROL_MAGIC);
            }
            if let Some(c) = Control::decode(&bytes) {
                let mut again = [0u8; CONTROL_LEN];
                c.encode(&mut again);
                proptest::prop_assert_eq!(&again[..6], &bytes[..6]);
                proptest::prop_assert_eq!(&again[8..12], &bytes[8..12]);
                proptest::prop_assert_eq!(&again[16..], &bytes[16..]);
            }
        }
    }
}
