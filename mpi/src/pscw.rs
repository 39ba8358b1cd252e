//! General active target synchronization (MPI 4.1 §12.5.2): `MPI_Win_post`,
//! `MPI_Win_start`, `MPI_Win_complete`, `MPI_Win_wait`, `MPI_Win_test`, by messages on
//! the window's own communicator.
//!
//! - `post(group)`: an empty message to each origin of `group` (the target's memory is
//!   exposed from now on).
//! - `start(group)`: waits for the post message of each target of `group` (MPI lets
//!   start block until the matching posts), so the epoch's puts and gets, which complete
//!   when they return, reach exposed memory.
//! - `complete`: sends each target of the access group the batch of accumulates queued
//!   for it in this epoch (possibly empty: it is also the "done" notice), then waits
//!   for the results of its fetching operations and for its sends. The accumulates of
//!   a target that is this rank itself are applied here, in place (no message).
//! - `wait`: applies each origin's batch to this rank's memory as it arrives
//!   (`rma::apply_batch`, as the fence does: the target applies every accumulate, so
//!   they stay atomic) and sends the fetched values back.
//! - `test`: serves the batches that arrived; `flag = 1` once every origin's was.
//!
//! While `complete` waits it also serves the batches of this rank's own exposure epoch
//! (a rank both target and origin, as in a ring, where every rank's `complete` waits
//! for the next rank's results: without that none would reach the `wait` that applies
//! them). A target that is computing outside MPI holds its origins' `complete` until
//! its next PSCW call (MPI's weak progress; the runtime's progress thread cannot reach
//! the window).
//!
//! A failed partner makes the probe that names it fail with `MPIX_ERR_PROC_FAILED`
//! (the runtime's probe of a dead source with nothing of it waiting), never a hang.

use std::ffi::c_int;
use std::sync::Arc;

use sf::comm::{OwnedSendRequest, Window};
use sf::CommError;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::rma::{apply_batch, deliver, Pending};
use crate::state::Guard;
use crate::util::out;
use crate::win::{entry, win_call, MPI_ERR_RMA_SYNC};

/// Tags on the window's communicator (the fence uses 2 and 3).
const TAG_POST: u32 = 4;
const TAG_DONE: u32 = 5;
const TAG_RESULTS: u32 = 6;

/// The window ranks of the members of `group` (world ranks in `lib.groups`).
fn group_ranks(g: &mut Guard, win: Handle, group: Handle) -> R<Vec<u32>> {
    let lib = g.lib()?;
    let members = if group == MPI_GROUP_EMPTY {
        Vec::new()
    } else {
        lib.groups
            .get(&group)
            .cloned()
            .ok_or_else(|| Fail::new(MPI_ERR_GROUP, format!("{group:#x} is not a group")))?
    };
    let e = entry(lib, win)?;
    members
        .iter()
        .map(|w| {
            e.group_rank(*w).ok_or_else(|| {
                Fail::new(
                    MPI_ERR_GROUP,
                    format!("world rank {w} is not in the window's group"),
                )
            })
        })
        .collect()
}

crate::mpi_fn! {
    /// `MPI_Win_post`: exposes this rank's window to the origins of `group`.
    fn MPI_Win_post / PMPI_Win_post(group: Handle, _assert: c_int, win: Handle) {
        win_call(win, |g| {
            let ranks = group_ranks(g, win, group)?;
            let e = entry(g.lib()?, win)?;
            if e.exposure.is_some() {
                return Err(Fail::new(MPI_ERR_RMA_SYNC, "MPI_Win_post during an exposure epoch"));
            }
            e.exposure = Some(ranks.clone());
            let w = Arc::clone(&e.win);
            g.unlocked(|| -> Result<(), CommError> {
                for r in ranks {
                    w.comm().send(r, TAG_POST, &[])?;
                }
                Ok(())
            })?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_start`: an access epoch to the targets of `group`, once each has posted.
    fn MPI_Win_start / PMPI_Win_start(group: Handle, _assert: c_int, win: Handle) {
        win_call(win, |g| {
            let ranks = group_ranks(g, win, group)?;
            let e = entry(g.lib()?, win)?;
            if e.access.is_some() {
                return Err(Fail::new(MPI_ERR_RMA_SYNC, "MPI_Win_start during an access epoch"));
            }
            let w = Arc::clone(&e.win);
            g.unlocked(|| -> Result<(), CommError> {
                for &r in &ranks {
                    w.comm().recv(Some(r), Some(TAG_POST), &mut [])?;
                }
                Ok(())
            })?;
            entry(g.lib()?, win)?.access = Some(ranks);
            Ok(())
        })
    }
}

/// What a rank inside a PSCW call still has to do: serve the origins of its exposure
/// epoch whose batches have not been applied, receive the results its targets owe it,
/// finish its sends. Every blocking PSCW call serves its exposure epoch while it
/// waits: in a ring where each rank's `complete` waits for the next rank's results,
/// no rank would otherwise reach the `wait` that applies them.
struct Progress<'w> {
    w: &'w Window<'static>,
    /// Origins whose batch has not arrived.
    origins: Vec<u32>,
    /// Targets whose results have not arrived, with the buffers they go to.
    results: Vec<(u32, Vec<(usize, usize)>)>,
    sends: Vec<OwnedSendRequest<Vec<u8>>>,
}

impl Progress<'_> {
    /// One look at everything; whether all is done.
    fn step(&mut self) -> R<bool> {
        let comm = self.w.comm();
        let mut i = 0;
        while i < self.origins.len() {
            let o = self.origins[i];
            match comm.iprobe(Some(o), Some(TAG_DONE))? {
                Some(st) => {
                    let mut batch = vec![0u8; st.len];
                    comm.recv(Some(o), Some(TAG_DONE), &mut batch)?;
                    let (reply, fetches) = apply_batch(self.w, &batch);
                    if fetches > 0 {
                        self.sends.push(comm.isend_owned(o, TAG_RESULTS, reply)?);
                    }
                    self.origins.swap_remove(i);
                }
                None => i += 1,
            }
        }
        let mut i = 0;
        while i < self.results.len() {
            let t = self.results[i].0;
            match comm.iprobe(Some(t), Some(TAG_RESULTS))? {
                Some(st) => {
                    let mut reply = vec![0u8; st.len];
                    comm.recv(Some(t), Some(TAG_RESULTS), &mut reply)?;
                    deliver(&reply, &self.results[i].1)?;
                    self.results.swap_remove(i);
                }
                None => i += 1,
            }
        }
        let mut i = 0;
        while i < self.sends.len() {
            if self.sends[i].test()? {
                drop(self.sends.swap_remove(i));
            } else {
                i += 1;
            }
        }
        Ok(self.results.is_empty() && self.sends.is_empty())
    }

    /// Steps until the results and sends are done and, with `all_origins`, every
    /// origin served.
    fn run(&mut self, all_origins: bool) -> R<()> {
        let mut spin = crate::util::spin_wait();
        while !(self.step()? && (!all_origins || self.origins.is_empty())) {
            spin.pause();
        }
        Ok(())
    }
}

/// A target, the batch for it, where its results go.
type Batch = (u32, Vec<u8>, Vec<(usize, usize)>);

/// `complete`'s messages, without the library's lock; the origins of this rank's
/// exposure epoch still to serve.
fn complete(
    w: &Window<'static>,
    me: u32,
    access: &[u32],
    pending: Vec<Pending>,
    origins: Vec<u32>,
) -> R<Vec<u32>> {
    let comm = w.comm();
    let mut batches: Vec<Batch> = access
        .iter()
        .map(|&t| (t, Vec::new(), Vec::new()))
        .collect();
    for p in pending {
        if let Some(b) = batches.iter_mut().find(|b| b.0 == p.target) {
            b.1.extend_from_slice(&p.wire);
            if let Some(r) = p.result {
                b.2.push(r);
            }
        }
    }
    let mut progress = Progress {
        w,
        origins,
        results: Vec::new(),
        sends: Vec::new(),
    };
    for (t, batch, results) in batches {
        if t == me {
            // This rank's own accumulates, in place.
            let (reply, fetches) = apply_batch(w, &batch);
            if fetches > 0 {
                deliver(&reply, &results)?;
            }
            continue;
        }
        progress.sends.push(comm.isend_owned(t, TAG_DONE, batch)?);
        if !results.is_empty() {
            progress.results.push((t, results));
        }
    }
    progress.run(false)?;
    Ok(progress.origins)
}

crate::mpi_fn! {
    /// `MPI_Win_complete`: ends the access epoch (see the module doc). Accumulates to
    /// targets outside the access group stay queued for a later fence.
    fn MPI_Win_complete / PMPI_Win_complete(win: Handle) {
        win_call(win, |g| {
            let e = entry(g.lib()?, win)?;
            let access = e
                .access
                .take()
                .ok_or_else(|| Fail::new(MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start"))?;
            let (mine, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut e.pending)
                .into_iter()
                .partition(|p| access.contains(&p.target));
            e.pending = rest;
            let (w, me) = (Arc::clone(&e.win), e.rank);
            let exposure = e.exposure.take();
            let origins = exposure.clone().unwrap_or_default().into_iter().filter(|&o| o != me).collect();
            let left = g.unlocked(|| complete(&w, me, &access, mine, origins));
            if exposure.is_some() {
                // The origins served meanwhile are done; `wait` serves the rest (all of
                // them again if this call failed: their receives then fail too).
                let e = entry(g.lib()?, win)?;
                e.exposure = Some(match &left {
                    Ok(rest) => rest.clone(),
                    Err(_) => exposure.unwrap_or_default(),
                });
            }
            left.map(drop)
        })
    }
}

/// `wait`'s messages, without the library's lock: every origin's batch applied, in
/// the order they arrive.
fn wait(w: &Window<'static>, me: u32, exposure: Vec<u32>) -> R<()> {
    let mut progress = Progress {
        w,
        origins: exposure.into_iter().filter(|&o| o != me).collect(),
        results: Vec::new(),
        sends: Vec::new(),
    };
    progress.run(true)
}

crate::mpi_fn! {
    /// `MPI_Win_wait`: ends the exposure epoch once every origin completed, their
    /// accumulates applied.
    fn MPI_Win_wait / PMPI_Win_wait(win: Handle) {
        win_call(win, |g| {
            let e = entry(g.lib()?, win)?;
            let exposure = e
                .exposure
                .take()
                .ok_or_else(|| Fail::new(MPI_ERR_RMA_SYNC, "MPI_Win_wait without MPI_Win_post"))?;
            let (w, me) = (Arc::clone(&e.win), e.rank);
            g.unlocked(|| wait(&w, me, exposure))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_test`: `MPI_Win_wait` when every origin has completed (`*flag` 1), else
    /// `*flag` 0 and the epoch goes on.
    fn MPI_Win_test / PMPI_Win_test(win: Handle, flag: *mut c_int) {
        win_call(win, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write.
            let flag = unsafe { out(flag) }?;
            let e = entry(g.lib()?, win)?;
            let exposure = e
                .exposure
                .clone()
                .ok_or_else(|| Fail::new(MPI_ERR_RMA_SYNC, "MPI_Win_test without MPI_Win_post"))?;
            let (w, me) = (Arc::clone(&e.win), e.rank);
            let mut progress = Progress {
                w: &w,
                origins: exposure.into_iter().filter(|&o| o != me).collect(),
                results: Vec::new(),
                sends: Vec::new(),
            };
            // One look; the replies it started are finished before returning (their
            // origins wait for them in `complete`).
            let left = g.unlocked(|| -> R<Vec<u32>> {
                progress.step()?;
                progress.run(false)?;
                Ok(std::mem::take(&mut progress.origins))
            })?;
            let e = entry(g.lib()?, win)?;
            *flag = c_int::from(left.is_empty());
            e.exposure = if left.is_empty() { None } else { Some(left) };
            Ok(())
        })
    }
}
