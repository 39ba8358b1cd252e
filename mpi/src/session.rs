//! MPI 4.1's Sessions model (§11.3): `MPI_Session_init` / `finalize`, the process
//! sets (`mpi://WORLD`, `mpi://SELF`), groups from them, and
//! `MPI_Comm_create_from_group`, the communicators of a program that never calls
//! `MPI_Init`.
//!
//! # Life of the runtime
//! The runtime comes up at the first use by either world model (`MPI_Init` or
//! `MPI_Session_init`: `init::bring_up`) and goes down with the last one
//! (`init::tear_down`): `MPI_Finalize` while a session lives only ends the world
//! model, and `MPI_Session_finalize` of the last session ends the runtime unless the
//! world model still holds it. Sessions can be made and ended any number of times
//! (MPI 4.1 §11.3.1): a session after the runtime went down brings it up again, a new
//! bootstrap through the launcher (`steadfast-run`, PMIx launchers and a singleton
//! allow that; Hydra's PMI-1 ends a process's PMI at its first finalize, so there the
//! second bring-up fails with `MPI_ERR_OTHER`). So does `MPI_Init` after sessions alone
//! brought it down; the world model itself starts at most once (`MPI_Init` after
//! `MPI_Finalize` fails). `MPI_Initialized` / `MPI_Finalized` keep their world-model
//! meaning.
//!
//! # Communicators
//! `MPI_Comm_create_from_group` is the runtime's subgroup creation
//! (`Comm::create_group`) over the process's world (`Lib::proc_world`, the runtime
//! communicator under `MPI_COMM_WORLD`), with a tag derived from the string tag by a
//! hash into a range no other creation over that communicator uses ([`derived_tag`]).
//! Creations in sequence over one group and tag get distinct communicators anyway
//! (the runtime numbers repeated creations); two *concurrent* creations over one group
//! whose string tags hash alike could cross, so every member checks, by an allreduce
//! on the new communicator, that all members passed the same string (a 64-bit hash of
//! it): a mismatch fails at every member with `MPI_ERR_ARG`. The result is an
//! ordinary communicator (revoke, shrink, agree work on it).
//!
//! # Errors
//! Errors of a call on a session go to the session's error handler; those of
//! `MPI_Session_init` and `MPI_Comm_create_from_group` to the handler they are given;
//! an invalid session is an error that concerns no object (`state::failed`: the initial
//! error handler when the world model is not initialised).

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use sf::comm::ReduceOp;
use sf::Comm;

use crate::consts::*;
use crate::error::{self, Fail, R};
use crate::init::{bring_up, level_arg, level_name, raise_level, tear_down};
use crate::state::{
    call, ErrFn, FtMode, Guard, Handler, Lib, Objects, Phase, WorldModel, NO_OBJECT,
};
use crate::util::{out, read_cstr};

/// `MPI_MAX_PSET_NAME_LEN` (the MPI 5.0 ABI's value).
const MAX_PSET_NAME_LEN: usize = 1024;
/// `MPI_MAX_STRINGTAG_LEN` (the MPI 5.0 ABI's value).
const MAX_STRINGTAG_LEN: usize = 1024;

/// The process sets, in the order `MPI_Session_get_nth_pset` numbers them.
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The first tag of [`derived_tag`]'s range: above the tags `MPI_Init` uses over the
/// process's world (1 and 2), below the runtime's own (spawn's is `MAX_TAG - 1`).
const TAG_BASE: u32 = 1 << 22;
/// The size of that range.
const TAG_SPAN: u64 = (1 << 22) - 8;

/// A live session.
pub(crate) struct Session {
    errhandler: Handle,
    /// The info `MPI_Session_init` was given (`MPI_Session_get_info` returns it with
    /// the thread level provided).
    info: Vec<(String, String)>,
}

/// The runtime tag of string tag `tag`, and the full 64-bit hash the members compare.
pub(crate) fn derived_tag(tag: &str) -> (u32, u64) {
    let h = steadfast_os::fnv1a64(tag.as_bytes());
    (TAG_BASE + (h % TAG_SPAN) as u32, h)
}

pub(crate) fn entry(lib: &mut Lib, h: Handle) -> R<&mut Session> {
    lib.sessions.get_mut(&h).ok_or_else(|| {
        if h == MPI_SESSION_NULL {
            Fail::new(MPI_ERR_SESSION, "MPI_SESSION_NULL")
        } else {
            Fail::new(MPI_ERR_SESSION, format!("{h:#x} is not a session"))
        }
    })
}

/// Whether `h` names an error handler.
fn known_errhandler(o: &Objects, h: Handle) -> bool {
    matches!(
        h,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT
    ) || o.errhandlers.contains_key(&h)
}

/// Where a failure of a call concerning `object` goes: to error handler `errh` when
/// it is one (the session's, or the one a call was given), else by the no-object rule.
fn raise_on(mut guard: Guard, object: Handle, errh: Option<Handle>, fail: Fail) -> c_int {
    let ft = guard.lib().map_or(FtMode::Ulfm, |lib| lib.ft);
    let found = errh.and_then(|h| {
        let o = guard.objects();
        known_errhandler(&o, h).then(|| (Handler::of(h, o.errhandlers.get(&h).copied()), ft))
    });
    match found {
        Some((handler, ft)) => {
            // A handler may call MPI: the lock goes first.
            drop(guard);
            error::raise(object, fail, handler, ft)
        }
        None => crate::state::failed(guard, NO_OBJECT, fail),
    }
}

/// The body of an entry point: `f` under the lock with panics caught, a failure handed
/// to the error handler `handler` picks (given the state after `f`), as [`raise_on`].
pub(crate) fn call_with(
    object: Handle,
    handler: impl FnOnce(&mut Guard) -> Option<Handle>,
    f: impl FnOnce(&mut Guard) -> R<()>,
) -> c_int {
    let Some(mut guard) = Guard::lock() else {
        return crate::state::wrong_thread();
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
    guard.run_deferred();
    let fail = match outcome {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(fail)) => fail,
        Err(_) => Fail::new(
            MPI_ERR_INTERN,
            "a bug in libsteadfast-mpi (a panic, caught)",
        ),
    };
    let errh = handler(&mut guard);
    raise_on(guard, object, errh, fail)
}

/// The body of an entry point on session `session`: a failure goes to its handler.
pub(crate) fn session_call(session: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    call_with(
        session,
        |g| {
            let lib = g.lib().ok()?;
            Some(lib.sessions.get(&session)?.errhandler)
        },
        f,
    )
}

/// The thread level an info of `MPI_Session_init` asks for (key `thread_level`).
fn asked_level(info: &[(String, String)]) -> R<Option<c_int>> {
    let Some((_, v)) = info.iter().find(|(k, _)| k == "thread_level") else {
        return Ok(None);
    };
    let level = match v.trim().to_ascii_uppercase().as_str() {
        "MPI_THREAD_SINGLE" => MPI_THREAD_SINGLE,
        "MPI_THREAD_FUNNELED" => MPI_THREAD_FUNNELED,
        "MPI_THREAD_SERIALIZED" => MPI_THREAD_SERIALIZED,
        "MPI_THREAD_MULTIPLE" => MPI_THREAD_MULTIPLE,
        other => {
            return Err(Fail::new(
                MPI_ERR_INFO_VALUE,
                format!("thread_level {other:?} is not one of MPI's levels"),
            ))
        }
    };
    Ok(Some(level_arg(level)?))
}

/// The entries of info `h` (none for `MPI_INFO_NULL`).
fn info_entries(o: &Objects, h: Handle) -> R<Vec<(String, String)>> {
    match h {
        MPI_INFO_NULL => Ok(Vec::new()),
        MPI_INFO_ENV => Ok(o.env_info.clone()),
        _ => o
            .infos
            .get(&h)
            .cloned()
            .ok_or_else(|| Fail::new(MPI_ERR_INFO, format!("{h:#x} is not an info object"))),
    }
}

/// A new info object holding `entries`.
fn new_info(lib: &mut Lib, entries: Vec<(String, String)>) -> Handle {
    let h = lib.new_handle();
    lib.infos.insert(h, entries);
    h
}

fn session_init(g: &mut Guard, info: Handle, errhandler: Handle) -> R<Handle> {
    let o = g.objects();
    let kept = info_entries(&o, info)?;
    if !known_errhandler(&o, errhandler) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("{errhandler:#x} is not an error handler"),
        ));
    }
    let level = asked_level(&kept)?;
    // Before the first use, or after the runtime went down with the last user: it
    // comes up (again).
    if matches!(g.phase(), Phase::Before | Phase::After) {
        bring_up(g, level.unwrap_or(MPI_THREAD_SINGLE))?;
    } else if let Some(level) = level {
        raise_level(g, level)?;
    }
    let lib = g.lib()?;
    let h = lib.new_handle();
    lib.sessions.insert(
        h,
        Session {
            errhandler,
            info: kept,
        },
    );
    Ok(h)
}

crate::mpi_fn! {
    /// `MPI_Session_init`: brings the runtime up unless the world model or another
    /// session did (thread level: the info's `thread_level`, else
    /// `MPI_THREAD_SINGLE`, raised if a later user asks for more); a failure goes to
    /// `errhandler`.
    fn MPI_Session_init / PMPI_Session_init(info: Handle, errhandler: Handle, session: *mut Handle) {
        call_with(MPI_SESSION_NULL, |_| Some(errhandler), |g| {
            // SAFETY: MPI's contract: `session` is valid for a write.
            let slot = unsafe { out(session) }?;
            *slot = MPI_SESSION_NULL;
            *slot = session_init(g, info, errhandler)?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_finalize`: `*session` becomes `MPI_SESSION_NULL`; the last user of
    /// the runtime brings it down (collective over the job then, as `MPI_Finalize`).
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut Handle) {
        // SAFETY: MPI's contract: `session` is valid for reads and writes.
        let slot = match unsafe { out(session) } {
            Ok(s) => s,
            Err(f) => return call(NO_OBJECT, |_| Err(f)),
        };
        let h = *slot;
        session_call(h, |g| {
            let lib = g.lib()?;
            entry(lib, h)?;
            if crate::op::in_user_function() {
                return Err(Fail::new(
                    MPI_ERR_OTHER,
                    "MPI_Session_finalize inside a user reduction function",
                ));
            }
            lib.sessions.remove(&h);
            lib.buffers.forget(h);
            *slot = MPI_SESSION_NULL;
            if lib.sessions.is_empty() && !matches!(lib.world_model, WorldModel::Live) {
                tear_down(g)?;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_get_num_psets`: 2 (`mpi://WORLD`, `mpi://SELF`).
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(
        session: Handle,
        _info: Handle,
        npset_names: *mut c_int
    ) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            // SAFETY: MPI's contract: `npset_names` is valid for a write.
            *unsafe { out(npset_names) }? = PSETS.len() as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_get_nth_pset`: with `*pset_len` 0, the length of the `n`th name
    /// with its terminating null; else the name, cut to `*pset_len - 1` characters.
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(
        session: Handle,
        _info: Handle,
        n: c_int,
        pset_len: *mut c_int,
        pset_name: *mut c_char
    ) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            let name = usize::try_from(n).ok().and_then(|i| PSETS.get(i)).ok_or_else(|| {
                Fail::new(MPI_ERR_ARG, format!("process set {n} of {}", PSETS.len()))
            })?;
            // SAFETY: MPI's contract: `pset_len` is valid for reads and writes.
            let len = unsafe { out(pset_len) }?;
            let cap = usize::try_from(*len)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("pset_len {}", *len)))?;
            if cap == 0 {
                *len = name.len() as c_int + 1;
                return Ok(());
            }
            if pset_name.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null pset_name"));
            }
            let n = name.len().min(cap - 1);
            // SAFETY: MPI's contract: `pset_name` holds `*pset_len` bytes; `n + 1` of
            // them are written.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), pset_name, n);
                *pset_name.add(n) = 0;
            }
            Ok(())
        })
    }
}

/// The process set named `name` (world ranks), or `MPI_ERR_ARG`.
fn pset(lib: &Lib, name: *const c_char) -> R<Vec<u32>> {
    // SAFETY: MPI's contract: `name` is a C string.
    let name = unsafe { read_cstr(name) }?;
    if name.len() >= MAX_PSET_NAME_LEN {
        return Err(Fail::new(MPI_ERR_ARG, "a process set name too long"));
    }
    if name.eq_ignore_ascii_case(PSETS[0]) {
        let w = &lib.proc_world;
        Ok((0..w.size())
            .map(|r| w.world_rank(r).unwrap_or(u32::MAX))
            .collect())
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(vec![lib.world.rank()])
    } else {
        Err(Fail::new(
            MPI_ERR_ARG,
            format!("no process set {name:?} (there are mpi://WORLD and mpi://SELF)"),
        ))
    }
}

crate::mpi_fn! {
    /// `MPI_Session_get_pset_info`: a new info with `mpi_size`.
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(
        session: Handle,
        pset_name: *const c_char,
        info: *mut Handle
    ) {
        session_call(session, |g| {
            let lib = g.lib()?;
            entry(lib, session)?;
            let size = pset(lib, pset_name)?.len();
            // SAFETY: MPI's contract: `info` is valid for a write.
            let slot = unsafe { out(info) }?;
            *slot = new_info(lib, vec![("mpi_size".into(), size.to_string())]);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_get_info`: a new info with the session's hints and `thread_level`
    /// (the level provided).
    fn MPI_Session_get_info / PMPI_Session_get_info(session: Handle, info_used: *mut Handle) {
        session_call(session, |g| {
            let lib = g.lib()?;
            let mut entries = entry(lib, session)?.info.clone();
            entries.retain(|(k, _)| k != "thread_level");
            entries.push(("thread_level".into(), level_name(lib.level).into()));
            // SAFETY: MPI's contract: `info_used` is valid for a write.
            let slot = unsafe { out(info_used) }?;
            *slot = new_info(lib, entries);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_from_session_pset`: the group of a process set.
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(
        session: Handle,
        pset_name: *const c_char,
        newgroup: *mut Handle
    ) {
        session_call(session, |g| {
            let lib = g.lib()?;
            entry(lib, session)?;
            let members = pset(lib, pset_name)?;
            // SAFETY: MPI's contract: `newgroup` is valid for a write.
            let slot = unsafe { out(newgroup) }?;
            *slot = crate::group::new_group(lib, members);
            lib.buffers.note_session(*slot, session);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_create_errhandler`.
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(
        function: Option<ErrFn>,
        errhandler: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `errhandler` is valid for a write.
            let slot = unsafe { out(errhandler) }?;
            let f = function.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null error handler function"))?;
            let mut o = g.objects();
            let h = o.new_handle();
            o.errhandlers.insert(h, f);
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_set_errhandler`.
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: Handle, errhandler: Handle) {
        session_call(session, |g| {
            entry(g.lib()?, session)?;
            if !known_errhandler(&g.objects(), errhandler) {
                return Err(Fail::new(MPI_ERR_ARG, format!("{errhandler:#x} is not an error handler")));
            }
            entry(g.lib()?, session)?.errhandler = errhandler;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_get_errhandler`.
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: Handle, errhandler: *mut Handle) {
        session_call(session, |g| {
            let h = entry(g.lib()?, session)?.errhandler;
            // SAFETY: MPI's contract: `errhandler` is valid for a write.
            *unsafe { out(errhandler) }? = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Session_call_errhandler`: calls `session`'s handler with `errorcode`;
    /// returns `MPI_SUCCESS` once a handler that returns has run (`MPI_ERRORS_RETURN`:
    /// the code).
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: Handle, errorcode: c_int) {
        let Some(mut g) = Guard::lock() else {
            return crate::state::wrong_thread();
        };
        let found = g.lib().map_err(|_| Fail::new(MPI_ERR_SESSION, "no session is live")).and_then(|lib| {
            let h = entry(lib, session)?.errhandler;
            Ok((Handler::of(h, lib.errhandlers.get(&h).copied()), lib.ft))
        });
        match found {
            Err(f) => crate::state::failed(g, NO_OBJECT, f),
            Ok((handler, ft)) => {
                drop(g);
                let fail = Fail::new(errorcode, "MPI_Session_call_errhandler");
                let rc = error::raise(session, fail, handler, ft);
                if matches!(handler, Handler::User(_)) { MPI_SUCCESS } else { rc }
            }
        }
    }
}

/// What `MPI_Comm_create_from_group` runs without the lock: the runtime's creation over
/// the process's world, the collective half, and the members' check of the string.
pub(crate) fn create_over_world(world: &Comm, ranks: &[u32], tag: &str) -> R<(Comm, Comm)> {
    let (rt_tag, hash) = derived_tag(tag);
    let p2p = world.create_group(ranks, rt_tag)?;
    let coll = crate::comm::collective_half(&p2p)?;
    let mut seen = [hash, !hash];
    coll.allreduce(&mut seen, ReduceOp::Max)?;
    if seen != [hash, !hash] {
        // Every member sees the mismatch (see the module doc): all free it.
        let _ = coll.free();
        let _ = p2p.free();
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!(
                "MPI_Comm_create_from_group: the members passed different string tags \
                 (this process {tag:?}), or two concurrent creations over this group had \
                 string tags of the same runtime tag"
            ),
        ));
    }
    Ok((p2p, coll))
}

/// What `MPI_Comm_create_from_group` and `MPI_Intercomm_create_from_groups` check and
/// look up first: the string tag (`MPI_ERR_ARG` when too long), `info` and `errh`;
/// then `group`'s members as ranks of the process's world, with that world (`None`
/// for an empty group). `MPI_ERR_GROUP` when this process is not a member or a member
/// is outside `mpi://WORLD`; `call` names the call in that error.
pub(crate) fn members_over_world(
    g: &mut Guard,
    group: Handle,
    stringtag: *const c_char,
    info: Handle,
    errh: Handle,
    call: &str,
) -> R<Option<(String, Comm, Vec<u32>)>> {
    // SAFETY: MPI's contract: `stringtag` is a C string.
    let tag = unsafe { read_cstr(stringtag) }?;
    if tag.len() >= MAX_STRINGTAG_LEN {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("a string tag longer than {}", MAX_STRINGTAG_LEN - 1),
        ));
    }
    let o = g.objects();
    info_entries(&o, info)?;
    if !known_errhandler(&o, errh) {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("{errh:#x} is not an error handler"),
        ));
    }
    let lib = g.lib()?;
    let members = crate::group::group(lib, group)?;
    if members.is_empty() {
        return Ok(None);
    }
    if !members.contains(&lib.world.rank()) {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            format!("{call} is called by the group's members only"),
        ));
    }
    let world = lib.proc_world.clone();
    let ranks = world_ranks_of(&world, &members)?;
    Ok(Some((tag, world, ranks)))
}

/// The ranks in `world` (the process's world) of the processes `members` (runtime
/// world ranks); `MPI_ERR_GROUP` for one outside it.
pub(crate) fn world_ranks_of(world: &Comm, members: &[u32]) -> R<Vec<u32>> {
    let of_world: Vec<u32> = (0..world.size())
        .map(|r| world.world_rank(r).unwrap_or(u32::MAX))
        .collect();
    members
        .iter()
        .map(|w| of_world.iter().position(|m| m == w).map(|p| p as u32))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| Fail::new(MPI_ERR_GROUP, "a member of the group is not in mpi://WORLD"))
}

fn create_from_group(
    g: &mut Guard,
    group: Handle,
    stringtag: *const c_char,
    info: Handle,
    errh: Handle,
) -> R<Handle> {
    let call = "MPI_Comm_create_from_group";
    let Some((tag, world, ranks)) = members_over_world(g, group, stringtag, info, errh, call)?
    else {
        return Ok(MPI_COMM_NULL);
    };
    // The creation runs without the lock, as the other constructors (`comm.rs`).
    let pair = g.unlocked(|| create_over_world(&world, &ranks, &tag))?;
    let lib = g.lib()?;
    let h = crate::comm::insert(lib, pair, errh);
    if let Some(s) = lib.buffers.session_of(group) {
        lib.buffers.note_session(h, s);
    }
    Ok(h)
}

crate::mpi_fn! {
    /// `MPI_Comm_create_from_group`: a communicator over `group` (collective over its
    /// members only; a process outside it is refused with `MPI_ERR_GROUP`,
    /// `MPI_GROUP_EMPTY` gives `MPI_COMM_NULL`), with error handler `errhandler`,
    /// which also gets this call's failure; `info` is checked, not used.
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(
        group: Handle,
        stringtag: *const c_char,
        info: Handle,
        errhandler: Handle,
        newcomm: *mut Handle
    ) {
        call_with(MPI_COMM_NULL, |_| Some(errhandler), |g| {
            // SAFETY: MPI's contract: `newcomm` is valid for a write.
            let slot = unsafe { out(newcomm) }?;
            *slot = MPI_COMM_NULL;
            *slot = create_from_group(g, group, stringtag, info, errhandler)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_tags_stay_in_their_range() {
        for s in ["", "a", "b", "org.example.app", &"x".repeat(1023)] {
            let (t, h) = derived_tag(s);
            assert!((TAG_BASE..TAG_BASE + TAG_SPAN as u32).contains(&t), "{s:?}");
            assert_eq!(derived_tag(s), (t, h), "deterministic");
            assert!(
                t <= sf::world::tags::MAX_TAG - 3,
                "below the runtime's tags"
            );
        }
        assert_ne!(derived_tag("a").1, derived_tag("b").1);
    }

    #[test]
    fn the_colliding_pair_of_the_c_test_collides() {
        // `tests/c/sessions.c` passes these at different members: the members' check
        // is what tells them apart.
        let (a, b) = (derived_tag("collide.5799"), derived_tag("collide.26206"));
        assert_eq!(a.0, b.0);
        assert_ne!(a.1, b.1);
    }

    #[test]
    fn thread_levels_are_read_from_the_info() {
        let kv = |v: &str| vec![("thread_level".to_string(), v.to_string())];
        assert_eq!(asked_level(&[]).unwrap(), None);
        assert_eq!(
            asked_level(&kv("MPI_THREAD_MULTIPLE")).unwrap(),
            Some(MPI_THREAD_MULTIPLE)
        );
        assert_eq!(
            asked_level(&kv("mpi_thread_funneled")).unwrap(),
            Some(MPI_THREAD_FUNNELED)
        );
        assert!(asked_level(&kv("lots")).is_err());
    }
}
