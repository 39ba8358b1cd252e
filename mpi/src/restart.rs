//! Restart in place, the C side of `docs/restart.md` (the names of the MPI Forum
//! fault-tolerance group's Master-Leader-Workers draft): `MPIX_Is_restored_rank`,
//! `MPIX_Comm_restart_rank`, `MPIX_Comm_irestart_rank`, `MPIX_Comm_save` and
//! `MPIX_Comm_rejoin`.
//!
//! An intra-communicator is two runtime communicators (messages, collectives), so
//! `save` stores both (as `NAME.p2p` and `NAME.coll`) and `rejoin` brings both back.
//! `MPIX_Comm_rejoin(name, &comm)` is collective over the survivors and the restarted
//! members, as in the draft: in a survivor it readmits the restarted members into the
//! communicator it saved under `name` (`Comm::readmit`) and returns that same handle; in
//! a restarted process it waits for the survivors and returns the communicator with its
//! old rank (`World::rejoin`). Then one agreement hands the survivors' count of
//! collectives on it to the restarted members, so the next collective has the same tags
//! everywhere (and none of an interrupted one's).

use std::ffi::{c_char, c_int};

use sf::Comm;

use crate::consts::*;
use crate::error::{class_of, Fail, R};
use crate::request::{Op, Req};
use crate::state::NO_OBJECT;
use crate::state::{call, CommEntry, CommKind, Lib};
use crate::util::{new_request_out, out, read_cstr};

/// The runtime names of the two halves of a communicator saved as `name`.
fn halves(name: &str) -> (String, String) {
    (format!("{name}.p2p"), format!("{name}.coll"))
}

fn checked_name(name: *const c_char) -> R<String> {
    // SAFETY: MPI's contract: a NUL-terminated string.
    let name = unsafe { read_cstr(name) }?;
    if name.is_empty() || name.len() > 200 || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("communicator name {name:?}: 1 to 200 printable ASCII characters, no spaces"),
        ));
    }
    Ok(name)
}

/// The messages half of intra-communicator `comm`.
fn p2p_of(lib: &Lib, comm: Handle) -> R<Comm> {
    Ok(lib.intra(comm)?.0)
}

fn rank_of(rank: c_int) -> R<u32> {
    u32::try_from(rank).map_err(|_| Fail::new(MPI_ERR_RANK, format!("rank {rank}")))
}

crate::mpi_fn! {
    /// `MPIX_Is_restored_rank`: `*flag` is 1 in a process restarted in place
    /// (generation > 0), 0 in a first incarnation.
    fn MPIX_Is_restored_rank / PMPIX_Is_restored_rank(flag: *mut c_int) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write.
            let slot = unsafe { out(flag) }?;
            *slot = c_int::from(g.lib()?.world.is_restored());
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_restart_rank`: starts a new incarnation of failed `rank` of `comm`
    /// (same world rank, program and arguments; under `steadfast-run`) and returns
    /// once it has joined and this process reaches it. Holds the library's lock while
    /// it waits (use `MPIX_Comm_irestart_rank` to overlap it with other calls).
    fn MPIX_Comm_restart_rank / PMPIX_Comm_restart_rank(comm: Handle, rank: c_int) {
        call(comm, |g| {
            let rank = rank_of(rank)?;
            p2p_of(g.lib()?, comm)?.restart_rank(rank)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_irestart_rank`: as `MPIX_Comm_restart_rank`, completing `*request`
    /// (with `MPI_Wait`/`Test` and their `any`/`all`/`some` forms) when the new
    /// incarnation has joined; an error completes the request with its class.
    fn MPIX_Comm_irestart_rank / PMPIX_Comm_irestart_rank(
        comm: Handle,
        rank: c_int,
        request: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            let rank = rank_of(rank)?;
            let lib = g.lib()?;
            let req = p2p_of(lib, comm)?.irestart_rank(rank)?;
            let h = lib.add_request(Req::new(comm, Op::Restart(req)))?;
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_save`: saves intra-communicator `comm` (`MPI_COMM_WORLD` included)
    /// under `name`, for its members restarted later to get it back with
    /// `MPIX_Comm_rejoin`. Collective over the live members (in a restarted process,
    /// `MPI_COMM_WORLD` only once it rejoined it: `MPI_ERR_OTHER` before).
    fn MPIX_Comm_save / PMPIX_Comm_save(comm: Handle, name: *const c_char) {
        call(comm, |g| {
            let name = checked_name(name)?;
            let (p, c) = halves(&name);
            let lib = g.lib()?;
            let (p2p, coll) = lib.intra(comm)?;
            p2p.save(&p)?;
            coll.save(&c)?;
            lib.saved.retain(|(n, _)| *n != name);
            lib.saved.push((name, comm));
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPIX_Comm_rejoin`: collective over the survivors and the restarted members of
    /// the communicator saved as `name`. A survivor (a process that saved or already
    /// rejoined it) readmits the restarted members into the communicator it holds as
    /// `name` and gets that handle back; a restarted process gets the communicator back
    /// with its old rank (a new handle, with `MPI_COMM_WORLD`'s error handler), or
    /// re-founds it when no member survived (`docs/restart.md`). Afterwards point to point, collectives,
    /// agreement, revoke and shrink include every member again. When the survivors
    /// saved `MPI_COMM_WORLD`, the restarted process's `MPI_COMM_WORLD` itself is
    /// rejoined and returned: its agreement and collectives (and `MPI_Finalize`'s
    /// agreement) include it again.
    fn MPIX_Comm_rejoin / PMPIX_Comm_rejoin(name: *const c_char, newcomm: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            let name = checked_name(name)?;
            let (p, c) = halves(&name);
            let lib = g.lib()?;
            // The survivors contribute the complement of their count of collectives on
            // it, a restarted member all ones: the AND is the survivors' complement.
            // A restarted process that holds the communicator already (it rejoined or
            // re-founded it) is a survivor of the next restart: it readmits.
            let holds = lib.saved.iter().any(|(n, _)| *n == name);
            let (h, p2p, contribution) = if lib.world.is_restored() && !holds {
                let p2p = lib.world.rejoin(&p)?;
                let coll = lib.world.rejoin(&c)?;
                // MPI_COMM_WORLD was saved: its messages half is the runtime's world,
                // switched in place by the rejoin; its collectives half (the restored
                // world itself until now) becomes the rejoined one.
                let world_saved = p2p.is_world() && lib.intra(MPI_COMM_WORLD)?.0.is_world();
                let h = if world_saved {
                    let world = lib.comm_mut(MPI_COMM_WORLD)?;
                    if let CommKind::Intra { coll: wc, .. } = &mut world.kind {
                        *wc = coll;
                    }
                    MPI_COMM_WORLD
                } else {
                    let errhandler = lib.comm(MPI_COMM_WORLD)?.errhandler;
                    let h = lib.new_handle();
                    lib.comms.insert(
                        h,
                        CommEntry::new(
                            CommKind::Intra {
                                p2p: p2p.clone(),
                                coll,
                            },
                            errhandler,
                            name.clone(),
                        ),
                    );
                    h
                };
                lib.saved.retain(|(n, _)| *n != name);
                lib.saved.push((name, h));
                (h, p2p, u64::MAX)
            } else {
                let Some(&(_, h)) = lib.saved.iter().find(|(n, _)| *n == name) else {
                    return Err(Fail::new(
                        MPI_ERR_ARG,
                        format!("no communicator was saved as {name:?} by this process"),
                    ));
                };
                let (p2p, coll) = lib.intra(h)?;
                p2p.readmit()?;
                coll.readmit()?;
                (h, p2p, !u64::from(lib.comm(h)?.coll_seq))
            };
            let agreed = p2p.agree_full(contribution)?;
            lib.comm_mut(h)?.coll_seq = !agreed.value as u32;
            *slot = h;
            Ok(())
        })
    }
}

/// The outcome of a restart request's test: `None` while pending.
pub(crate) fn test_restart(req: &mut sf::comm::RestartRequest) -> Option<c_int> {
    match req.test() {
        Ok(None) => None,
        Ok(Some(_generation)) => Some(MPI_SUCCESS),
        Err(e) => Some(class_of(&e)),
    }
}
