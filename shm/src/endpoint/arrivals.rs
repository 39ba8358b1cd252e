//! Arrivals: the endpoint hands out every message as it comes out of the rings, for a
//! matching engine above it (the runtime's) to match, instead of matching on tag and
//! mask itself. Small messages are copied straight into the buffer of the receive the
//! caller names (the latency path: no queue copy), or out of the ring into a buffer
//! of their own; large ones stay in the sender's memory until the caller pulls them
//! into the matched receive's buffer ([`Endpoint::pull`]), which releases the sender.
//!
//! Use either this interface or the tag-matching one (`recv`, `try_recv`, `probe`) on
//! one endpoint, not both: messages that sends and waits drain from the rings meanwhile
//! wait in one backlog that both read.

use super::{Body, Dst, Endpoint, Popped, Received, Unexpected};
use crate::error::ShmError;
use crate::message::{Header, FIN_FAILED};

/// A message handed out by [`Endpoint::next_arrival`].
#[derive(Debug)]
pub struct Arrival {
    /// The sender's local rank.
    pub source: u32,
    /// The message's tag.
    pub tag: u64,
    /// Its length in bytes.
    pub len: usize,
    /// Where its bytes are.
    pub data: ArrivalData,
}

/// Where the bytes of an [`Arrival`] are.
#[derive(Debug)]
pub enum ArrivalData {
    /// Copied into the destination the chooser named; nothing was copied when
    /// `truncated` (the destination was shorter than the message, which is consumed).
    Placed {
        /// The destination was too short.
        truncated: bool,
    },
    /// Copied out of the ring (no destination was named, or the message came in
    /// pieces while the sender waited for room).
    Bytes(Vec<u8>),
    /// A large message still in the sender's memory: [`Endpoint::pull`] it once
    /// matched, or [`Endpoint::refuse`] it; the sender waits until one of them.
    Pull(PullTicket),
}

/// A large message waiting in its sender's memory (from an RTS). Not `Clone`: it is
/// pulled or refused once.
#[derive(Debug)]
pub struct PullTicket {
    addr: u64,
    len: u64,
    token: u64,
    split: u64,
}

impl Endpoint {
    /// The next message that arrived: first those that earlier operations drained from
    /// the rings (in ring order), then one from the rings, visited round robin. For a
    /// small message, `choose(source, tag, len)` may name a destination: the bytes are
    /// copied straight into it (`Placed`). `Ok(None)` when nothing is waiting.
    ///
    /// # Safety
    /// Every destination `choose` returns, `(pointer, capacity)`, must be valid for
    /// writes of `capacity` bytes and covered by no live reference until this returns.
    ///
    /// # Errors
    /// [`ShmError::Corrupt`] for a ring that does not decode.
    pub unsafe fn next_arrival(
        &mut self,
        choose: &mut dyn FnMut(u32, u64, usize) -> Option<(*mut u8, usize)>,
    ) -> Result<Option<Arrival>, ShmError> {
        if let Some(u) = self.unexpected.pop_front() {
            return Ok(Some(arrival_of(u)));
        }
        let n = self.config.ranks;
        let mut want =
            |s: u32, t: u64, l: usize| choose(s, t, l).map(|(ptr, cap)| Dst { ptr, cap });
        for k in 0..n {
            let ring = (self.next_ring + k) % n;
            if ring == self.config.rank {
                continue;
            }
            // SAFETY: `want`'s destinations are `choose`'s (the caller's contract).
            while let Some(p) = unsafe { self.pop(ring, &mut want) }? {
                let arrival = match p {
                    Popped::Delivered {
                        source,
                        tag,
                        len,
                        truncated,
                    } => Arrival {
                        source,
                        tag,
                        len,
                        data: ArrivalData::Placed { truncated },
                    },
                    Popped::Queued(u) => arrival_of(u),
                    Popped::Fin(..) | Popped::Eager { .. } | Popped::Other => continue,
                };
                self.next_ring = (ring + 1) % n;
                return Ok(Some(arrival));
            }
        }
        Ok(None)
    }

    /// Waits, polling only the next cell of `ring` (local rank `ring`'s ring into this
    /// process), up to `spins` polls for something to arrive there; whether something
    /// is there to take (also a message already drained into the backlog). A receive
    /// that knows where its message comes from waits here between two drains: one load
    /// per poll instead of a whole drain, so it sees the message sooner.
    pub fn await_from(&mut self, ring: u32, spins: u32) -> bool {
        if !self.unexpected.is_empty()
            || ring >= self.config.ranks
            || ring == self.config.rank
            || self.partial[ring as usize].is_some()
        {
            return true;
        }
        let mut c = self.own.consumer_at(ring, self.rx[ring as usize]);
        for _ in 0..spins {
            if !c.is_empty() {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    /// Pulls a large message from local rank `source`'s memory into `buf` and releases
    /// the sender (a FIN saying whether it was read). The single-copy ladder of the
    /// tag-matching receive applies (XPMEM, split copy, `process_vm_readv`, or the
    /// pipelined resend through the ring when the kernel forbids reading the sender).
    ///
    /// # Errors
    /// [`ShmError::Truncated`] when `buf` is too short (the sender is released);
    /// [`ShmError::PeerDead`], [`ShmError::Cma`] when the read fails.
    pub fn pull(
        &mut self,
        source: u32,
        tag: u64,
        ticket: PullTicket,
        buf: &mut [u8],
    ) -> Result<Received, ShmError> {
        let u = Unexpected {
            source,
            tag,
            body: Body::Rts {
                addr: ticket.addr,
                len: ticket.len,
                token: ticket.token,
                split: ticket.split,
            },
        };
        self.deliver(u, buf)
    }

    /// Releases the sender of a large message that will never be received (its
    /// communicator was revoked or freed): its send completes as failed.
    ///
    /// # Errors
    /// [`ShmError::Corrupt`] or other push errors; a dead sender is not an error.
    pub fn refuse(&mut self, source: u32, ticket: PullTicket) -> Result<(), ShmError> {
        if self.dead[source as usize] {
            return Ok(());
        }
        let fin = Header::Fin {
            token: ticket.token,
            status: FIN_FAILED,
            read_ns: 0,
        };
        match self.push(source, fin, &[]) {
            Ok(()) | Err(ShmError::PeerDead(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn arrival_of(u: Unexpected) -> Arrival {
    match u.body {
        Body::Inline(bytes) => Arrival {
            source: u.source,
            tag: u.tag,
            len: bytes.len(),
            data: ArrivalData::Bytes(bytes),
        },
        Body::Rts {
            addr,
            len,
            token,
            split,
        } => Arrival {
            source: u.source,
            tag: u.tag,
            len: len as usize,
            data: ArrivalData::Pull(PullTicket {
                addr,
                len,
                token,
                split,
            }),
        },
    }
}
