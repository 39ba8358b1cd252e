//! A same-node watched process that is silent but gaining kernel time is copying, not
//! hung: a single copy of a large message (`process_vm_readv`, split copy) runs with
//! its engine held, and neither it nor its progress thread can send a heartbeat
//! meanwhile. Two 2 GiB copies at once on a loaded host outlasted the 2 s detection
//! timeout and each rank suspected the other. Its system time, read from
//! `/proc/<pid>/stat` only once its silence passes half the timeout, counts as its
//! heartbeat, for at most [`VOUCH_TIMEOUTS`] timeouts of silence in a row: a stopped
//! process gains none and one computing in user space gains none, so both are
//! suspected as before, and one stuck in a system call loop is suspected later, not
//! never.

use super::{Engine, Route};

/// How many detection timeouts of silence in a row kernel time can cover. A copy
/// slows several times on a loaded host: a 1 GiB exchange that takes 0.7 s here took
/// 2.3 s during a CI run, past 10 timeouts of 200 ms (40 s at the default timeout).
const VOUCH_TIMEOUTS: u64 = 20;
/// Least time between two reads of the watched process's kernel time (clock ticks are
/// 10 ms).
const PROBE_EVERY_NS: u64 = 50_000_000;

/// The last reading of the watched process's kernel time.
#[derive(Debug, Clone, Copy)]
pub(super) struct BusyProbe {
    watched: u32,
    ticks: u64,
    at_ns: u64,
}

impl Engine {
    /// Counts the watched process's kernel time as its heartbeat when it is silent
    /// (see the module doc). Called before the detector's tick.
    pub(super) fn vouch_for_a_copying_neighbour(&mut self, now: u64) {
        let Some((w, silent, timeout)) = self.control.watched_silence(now) else {
            return;
        };
        if silent <= timeout / 2 {
            self.busy_probe = None;
            return;
        }
        if let Some(p) = self.busy_probe {
            if p.watched == w && now.saturating_sub(p.at_ns) < PROBE_EVERY_NS {
                return;
            }
        }
        let Route::Shm(l) = self.routes[w as usize] else {
            return;
        };
        let Some(pid) = self.shm.as_ref().and_then(|s| s.peer_pid(l)) else {
            return;
        };
        let Some(ticks) = steadfast_os::process::system_ticks(pid) else {
            return;
        };
        if let Some(p) = self.busy_probe {
            if p.watched == w
                && ticks > p.ticks
                && self
                    .control
                    .vouch_for_watched(w, now, timeout.saturating_mul(VOUCH_TIMEOUTS))
            {
                log::debug!(
                    "rank {w}: silent for {} ms but busy in the kernel; not suspected",
                    silent / 1_000_000
                );
            }
        }
        self.busy_probe = Some(BusyProbe {
            watched: w,
            ticks,
            at_ns: now,
        });
    }
}
