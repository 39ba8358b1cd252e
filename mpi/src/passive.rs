//! Passive target synchronization (MPI 4.1 §12.5.3): `MPI_Win_lock`, `unlock`,
//! `lock_all`, `unlock_all`, `flush`, `flush_all`, `flush_local`, `flush_local_all`,
//! `sync`.
//!
//! The target takes no part in a passive epoch, yet someone in the target must grant
//! locks and apply accumulates (only the target applies them: that is what makes them
//! atomic, see `rma`). The runtime's progress thread cannot reach a window, so each
//! window has an agent thread ([`Agent`]) holding the runtime `Window` (its memory and
//! communicator, both `Send + Sync`; nothing of the library's state). It polls the
//! window's communicator for requests, one origin at a time (specific-source probes: a
//! wildcard probe stops at an unacknowledged failure), sleeping a little longer each
//! idle round up to [`MAX_IDLE_SLEEP`], and answers each request:
//! - lock (shared or exclusive): granted in request order when compatible with the
//!   holders, else queued; a holder that died loses its lock (checked every
//!   [`FAILURE_CHECK`]), so the queue moves on;
//! - unlock: released, then acknowledged (after every accumulate the origin sent before
//!   it: one origin's requests are handled in order);
//! - an accumulate: applied at once, the fetched value sent back for a fetching one;
//! - flush: acknowledged (everything the origin sent before is applied).
//!
//! The origin's puts and gets complete when they return, so they need no agent; its
//! accumulates to a locked target go to the agent at once, a fetching one waiting for
//! its result. A dead target makes the origin's wait for the answer fail with
//! `MPIX_ERR_PROC_FAILED` (a receive from a dead source).

use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sf::comm::Window;
use sf::CommError;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::rma::{apply_batch, deliver};
use crate::state::Guard;
use crate::win::{entry, win_call, MPI_ERR_RMA_SYNC};

/// Requests to an agent and its answers, on the window's communicator (the fence uses
/// 2 and 3, PSCW 4 to 6).
const TAG_REQUEST: u32 = 7;
const TAG_ANSWER: u32 = 8;

/// Request kinds (the first byte).
const LOCK_SHARED: u8 = 1;
const LOCK_EXCLUSIVE: u8 = 2;
const UNLOCK: u8 = 3;
const FLUSH: u8 = 4;
const ACCUMULATE: u8 = 5;

/// `MPI_LOCK_SHARED`, `MPI_LOCK_EXCLUSIVE` (the ABI's values).
const MPI_LOCK_SHARED: c_int = 21;
const MPI_LOCK_EXCLUSIVE: c_int = 22;
/// `MPI_ERR_LOCKTYPE`.
const MPI_ERR_LOCKTYPE: c_int = 37;

/// The longest sleep of an idle agent between two polls.
const MAX_IDLE_SLEEP: Duration = Duration::from_millis(2);
/// How often an agent looks for failed lock holders.
const FAILURE_CHECK: Duration = Duration::from_millis(50);

/// A window's agent thread (see the module doc); stopped by [`Agent::stop`].
pub(crate) struct Agent {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Agent {
    /// Starts the agent of `win`.
    pub fn start(win: Arc<Window<'static>>) -> Agent {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sf-mpi-win-agent".into())
            .spawn(move || serve(&win, &flag))
            .map_err(|e| log::warn!("no agent thread for a window ({e}): no passive target"))
            .ok();
        Agent { stop, thread }
    }

    /// Stops the agent and waits for it to end (before the window is freed).
    pub fn stop(&mut self) {
        // ORDERING: Relaxed; the join below is the synchronization that matters.
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The lock table of one window at its target.
#[derive(Default)]
struct Locks {
    exclusive: Option<u32>,
    shared: Vec<u32>,
    waiting: VecDeque<(u32, bool)>,
}

impl Locks {
    fn grantable(&self, exclusive: bool) -> bool {
        self.exclusive.is_none() && (!exclusive || self.shared.is_empty())
    }

    fn take(&mut self, origin: u32, exclusive: bool) {
        if exclusive {
            self.exclusive = Some(origin);
        } else {
            self.shared.push(origin);
        }
    }

    fn release(&mut self, origin: u32) {
        if self.exclusive == Some(origin) {
            self.exclusive = None;
        } else if let Some(i) = self.shared.iter().position(|&o| o == origin) {
            self.shared.swap_remove(i);
        }
    }

    /// The waiting requests that can be granted now, in order.
    fn grant_waiting(&mut self) -> Vec<u32> {
        let mut granted = Vec::new();
        while let Some(&(origin, exclusive)) = self.waiting.front() {
            if !self.grantable(exclusive) {
                break;
            }
            self.waiting.pop_front();
            self.take(origin, exclusive);
            granted.push(origin);
        }
        granted
    }
}

/// The agent's loop.
fn serve(win: &Window<'static>, stop: &AtomicBool) {
    let comm = win.comm();
    let n = comm.size();
    let mut locks = Locks::default();
    let mut sleep = Duration::from_micros(1);
    let mut checked = Instant::now();
    let mut dead: Vec<u32> = Vec::new();
    // ORDERING: Relaxed; see `Agent::stop`.
    while !stop.load(Ordering::Relaxed) {
        let mut busy = false;
        for o in (0..n).filter(|o| !dead.contains(o)) {
            // A failed origin with nothing waiting is an error here: skipped.
            let Ok(Some(st)) = comm.iprobe(Some(o), Some(TAG_REQUEST)) else {
                continue;
            };
            let mut msg = vec![0u8; st.len];
            if comm.recv(Some(o), Some(TAG_REQUEST), &mut msg).is_err() {
                continue;
            }
            busy = true;
            // An answer to a dead origin fails: nothing to do about it.
            let _ = handle(win, &mut locks, o, &msg);
        }
        if checked.elapsed() >= FAILURE_CHECK {
            checked = Instant::now();
            dead = comm.failed_ranks();
            for &d in &dead {
                locks.release(d);
                locks.waiting.retain(|&(o, _)| o != d);
            }
            for o in locks.grant_waiting() {
                let _ = comm.send(o, TAG_ANSWER, &[]);
            }
        }
        if busy {
            sleep = Duration::from_micros(1);
        } else {
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(MAX_IDLE_SLEEP);
        }
    }
}

/// One request of origin `o`.
fn handle(win: &Window<'static>, locks: &mut Locks, o: u32, msg: &[u8]) -> Result<(), CommError> {
    let comm = win.comm();
    match msg.first().copied() {
        Some(kind @ (LOCK_SHARED | LOCK_EXCLUSIVE)) => {
            let exclusive = kind == LOCK_EXCLUSIVE;
            if locks.waiting.is_empty() && locks.grantable(exclusive) {
                locks.take(o, exclusive);
                comm.send(o, TAG_ANSWER, &[])?;
            } else {
                locks.waiting.push_back((o, exclusive));
            }
        }
        Some(UNLOCK) => {
            locks.release(o);
            comm.send(o, TAG_ANSWER, &[])?;
            for w in locks.grant_waiting() {
                comm.send(w, TAG_ANSWER, &[])?;
            }
        }
        Some(FLUSH) => comm.send(o, TAG_ANSWER, &[])?,
        Some(ACCUMULATE) => {
            let (reply, fetches) = apply_batch(win, &msg[1..]);
            if fetches > 0 {
                comm.send(o, TAG_ANSWER, &reply)?;
            }
        }
        _ => log::warn!("a malformed passive-target request from rank {o}: ignored"),
    }
    Ok(())
}

/// Sends `msg` to `target`'s agent and, with `answer`, waits for its answer.
fn ask(win: &Window<'static>, target: u32, msg: &[u8], answer: bool) -> Result<Vec<u8>, CommError> {
    let comm = win.comm();
    comm.send(target, TAG_REQUEST, msg)?;
    if !answer {
        return Ok(Vec::new());
    }
    let st = comm.probe(Some(target), Some(TAG_ANSWER))?;
    let mut buf = vec![0u8; st.len];
    comm.recv(Some(target), Some(TAG_ANSWER), &mut buf)?;
    Ok(buf)
}

/// An accumulate to `target` in a passive epoch: applied by its agent now; a fetching
/// one's result in `result` when this returns.
pub(crate) fn accumulate(
    win: &Window<'static>,
    target: u32,
    wire: &[u8],
    result: Option<(usize, usize)>,
) -> R<()> {
    let mut msg = Vec::with_capacity(1 + wire.len());
    msg.push(ACCUMULATE);
    msg.extend_from_slice(wire);
    let reply = ask(win, target, &msg, result.is_some())?;
    if let Some(r) = result {
        deliver(&reply, &[r])?;
    }
    Ok(())
}

/// The window, its size, and the lock state of each target, for a passive call.
fn locked_state(g: &mut Guard, win: Handle) -> R<(Arc<Window<'static>>, u32, Vec<u8>)> {
    let e = entry(g.lib()?, win)?;
    Ok((Arc::clone(&e.win), e.size, e.locked.clone()))
}

/// Locks `targets` with `kind`, each once granted.
fn lock(g: &mut Guard, win: Handle, targets: &[u32], kind: u8) -> R<()> {
    let (w, _, locked) = locked_state(g, win)?;
    if targets.iter().any(|&t| locked[t as usize] != 0) {
        return Err(Fail::new(MPI_ERR_RMA_SYNC, "a target locked twice"));
    }
    g.unlocked(|| -> Result<(), CommError> {
        for &t in targets {
            ask(&w, t, &[kind], true)?;
        }
        Ok(())
    })?;
    let e = entry(g.lib()?, win)?;
    for &t in targets {
        e.locked[t as usize] = kind;
    }
    Ok(())
}

/// Unlocks (or, with `flush`, only flushes) `targets`.
fn unlock(g: &mut Guard, win: Handle, targets: &[u32], flush: bool) -> R<()> {
    let (w, _, locked) = locked_state(g, win)?;
    if targets.iter().any(|&t| locked[t as usize] == 0) {
        return Err(Fail::new(MPI_ERR_RMA_SYNC, "a target that is not locked"));
    }
    let msg = [if flush { FLUSH } else { UNLOCK }];
    let done = g.unlocked(|| -> Result<(), CommError> {
        for &t in targets {
            ask(&w, t, &msg, true)?;
        }
        Ok(())
    });
    if !flush {
        // Unlocked even on a failure: the epoch is over either way.
        let e = entry(g.lib()?, win)?;
        for &t in targets {
            e.locked[t as usize] = 0;
        }
    }
    Ok(done?)
}

fn target_arg(g: &mut Guard, win: Handle, rank: c_int) -> R<u32> {
    let n = entry(g.lib()?, win)?.size;
    crate::util::rank_arg(rank, n)
}

fn all(g: &mut Guard, win: Handle) -> R<Vec<u32>> {
    Ok((0..entry(g.lib()?, win)?.size).collect())
}

fn locked_targets(g: &mut Guard, win: Handle) -> R<Vec<u32>> {
    let e = entry(g.lib()?, win)?;
    Ok((0..e.size).filter(|&t| e.locked[t as usize] != 0).collect())
}

crate::mpi_fn! {
    /// `MPI_Win_lock`: returns once the target's agent granted the lock.
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, _assert: c_int, win: Handle) {
        win_call(win, |g| {
            let kind = match lock_type {
                MPI_LOCK_SHARED => LOCK_SHARED,
                MPI_LOCK_EXCLUSIVE => LOCK_EXCLUSIVE,
                _ => return Err(Fail::new(MPI_ERR_LOCKTYPE, format!("lock type {lock_type}"))),
            };
            if rank == MPI_PROC_NULL {
                return Ok(());
            }
            let t = target_arg(g, win, rank)?;
            lock(g, win, &[t], kind)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_unlock`: returns once the target applied this origin's accumulates and
    /// released the lock.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: Handle) {
        win_call(win, |g| {
            if rank == MPI_PROC_NULL {
                return Ok(());
            }
            let t = target_arg(g, win, rank)?;
            unlock(g, win, &[t], false)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_lock_all`: a shared lock on every rank.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(_assert: c_int, win: Handle) {
        win_call(win, |g| {
            let t = all(g, win)?;
            lock(g, win, &t, LOCK_SHARED)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_unlock_all`.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: Handle) {
        win_call(win, |g| {
            let t = all(g, win)?;
            unlock(g, win, &t, false)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_flush`: returns once the target applied this origin's accumulates.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: Handle) {
        win_call(win, |g| {
            if rank == MPI_PROC_NULL {
                return Ok(());
            }
            let t = target_arg(g, win, rank)?;
            unlock(g, win, &[t], true)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_flush_all`: `MPI_Win_flush` of every locked target.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: Handle) {
        win_call(win, |g| {
            let t = locked_targets(g, win)?;
            unlock(g, win, &t, true)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_flush_local`: nothing to do (an accumulate's data is copied when it is
    /// called, puts and gets complete when they return).
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: Handle) {
        win_call(win, |g| {
            if rank != MPI_PROC_NULL {
                target_arg(g, win, rank)?;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Win_flush_local_all`: nothing to do (as `MPI_Win_flush_local`).
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: Handle) {
        win_call(win, |g| entry(g.lib()?, win).map(drop))
    }
}

crate::mpi_fn! {
    /// `MPI_Win_sync`: nothing to do (one copy of the memory: `MPI_WIN_UNIFIED`).
    fn MPI_Win_sync / PMPI_Win_sync(win: Handle) {
        win_call(win, |g| entry(g.lib()?, win).map(drop))
    }
}
