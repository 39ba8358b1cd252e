//! Collectives over point-to-point: allreduce on `u64` slices and a barrier.
//!
//! Recursive doubling: in round k each rank exchanges its partial result with the rank
//! whose number differs in bit k, so 2^m ranks finish in m exchanges (one message delay
//! each). With a size that is not a power of two, the ranks above the largest power of
//! two first hand their values to a partner below it and get the result back at the
//! end. A failed peer makes the call return `ProcFailed` (these collectives are not
//! fault-tolerant agreements: use `agree` for that); a revoked communicator `Revoked`.
//! A rank waiting for a live peer gives up with `ProcFailed` too once any member is
//! known failed (ULFM's rule for collectives): that peer may have given up already,
//! having met the failure itself, and would never send (at 3 ranks the extra rank
//! waited forever for rank 0, whose exchange with the dead rank 1 had failed; a
//! `dup` in `mpi/tests/c/soak_threads.c` hung so).

use super::{Comm, CommError, Spin, Status};

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

fn to_bytes(values: &[u64], out: &mut Vec<u8>) {
    out.clear();
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
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
        let mut out = Vec::with_capacity(values.len() * 8);
        let mut inb = vec![0u8; values.len() * 8];
        let mut theirs = vec![0u64; values.len()];
        let extra = me >= pow2;
        // Fold the ranks above the power of two into their partners.
        if extra {
            to_bytes(values, &mut out);
            self.send(me - pow2, TAG, &out)?;
            let st = self.coll_recv(me - pow2, &mut inb)?;
            check_len(st.len, inb.len())?;
            from_bytes(&inb, values);
            return Ok(());
        }
        if me + pow2 < n {
            let st = self.coll_recv(me + pow2, &mut inb)?;
            check_len(st.len, inb.len())?;
            from_bytes(&inb, &mut theirs);
            op.apply(values, &theirs);
        }
        let mut mask = 1;
        while mask < pow2 {
            let partner = me ^ mask;
            to_bytes(values, &mut out);
            // Both post their send first, then receive: neither waits for the other's
            // receive, whatever the size.
            // SAFETY: waited for below, or dropped (cancelled) on an early return,
            // before `out` is touched again.
            let send = unsafe { self.isend(partner, TAG, &out) }?;
            let st = self.coll_recv(partner, &mut inb)?;
            send.wait()?;
            check_len(st.len, inb.len())?;
            from_bytes(&inb, &mut theirs);
            op.apply(values, &theirs);
            mask <<= 1;
        }
        if me + pow2 < n {
            to_bytes(values, &mut out);
            self.send(me + pow2, TAG, &out)?;
        }
        Ok(())
    }

    /// A collective's receive from `from`: as `recv`, but gives up with `ProcFailed`
    /// once some member of the communicator is known failed and the message has not
    /// come (see the module doc). Dropping the request on that return cancels it.
    fn coll_recv(&self, from: u32, buf: &mut [u8]) -> Result<Status, CommError> {
        // SAFETY: the request is waited for below or dropped (cancelled) on return,
        // before `buf` is used again.
        let mut req = unsafe { self.irecv(Some(from), Some(TAG), buf) }?;
        Spin::until(self, || {
            if let Some(st) = req.test()? {
                return Ok(Some(st));
            }
            if self.any_failed() {
                return Err(CommError::ProcFailed {
                    ranks: self.failed_ranks(),
                });
            }
            Ok(None)
        })
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
        for &r in live {
            if r == me {
                continue;
            }
            let got = if me < r {
                self.send(r, tag, mine)?;
                self.recv(Some(r), Some(tag), &mut b)?
            } else {
                let got = self.recv(Some(r), Some(tag), &mut b)?;
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

fn check_len(got: usize, want: usize) -> Result<(), CommError> {
    if got != want {
        return Err(CommError::Truncated {
            len: Some(got),
            capacity: want,
        });
    }
    Ok(())
}
