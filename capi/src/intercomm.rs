//! Inter-communicators created uniformly over failures, and the two-party agreement
//! across their groups.

use std::ffi::{c_int, c_void};

use sf::comm::InterComm;

use crate::comm::sf_comm;
use crate::error::{guard, Result};
use crate::handle::{self, give, out, Home};
use crate::p2p::{bytes, bytes_mut, dest_rank, send_tag, wildcard};
use crate::request::sf_status;

/// An inter-communicator: this process's group and a remote group (opaque).
pub struct sf_intercomm {
    home: Home,
    inter: InterComm,
}
handle::handle!(sf_intercomm);

/// Runs `f` on the inter-communicator behind `inter`, inside the entry-point guard.
///
/// # Safety
/// `inter` is null or a live inter-communicator handle.
unsafe fn on(inter: *const sf_intercomm, f: impl FnOnce(&InterComm) -> Result<()>) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::with(inter, |i| f(&i.inter)) })
}

/// Creates an inter-communicator between `local` (this process's group) and the group
/// whose leader is rank `remote_leader` of `bridge`, uniformly: every surviving
/// process of both groups gets the same outcome, success or `SF_ERR_PROC_FAILED`,
/// even when a process fails during the creation. `local_leader` is a rank of `local`
/// that is also in `bridge`; `tag` (>= 0) tells concurrent creations apart.
/// Collective over both groups.
///
/// # Errors
/// `SF_ERR_PROC_FAILED` (the creation failed somewhere), `SF_ERR_INVALID_ARG`,
/// `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `local` and `bridge` are null or live communicator handles of the same world;
/// `inter` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_create(
    local: *const sf_comm,
    local_leader: c_int,
    bridge: *const sf_comm,
    remote_leader: c_int,
    tag: c_int,
    inter: *mut *mut sf_intercomm,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe {
            handle::with(local, |l| {
                handle::with(bridge, |b| {
                    let slot = out(inter, "inter")?;
                    let made = l.comm().intercomm_create_uniform(
                        dest_rank(local_leader)?,
                        b.comm(),
                        dest_rank(remote_leader)?,
                        send_tag(tag)?,
                    )?;
                    give(
                        slot,
                        sf_intercomm {
                            home: l.home().sibling(),
                            inter: made,
                        },
                    );
                    Ok(())
                })
            })
        }
    })
}

/// Frees an inter-communicator handle (`*inter` becomes null; null is nothing to free).
///
/// # Safety
/// `inter` is null or valid for reads and writes; `*inter` is null or a live
/// inter-communicator handle.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_free(inter: *mut *mut sf_intercomm) -> c_int {
    // SAFETY: the caller's contract.
    guard(|| unsafe { handle::take(inter) }.map(drop))
}

/// This process's rank in its own group, and the sizes of both groups (each out
/// pointer may be null).
///
/// # Safety
/// `inter` is null or a live inter-communicator handle; each out pointer is null or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_shape(
    inter: *const sf_intercomm,
    rank: *mut u32,
    local_size: *mut u32,
    remote_size: *mut u32,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            for (ptr, value) in [
                (rank, i.rank()),
                (local_size, i.local_size()),
                (remote_size, i.remote_size()),
            ] {
                if let Some(slot) = ptr.as_mut() {
                    *slot = value;
                }
            }
            Ok(())
        })
    }
}

/// Sends `len` bytes to rank `dest` of the remote group (as `sf_send`).
///
/// # Safety
/// `inter` is null or a live inter-communicator handle; `buf` is valid for reads of
/// `len` bytes (or null when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_send(
    inter: *const sf_intercomm,
    buf: *const c_void,
    len: usize,
    dest: c_int,
    tag: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            Ok(i.send(dest_rank(dest)?, send_tag(tag)?, bytes(buf, len)?)?)
        })
    }
}

/// Receives from rank `source` of the remote group (or `SF_ANY_SOURCE`), as `sf_recv`;
/// the status names the remote rank.
///
/// # Safety
/// `inter` is null or a live inter-communicator handle; `buf` is valid for writes of
/// `len` bytes (or null when `len` is 0); `status` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_recv(
    inter: *const sf_intercomm,
    buf: *mut c_void,
    len: usize,
    source: c_int,
    tag: c_int,
    status: *mut sf_status,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            let (source, tag) = (wildcard(source, "source")?, wildcard(tag, "tag")?);
            let st = i.recv(source, tag, bytes_mut(buf, len)?)?;
            if let Some(s) = status.as_mut() {
                *s = sf_status::from(st);
            }
            Ok(())
        })
    }
}

/// The agreement across the two groups (`MPIX_Comm_agree` on an inter-communicator):
/// `*flag` is this process's contribution and becomes the AND of the *remote* group's
/// flags, the same at every survivor of this group.
///
/// # Errors
/// `SF_ERR_PROC_FAILED` when a failure was not acknowledged by every contributor
/// (`sf_intercomm_ack_failed`); `SF_ERR_EXCLUDED`.
///
/// # Safety
/// `inter` is null or a live inter-communicator handle; `flag` is null or valid for
/// reads and writes.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_agree(inter: *const sf_intercomm, flag: *mut u32) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            let flag = out(flag, "flag")?;
            *flag = i.agree(*flag)?;
            Ok(())
        })
    }
}

/// Revokes the inter-communicator, on both sides.
///
/// # Safety
/// `inter` is null or a live inter-communicator handle.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_revoke(inter: *const sf_intercomm) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            i.revoke();
            Ok(())
        })
    }
}

/// Acknowledges the failures known now, in both groups; `*acked` (may be null) gets
/// how many are acknowledged.
///
/// # Safety
/// `inter` is null or a live inter-communicator handle; `acked` is null or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn sf_intercomm_ack_failed(
    inter: *const sf_intercomm,
    acked: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        on(inter, |i| {
            let n = i.ack_failed();
            if let Some(slot) = acked.as_mut() {
                *slot = n;
            }
            Ok(())
        })
    }
}
