//! Groups: lists of world ranks (`MPI_GROUP_EMPTY` is the empty one).

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::util::{count_arg, out};

/// The members of group `h` (world ranks, in group order).
pub(crate) fn group(lib: &Lib, h: Handle) -> R<Vec<u32>> {
    if h == MPI_GROUP_EMPTY {
        return Ok(Vec::new());
    }
    lib.groups
        .get(&h)
        .cloned()
        .ok_or_else(|| Fail::new(MPI_ERR_GROUP, format!("{h:#x} is not a group")))
}

/// Registers a group.
pub(crate) fn new_group(lib: &mut Lib, members: Vec<u32>) -> Handle {
    if members.is_empty() {
        return MPI_GROUP_EMPTY;
    }
    let h = lib.new_handle();
    lib.groups.insert(h, members);
    h
}

/// A rank array argument of `n` entries.
///
/// # Safety
/// `p` is valid for reads of `n` ints when `n > 0`.
unsafe fn ranks<'a>(p: *const c_int, n: c_int) -> R<&'a [c_int]> {
    let n = count_arg(n)?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null rank array"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn member(g: &[u32], r: c_int) -> R<u32> {
    usize::try_from(r)
        .ok()
        .and_then(|i| g.get(i).copied())
        .ok_or_else(|| {
            Fail::new(
                MPI_ERR_RANK,
                format!("rank {r} outside a group of {}", g.len()),
            )
        })
}

crate::mpi_fn! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(grp: Handle, size: *mut c_int) {
        call(NO_OBJECT, |g| {
            let n = group(g.lib()?, grp)?.len();
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = n as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_rank` (`MPI_UNDEFINED` when not a member).
    fn MPI_Group_rank / PMPI_Group_rank(grp: Handle, rank: *mut c_int) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let me = lib.world.rank();
            let r = group(lib, grp)?.iter().position(|&w| w == me).map_or(MPI_UNDEFINED, |p| p as c_int);
            // SAFETY: MPI's contract: `rank` is valid for a write.
            *unsafe { out(rank) }? = r;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_incl`.
    fn MPI_Group_incl / PMPI_Group_incl(grp: Handle, n: c_int, ranks_: *const c_int, newgroup: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `ranks_` holds `n` ints, `newgroup` is writable.
            let (rs, slot) = unsafe { (ranks(ranks_, n)?, out(newgroup)?) };
            let lib = g.lib()?;
            let old = group(lib, grp)?;
            let mut members = Vec::with_capacity(rs.len());
            for &r in rs {
                let w = member(&old, r)?;
                if members.contains(&w) {
                    return Err(Fail::new(MPI_ERR_RANK, format!("rank {r} named twice")));
                }
                members.push(w);
            }
            *slot = new_group(lib, members);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_excl`.
    fn MPI_Group_excl / PMPI_Group_excl(grp: Handle, n: c_int, ranks_: *const c_int, newgroup: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `ranks_` holds `n` ints, `newgroup` is writable.
            let (rs, slot) = unsafe { (ranks(ranks_, n)?, out(newgroup)?) };
            let lib = g.lib()?;
            let old = group(lib, grp)?;
            let mut out_ = Vec::with_capacity(rs.len());
            for &r in rs {
                out_.push(member(&old, r)?);
            }
            let members = old.into_iter().filter(|w| !out_.contains(w)).collect();
            *slot = new_group(lib, members);
            Ok(())
        })
    }
}

/// The ranks that `n` triplets `(first, last, stride)` name in a group of `size`, in
/// order (MPI 4.1 §7.3.2 `MPI_GROUP_RANGE_INCL`): each rank in the group, none named
/// twice, no stride 0.
///
/// # Safety
/// `p` is valid for reads of `3 * n` ints when `n > 0`.
unsafe fn range_ranks(p: *const [c_int; 3], n: c_int, size: usize) -> R<Vec<c_int>> {
    let n = count_arg(n)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null range array"));
    }
    // SAFETY: the caller's contract.
    let triplets = unsafe { std::slice::from_raw_parts(p, n) };
    let mut named = vec![false; size];
    let mut out_ = Vec::new();
    for &[first, last, stride] in triplets {
        if stride == 0 {
            return Err(Fail::new(MPI_ERR_ARG, "a range of stride 0"));
        }
        let (mut r, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            let i = usize::try_from(r)
                .ok()
                .filter(|&i| i < size)
                .ok_or_else(|| {
                    Fail::new(MPI_ERR_RANK, format!("rank {r} outside a group of {size}"))
                })?;
            if std::mem::replace(&mut named[i], true) {
                return Err(Fail::new(MPI_ERR_RANK, format!("rank {r} named twice")));
            }
            out_.push(i as c_int);
            r += stride;
        }
    }
    Ok(out_)
}

crate::mpi_fn! {
    /// `MPI_Group_range_incl`: the ranks of `n` triplets (first, last, stride), in
    /// order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(
        grp: Handle,
        n: c_int,
        ranges: *const [c_int; 3],
        newgroup: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let old = group(lib, grp)?;
            // SAFETY: MPI's contract: `ranges` holds `n` triplets, `newgroup` is
            // writable.
            let (rs, slot) = unsafe { (range_ranks(ranges, n, old.len())?, out(newgroup)?) };
            let members = rs.iter().map(|&r| old[r as usize]).collect();
            *slot = new_group(lib, members);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_range_excl`: the group without the ranks of `n` triplets, in the
    /// group's order.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(
        grp: Handle,
        n: c_int,
        ranges: *const [c_int; 3],
        newgroup: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let old = group(lib, grp)?;
            // SAFETY: MPI's contract: `ranges` holds `n` triplets, `newgroup` is
            // writable.
            let (rs, slot) = unsafe { (range_ranks(ranges, n, old.len())?, out(newgroup)?) };
            let members = old
                .iter()
                .enumerate()
                .filter(|(i, _)| !rs.contains(&(*i as c_int)))
                .map(|(_, &w)| w)
                .collect();
            *slot = new_group(lib, members);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_translate_ranks` (`MPI_UNDEFINED` for a rank not in `group2`;
    /// `MPI_PROC_NULL` stays `MPI_PROC_NULL`).
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        group1: Handle,
        n: c_int,
        ranks1: *const c_int,
        group2: Handle,
        ranks2: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `ranks1` holds `n` ints.
            let rs = unsafe { ranks(ranks1, n) }?;
            let lib = g.lib()?;
            let (a, b) = (group(lib, group1)?, group(lib, group2)?);
            let mut res = Vec::with_capacity(rs.len());
            for &r in rs {
                res.push(if r == MPI_PROC_NULL {
                    MPI_PROC_NULL
                } else {
                    let w = member(&a, r)?;
                    b.iter().position(|&x| x == w).map_or(MPI_UNDEFINED, |p| p as c_int)
                });
            }
            if !res.is_empty() {
                if ranks2.is_null() {
                    return Err(Fail::new(MPI_ERR_ARG, "a null output rank array"));
                }
                // SAFETY: MPI's contract: `ranks2` holds `n` ints.
                unsafe { std::ptr::copy_nonoverlapping(res.as_ptr(), ranks2, res.len()) };
            }
            Ok(())
        })
    }
}

fn set_op(
    group1: Handle,
    group2: Handle,
    newgroup: *mut Handle,
    f: impl FnOnce(Vec<u32>, Vec<u32>) -> Vec<u32>,
) -> c_int {
    call(NO_OBJECT, |g| {
        // SAFETY: MPI's contract: `newgroup` is valid for a write.
        let slot = unsafe { out(newgroup) }?;
        let lib = g.lib()?;
        let (a, b) = (group(lib, group1)?, group(lib, group2)?);
        *slot = new_group(lib, f(a, b));
        Ok(())
    })
}

crate::mpi_fn! {
    /// `MPI_Group_union`: `group1`, then the members of `group2` not in it.
    fn MPI_Group_union / PMPI_Group_union(group1: Handle, group2: Handle, newgroup: *mut Handle) {
        set_op(group1, group2, newgroup, |mut a, b| {
            for w in b {
                if !a.contains(&w) {
                    a.push(w);
                }
            }
            a
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_intersection`: the members of `group1` also in `group2`.
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: Handle, group2: Handle, newgroup: *mut Handle) {
        set_op(group1, group2, newgroup, |a, b| a.into_iter().filter(|w| b.contains(w)).collect())
    }
}

crate::mpi_fn! {
    /// `MPI_Group_difference`: the members of `group1` not in `group2`.
    fn MPI_Group_difference / PMPI_Group_difference(group1: Handle, group2: Handle, newgroup: *mut Handle) {
        set_op(group1, group2, newgroup, |a, b| a.into_iter().filter(|w| !b.contains(w)).collect())
    }
}

crate::mpi_fn! {
    /// `MPI_Group_compare`.
    fn MPI_Group_compare / PMPI_Group_compare(group1: Handle, group2: Handle, result: *mut c_int) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let r = crate::comm_groups::compare_groups(&group(lib, group1)?, &group(lib, group2)?);
            // SAFETY: MPI's contract: `result` is valid for a write.
            *unsafe { out(result) }? = r;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Group_free` (`*group` becomes `MPI_GROUP_NULL`).
    fn MPI_Group_free / PMPI_Group_free(grp: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `grp` is valid for reads and writes.
            let slot = unsafe { out(grp) }?;
            let lib = g.lib()?;
            if *slot != MPI_GROUP_EMPTY && lib.groups.remove(slot).is_none() {
                return Err(Fail::new(MPI_ERR_GROUP, format!("{:#x} is not a group", *slot)));
            }
            // A later group may get the same handle: it must not inherit a session.
            lib.buffers.forget(*slot);
            *slot = MPI_GROUP_NULL;
            Ok(())
        })
    }
}
