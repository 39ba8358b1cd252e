//! Frames between `steadfast-run` and its ranks (TCP on loopback).
//!
//! Every frame is a u32 little-endian length (of what follows, at most
//! [`MAX_FRAME`]) then an op byte and its fields. Strings and byte strings are a
//! length (u16 for keys, u32 for values) then the bytes. Decoding checks every length
//! against the frame: malformed input is an error, never a panic or a large allocation.
//! The first frame of a connection, `Hello`, carries [`PROTOCOL_VERSION`]; the launcher
//! refuses another version by name. The format is described in `docs/protocol.md`.

use std::io::{self, Read, Write};

/// Largest frame accepted (a value plus its key and header).
pub const MAX_FRAME: usize = 1 << 20;
/// Largest key.
pub const MAX_KEY: usize = 256;
/// Largest value the launcher stores (a put of more is refused with an error).
pub const MAX_VALUE: usize = 64 << 10;
/// Version of this protocol, sent in `Hello` (1 was the unversioned format; 3 added
/// incarnations: the generation in `Hello` and `Failed`, `Restart`, `Joined`,
/// `Restarted` and `Rejoined`; 4 added `Lookup`).
pub const PROTOCOL_VERSION: u16 = 4;
/// Length of a `Hello` frame's body: the largest frame a connection may send before
/// it is authenticated.
pub const HELLO_LEN: usize = 1 + 2 + 4 + 4 + SECRET_LEN;
/// Length of the job secret.
pub const SECRET_LEN: usize = 32;

/// One message of the bootstrap protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Rank -> launcher: identification; the secret must match the job's.
    Hello {
        /// [`PROTOCOL_VERSION`] of the sender.
        version: u16,
        /// The rank connecting.
        rank: u32,
        /// Its incarnation: 0 on first start, one more at each restart.
        generation: u32,
        /// The job secret from the environment.
        secret: [u8; SECRET_LEN],
    },
    /// Rank -> launcher: store `value` under (own rank, `key`).
    Put {
        /// Key.
        key: String,
        /// Value.
        value: Vec<u8>,
    },
    /// Rank -> launcher: the value `rank` stored under `key` (waits until it exists).
    Get {
        /// Owner rank.
        rank: u32,
        /// Key.
        key: String,
    },
    /// Rank -> launcher: the value `rank` stored under `key` if it is there now
    /// (answered at once: `Value`, or `Error` starting with `absent`).
    Lookup {
        /// Owner rank.
        rank: u32,
        /// Key.
        key: String,
    },
    /// Rank -> launcher: wait until every live rank has fenced.
    Fence,
    /// Rank -> launcher: start a new incarnation of `rank`, whose incarnation
    /// `generation` failed (answered with `Restarted` once the new one has joined, or
    /// `Error`). Asking again for the same (rank, generation) waits for the same start.
    Restart {
        /// The rank to restart.
        rank: u32,
        /// The incarnation known failed.
        generation: u32,
    },
    /// Restarted rank -> launcher: its addresses are published; it has joined the job.
    Joined,
    /// Launcher -> rank: request done.
    Ok,
    /// Launcher -> rank: the value asked for.
    Value(Vec<u8>),
    /// Launcher -> rank: the request failed.
    Error(String),
    /// Launcher -> rank, unsolicited: a rank of the job died.
    Failed {
        /// The dead rank.
        rank: u32,
        /// Its incarnation.
        generation: u32,
        /// How it ended ("killed by signal 9", "exited with status 3").
        how: String,
    },
    /// Launcher -> rank: the answer to `Restart`: the new incarnation has joined.
    Restarted {
        /// The restarted rank.
        rank: u32,
        /// The new incarnation.
        generation: u32,
        /// Its process id.
        pid: u32,
    },
    /// Launcher -> rank, unsolicited: a restarted rank has joined the job.
    Rejoined {
        /// The restarted rank.
        rank: u32,
        /// The new incarnation.
        generation: u32,
    },
}

/// Why bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The connection failed or closed.
    #[error("bootstrap connection: {0}")]
    Io(#[from] io::Error),
    /// The frame does not decode.
    #[error("malformed bootstrap frame: {0}")]
    Malformed(&'static str),
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn key(&mut self) -> Result<String, FrameError> {
        let n = self.u16()? as usize;
        if n > MAX_KEY {
            return Err(FrameError::Malformed("key too long"));
        }
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| FrameError::Malformed("key not UTF-8"))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, FrameError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_key(out: &mut Vec<u8>, k: &str) {
    out.extend_from_slice(&(k.len() as u16).to_le_bytes());
    out.extend_from_slice(k.as_bytes());
}

impl Frame {
    /// The frame's bytes, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; 4];
        match self {
            Frame::Hello {
                version,
                rank,
                generation,
                secret,
            } => {
                b.push(1);
                b.extend_from_slice(&version.to_le_bytes());
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&generation.to_le_bytes());
                b.extend_from_slice(secret);
            }
            Frame::Put { key, value } => {
                b.push(2);
                put_key(&mut b, key);
                put_bytes(&mut b, value);
            }
            Frame::Get { rank, key } => {
                b.push(3);
                b.extend_from_slice(&rank.to_le_bytes());
                put_key(&mut b, key);
            }
            Frame::Fence => b.push(4),
            Frame::Restart { rank, generation } => {
                b.push(5);
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&generation.to_le_bytes());
            }
            Frame::Joined => b.push(6),
            Frame::Lookup { rank, key } => {
                b.push(7);
                b.extend_from_slice(&rank.to_le_bytes());
                put_key(&mut b, key);
            }
            Frame::Ok => b.push(10),
            Frame::Value(v) => {
                b.push(11);
                put_bytes(&mut b, v);
            }
            Frame::Error(m) => {
                b.push(12);
                put_bytes(&mut b, m.as_bytes());
            }
            Frame::Failed {
                rank,
                generation,
                how,
            } => {
                b.push(13);
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&generation.to_le_bytes());
                put_bytes(&mut b, how.as_bytes());
            }
            Frame::Restarted {
                rank,
                generation,
                pid,
            } => {
                b.push(14);
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&generation.to_le_bytes());
                b.extend_from_slice(&pid.to_le_bytes());
            }
            Frame::Rejoined { rank, generation } => {
                b.push(15);
                b.extend_from_slice(&rank.to_le_bytes());
                b.extend_from_slice(&generation.to_le_bytes());
            }
        }
        let len = (b.len() - 4) as u32;
        b[..4].copy_from_slice(&len.to_le_bytes());
        b
    }

    /// Decodes one frame body (without its length prefix).
    ///
    /// # Errors
    /// [`FrameError::Malformed`] for anything the protocol never sends.
    pub fn decode(body: &[u8]) -> Result<Frame, FrameError> {
        let mut r = Reader(body);
        let f = match r.u8()? {
            1 => {
                let version = r.u16()?;
                let rank = r.u32()?;
                let generation = r.u32()?;
                let mut secret = [0u8; SECRET_LEN];
                secret.copy_from_slice(r.take(SECRET_LEN)?);
                Frame::Hello {
                    version,
                    rank,
                    generation,
                    secret,
                }
            }
            2 => Frame::Put {
                key: r.key()?,
                value: r.bytes()?,
            },
            3 => Frame::Get {
                rank: r.u32()?,
                key: r.key()?,
            },
            4 => Frame::Fence,
            5 => Frame::Restart {
                rank: r.u32()?,
                generation: r.u32()?,
            },
            6 => Frame::Joined,
            7 => Frame::Lookup {
                rank: r.u32()?,
                key: r.key()?,
            },
            10 => Frame::Ok,
            11 => Frame::Value(r.bytes()?),
            12 => Frame::Error(String::from_utf8_lossy(&r.bytes()?).into_owned()),
            13 => Frame::Failed {
                rank: r.u32()?,
                generation: r.u32()?,
                how: String::from_utf8_lossy(&r.bytes()?).into_owned(),
            },
            14 => Frame::Restarted {
                rank: r.u32()?,
                generation: r.u32()?,
                pid: r.u32()?,
            },
            15 => Frame::Rejoined {
                rank: r.u32()?,
                generation: r.u32()?,
            },
            _ => return Err(FrameError::Malformed("unknown op")),
        };
        if !r.0.is_empty() {
            return Err(FrameError::Malformed("trailing bytes"));
        }
        Ok(f)
    }

    /// Writes this frame.
    ///
    /// # Errors
    /// The I/O error.
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.encode())
    }

    /// Reads one frame.
    ///
    /// # Errors
    /// I/O errors (EOF included) and malformed frames.
    pub fn read_from(r: &mut impl Read) -> Result<Frame, FrameError> {
        let mut len = [0u8; 4];
        r.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(FrameError::Malformed("frame length out of range"));
        }
        let mut body = vec![0u8; len];
        r.read_exact(&mut body)?;
        Frame::decode(&body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_truncation_refused() {
        let frames = [
            Frame::Hello {
                version: PROTOCOL_VERSION,
                rank: 3,
                generation: 2,
                secret: [7; SECRET_LEN],
            },
            Frame::Put {
                key: "addr".into(),
                value: vec![1, 2, 3],
            },
            Frame::Get {
                rank: 1,
                key: "addr".into(),
            },
            Frame::Fence,
            Frame::Lookup {
                rank: 2,
                key: "sf.saved.x".into(),
            },
            Frame::Ok,
            Frame::Value(vec![9; 100]),
            Frame::Error("no".into()),
            Frame::Failed {
                rank: 2,
                generation: 1,
                how: "killed by signal 9".into(),
            },
            Frame::Restart {
                rank: 2,
                generation: 1,
            },
            Frame::Joined,
            Frame::Restarted {
                rank: 2,
                generation: 2,
                pid: 4242,
            },
            Frame::Rejoined {
                rank: 2,
                generation: 2,
            },
        ];
        assert_eq!(frames[0].encode().len(), 4 + HELLO_LEN);
        for f in frames {
            let bytes = f.encode();
            assert_eq!(Frame::read_from(&mut &bytes[..]).unwrap(), f);
            for cut in 5..bytes.len() {
                assert!(Frame::decode(&bytes[4..cut]).is_err() || cut == bytes.len());
            }
        }
        // A huge declared length is refused before allocating.
        let mut evil = (u32::MAX).to_le_bytes().to_vec();
        evil.push(4);
        assert!(Frame::read_from(&mut &evil[..]).is_err());
        assert!(Frame::decode(&[200]).is_err());
    }
}
