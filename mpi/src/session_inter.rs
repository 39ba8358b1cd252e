//! `MPI_Intercomm_create_from_groups` (MPI 4.1 §7.6.2): an inter-communicator between
//! two disjoint groups of the process's world with no communicator to build it on, the
//! Sessions model's counterpart of `MPI_Intercomm_create`.
//!
//! Each side first makes a communicator of its own group over the process's world, as
//! `MPI_Comm_create_from_group` does with the same string tag (the two groups are
//! disjoint, so their creations never meet); the runtime's uniform inter-communicator
//! creation then runs over it with the process's world as the bridge between the two
//! leaders, on a tag derived from the string tag too. That local communicator is freed
//! once the inter-communicator exists. A failure during the creation fails it at every
//! surviving member of both groups (the runtime's creation is uniform).

use std::ffi::{c_char, c_int};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::session::{
    call_with, create_over_world, derived_tag, members_over_world, world_ranks_of,
};
use crate::state::Guard;
use crate::util::{out, rank_arg};

const CALL: &str = "MPI_Intercomm_create_from_groups";

#[allow(clippy::too_many_arguments)]
fn intercomm_from_groups(
    g: &mut Guard,
    local_group: Handle,
    local_leader: c_int,
    remote_group: Handle,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: Handle,
    errh: Handle,
) -> R<Handle> {
    let Some((tag, world, local)) =
        members_over_world(g, local_group, stringtag, info, errh, CALL)?
    else {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            format!("{CALL}: the local group is empty"),
        ));
    };
    let remote_members = crate::group::group(g.lib()?, remote_group)?;
    if remote_members.is_empty() {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            format!("{CALL}: the remote group is empty"),
        ));
    }
    let remote = world_ranks_of(&world, &remote_members)?;
    if remote.iter().any(|r| local.contains(r)) {
        return Err(Fail::new(
            MPI_ERR_GROUP,
            format!("{CALL}: the local and remote groups overlap"),
        ));
    }
    let ll = rank_arg(local_leader, local.len() as u32)?;
    let rl = rank_arg(remote_leader, remote.len() as u32)?;
    let bridge_leader = remote[rl as usize];
    // Apart from the local creation's tag, and the same on both sides.
    let (bridge_tag, _) = derived_tag(&format!("{tag}\u{0}intercomm"));
    // The creation's rounds run without the lock, as `MPI_Intercomm_create`'s.
    let pair = g.unlocked(|| -> R<_> {
        let (p2p, coll) = create_over_world(&world, &local, &tag)?;
        let made = p2p.intercomm_create_uniform(ll, &world, bridge_leader, bridge_tag);
        // The local communicator was only the creation's means.
        for c in [coll, p2p] {
            if let Err(e) = c.free() {
                log::debug!("{CALL}: freeing the local communicator: {e}");
            }
        }
        crate::comm::inter_half(made?)
    })?;
    let lib = g.lib()?;
    let h = crate::comm::insert_inter(lib, pair, errh);
    if let Some(s) = lib.buffers.session_of(local_group) {
        lib.buffers.note_session(h, s);
    }
    Ok(h)
}

crate::mpi_fn! {
    /// `MPI_Intercomm_create_from_groups`: an inter-communicator between `local_group`
    /// (this process's) and the disjoint `remote_group`, led by their ranks
    /// `local_leader` and `remote_leader`; collective over both groups, every member
    /// passing the same `stringtag`. Its error handler is `errhandler`, which also gets
    /// this call's failure; `info` is checked, not used.
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(
        local_group: Handle,
        local_leader: c_int,
        remote_group: Handle,
        remote_leader: c_int,
        stringtag: *const c_char,
        info: Handle,
        errhandler: Handle,
        newintercomm: *mut Handle
    ) {
        call_with(MPI_COMM_NULL, |_| Some(errhandler), |g| {
            // SAFETY: MPI's contract: `newintercomm` is valid for a write.
            let slot = unsafe { out(newintercomm) }?;
            *slot = MPI_COMM_NULL;
            *slot = intercomm_from_groups(
                g, local_group, local_leader, remote_group, remote_leader, stringtag, info,
                errhandler,
            )?;
            Ok(())
        })
    }
}
