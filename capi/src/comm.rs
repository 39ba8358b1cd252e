//! Communicators: rank and size, dup, split, free, and the fault-tolerance calls
//! (revoke, acknowledge, failed ranks, agree, shrink, with ULFM's meaning).

use std::ffi::c_int;

use sf::comm::{ReduceOp, ALLREDUCE_MAX};
use sf::Comm;

use crate::error::{guard, Error, Result, SF_ERR_PROC_FAILED};
use crate::handle::{self, copy_ranks, give, out, Home};

/// `sf_comm_allreduce`: wrapping sum.
pub const SF_OP_SUM: c_int = 0;
/// `sf_comm_allreduce`: minimum.
pub const SF_OP_MIN: c_int = 1;
/// `sf_comm_allreduce`: maximum.
pub const SF_OP_MAX: c_int = 2;
/// `sf_comm_allreduce`: bitwise AND.
pub const SF_OP_BAND: c_int = 3;
/// `sf_comm_allreduce`: bitwise OR.
pub const SF_OP_BOR: c_int = 4;

/// A reduction operation from C.
fn reduce_op(op: c_int) -> Result<ReduceOp> {
    Ok(match op {
        SF_OP_SUM => ReduceOp::Sum,
        SF_OP_MIN => ReduceOp::Min,
        SF_OP_MAX => ReduceOp::Max,
        SF_OP_BAND => ReduceOp::And,
        SF_OP_BOR => ReduceOp::Or,
        other => {
            return Err(Error::invalid(format!(
                "reduction operation {other} is not one of SF_OP_SUM (0) .. SF_OP_BOR (4)"
            )))
        }
    })
}

/// A communicator (opaque).
pub struct sf_comm {
    home: Home,
    comm: Comm,
}
handle::handle!(sf_comm);

impl sf_comm {
    pub(crate) fn new(home: Home, comm: Comm) -> Self {
        sf_comm { home, comm }
    }

    pub(crate) fn comm(&self) -> &Comm {
        &self.comm
    }

    pub(crate) fn home(&self) -> &Home {
        &self.home
    }

    /// A handle of the same world to `comm`, into `*slot`.
    fn give_derived(&self, slot: *mut *mut sf_comm, comm: Result<Comm>) -> Result<()> {
        // SAFETY: the entry point's contract on the out pointer.
        let slot = unsafe { out(slot, "newcomm") }?;
        give(slot, sf_comm::new(self.home.sibling(), comm?));
        Ok(())
    }
}

/// Runs `f` on the communicator behind `comm`, inside the entry-point guard.
///
/// # Safety
/// `comm` is null or a live communicator handle.
unsafe fn on(comm: *const sf_comm, f: impl FnOnce(&sf_comm) -> Result<()>) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::with(comm, f) })
}

/// Frees a communicator handle (`*comm` becomes null; null is nothing to free). Other
/// handles to the same communicator, and requests on it, stay valid.
///
/// # Safety
/// `comm` is null or valid for reads and writes; `*comm` is null or a communicator
/// handle not freed.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_free(comm: *mut *mut sf_comm) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::take(comm) }.map(drop))
}

/// This process's rank in `comm`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `rank` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_rank(comm: *const sf_comm, rank: *mut u32) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            *out(rank, "rank")? = c.comm.rank();
            Ok(())
        })
    }
}

/// The number of ranks of `comm`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `size` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_size(comm: *const sf_comm, size: *mut u32) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            *out(size, "size")? = c.comm.size();
            Ok(())
        })
    }
}

/// A new communicator with the same group (`MPI_Comm_dup`).
///
/// # Errors
/// `SF_ERR_REVOKED` on a revoked communicator.
///
/// # Safety
/// `comm` is null or a live communicator handle; `newcomm` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_dup(comm: *const sf_comm, newcomm: *mut *mut sf_comm) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            c.give_derived(newcomm, c.comm.dup().map_err(Into::into))
        })
    }
}

/// Splits `comm` (`MPI_Comm_split`): ranks of equal `color` form a communicator,
/// ordered by `key`, then by rank in `comm`. Collective.
///
/// # Errors
/// `SF_ERR_PROC_FAILED`, `SF_ERR_REVOKED`, `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `newcomm` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_split(
    comm: *const sf_comm,
    color: u32,
    key: u32,
    newcomm: *mut *mut sf_comm,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            c.give_derived(newcomm, c.comm.split(color, key).map_err(Into::into))
        })
    }
}

/// The survivors' communicator (`MPIX_Comm_shrink`): every rank of `comm` outside the
/// agreed failed set, in the same order. Works on a revoked communicator.
///
/// # Errors
/// `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `newcomm` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_shrink(comm: *const sf_comm, newcomm: *mut *mut sf_comm) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            c.give_derived(newcomm, c.comm.shrink().map_err(Into::into))
        })
    }
}

/// Revokes `comm` (`MPIX_Comm_revoke`): every pending and future operation on it, at
/// every rank, fails with `SF_ERR_REVOKED`, except agreement and shrink.
///
/// # Safety
/// `comm` is null or a live communicator handle.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_revoke(comm: *const sf_comm) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            c.comm.revoke();
            Ok(())
        })
    }
}

/// Whether `comm` was revoked (here or by another rank): `*flag` is 1 or 0.
///
/// # Safety
/// `comm` is null or a live communicator handle; `flag` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_is_revoked(comm: *const sf_comm, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            *out(flag, "flag")? = c_int::from(c.comm.is_revoked());
            Ok(())
        })
    }
}

/// Acknowledges every failure of `comm`'s ranks known now (`MPIX_Comm_ack_failed`), so
/// that wildcard receives proceed; `*acked` (if not null) gets how many are
/// acknowledged.
///
/// # Safety
/// `comm` is null or a live communicator handle; `acked` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_ack_failed(comm: *const sf_comm, acked: *mut usize) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            if acked.is_null() {
                // No count asked for: never waits for another thread's round.
                c.comm.failure_ack();
            } else {
                *acked = c.comm.ack_failed();
            }
            Ok(())
        })
    }
}

/// The acknowledged failed ranks of `comm` (`MPIX_Comm_get_failed` after an ack):
/// the first `capacity` to `ranks`, the full count to `*count` (may be null).
///
/// # Safety
/// `comm` is null or a live communicator handle; `ranks` is null or valid for writes
/// of `capacity` values; `count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_get_failed(
    comm: *const sf_comm,
    ranks: *mut u32,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            copy_ranks(&c.comm.get_failed(), ranks, capacity, count)
        })
    }
}

/// Agrees with every live rank of `comm` (`MPIX_Comm_agree`): `*value` is this rank's
/// contribution and becomes the bitwise AND over the contributors; the agreed failed
/// ranks (of `comm`) go to `failed` (the first `capacity`) and their count to
/// `*failed_count` (may be null). Every survivor gets the same outcome. Works on a
/// revoked communicator.
///
/// # Errors
/// `SF_ERR_PROC_FAILED` when some agreed failure was not acknowledged by every
/// contributor (the value and the failed ranks are still written);
/// `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `value` is null or valid for reads
/// and writes; `failed` is null or valid for writes of `capacity` values;
/// `failed_count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_agree(
    comm: *const sf_comm,
    value: *mut u64,
    failed: *mut u32,
    capacity: usize,
    failed_count: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            let value = out(value, "value")?;
            if capacity > 0 && failed.is_null() {
                return Err(Error::invalid(format!(
                    "the failed-rank array is a null pointer with a capacity of {capacity}"
                )));
            }
            let a = c.comm.agree_full(*value)?;
            *value = a.value;
            copy_ranks(&a.failed, failed, capacity, failed_count)?;
            if a.all_acked {
                Ok(())
            } else {
                Err(Error::new(
                    SF_ERR_PROC_FAILED,
                    format!(
                        "agreement: failed ranks {:?} not acknowledged by every contributor",
                        a.failed
                    ),
                ))
            }
        })
    }
}

/// Waits until every live rank of `comm` reached the barrier.
///
/// # Errors
/// `SF_ERR_PROC_FAILED`, `SF_ERR_REVOKED`, `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `comm` is null or a live communicator handle.
#[no_mangle]
pub unsafe extern "C" fn sf_comm_barrier(comm: *const sf_comm) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { on(comm, |c| Ok(c.comm.barrier()?)) }
}

/// Combines `count` unsigned 64-bit values element-wise over every rank of `comm` with
/// `op` (`SF_OP_SUM`, `SF_OP_MIN`, `SF_OP_MAX`, `SF_OP_BAND`, `SF_OP_BOR`); every rank
/// gets the result in `values`. Every rank passes the same `count`, at most 65536.
///
/// # Errors
/// `SF_ERR_INVALID_ARG` (operation, count), `SF_ERR_TRUNCATED` (ranks passed different
/// counts), `SF_ERR_PROC_FAILED`, `SF_ERR_REVOKED`.
///
/// # Safety
/// `comm` is null or a live communicator handle; `values` is valid for reads and
/// writes of `count` values (or null when `count` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_comm_allreduce(
    comm: *const sf_comm,
    values: *mut u64,
    count: usize,
    op: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(comm, |c| {
            let op = reduce_op(op)?;
            if count > ALLREDUCE_MAX {
                return Err(Error::invalid(format!(
                    "allreduce of {count} values, above {ALLREDUCE_MAX}"
                )));
            }
            let values: &mut [u64] = match count {
                0 => &mut [],
                _ if values.is_null() => {
                    return Err(Error::invalid(format!(
                        "values is a null pointer with a count of {count}"
                    )))
                }
                // SAFETY: the caller's contract.
                _ => std::slice::from_raw_parts_mut(values, count),
            };
            Ok(c.comm.allreduce(values, op)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_operations_from_c() {
        assert_eq!(reduce_op(SF_OP_SUM).unwrap(), ReduceOp::Sum);
        assert_eq!(reduce_op(SF_OP_BOR).unwrap(), ReduceOp::Or);
        let e = reduce_op(9).unwrap_err();
        assert!(e.message.contains("operation 9"), "{}", e.message);
    }
}
