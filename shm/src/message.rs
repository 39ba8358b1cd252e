//! How a message sits in a ring cell's data words (word 0 of the cell is the ring's
//! stamp; data word `i` is cell word `i + 1`).
//!
//! | data word | Inline | Eager (first cell) | Rts (single copy) | Fin |
//! |---|---|---|---|---|
//! | 0 | kind 1, length << 32 | kind 4, length << 32 | kind 2 | kind 3, status << 8 |
//! | 1 | tag | tag | tag | token |
//! | 2.. | payload (up to 232 bytes) | first 232 bytes | sender address, length, token, split slot + 1 (0: none) | the read's ns |
//!
//! A message of at most [`SLOT_MAX`] bytes may instead sit in a 32-byte slot of a
//! packed cell, with the Inline layout from the slot's first data word (`ring.rs`).
//!
//! An eager message continues in the next `ceil((length - 232) / 248)` cells of the same
//! ring, each carrying 248 raw bytes (a ring has one producer, so they are contiguous).

use crate::ring::{Cell, DATA_WORDS, SLOT_DATA_WORDS};

/// Largest message carried inside one cell.
pub const INLINE_MAX: usize = (DATA_WORDS - 2) * 8;

/// Largest message carried in a slot of a packed cell (one data word after the kind
/// and tag words; see [`crate::ring::Producer::try_push_small`]).
pub const SLOT_MAX: usize = (SLOT_DATA_WORDS - 2) * 8;

/// Bytes of an eager message in its first cell.
pub const EAGER_FIRST: usize = INLINE_MAX;
/// Bytes of an eager message in each continuation cell.
pub const EAGER_CONT: usize = DATA_WORDS * 8;

/// Continuation cells an eager message of `len` bytes needs after its first cell.
pub fn eager_continuations(len: usize) -> usize {
    len.saturating_sub(EAGER_FIRST).div_ceil(EAGER_CONT)
}

/// Decoded cell header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// A small message; its bytes follow in the cell.
    Inline {
        /// User tag.
        tag: u64,
        /// Length (at most [`INLINE_MAX`]).
        len: usize,
    },
    /// A medium message copied through this and the following cells.
    Eager {
        /// User tag.
        tag: u64,
        /// Total length.
        len: usize,
    },
    /// A large message waiting in the sender's memory.
    Rts {
        /// User tag.
        tag: u64,
        /// Address in the sender's address space.
        addr: u64,
        /// Length.
        len: u64,
        /// The sender's handle for the matching FIN.
        token: u64,
        /// The sender's split-copy slot plus one, 0 when the copy is the receiver's
        /// alone.
        split: u64,
    },
    /// The receiver is done with the sender's buffer.
    Fin {
        /// The RTS's token.
        token: u64,
        /// 0: delivered; 1: receiver's buffer too small; 2: read failed.
        status: u8,
        /// How long the receiver's read of a delivered message took (ns; 0 when not
        /// read): the sender weighs single copy against the ring with it
        /// (`endpoint/eager_cost.rs`).
        read_ns: u32,
    },
}

/// FIN status: delivered.
pub const FIN_OK: u8 = 0;
/// FIN status: the receive was truncated.
pub const FIN_TRUNCATED: u8 = 1;
/// FIN status: the single-copy read failed.
pub const FIN_FAILED: u8 = 2;
/// FIN status: single copy refused here (ptrace policy, or configured off): send the
/// message again through the ring.
pub const FIN_RESEND: u8 = 3;

impl Header {
    /// Writes this header (and, for Inline, `payload`) into `cell`.
    pub fn write(&self, cell: &Cell, payload: &[u8]) {
        match *self {
            Header::Inline { .. } => self.write_at(cell, 0, payload),
            Header::Eager { tag, len } => {
                cell.set(0, 4 | (len as u64) << 32);
                cell.set(1, tag);
                cell.write_bytes(2, &payload[..EAGER_FIRST.min(payload.len())]);
            }
            Header::Rts {
                tag,
                addr,
                len,
                token,
                split,
            } => {
                cell.set(0, 2);
                cell.set(1, tag);
                cell.set(2, addr);
                cell.set(3, len);
                cell.set(4, token);
                cell.set(5, split);
            }
            Header::Fin {
                token,
                status,
                read_ns,
            } => {
                cell.set(0, 3 | (status as u64) << 8);
                cell.set(1, token);
                cell.set(2, read_ns as u64);
            }
        }
    }

    /// Writes an Inline header and its `payload` from data word `base` of `cell` on:
    /// at 0 in a cell of its own, at a slot's base in a packed cell (a payload of at
    /// most [`SLOT_MAX`] bytes there).
    ///
    /// # Panics
    /// (debug) If this is not an Inline header of `payload`'s length.
    #[inline]
    pub fn write_at(&self, cell: &Cell, base: usize, payload: &[u8]) {
        if let Header::Inline { tag, len } = *self {
            debug_assert!(len == payload.len() && len <= INLINE_MAX);
            debug_assert!(base == 0 || len <= SLOT_MAX);
            cell.set(base, 1 | (len as u64) << 32);
            cell.set(base + 1, tag);
            cell.write_bytes(base + 2, payload);
        } else {
            debug_assert!(false, "only Inline records go into slots");
        }
    }

    /// Reads a header; `None` for a cell no correct peer writes.
    pub fn read(cell: &Cell) -> Option<Header> {
        Header::read_at(cell, 0)
    }

    /// Reads a header from data word `base` of `cell` on (a slot of a packed cell
    /// holds only Inline records of at most [`SLOT_MAX`] bytes); `None` for one no
    /// correct peer writes.
    #[inline]
    pub fn read_at(cell: &Cell, base: usize) -> Option<Header> {
        if base != 0 {
            let w0 = cell.get(base);
            let len = (w0 >> 32) as usize;
            return (w0 & 0xffff_ffff == 1 && len <= SLOT_MAX).then(|| Header::Inline {
                tag: cell.get(base + 1),
                len,
            });
        }
        let w0 = cell.get(0);
        match w0 & 0xff {
            1 => {
                let len = (w0 >> 32) as usize;
                (len <= INLINE_MAX && w0 & 0xffff_ff00 == 0).then(|| Header::Inline {
                    tag: cell.get(1),
                    len,
                })
            }
            2 => Some(Header::Rts {
                tag: cell.get(1),
                addr: cell.get(2),
                len: cell.get(3),
                token: cell.get(4),
                split: cell.get(5),
            }),
            4 => (w0 & 0xffff_ff00 == 0).then(|| Header::Eager {
                tag: cell.get(1),
                len: (w0 >> 32) as usize,
            }),
            3 => {
                let status = (w0 >> 8) as u8;
                (status <= FIN_RESEND).then(|| Header::Fin {
                    token: cell.get(1),
                    status,
                    read_ns: cell.get(2).min(u32::MAX as u64) as u32,
                })
            }
            _ => None,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_garbage_is_refused() {
        let cell = Cell::new();
        let payload: Vec<u8> = (0..INLINE_MAX as u8).collect();
        for h in [
            Header::Inline {
                tag: 9,
                len: INLINE_MAX,
            },
            Header::Rts {
                tag: 1,
                addr: 0xdead,
                len: 1 << 30,
                token: 5,
                split: 3,
            },
            Header::Fin {
                token: 5,
                status: FIN_TRUNCATED,
                read_ns: 7,
            },
            Header::Eager { tag: 3, len: 16384 },
        ] {
            h.write(&cell, &payload);
            assert_eq!(Header::read(&cell), Some(h));
        }
        let mut out = vec![0u8; INLINE_MAX];
        Header::Inline {
            tag: 0,
            len: INLINE_MAX,
        }
        .write(&cell, &payload);
        cell.read_bytes(2, &mut out);
        assert_eq!(out, payload);
        cell.set(0, 1 | 999 << 32);
        assert_eq!(Header::read(&cell), None);
        assert_eq!(INLINE_MAX, 232);
        assert_eq!(eager_continuations(232), 0);
        assert_eq!(eager_continuations(233), 1);
        assert_eq!(eager_continuations(232 + 2 * 248), 2);
        assert_eq!(eager_continuations(232 + 2 * 248 + 1), 3);
        cell.set(0, 77);
        assert_eq!(Header::read(&cell), None);
    }
}
