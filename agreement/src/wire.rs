//! Byte layout of every message of the agreement core (documented in docs/protocol.md).
//!
//! All integers are little-endian. Every message starts with the same 20-byte header:
//!
//! | offset | size | field                                   |
//! |--------|------|-----------------------------------------|
//! | 0      | 1    | version (`WIRE_VERSION`)                |
//! | 1      | 1    | kind (`Kind`)                           |
//! | 2      | 2    | reserved, zero                          |
//! | 4      | 8    | communicator id                         |
//! | 12     | 4    | epoch                                   |
//! | 16     | 4    | sequence / instance number              |
//!
//! Rank lists are a u32 count followed by that many u32 ranks, strictly increasing and
//! below the communicator size. Decoding never panics and never allocates more than the
//! input's length justifies: every count is checked against the bytes that remain.

use crate::bcast::Topic;
use crate::decision::{Contribution, Decision, Outcome};
use crate::types::{CommId, CommKey, Epoch, Rank, RankSet, Seq};

/// Version byte of this layout; a message with another version is refused.
pub const WIRE_VERSION: u8 = 2;

/// Size of the common header.
pub const HEADER_LEN: usize = 20;

/// Why bytes were refused. The state machines count these and drop the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Fewer bytes than the layout requires.
    #[error("message truncated: needed {needed} bytes at offset {offset}, {len} in total")]
    Truncated {
        /// Where the missing field starts.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Length of the message.
        len: usize,
    },
    /// The version byte is not ours.
    #[error("wire version {0}, expected {WIRE_VERSION}")]
    Version(u8),
    /// Unknown message kind.
    #[error("unknown message kind {0}")]
    Kind(u8),
    /// A field holds a value the protocol never sends.
    #[error("invalid field {field}: {value}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// A rank list is unsorted, repeats a rank, or names a rank outside the communicator.
    #[error("bad rank list: rank {rank} after {previous:?} (communicator size {size})")]
    RankList {
        /// The offending rank.
        rank: u32,
        /// The rank before it, if any.
        previous: Option<u32>,
        /// Communicator size.
        size: u32,
    },
    /// Bytes left over after a complete message.
    #[error("{0} trailing bytes after the message")]
    Trailing(usize),
    /// The message belongs to another communicator or epoch than the engine fed with it.
    #[error("message for {got:?}, this engine serves {expected:?}")]
    WrongComm {
        /// Key in the message.
        got: CommKey,
        /// Key of the engine.
        expected: CommKey,
    },
}

/// Message kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// ERA: a subtree's combined contribution, child to parent.
    Up = 1,
    /// ERA: the decision, parent to children (or to whoever asks).
    Down = 2,
    /// ERA: a new root or adopting parent asks for an UP or a decision.
    ResultRequest = 3,
    /// Reliable broadcast of a revoke.
    Revoke = 4,
    /// Reliable broadcast of a failure suspicion.
    Suspicion = 5,
    /// Failure detector heartbeat.
    Heartbeat = 6,
    /// Failure detector: "observe me" (ring repair).
    Observe = 7,
    /// Two-party agreement: a flag.
    PairValue = 8,
    /// Two-party agreement: acknowledgement of the peer's flag.
    PairAck = 9,
}

impl Kind {
    fn from_u8(b: u8) -> Result<Kind, WireError> {
        Ok(match b {
            1 => Kind::Up,
            2 => Kind::Down,
            3 => Kind::ResultRequest,
            4 => Kind::Revoke,
            5 => Kind::Suspicion,
            6 => Kind::Heartbeat,
            7 => Kind::Observe,
            8 => Kind::PairValue,
            9 => Kind::PairAck,
            other => return Err(WireError::Kind(other)),
        })
    }
}

/// The decoded common header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message kind.
    pub kind: Kind,
    /// Communicator and epoch.
    pub key: CommKey,
    /// Sequence / instance number.
    pub seq: Seq,
}

/// Appends little-endian fields to a buffer.
pub(crate) struct Writer<'a>(pub(crate) &'a mut Vec<u8>);

impl Writer<'_> {
    pub(crate) fn header(&mut self, kind: Kind, key: CommKey, seq: Seq) {
        self.0.push(WIRE_VERSION);
        self.0.push(kind as u8);
        self.0.extend_from_slice(&[0, 0]);
        self.u64(key.comm.0);
        self.u32(key.epoch.0);
        self.u32(seq);
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn ranks(&mut self, set: &RankSet) {
        self.u32(set.len() as u32);
        for r in set.iter() {
            self.u32(r.0);
        }
    }
}

/// Reads little-endian fields from untrusted bytes, checking every length.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn take(&mut self, needed: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .at
            .checked_add(needed)
            .filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(WireError::Truncated {
                offset: self.at,
                needed,
                len: self.bytes.len(),
            });
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A rank list of ranks below `size`, strictly increasing.
    pub(crate) fn ranks(&mut self, size: u32) -> Result<RankSet, WireError> {
        let count = self.u32()? as usize;
        // Bound the allocation by what the input can actually hold.
        let remaining = self.bytes.len() - self.at;
        if count > remaining / 4 {
            return Err(WireError::Truncated {
                offset: self.at,
                needed: count.saturating_mul(4),
                len: self.bytes.len(),
            });
        }
        let mut ranks = Vec::with_capacity(count);
        let mut previous: Option<u32> = None;
        for _ in 0..count {
            let r = self.u32()?;
            if r >= size || previous.is_some_and(|p| p >= r) {
                return Err(WireError::RankList {
                    rank: r,
                    previous,
                    size,
                });
            }
            previous = Some(r);
            ranks.push(Rank(r));
        }
        Ok(RankSet::from_sorted(ranks))
    }

    pub(crate) fn header(&mut self) -> Result<Header, WireError> {
        let version = self.u8()?;
        if version != WIRE_VERSION {
            return Err(WireError::Version(version));
        }
        let kind = Kind::from_u8(self.u8()?)?;
        let reserved = self.take(2)?;
        if reserved != [0, 0] {
            let value = u16::from_le_bytes([reserved[0], reserved[1]]) as u64;
            return Err(WireError::Field {
                field: "reserved",
                value,
            });
        }
        let comm = CommId(self.u64()?);
        let epoch = Epoch(self.u32()?);
        let seq = self.u32()?;
        Ok(Header {
            kind,
            key: CommKey { comm, epoch },
            seq,
        })
    }

    pub(crate) fn finish(&self) -> Result<(), WireError> {
        match self.bytes.len() - self.at {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }
}

/// Reads only the header, e.g. for the runtime to route a message to its engine.
pub fn peek_header(bytes: &[u8]) -> Result<Header, WireError> {
    Reader::new(bytes).header()
}

/// An ERA message body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EraMsg {
    /// A subtree's combined contribution.
    Up(Contribution),
    /// The decision.
    Down(Decision),
    /// A request to resend an UP or hand over a decision; carries the requester's known
    /// failures (so the receiver sees why the requester is now its parent).
    ResultRequest {
        /// Ranks the requester knows to be dead.
        known_failed: RankSet,
    },
}

impl EraMsg {
    /// Appends the encoding of this message for instance `seq` of `key` to `buf`.
    pub fn encode(&self, key: CommKey, seq: Seq, buf: &mut Vec<u8>) {
        let mut w = Writer(buf);
        match self {
            EraMsg::Up(c) => {
                w.header(Kind::Up, key, seq);
                w.u64(c.value);
                w.u32(c.decided_below);
                w.ranks(&c.known_failed);
                w.ranks(&c.acked);
            }
            EraMsg::Down(d) => {
                w.header(Kind::Down, key, seq);
                w.u64(d.value);
                w.u8(d.outcome as u8);
                w.u32(d.gc_below);
                w.ranks(&d.failed);
            }
            EraMsg::ResultRequest { known_failed } => {
                w.header(Kind::ResultRequest, key, seq);
                w.ranks(known_failed);
            }
        }
    }

    /// Decodes an ERA message of a communicator of `size` ranks.
    ///
    /// # Errors
    /// Any `WireError`: truncated input, wrong version, a kind that is not ERA's, invalid
    /// fields, bad rank lists, trailing bytes.
    pub fn decode(bytes: &[u8], size: u32) -> Result<(Header, EraMsg), WireError> {
        let mut r = Reader::new(bytes);
        let h = r.header()?;
        let msg = match h.kind {
            Kind::Up => {
                let value = r.u64()?;
                let decided_below = r.u32()?;
                let known_failed = r.ranks(size)?;
                let acked = r.ranks(size)?;
                EraMsg::Up(Contribution {
                    value,
                    decided_below,
                    known_failed,
                    acked,
                })
            }
            Kind::Down => {
                let value = r.u64()?;
                let code = r.u8()?;
                let outcome = Outcome::from_u8(code).ok_or(WireError::Field {
                    field: "outcome",
                    value: code as u64,
                })?;
                let gc_below = r.u32()?;
                let failed = r.ranks(size)?;
                EraMsg::Down(Decision {
                    value,
                    outcome,
                    gc_below,
                    failed,
                })
            }
            Kind::ResultRequest => EraMsg::ResultRequest {
                known_failed: r.ranks(size)?,
            },
            other => return Err(WireError::Kind(other as u8)),
        };
        r.finish()?;
        Ok((h, msg))
    }
}

/// A message of the broadcast, detector or two-party protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtMsg {
    /// A reliable-broadcast topic.
    Bcast(Topic),
    /// Failure-detector heartbeat.
    Heartbeat,
    /// Failure detector: "send your heartbeats to me".
    Observe,
    /// Two-party agreement: the sender's flag.
    PairValue(bool),
    /// Two-party agreement: the sender holds our flag.
    PairAck,
}

impl FtMsg {
    /// Appends the encoding of this message for `key` (and `seq`, the instance of a
    /// two-party agreement, 0 otherwise) to `buf`.
    pub fn encode(&self, key: CommKey, seq: Seq, buf: &mut Vec<u8>) {
        let mut w = Writer(buf);
        match *self {
            FtMsg::Bcast(Topic::Revoke) => w.header(Kind::Revoke, key, seq),
            FtMsg::Bcast(Topic::Suspicion { rank, incarnation }) => {
                w.header(Kind::Suspicion, key, seq);
                w.u32(rank.0);
                w.u32(incarnation);
            }
            FtMsg::Heartbeat => w.header(Kind::Heartbeat, key, seq),
            FtMsg::Observe => w.header(Kind::Observe, key, seq),
            FtMsg::PairValue(v) => {
                w.header(Kind::PairValue, key, seq);
                w.u8(v as u8);
            }
            FtMsg::PairAck => w.header(Kind::PairAck, key, seq),
        }
    }

    /// Decodes a message of a group of `size` ranks.
    ///
    /// # Errors
    /// Any `WireError`, including an ERA kind (those go to [`EraMsg::decode`]).
    pub fn decode(bytes: &[u8], size: u32) -> Result<(Header, FtMsg), WireError> {
        let mut r = Reader::new(bytes);
        let h = r.header()?;
        let msg = match h.kind {
            Kind::Revoke => FtMsg::Bcast(Topic::Revoke),
            Kind::Suspicion => {
                let rank = r.u32()?;
                if rank >= size {
                    return Err(WireError::RankList {
                        rank,
                        previous: None,
                        size,
                    });
                }
                let incarnation = r.u32()?;
                FtMsg::Bcast(Topic::Suspicion {
                    rank: Rank(rank),
                    incarnation,
                })
            }
            Kind::Heartbeat => FtMsg::Heartbeat,
            Kind::Observe => FtMsg::Observe,
            Kind::PairValue => match r.u8()? {
                0 => FtMsg::PairValue(false),
                1 => FtMsg::PairValue(true),
                v => {
                    return Err(WireError::Field {
                        field: "flag",
                        value: v as u64,
                    })
                }
            },
            Kind::PairAck => FtMsg::PairAck,
            other => return Err(WireError::Kind(other as u8)),
        };
        r.finish()?;
        Ok((h, msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CommKey {
        CommKey {
            comm: CommId(0xfeed),
            epoch: Epoch(3),
        }
    }

    fn samples() -> Vec<EraMsg> {
        let s = |v: &[u32]| v.iter().map(|&r| Rank(r)).collect::<RankSet>();
        vec![
            EraMsg::Up(Contribution {
                value: 0xdead_beef,
                decided_below: 9,
                known_failed: s(&[1, 5]),
                acked: s(&[1]),
            }),
            EraMsg::Down(Decision {
                value: 7,
                outcome: Outcome::ProcFailed,
                gc_below: 2,
                failed: s(&[5]),
            }),
            EraMsg::ResultRequest {
                known_failed: s(&[0, 2, 6]),
            },
        ]
    }

    #[test]
    fn round_trip() {
        for m in samples() {
            let mut buf = Vec::new();
            m.encode(key(), 42, &mut buf);
            let (h, back) = EraMsg::decode(&buf, 8).unwrap();
            assert_eq!(h.key, key());
            assert_eq!(h.seq, 42);
            assert_eq!(back, m);
            assert_eq!(peek_header(&buf).unwrap(), h);
        }
    }

    #[test]
    fn every_truncation_and_extension_is_refused() {
        for m in samples() {
            let mut buf = Vec::new();
            m.encode(key(), 1, &mut buf);
            for len in 0..buf.len() {
                assert!(EraMsg::decode(&buf[..len], 8).is_err(), "len {len}");
            }
            buf.push(0);
            assert_eq!(EraMsg::decode(&buf, 8), Err(WireError::Trailing(1)));
        }
    }

    #[test]
    fn ft_messages_round_trip_and_refuse_damage() {
        let all = [
            FtMsg::Bcast(Topic::Revoke),
            FtMsg::Bcast(Topic::Suspicion {
                rank: Rank(6),
                incarnation: 3,
            }),
            FtMsg::Heartbeat,
            FtMsg::Observe,
            FtMsg::PairValue(true),
            FtMsg::PairValue(false),
            FtMsg::PairAck,
        ];
        for m in all {
            let mut buf = Vec::new();
            m.encode(key(), 5, &mut buf);
            assert_eq!(FtMsg::decode(&buf, 8).unwrap().1, m);
            for len in 0..buf.len() {
                assert!(FtMsg::decode(&buf[..len], 8).is_err());
            }
            buf.push(1);
            assert!(FtMsg::decode(&buf, 8).is_err());
        }
        let mut buf = Vec::new();
        FtMsg::Bcast(Topic::Suspicion {
            rank: Rank(6),
            incarnation: 3,
        })
        .encode(key(), 0, &mut buf);
        assert!(FtMsg::decode(&buf, 6).is_err());
        // ERA and FT decoders refuse each other's kinds.
        assert_eq!(EraMsg::decode(&buf, 8), Err(WireError::Kind(5)));
    }

    #[test]
    fn bad_fields_are_refused() {
        let mut buf = Vec::new();
        samples()[0].encode(key(), 1, &mut buf);
        let mut v = buf.clone();
        v[0] = 9;
        assert_eq!(EraMsg::decode(&v, 8), Err(WireError::Version(9)));
        let mut v = buf.clone();
        v[1] = 200;
        assert_eq!(EraMsg::decode(&v, 8), Err(WireError::Kind(200)));
        // Rank 5 is out of range for a communicator of 4.
        assert!(matches!(
            EraMsg::decode(&buf, 4),
            Err(WireError::RankList { rank: 5, .. })
        ));
        // A huge count with no bytes behind it allocates nothing and fails.
        let mut v = buf[..HEADER_LEN + 12].to_vec();
        v.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            EraMsg::decode(&v, 8),
            Err(WireError::Truncated { .. })
        ));
    }
}
