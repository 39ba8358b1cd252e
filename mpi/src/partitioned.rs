//! Partitioned point-to-point communication (MPI 4.1, chapter 5): `MPI_Psend_init`,
//! `MPI_Precv_init` make an inactive persistent request (`persistent.rs`) over
//! `partitions` partitions of `count` items each; `MPI_Start`/`MPI_Startall` start it,
//! the usual completion calls complete it, `MPI_Request_free` frees it.
//!
//! The message moves whole: a started send is held (`Op::Held`) until `MPI_Pready`,
//! `MPI_Pready_range` or `MPI_Pready_list` has marked its last partition ready, and
//! then sends the whole buffer as a persistent send would (`persistent::post_held`); a
//! started receive is posted at once as a persistent receive of the whole buffer, so
//! `MPI_Parrived` says true for every partition together, once the message is in
//! (which it learns by testing the receive, without completing the request). Sending
//! the whole message once lets the sender and the receiver use different partition
//! counts with no agreement between them (MPI only asks the totals to match), and each
//! side's partitions are only bookkeeping on its own side. The cost: no partition
//! leaves before the last is ready.
//!
//! Partitioned messages never meet ordinary ones (MPI 4.1, 5.2.3: a partitioned
//! send matches only a partitioned receive): they travel on the communicator's
//! collective half, on a tag of their own above the collectives' (a [`wire_tag`]).
//! Matching follows the initialization calls: the `k`-th `MPI_Psend_init` to a rank
//! with a tag pairs with that rank's `k`-th `MPI_Precv_init` from this one with that
//! tag, however the two sides order their starts, since each pair's messages carry
//! `k` in their tag ([`Seqs`]). Two requests of one pair and tag whose `k` differ by a
//! multiple of [`SLOTS`] share a tag, as do two tags whose images collide: such
//! requests match in start order, as persistent ones do.
//!
//! A dead peer fails the transfer as any persistent receive or send does
//! (`MPIX_ERR_PROC_FAILED` at the completion call). Under `MPI_THREAD_MULTIPLE`
//! several threads may ready different partitions at once: each call holds the
//! library's lock while it marks.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{Fail, R};
use crate::p2p::Mode;
use crate::persistent::{init, post_held};
use crate::state::{call, Lib, NO_OBJECT};
use crate::util::{out, rank_arg, tag_arg};

/// `MPI_Count`.
#[allow(non_camel_case_types)]
type MPI_Count = i64;

/// The first tag of partitioned messages on a collective half: above the collective
/// sequence's 20 bits (and `idup.rs`'s spare tag).
const WIRE_BASE: u32 = 1 << 21;

/// How many tags partitioned messages take: up to the runtime's three reserved ones.
const WIRE_SPAN: u64 = (sf::world::tags::MAX_TAG - 2 - WIRE_BASE) as u64;

/// How many initializations of one pair and tag get distinct wire tags.
const SLOTS: u64 = 64;

/// The tag on the collective half of the `k`-th partitioned request of a pair with
/// program tag `tag`: distinct for every `k` below [`SLOTS`] and every tag below
/// `WIRE_SPAN / SLOTS` (98 303).
fn wire_tag(tag: c_int, k: u32) -> u32 {
    let tag = u64::try_from(tag).unwrap_or(0);
    WIRE_BASE + ((tag * SLOTS + u64::from(k) % SLOTS) % WIRE_SPAN) as u32
}

/// A communicator's count of partitioned initializations, per direction (send or
/// receive), peer and tag: the `k`-th send to a peer matches its `k`-th receive.
#[derive(Default)]
pub(crate) struct Seqs(HashMap<(bool, c_int, c_int), u32>);

impl Seqs {
    /// The wire tag of the next initialization of `send`'s direction with `peer` and
    /// `tag`, counted.
    fn next(&mut self, send: bool, peer: c_int, tag: c_int) -> u32 {
        let k = self.0.entry((send, peer, tag)).or_insert(0);
        let this = *k;
        *k = k.wrapping_add(1);
        wire_tag(tag, this)
    }
}

/// The partitions of a partitioned request.
pub(crate) struct Part {
    /// The tag of its messages on the communicator's collective half (none to
    /// `MPI_PROC_NULL`).
    pub wire_tag: Option<u32>,
    /// Whether each partition was marked ready since the last start (a send's).
    ready: Vec<bool>,
    /// How many of `ready` are true.
    n_ready: usize,
}

impl Part {
    fn new(partitions: usize) -> Part {
        Part {
            wire_tag: None,
            ready: vec![false; partitions],
            n_ready: 0,
        }
    }

    /// Every partition not ready (a start).
    pub(crate) fn restart(&mut self) {
        self.ready.iter_mut().for_each(|r| *r = false);
        self.n_ready = 0;
    }
}

/// The partitioned `_init` calls' common part: `partitions` times `count` items.
#[allow(clippy::too_many_arguments)]
fn make(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    send: bool,
) -> c_int {
    call(comm, |g| {
        let parts = usize::try_from(partitions)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Fail::new(MPI_ERR_ARG, format!("{partitions} partitions")))?;
        let total = i64::from(partitions)
            .checked_mul(count)
            .filter(|&n| n >= 0)
            .and_then(|n| c_int::try_from(n).ok())
            .ok_or_else(|| {
                Fail::new(
                    MPI_ERR_COUNT,
                    format!("{partitions} partitions of {count} items"),
                )
            })?;
        // No wildcards (MPI 4.1, chapter 5): a named peer or `MPI_PROC_NULL`, a real tag.
        let size = g.lib()?.comm(comm)?.size;
        if peer != MPI_PROC_NULL {
            rank_arg(peer, size)?;
        }
        tag_arg(tag)?;
        let mode = send.then_some(Mode::Standard);
        let part = Some(Part::new(parts));
        init(
            g, buf, total, datatype, peer, tag, comm, request, mode, part,
        )?;
        if peer != MPI_PROC_NULL {
            // Counted once the request exists: a refused call does not count.
            let lib = g.lib()?;
            let wire = lib.comm_mut(comm)?.part_seqs.next(send, peer, tag);
            // SAFETY: `init` wrote the new request's handle there.
            let h = unsafe { *request };
            let r = lib.requests.get_mut(&h);
            if let Some(part) = r.and_then(|r| r.persistent.as_mut()?.part.as_mut()) {
                part.wire_tag = Some(wire);
            }
        }
        Ok(())
    })
}

crate::mpi_fn! {
    /// `MPI_Psend_init`: a partitioned send of `partitions` partitions of `count`
    /// items (`info` not used).
    fn MPI_Psend_init / PMPI_Psend_init(
        buf: *const c_void,
        partitions: c_int,
        count: MPI_Count,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        make(buf.cast_mut(), partitions, count, datatype, dest, tag, comm, request, true)
    }
}

crate::mpi_fn! {
    /// `MPI_Precv_init`: a partitioned receive of `partitions` partitions of `count`
    /// items (`info` not used).
    fn MPI_Precv_init / PMPI_Precv_init(
        buf: *mut c_void,
        partitions: c_int,
        count: MPI_Count,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        _info: Handle,
        request: *mut Handle
    ) {
        make(buf, partitions, count, datatype, source, tag, comm, request, false)
    }
}

/// Marks `parts` of the active partitioned send `h` ready, all or none, and sends the
/// message when none is left. `MPI_ERR_REQUEST` when `h` is not an active partitioned
/// send; `MPI_ERR_ARG` when a partition is out of range or already marked.
fn ready(lib: &mut Lib, h: Handle, parts: &[c_int]) -> R<()> {
    let not_send = || {
        Fail::new(
            MPI_ERR_REQUEST,
            format!("{h:#x} is not an active partitioned send"),
        )
    };
    let r = lib.requests.get_mut(&h).ok_or_else(not_send)?;
    let p = r.persistent.as_deref_mut().ok_or_else(not_send)?;
    let (true, Some(_)) = (p.active, p.send) else {
        return Err(not_send());
    };
    let part = p.part.as_mut().ok_or_else(not_send)?;
    let n = part.ready.len();
    let index = |i: c_int| usize::try_from(i).ok().filter(|&i| i < n);
    let mut seen = vec![false; n];
    for &i in parts {
        let k = index(i).ok_or_else(|| {
            Fail::new(
                MPI_ERR_ARG,
                format!("partition {i} is not one of the {n} partitions"),
            )
        })?;
        if part.ready[k] || std::mem::replace(&mut seen[k], true) {
            return Err(Fail::new(
                MPI_ERR_ARG,
                format!("partition {i} is already marked ready"),
            ));
        }
    }
    for &i in parts {
        part.ready[i as usize] = true;
    }
    part.n_ready += parts.len();
    if part.n_ready == n && !parts.is_empty() {
        return post_held(lib, h);
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Pready`: marks partition `partition` of a started partitioned send ready.
    fn MPI_Pready / PMPI_Pready(partition: c_int, request: Handle) {
        call(NO_OBJECT, |g| ready(g.lib()?, request, &[partition]))
    }
}

crate::mpi_fn! {
    /// `MPI_Pready_range`: marks partitions `partition_low` to `partition_high`
    /// (included) ready.
    fn MPI_Pready_range / PMPI_Pready_range(
        partition_low: c_int,
        partition_high: c_int,
        request: Handle
    ) {
        call(NO_OBJECT, |g| {
            if partition_low > partition_high {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    format!("the range {partition_low} to {partition_high} is empty"),
                ));
            }
            let parts: Vec<c_int> = (partition_low..=partition_high).collect();
            ready(g.lib()?, request, &parts)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Pready_list`: marks the `length` partitions of `array_of_partitions` ready.
    fn MPI_Pready_list / PMPI_Pready_list(
        length: c_int,
        array_of_partitions: *const c_int,
        request: Handle
    ) {
        call(NO_OBJECT, |g| {
            let n = crate::util::count_arg(length)?;
            let parts: &[c_int] = if n == 0 {
                &[]
            } else if array_of_partitions.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null array of partitions"));
            } else {
                // SAFETY: MPI's contract: the array holds `length` ints.
                unsafe { std::slice::from_raw_parts(array_of_partitions, n) }
            };
            ready(g.lib()?, request, parts)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Parrived`: whether partition `partition` of a partitioned receive has
    /// arrived (true for all at once, when the whole message is in, or the transfer
    /// failed; true on an inactive request). The request stays active: a completion
    /// call completes it.
    fn MPI_Parrived / PMPI_Parrived(request: Handle, partition: c_int, flag: *mut c_int) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write.
            let flag = unsafe { out(flag) }?;
            let not_recv = || {
                Fail::new(
                    MPI_ERR_REQUEST,
                    format!("{request:#x} is not a partitioned receive"),
                )
            };
            let r = g.lib()?.requests.get_mut(&request).ok_or_else(not_recv)?;
            let p = r.persistent.as_deref().ok_or_else(not_recv)?;
            let (Some(part), None) = (&p.part, p.send) else {
                return Err(not_recv());
            };
            let n = part.ready.len();
            if usize::try_from(partition).map_or(true, |i| i >= n) {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    format!("partition {partition} is not one of the {n} partitions"),
                ));
            }
            let active = p.active;
            *flag = c_int::from(!active || r.test().is_some());
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initializations_of_a_pair_and_tag_get_distinct_tags_above_the_collectives() {
        // The collectives take the tags up to 0xf_ffff.
        const { assert!(WIRE_BASE > 0xf_ffff) };
        let mut seqs = Seqs::default();
        let sends: Vec<u32> = (0..SLOTS).map(|_| seqs.next(true, 1, 7)).collect();
        let mut sorted = sends.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), SLOTS as usize);
        // The receiving side counts the same way: its k-th receive has the k-th tag.
        let mut peer = Seqs::default();
        let recvs: Vec<u32> = (0..SLOTS).map(|_| peer.next(false, 0, 7)).collect();
        assert_eq!(sends, recvs);
        // Directions, peers and tags count apart.
        assert_eq!(seqs.next(false, 1, 7), sends[0]);
        assert_eq!(seqs.next(true, 2, 7), sends[0]);
        assert_ne!(seqs.next(true, 1, 8), sends[0]);
        for t in [0, 1, 98_302, crate::consts::TAG_UB] {
            let w = wire_tag(t, 63);
            assert!(w >= WIRE_BASE, "{t}: {w}");
            assert!(w <= sf::world::tags::MAX_TAG - 3, "{t}: {w}");
        }
    }
}
