//! Collectives over point-to-point: allreduce on `u64` slices and a barrier.
//!
//! Recursive doubling: in round k each rank exchanges its partial result with the rank
//! whose number differs in bit k, so 2^m ranks finish in m exchanges (one message delay
//! each). With a size that is not a power of two, the ranks above the largest power of
//! two first hand their values to a partner below it and get the result back at the
//! end. A failed peer makes the call return `ProcFailed` (these collectives are not
//! fault-tolerant agreements: use `agree` for that); a revoked communicator `Revoked`.
//! A rank waiting for a message gives up with `ProcFailed` once any member taking part
//! is known failed, not only the rank it waits on: a live partner that met the failure
//! first may have given up and will never send, and a failure must end the call, never
//! hang it. A call that began before the failure was known first waits a short grace
//! for the messages still on their way (`give_up`); the ranks that get every message
//! succeed: the outcome is not uniform, as ULFM allows.

use super::give_up::GiveUpClock;
use super::{Comm, CommError, Status};

/// How values are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Wrapping sum.
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise AND.
    And,
    /// Bitwise OR.
    Or,
}

impl ReduceOp {
    fn apply(self, into: &mut [u64], other: &[u64]) {
        for (a, &b) in into.iter_mut().zip(other) {
            *a = match self {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Min => (*a).min(b),
                ReduceOp::Max => (*a).max(b),
                ReduceOp::And => *a & b,
                ReduceOp::Or => *a | b,
            };
        }
    }
}

/// Tag of collective traffic (the top of the application's tag space).
const TAG: u32 = crate::world::tags::MAX_TAG - 2;
/// Largest slice reduced (its bytes travel in one message).
pub const ALLREDUCE_MAX: usize = 1 << 16;

/// Values reduced in buffers on the stack (no allocation per call).
const ON_STACK: usize = 16;

/// Writes `values` into `out` (exactly `values.len() * 8` bytes).
fn to_bytes(values: &[u64], out: &mut [u8]) {
    for (v, c) in values.iter().zip(out.chunks_exact_mut(8)) {
        c.copy_from_slice(&v.to_le_bytes());
    }
}

fn from_bytes(bytes: &[u8], out: &mut [u64]) {
    for (v, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
}

impl Comm {
    /// Combines `values` element-wise over every rank with `op`; every rank gets the
    /// result in `values` (same length everywhere).
    ///
    /// # Errors
    /// `ProcFailed`, `Revoked`, `InvalidArgument` (more than [`ALLREDUCE_MAX`] values),
    /// `Truncated` when ranks passed different lengths.
    pub fn allreduce(&self, values: &mut [u64], op: ReduceOp) -> Result<(), CommError> {
        if values.len() > ALLREDUCE_MAX {
            return Err(CommError::InvalidArgument(format!(
                "allreduce of {} values, above {ALLREDUCE_MAX}",
                values.len()
            )));
        }
        let (me, n) = (self.rank(), self.size());
        let pow2 = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        // The wire bytes out and in, and the partner's values: on the stack when small.
        let len = values.len();
        let (mut out_s, mut in_s, mut theirs_s) =
            ([0u8; ON_STACK * 8], [0u8; ON_STACK * 8], [0u64; ON_STACK]);
        let (mut out_h, mut in_h, mut theirs_h) = (Vec::new(), Vec::new(), Vec::new());
        let (out, inb, theirs): (&mut [u8], &mut [u8], &mut [u64]) = if len <= ON_STACK {
            (
                &mut out_s[..len * 8],
                &mut in_s[..len * 8],
                &mut theirs_s[..len],
            )
        } else {
            out_h.resize(len * 8, 0u8);
            in_h.resize(len * 8, 0u8);
            theirs_h.resize(len, 0u64);
            (&mut out_h[..], &mut in_h[..], &mut theirs_h[..])
        };
        let clock = self.give_up_clock();
        let extra = me >= pow2;
        // Fold the ranks above the power of two into their partners.
        if extra {
            to_bytes(values, out);
            self.send(me - pow2, TAG, out)?;
            let st = self.recv_or_give_up(me - pow2, TAG, inb, None, &clock)?;
            check_len(st.len, inb.len())?;
            from_bytes(inb, values);
            return Ok(());
        }
        if me + pow2 < n {
            let st = self.recv_or_give_up(me + pow2, TAG, inb, None, &clock)?;
            check_len(st.len, inb.len())?;
            from_bytes(inb, theirs);
            op.apply(values, theirs);
        }
        let mut mask = 1;
        while mask < pow2 {
            let partner = me ^ mask;
            to_bytes(values, out);
            // Both post their send first, then receive: neither waits for the other's
            // receive, whatever the size.
            // SAFETY: waited for below, or dropped (cancelled) on an early return,
            // before `out` is touched again.
            let send = unsafe { self.isend(partner, TAG, out) }?;
            let st = self.recv_or_give_up(partner, TAG, inb, None, &clock)?;
            send.wait()?;
            check_len(st.len, inb.len())?;
            from_bytes(inb, theirs);
            op.apply(values, theirs);
            mask <<= 1;
        }
        if me + pow2 < n {
            to_bytes(values, out);
            self.send(me + pow2, TAG, out)?;
        }
        Ok(())
    }

    /// Waits until every rank has called it (an allreduce of nothing).
    ///
    /// # Errors
    /// As [`allreduce`](Self::allreduce).
    pub fn barrier(&self) -> Result<(), CommError> {
        self.allreduce(&mut [], ReduceOp::Sum)
    }
}

impl Comm {
    /// Sends `mine` to every rank of `live` but this one and hands each one's message
    /// (exactly `mine.len()` bytes, else `Protocol` naming `what`) to `take`. Lower ranks
    /// send first to higher ones, so no pair waits on each other. Only `live` take part:
    /// ranks acknowledged failed are left out.
    pub(super) fn exchange_live(
        &self,
        live: &[u32],
        tag: u32,
        mine: &[u8],
        what: &'static str,
        mut take: impl FnMut(u32, &[u8]),
    ) -> Result<(), CommError> {
        let me = self.rank();
        let mut b = vec![0u8; mine.len()];
        let clock = GiveUpClock::start(self.failed_ranks().iter().any(|r| live.contains(r)));
        for &r in live {
            if r == me {
                continue;
            }
            let got = if me < r {
                self.send(r, tag, mine)?;
                self.recv_or_give_up(r, tag, &mut b, Some(live), &clock)?
            } else {
                let got = self.recv_or_give_up(r, tag, &mut b, Some(live), &clock)?;
                self.send(r, tag, mine)?;
                got
            };
            if got.len != b.len() {
                return Err(CommError::Protocol {
                    rank: r,
                    problem: what,
                });
            }
            take(r, &b);
        }
        Ok(())
    }
}

impl Comm {
    /// Receives a collective's message from `src` with `tag`, as [`Comm::recv`] does,
    /// but gives up with `ProcFailed` once a rank of `among` (`None`: any member) is
    /// known failed and the call's `clock` says so (see the module doc). The message is
    /// looked for first: one that arrived before the failure was learnt is taken.
    fn recv_or_give_up(
        &self,
        src: u32,
        tag: u32,
        buf: &mut [u8],
        among: Option<&[u32]>,
        clock: &GiveUpClock,
    ) -> Result<Status, CommError> {
        // A blocking receive (the direct path when it can: no posting, only the
        // partner's ring watched), given up as the module doc says.
        let give_up = || {
            if !self.any_failed() {
                return None;
            }
            let counts =
                among.is_none_or(|live| self.failed_ranks().iter().any(|r| live.contains(r)));
            (counts && clock.expired()).then(|| CommError::ProcFailed {
                ranks: self.failed_ranks(),
            })
        };
        self.recv_until(Some(src), Some(tag), buf, Some(&give_up))
    }
}

fn check_len(got: usize, want: usize) -> Result<(), CommError> {
    if got != want {
        return Err(CommError::Truncated {
            len: Some(got),
            capacity: want,
            sender: None,
            tag: None,
        });
    }
    Ok(())
}
