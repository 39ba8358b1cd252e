//! Communicators (rank, size, dup, split, create, free, compare, group, attributes,
//! names, inter-communicator creation) and error handlers.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use sf::comm::InterComm;
use sf::{Comm, CommError};

use crate::consts::*;
use crate::error::{self, Fail, R};
use crate::request::{progress_detached, Op, Req};
use crate::state::NO_OBJECT;
use crate::state::{call, CommEntry, CommKind, ErrFn, FtMode, Guard, Handler, Lib};
use crate::util::{out, read_cstr, read_handle, write_str};

crate::mpi_fn! {
    /// `MPI_Comm_rank` (an inter-communicator: the rank in the local group).
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: Handle, rank: *mut c_int) {
        call(comm, |g| {
            let r = g.lib()?.comm(comm)?.rank;
            // SAFETY: MPI's contract: `rank` is valid for a write.
            *unsafe { out(rank) }? = r as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_size` (failed ranks included until a shrink; an inter-communicator:
    /// the local group's size).
    fn MPI_Comm_size / PMPI_Comm_size(comm: Handle, size: *mut c_int) {
        call(comm, |g| {
            let e = g.lib()?.comm(comm)?;
            let n = match &e.kind {
                // Kept in the table (the runtime's `size()` takes its engine).
                CommKind::Intra { .. } => e.size,
                CommKind::Inter { p2p, .. } => p2p.local_size(),
            };
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = n as c_int;
            Ok(())
        })
    }
}

/// `p2p` and its collective half ([`collective_half`]): the runtime part of making an
/// intra-communicator, which runs without the library's lock; [`insert`] registers
/// the pair under it.
fn with_half(p2p: Comm) -> R<(Comm, Comm)> {
    let coll = collective_half(&p2p)?;
    Ok((p2p, coll))
}

/// The collective half of a new inter-communicator `p2p`: its twin
/// (`InterComm::twin`), which a revoke or failure meanwhile cannot interrupt, so every
/// member of both groups gets it and a uniform creation (`MPI_Intercomm_create`) stays
/// uniform.
pub(crate) fn inter_half(p2p: InterComm) -> R<(InterComm, InterComm)> {
    let coll = p2p.twin()?;
    Ok((p2p, coll))
}

/// Registers the inter-communicator `(p2p, coll)` with error handler `errhandler`, as
/// [`insert`].
pub(crate) fn insert_inter(
    lib: &mut Lib,
    (p2p, coll): (InterComm, InterComm),
    errhandler: Handle,
) -> Handle {
    if p2p.is_revoked() {
        coll.revoke();
    }
    let h = lib.new_handle();
    lib.comms.insert(
        h,
        CommEntry::new(CommKind::Inter { p2p, coll }, errhandler, ""),
    );
    h
}

/// Registers the intra-communicator `(p2p, coll)` with error handler `errhandler`.
pub(crate) fn insert(lib: &mut Lib, (p2p, coll): (Comm, Comm), errhandler: Handle) -> Handle {
    if p2p.is_revoked() {
        // Revoked by a member that returned already: the half too (its revoke may
        // not have reached this half yet).
        coll.revoke();
    }
    let h = lib.new_handle();
    lib.comms.insert(
        h,
        CommEntry::new(CommKind::Intra { p2p, coll }, errhandler, ""),
    );
    h
}

/// The collective half of a new communicator `p2p`: a dup of it, then a barrier over
/// the dup before any member returns. A member that returned from the creation may
/// revoke the communicator (both halves) at once; the barrier makes that happen only
/// after every member has made its dup (a dup over a revoked `p2p` fails, and did: the
/// faster member's revoke made `MPI_Comm_dup` fail elsewhere with `MPI_ERR_REVOKED`).
/// A revoke that interrupts the barrier itself therefore comes from a member past it,
/// so every member has the half: it counts as success.
pub(crate) fn collective_half(p2p: &Comm) -> R<Comm> {
    let coll = p2p.dup()?;
    match coll.barrier() {
        Ok(()) | Err(CommError::Revoked) => Ok(coll),
        Err(e) => Err(e.into()),
    }
}

/// [`collective_half`] for `MPI_COMM_WORLD` in `MPI_Init`: a member that returned from
/// `MPI_Init` may die at once (a victim of a fault-tolerance test does); the barrier
/// then fails at the members still in it once they learn of the death. A member in
/// the barrier has made its dup, and the dead one had passed the barrier, so every
/// member had: that counts as success too (the failure is the program's to meet in its
/// first call that involves the dead rank).
pub(crate) fn world_collective_half(p2p: &Comm) -> R<Comm> {
    let coll = p2p.dup()?;
    match coll.barrier() {
        Ok(()) | Err(CommError::Revoked) | Err(CommError::ProcFailed { .. }) => Ok(coll),
        Err(e) => Err(e.into()),
    }
}

// The constructors below look up the parent under the lock, then run the runtime's
// collective steps without it (`Guard::unlocked`), and register the result under it
// again: under `MPI_THREAD_MULTIPLE` a thread blocked in one, waiting for a peer, must
// not keep out the thread whose call that peer waits for (threads duplicating their own
// communicators at once deadlocked across ranks, `mpi/tests/c/soak_threads.c`).

crate::mpi_fn! {
    /// `MPI_Comm_dup`.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: Handle, newcomm: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let lib = g.lib()?;
            let e = lib.comm(comm)?;
            let errh = e.errhandler;
            if let CommKind::Inter { coll, .. } = &e.kind {
                // Both groups duplicate it, over the collective half.
                let coll = coll.clone();
                let pair = g.unlocked(|| inter_half(coll.dup()?))?;
                *slot = insert_inter(g.lib()?, pair, errh);
                return crate::attr::copy_all(g, comm, *slot);
            }
            let (_, coll) = lib.intra(comm)?;
            let topology = e.topology();
            let pair = g.unlocked(|| with_half(coll.dup()?))?;
            let lib = g.lib()?;
            *slot = insert(lib, pair, errh);
            // A dup keeps the topology (MPI 4.1, 8.4) and copies the attributes.
            lib.comm_mut(*slot)?.set_topology(topology);
            crate::attr::copy_all(g, comm, *slot)
        })
    }
}

/// Splits intra-communicator `comm` by `color` (`None`: `MPI_UNDEFINED`) ordered by
/// `key`; the new handle, `MPI_COMM_NULL` for `None`.
pub(crate) fn split(g: &mut Guard, comm: Handle, color: Option<u32>, key: c_int) -> R<Handle> {
    let lib = g.lib()?;
    let (_, coll) = lib.intra(comm)?;
    let errh = lib.comm(comm)?.errhandler;
    // Keys order the ranks: shift them so that negative keys sort first.
    let key = (i64::from(key) - i64::from(i32::MIN)) as u32;
    let pair = g.unlocked(|| -> R<Option<(Comm, Comm)>> {
        let c = coll.split(color.unwrap_or(u32::MAX), key)?;
        if color.is_none() {
            // The ranks without a color formed one communicator of their own: give it
            // back (collectively, among them).
            if let Err(e) = c.free() {
                log::debug!("MPI_Comm_split: freeing the MPI_UNDEFINED group: {e}");
            }
            return Ok(None);
        }
        with_half(c).map(Some)
    })?;
    match pair {
        None => Ok(MPI_COMM_NULL),
        Some(pair) => Ok(insert(g.lib()?, pair, errh)),
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_split` (`MPI_UNDEFINED` gives `MPI_COMM_NULL`); on an
    /// inter-communicator, `split_inter`.
    fn MPI_Comm_split / PMPI_Comm_split(comm: Handle, color: c_int, key: c_int, newcomm: *mut Handle) {
        let mut inter = false;
        let rc = call(comm, |g| {
            inter = crate::coll_inter::is_inter(g, comm)?;
            Ok(())
        });
        if rc != MPI_SUCCESS {
            return rc;
        }
        if inter {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let rc = unsafe { crate::split_inter::split(comm, color, key, newcomm) };
            if rc == MPI_SUCCESS {
                return rc;
            }
            return call(comm, |_| Err(Fail::new(rc, "splitting an inter-communicator")));
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let color = match color {
                MPI_UNDEFINED => None,
                c if c >= 0 => Some(c as u32),
                c => return Err(Fail::new(MPI_ERR_ARG, format!("color {c} is negative"))),
            };
            *slot = split(g, comm, color, key)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the ranks that can share
    /// memory, those of one host (the color is a hash of the host name), ordered by
    /// `key`; `MPI_UNDEFINED` gives `MPI_COMM_NULL`. The hardware-guided types have no
    /// level below the host here: `MPI_COMM_NULL`, as MPI 4.1 says when no such subset
    /// exists or the `info` key naming one is absent (`info` is not read). Collective:
    /// every rank passes `MPI_UNDEFINED` or the same type.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: Handle, split_type: c_int, key: c_int, _info: Handle, newcomm: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let color = match split_type {
                MPI_COMM_TYPE_SHARED => {
                    let host = crate::init::host_name()?;
                    Some((steadfast_os::fnv1a64(host.as_bytes()) & 0x7fff_ffff) as u32)
                }
                MPI_UNDEFINED
                | MPI_COMM_TYPE_HW_UNGUIDED
                | MPI_COMM_TYPE_HW_GUIDED
                | MPI_COMM_TYPE_RESOURCE_GUIDED => None,
                t => return Err(Fail::new(MPI_ERR_ARG, format!("split type {t} is not one of MPI's"))),
            };
            *slot = split(g, comm, color, key)?;
            Ok(())
        })
    }
}

/// The group of an intra-communicator, as world ranks.
pub(crate) fn group_of(lib: &Lib, comm: Handle) -> R<Vec<u32>> {
    let (p2p, _) = lib.comm(comm)?.intra()?;
    Ok((0..p2p.size())
        .map(|r| p2p.world_rank(r).unwrap_or(u32::MAX))
        .collect())
}

crate::mpi_fn! {
    /// `MPI_Comm_create`: the members of `group` get a communicator ordered as the
    /// group, the others `MPI_COMM_NULL` (collective over `comm`); on an
    /// inter-communicator, the inter-communicator between both sides' subgroups.
    fn MPI_Comm_create / PMPI_Comm_create(comm: Handle, group: Handle, newcomm: *mut Handle) {
        // On an inter-communicator (MPI 4.1 §7.4.2) each side names a subgroup of its
        // local group: the members get the inter-communicator between the two
        // subgroups, everyone `MPI_COMM_NULL` when either is empty; a split by
        // membership ordered by the position in the group is that.
        let mut inter = None;
        let rc = call(comm, |g| {
            let lib = g.lib()?;
            if let CommKind::Inter { p2p, .. } = &lib.comm(comm)?.kind {
                let mine = crate::comm_groups::side_of(p2p, p2p.local_offset(), p2p.local_size());
                let members = crate::group::group(lib, group)?;
                if let Some(w) = members.iter().find(|w| !mine.contains(w)) {
                    return Err(Fail::new(
                        MPI_ERR_GROUP,
                        format!("world rank {w} of the group is not in the local group"),
                    ));
                }
                let me = lib.world.rank();
                inter = Some(members.iter().position(|&w| w == me));
            }
            Ok(())
        });
        if rc != MPI_SUCCESS {
            return rc;
        }
        if let Some(pos) = inter {
            let (color, key) = match pos {
                Some(p) => (0, c_int::try_from(p).unwrap_or(c_int::MAX)),
                None => (MPI_UNDEFINED, 0),
            };
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let rc = unsafe { crate::split_inter::split(comm, color, key, newcomm) };
            if rc == MPI_SUCCESS {
                return rc;
            }
            return call(comm, |_| Err(Fail::new(rc, "MPI_Comm_create on an inter-communicator")));
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let lib = g.lib()?;
            let members = crate::group::group(lib, group)?;
            let mine = group_of(lib, comm)?;
            if let Some(w) = members.iter().find(|w| !mine.contains(w)) {
                return Err(Fail::new(
                    MPI_ERR_GROUP,
                    format!("world rank {w} of the group is not in the communicator"),
                ));
            }
            let me = lib.world.rank();
            let pos = members.iter().position(|&w| w == me);
            // Processes may pass different groups if they are disjoint (MPI 2.2): each
            // group is one color, named by its smallest member (which no other group
            // holds), ordered by the position in the group.
            let color = pos.and_then(|_| members.iter().min().copied());
            *slot = split(g, comm, color, pos.map_or(0, |p| p as c_int))?;
            Ok(())
        })
    }
}

/// `MPI_Comm_free` (`wait`: `MPI_Comm_disconnect`, which returns only once the
/// other members have called it too).
fn free(g: &mut Guard, slot: &mut Handle, wait: bool) -> R<()> {
    let h = *slot;
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(Fail::new(
            MPI_ERR_COMM,
            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
        ));
    }
    // The delete callbacks run first, on the communicator still valid (MPI 4.1, 7.7).
    crate::attr::delete_all(g, h)?;
    let lib = g.lib()?;
    let e = lib
        .comms
        .remove(&h)
        .ok_or_else(|| Fail::new(MPI_ERR_COMM, format!("{h:#x} is not a communicator")))?;
    *slot = MPI_COMM_NULL;
    lib.buffers.forget(h);
    if let (false, CommKind::Intra { p2p, coll }) = (wait, &e.kind) {
        // Closed without waiting for the others (`comm_close.rs`).
        let closing = crate::comm_close::Closing::start(p2p.clone(), coll.clone());
        drop(e);
        lib.detached
            .push(Req::new(h, Op::Closing(Box::new(closing))));
        progress_detached(lib);
        return Ok(());
    }
    // The handle is out of the table: the closing agreement and barrier run without
    // the lock (as `MPIX_Comm_agree` does), so that under `MPI_THREAD_MULTIPLE` a thread
    // freeing one communicator does not keep another thread out of the library while
    // its peers wait for that thread's call on another communicator.
    g.unlocked(|| close(e.kind));
    Ok(())
}

/// `free`'s runtime part: agree on whether the communicator is whole, then free it.
fn close(kind: CommKind) {
    match kind {
        CommKind::Intra { p2p, coll } => {
            // The runtime's free runs a closing barrier, which is not fault tolerant: a
            // member that dies before or during it can leave a rank waiting on a peer
            // that gave up. So the members first agree (which never waits on the dead)
            // on whether it is whole and unrevoked everywhere; if not, every member
            // revokes it and frees it without the barrier (the context is retired).
            let whole = !p2p.is_revoked() && !coll.is_revoked();
            let clean = matches!(p2p.agree_full(u64::from(whole)),
                Ok(a) if a.value == 1 && a.failed.is_empty());
            if !clean {
                p2p.revoke();
                coll.revoke();
            }
            // A runtime communicator still used by a pending request stays until the
            // request goes (MPI: freeing marks for deallocation).
            for c in [coll, p2p] {
                if let Err(e) = c.free() {
                    log::debug!("MPI_Comm_free: {e}");
                }
            }
        }
        CommKind::Inter { p2p, coll } => {
            // As above, with the agreement across both groups (each side reads the
            // other's flags; a side revoked here contributes 0, so both skip the
            // barrier).
            let whole = !p2p.is_revoked() && !coll.is_revoked();
            let clean = whole && matches!(p2p.agree(u32::from(whole)), Ok(1));
            if !clean {
                p2p.revoke();
                coll.revoke();
            }
            for c in [coll, p2p] {
                if let Err(e) = c.free() {
                    log::debug!("MPI_Comm_free: {e}");
                }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_free` (collective; `*comm` becomes `MPI_COMM_NULL`): returns without
    /// waiting for the other members on an intra-communicator (`comm_close.rs`).
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut Handle) {
        // SAFETY: MPI's contract: `comm` is valid for reads.
        let h = unsafe { read_handle(comm) }.unwrap_or(MPI_COMM_NULL);
        call(h, |g| {
            // SAFETY: MPI's contract: `comm` is valid for reads and writes.
            free(g, unsafe { out(comm) }?, false)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_disconnect`: as `MPI_Comm_free`, which is collective and waits for
    /// the communicator's members (both groups of an inter-communicator, a spawn's
    /// parents and children included) before it returns.
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut Handle) {
        // SAFETY: MPI's contract: `comm` is valid for reads.
        let h = unsafe { read_handle(comm) }.unwrap_or(MPI_COMM_NULL);
        call(h, |g| {
            // SAFETY: MPI's contract: `comm` is valid for reads and writes.
            free(g, unsafe { out(comm) }?, true)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_test_inter`.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: Handle, flag: *mut c_int) {
        call(comm, |g| {
            let inter = matches!(g.lib()?.comm(comm)?.kind, CommKind::Inter { .. });
            // SAFETY: MPI's contract: `flag` is valid for a write.
            *unsafe { out(flag) }? = c_int::from(inter);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_remote_size`.
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: Handle, size: *mut c_int) {
        call(comm, |g| {
            let n = match &g.lib()?.comm(comm)?.kind {
                CommKind::Inter { p2p, .. } => p2p.remote_size(),
                CommKind::Intra { .. } => {
                    return Err(Fail::new(MPI_ERR_COMM, "not an inter-communicator"))
                }
            };
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = n as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Intercomm_create`, uniform (ULFM): every surviving process of both groups
    /// gets the same outcome, also when a process fails during the creation.
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: Handle,
        local_leader: c_int,
        peer_comm: Handle,
        remote_leader: c_int,
        tag: c_int,
        newintercomm: *mut Handle
    ) {
        call(local_comm, |g| {
            // SAFETY: MPI's contract: `newintercomm` is valid for a write.
            let slot = unsafe { out(newintercomm) }?;
            let lib = g.lib()?;
            let (local, _) = lib.intra(local_comm)?;
            let errh = lib.comm(local_comm)?.errhandler;
            let ll = crate::util::rank_arg(local_leader, local.size())?;
            let tag = crate::util::tag_arg(tag)?;
            // Only the leaders use the bridge; elsewhere `peer_comm` may be anything.
            // An inter-communicator bridges too (MPI 4.1 §7.6.2 asks only that
            // `remote_leader` be a rank of `peer_comm`: there, of its remote group):
            // the leaders meet on the union under its point-to-point half.
            let (bridge, rl) = if local.rank() != ll {
                (local.clone(), 0)
            } else if let CommKind::Inter { p2p, .. } = &lib.comm(peer_comm)?.kind {
                let rl = crate::util::rank_arg(remote_leader, p2p.remote_size())?;
                (p2p.union().clone(), p2p.remote_offset() + rl)
            } else {
                let bridge = lib.intra(peer_comm)?.0;
                let rl = crate::util::rank_arg(remote_leader, bridge.size())?;
                (bridge, rl)
            };
            // The creation's rounds run without the lock, as the intra-communicators'
            // constructors do (see above them).
            let pair = g.unlocked(|| {
                inter_half(local.intercomm_create_uniform(ll, &bridge, rl, tag)?)
            })?;
            *slot = insert_inter(g.lib()?, pair, errh);
            Ok(())
        })
    }
}

static TAG_UB_VALUE: AtomicI32 = AtomicI32::new(TAG_UB);
/// `MPI_APPNUM`: the index of this process's command in the spawn that started it
/// (set by `MPI_Init`; 0 in the job's first ranks).
pub(crate) static APPNUM_VALUE: AtomicI32 = AtomicI32::new(0);
static HOST_VALUE: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static IO_VALUE: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static WTIME_IS_GLOBAL_VALUE: AtomicI32 = AtomicI32::new(0);
static FT_VALUE: AtomicI32 = AtomicI32::new(0);

crate::mpi_fn! {
    /// `MPI_Comm_get_attr` for the predefined keys (`MPI_TAG_UB`, `MPI_UNIVERSE_SIZE`,
    /// `MPI_APPNUM`, `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`, `MPI_LASTUSEDCODE`,
    /// and ULFM's `MPI_FT` /
    /// `MPIX_FT`: 1 when the job tolerates failures, 0 under `--with-ft no`):
    /// `*attribute_val` becomes a pointer to the `int` value.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int
    ) {
        call(comm, |g| {
            let lib = g.lib()?;
            lib.comm(comm)?;
            // ORDERING: Relaxed; the value is a constant of the job (its FT mode),
            // written before the pointer is handed out under the library's lock.
            FT_VALUE.store(i32::from(lib.ft == FtMode::Ulfm), Ordering::Relaxed);
            let cell: &AtomicI32 = match keyval {
                MPI_TAG_UB => &TAG_UB_VALUE,
                MPI_UNIVERSE_SIZE => &crate::init::UNIVERSE_SIZE,
                MPI_APPNUM => &APPNUM_VALUE,
                MPI_HOST => &HOST_VALUE,
                MPI_IO => &IO_VALUE,
                MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
                MPI_FT => &FT_VALUE,
                MPI_LASTUSEDCODE => &crate::user_errors::LAST_USED,
                // The program's keys.
                // SAFETY: MPI's contract, as below.
                k => return unsafe { crate::attr::get(lib, comm, k, attribute_val, flag) },
            };
            // SAFETY: MPI's contract: `attribute_val` points to a `void *` and `flag`
            // to an int, both valid for writes.
            unsafe {
                *out(attribute_val.cast::<*mut c_int>())? = cell.as_ptr();
                *out(flag)? = 1;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_set_name`.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: Handle, name: *const c_char) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `name` is a C string.
            let mut n = unsafe { read_cstr(name) }?;
            n.truncate(MAX_OBJECT_NAME - 1);
            g.lib()?.comm_mut(comm)?.name = n;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_get_name`.
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: Handle, name: *mut c_char, resultlen: *mut c_int) {
        call(comm, |g| {
            let n = g.lib()?.comm(comm)?.name.clone();
            // SAFETY: MPI's contract: `name` holds MPI_MAX_OBJECT_NAME bytes.
            unsafe { write_str(&n, name, MAX_OBJECT_NAME, resultlen) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_create_errhandler`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        function: Option<ErrFn>,
        errhandler: *mut Handle
    ) {
        call(NO_OBJECT, |g| create_errhandler(g.lib()?, function, errhandler))
    }
}

/// The `MPI_*_create_errhandler` calls' body (communicators, windows and files keep
/// their handlers' functions in one table): registers `function` and writes its handle.
pub(crate) fn create_errhandler(
    lib: &mut Lib,
    function: Option<ErrFn>,
    errhandler: *mut Handle,
) -> R<()> {
    // SAFETY: MPI's contract: `errhandler` is valid for a write.
    let slot = unsafe { out(errhandler) }?;
    let f = function.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null error handler function"))?;
    let h = lib.new_handle();
    lib.errhandlers.insert(h, f);
    *slot = h;
    Ok(())
}

/// `MPI_ERR_ARG` unless `h` is a predefined or a created error handler.
pub(crate) fn check_errhandler(lib: &Lib, h: Handle) -> R<()> {
    if matches!(
        h,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT
    ) || lib.errhandlers.contains_key(&h)
    {
        Ok(())
    } else {
        Err(Fail::new(
            MPI_ERR_ARG,
            format!("{h:#x} is not an error handler"),
        ))
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: Handle, errhandler: Handle) {
        call(comm, |g| {
            let lib = g.lib()?;
            check_errhandler(lib, errhandler)?;
            lib.comm_mut(comm)?.errhandler = errhandler;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_get_errhandler`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: Handle, errhandler: *mut Handle) {
        call(comm, |g| {
            let h = g.lib()?.comm(comm)?.errhandler;
            // SAFETY: MPI's contract: `errhandler` is valid for a write.
            *unsafe { out(errhandler) }? = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Errhandler_free` (`*errhandler` becomes `MPI_ERRHANDLER_NULL`; a handler
    /// still set on a communicator stays in use there).
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `errhandler` is valid for reads and writes.
            let slot = unsafe { out(errhandler) }?;
            // At any time (MPI 4.1 §11.4.1), as the handlers it frees are made.
            let known = matches!(*slot, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
                || g.objects().errhandlers.contains_key(slot);
            if !known {
                return Err(Fail::new(MPI_ERR_ARG, format!("{:#x} is not an error handler", *slot)));
            }
            *slot = MPI_ERRHANDLER_NULL;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_call_errhandler`: calls `comm`'s handler with `errorcode`; returns
    /// `MPI_SUCCESS` once a handler that returns has run (`MPI_ERRORS_RETURN`: the
    /// code).
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) {
        let Some(mut g) = Guard::lock() else {
            return crate::state::wrong_thread();
        };
        let found = g.lib().and_then(|lib| {
            let h = lib.comm(comm)?.errhandler;
            Ok((Handler::of(h, lib.errhandlers.get(&h).copied()), lib.ft))
        });
        drop(g);
        match found {
            Err(f) => f.class,
            Ok((handler, ft)) => {
                let rc = error::raise(comm, Fail::new(errorcode, "MPI_Comm_call_errhandler"), handler, ft);
                if matches!(handler, Handler::User(_)) { MPI_SUCCESS } else { rc }
            }
        }
    }
}

crate::mpi_fn! {
    /// `MPI_Intercomm_merge`: the intra-communicator over both groups, the group passing
    /// `high = 0` first (equal flags: the group holding the smaller world rank first),
    /// with a fresh context (`InterComm::merge`); `intercomm`'s error
    /// handler.
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: Handle, high: c_int, newintracomm: *mut Handle) {
        call(intercomm, |g| {
            // SAFETY: MPI's contract: `newintracomm` is valid for a write.
            let slot = unsafe { out(newintracomm) }?;
            *slot = MPI_COMM_NULL;
            let lib = g.lib()?;
            let e = lib.comm(intercomm)?;
            let errh = e.errhandler;
            let CommKind::Inter { p2p: ic, .. } = &e.kind else {
                return Err(Fail::new(MPI_ERR_COMM, "not an inter-communicator"));
            };
            let ic = ic.clone();
            // The merge and the half run without the lock (see the constructors above).
            let pair = g.unlocked(|| with_half(ic.merge(high != 0)?))?;
            *slot = insert(g.lib()?, pair, errh);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_create_group`: called by the members of `group` only (collective over
    /// them; `tag` tells concurrent creations apart); a process outside `group` gets
    /// `MPI_COMM_NULL` at once (MPI 4.1, 7.4.2). `Comm::create_group` underneath.
    fn MPI_Comm_create_group / PMPI_Comm_create_group(
        comm: Handle,
        group: Handle,
        tag: c_int,
        newcomm: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            *slot = MPI_COMM_NULL;
            let tag = crate::util::tag_arg(tag)?;
            let lib = g.lib()?;
            let members = crate::group::group(lib, group)?;
            let mine = group_of(lib, comm)?;
            let ranks = members
                .iter()
                .map(|w| mine.iter().position(|m| m == w).map(|p| p as u32))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| {
                    Fail::new(MPI_ERR_GROUP, "a member of the group is not in the communicator")
                })?;
            if !members.contains(&lib.world.rank()) {
                return Ok(());
            }
            let (_, coll) = lib.intra(comm)?;
            let errh = lib.comm(comm)?.errhandler;
            let pair = g.unlocked(|| with_half(coll.create_group(&ranks, tag)?))?;
            *slot = insert(g.lib()?, pair, errh);
            Ok(())
        })
    }
}
