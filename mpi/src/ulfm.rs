//! The ULFM extension as Open MPI names it: revoke, is_revoked, shrink, ishrink, agree,
//! iagree, failure_ack, failure_get_acked, get_failed, ack_failed. No other `MPIX_`
//! symbol is exported (programs define helpers of their own in that namespace).

use std::ffi::c_int;

use sf::{Comm, CommError};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::request::{Op, Outcome, Req};
use crate::state::{call, CommKind, Guard, Lib};
use crate::util::{new_request_out, out};

crate::mpi_fn! {
    /// `MPIX_Comm_revoke`: every pending and future operation on `comm`, at every
    /// member, fails with `MPIX_ERR_REVOKED` (agree and shrink still work).
    fn MPIX_Comm_revoke / PMPIX_Comm_revoke(comm: Handle) {
        call(comm, |g| {
            match &g.lib()?.comm(comm)?.kind {
                CommKind::Intra { p2p, coll } => {
                    p2p.revoke();
                    coll.revoke();
                }
                CommKind::Inter { p2p, coll } => {
                    p2p.revoke();
                    coll.revoke();
                }
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_is_revoked`.
    fn MPIX_Comm_is_revoked / PMPIX_Comm_is_revoked(comm: Handle, flag: *mut c_int) {
        call(comm, |g| {
            let revoked = match &g.lib()?.comm(comm)?.kind {
                CommKind::Intra { p2p, .. } => p2p.is_revoked(),
                CommKind::Inter { p2p, .. } => p2p.is_revoked(),
            };
            // SAFETY: MPI's contract: `flag` is valid for a write.
            *unsafe { out(flag) }? = c_int::from(revoked);
            Ok(())
        })
    }
}

/// The survivors' communicator of `comm` and its collective half, made by
/// `Comm::twin` (agreements): a shrink succeeds despite failures, so its half must be
/// made despite a member that fails meanwhile, and despite a member that returned
/// first and revokes it (which made a dup of it fail, and this function shrink once
/// more: members ended with different communicators). The shrink and the twin run
/// without the lock (`Guard::unlocked`): under `MPI_THREAD_MULTIPLE` a thread blocked
/// in them must not keep another thread from the calls its peers wait for (two
/// threads shrinking or agreeing on two communicators at once deadlocked across
/// ranks, `soak_threads.c`).
fn shrink(g: &mut Guard, comm: Handle) -> R<Handle> {
    let lib = g.lib()?;
    let errh = lib.comm(comm)?.errhandler;
    if let CommKind::Inter { p2p, .. } = &lib.comm(comm)?.kind {
        // The survivors of both groups (`InterComm::shrink`), with a twin made as for
        // any new inter-communicator (agreements: a failure meanwhile cannot split it).
        let ic = p2p.clone();
        let pair = g.unlocked(|| crate::comm::inter_half(ic.shrink()?))?;
        return Ok(crate::comm::insert_inter(g.lib()?, pair, errh));
    }
    let (p2p, _) = lib.intra(comm)?;
    let pair = g.unlocked(|| -> R<(Comm, Comm)> {
        let s = p2p.shrink()?;
        let coll = s.twin()?;
        Ok((s, coll))
    })?;
    Ok(crate::comm::insert(g.lib()?, pair, errh))
}

crate::mpi_fn! {
    /// `MPIX_Comm_shrink`: a communicator of the survivors, in the same order (works on
    /// a revoked communicator).
    fn MPIX_Comm_shrink / PMPIX_Comm_shrink(comm: Handle, newcomm: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            *slot = shrink(g, comm)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_ishrink`: the shrink runs within this call (the runtime has no
    /// non-blocking shrink) and the request is complete when it returns; a program that
    /// needs other communication to overlap the shrink waits here instead.
    fn MPIX_Comm_ishrink / PMPIX_Comm_ishrink(comm: Handle, newcomm: *mut Handle, request: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` and `request` are valid for writes.
            let (slot, req) = unsafe { (out(newcomm)?, new_request_out(request)?) };
            *slot = shrink(g, comm)?;
            let h = g.lib()?.add_request(Req::finished(comm, Outcome::empty()))?;
            *req = h;
            Ok(())
        })
    }
}

fn p2p_of(lib: &Lib, comm: Handle) -> R<Comm> {
    Ok(lib.intra(comm)?.0)
}

crate::mpi_fn! {
    /// `MPIX_Comm_agree`: `*flag` becomes the AND of every survivor's flag; the same
    /// at every survivor. `MPIX_ERR_PROC_FAILED` when a failed member had not been
    /// acknowledged (by `MPIX_Comm_failure_ack` / `ack_failed`) by every participant;
    /// `*flag` is set then too.
    fn MPIX_Comm_agree / PMPIX_Comm_agree(comm: Handle, flag: *mut c_int) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `flag` is valid for reads and writes.
            let flag = unsafe { out(flag) }?;
            let lib = g.lib()?;
            // The agreement runs without the lock, as `MPI_Recv` does: under
            // `MPI_THREAD_MULTIPLE` a thread waiting in it must not keep the thread
            // whose call a peer waits for out of the library (see `shrink`).
            if let CommKind::Inter { p2p: ic, .. } = &lib.comm(comm)?.kind {
                // ULFM on an inter-communicator: uniform over both groups; each side
                // reads the AND of the remote group's flags.
                let ic = ic.clone();
                *flag = g.unlocked(|| ic.agree(*flag as u32))? as c_int;
                return Ok(());
            }
            let c = p2p_of(lib, comm)?;
            let a = g.unlocked(|| c.agree_full(u64::from(*flag as u32)))?;
            *flag = a.value as u32 as c_int;
            if a.all_acked {
                Ok(())
            } else {
                Err(CommError::ProcFailed { ranks: a.failed }.into())
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_iagree`: `*flag` is read now and written when the request completes.
    fn MPIX_Comm_iagree / PMPIX_Comm_iagree(comm: Handle, flag: *mut c_int, request: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            if flag.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null flag"));
            }
            // SAFETY: MPI's contract: `flag` stays valid until the request completes.
            let value = unsafe { *flag } as u32;
            let lib = g.lib()?;
            let req = p2p_of(lib, comm)?.iagree(u64::from(value));
            let h = lib.add_request(Req::new(comm, Op::Agree { req, flag }))?;
            *slot = h;
            Ok(())
        })
    }
}

/// Acknowledges every failure known now on both runtime communicators of `comm`;
/// the number acknowledged.
fn ack(lib: &Lib, comm: Handle) -> R<usize> {
    Ok(match &lib.comm(comm)?.kind {
        CommKind::Intra { p2p, coll } => {
            coll.ack_failed();
            p2p.ack_failed()
        }
        CommKind::Inter { p2p, coll } => {
            coll.ack_failed();
            p2p.ack_failed()
        }
    })
}

crate::mpi_fn! {
    /// `MPIX_Comm_failure_ack`: acknowledges the failures known now (wildcard receives
    /// proceed again; agreements count them as acknowledged).
    fn MPIX_Comm_failure_ack / PMPIX_Comm_failure_ack(comm: Handle) {
        call(comm, |g| ack(g.lib()?, comm).map(drop))
    }
}

/// A group of the comm ranks `ranks` of intra-communicator `comm`.
fn failed_group(lib: &mut Lib, comm: Handle, ranks: Vec<u32>) -> R<Handle> {
    let p2p = p2p_of(lib, comm)?;
    let members = ranks
        .into_iter()
        .map(|r| p2p.world_rank(r).unwrap_or(u32::MAX))
        .collect();
    Ok(crate::group::new_group(lib, members))
}

crate::mpi_fn! {
    /// `MPIX_Comm_failure_get_acked`: the group of the acknowledged failed processes.
    fn MPIX_Comm_failure_get_acked / PMPIX_Comm_failure_get_acked(comm: Handle, failedgrp: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `failedgrp` is valid for a write.
            let slot = unsafe { out(failedgrp) }?;
            let lib = g.lib()?;
            let acked = p2p_of(lib, comm)?.get_failed();
            *slot = failed_group(lib, comm, acked)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_get_failed`: the group of the processes of `comm` known failed here
    /// (acknowledged or not), in the order their failures were learnt, so a later
    /// call's group starts with an earlier one's and `MPIX_Comm_ack_failed` counts
    /// along it.
    fn MPIX_Comm_get_failed / PMPIX_Comm_get_failed(comm: Handle, failedgrp: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `failedgrp` is valid for a write.
            let slot = unsafe { out(failedgrp) }?;
            let lib = g.lib()?;
            let failed = p2p_of(lib, comm)?.failed_in_order();
            *slot = failed_group(lib, comm, failed)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_ack_failed`: acknowledges the first `num_to_ack` processes of the
    /// group `MPIX_Comm_get_failed` gives (all of them when it has fewer); `*num_acked`
    /// is how many are acknowledged (more when earlier calls acknowledged more). With 0
    /// it only reports. On an inter-communicator every failure known is acknowledged.
    fn MPIX_Comm_ack_failed / PMPIX_Comm_ack_failed(comm: Handle, num_to_ack: c_int, num_acked: *mut c_int) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `num_acked` is valid for a write.
            let slot = unsafe { out(num_acked) }?;
            if num_to_ack < 0 {
                return Err(Fail::new(MPI_ERR_ARG, format!("num_to_ack {num_to_ack} is negative")));
            }
            let lib = g.lib()?;
            let k = num_to_ack as usize;
            let n = match &lib.comm(comm)?.kind {
                CommKind::Intra { p2p, coll } => {
                    coll.ack_failed_first(k);
                    p2p.ack_failed_first(k)
                }
                CommKind::Inter { .. } if k > 0 => ack(lib, comm)?,
                CommKind::Inter { p2p, .. } => p2p.union().get_failed().len(),
            };
            *slot = n as c_int;
            Ok(())
        })
    }
}
