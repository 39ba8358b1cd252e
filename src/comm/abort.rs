//! Aborting one communicator's processes (`MPI_Abort` on a communicator under ULFM's
//! fault-tolerant reading, as the Forum's restart draft uses it: a leader aborts its
//! group and the rest of the job goes on). See `docs/restart.md`.

use super::{Comm, CommError};

impl Comm {
    /// Kills every live member of this communicator, this process last
    /// (`MPI_Abort(comm, code)` aborting only its group): the others are SIGKILLed,
    /// then this process exits with status `code` (its low 8 bits, as `exit`). The rest
    /// of the job sees them fail (`ProcFailed`) and goes on when the launcher keeps the
    /// job (`steadfast-run --no-kill`); each may be restarted in place. The members'
    /// process ids and hosts come from the launcher's store (every rank publishes them
    /// at init; a restarted one its new pid).
    ///
    /// Returns only when it refuses, before killing anyone.
    ///
    /// # Errors
    /// `InvalidArgument` when a live member runs on another host (the signals of this
    /// process cannot reach it; not built yet); [`CommError::Launcher`] when the store
    /// cannot say a member's pid or host.
    pub fn abort(&self, code: i32) -> CommError {
        match self.abort_targets() {
            Ok(pids) => {
                log::warn!(
                    "aborting communicator {:#x} with code {code}: killing {} other member(s)",
                    self.id.0,
                    pids.len()
                );
                for pid in pids {
                    // SAFETY: sends a signal; no memory is involved.
                    let r = unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                    if r != 0 {
                        log::info!(
                            "abort: pid {pid}: {} (already gone)",
                            std::io::Error::last_os_error()
                        );
                    }
                }
                std::process::exit(code)
            }
            Err(e) => e,
        }
    }

    /// The process ids of the live members other than this process, all on this host.
    fn abort_targets(&self) -> Result<Vec<u32>, CommError> {
        let me = self.rank();
        let group = self.group().to_vec();
        let mut e = self.engine.lock();
        let my_world = group[me as usize];
        let value = |e: &mut crate::world::engine::Engine, w: u32, key: &str| {
            e.boot_mut()
                .lookup(w, key)
                .map_err(|err| CommError::Launcher(format!("abort: rank {w}'s {key}: {err}")))?
                .ok_or_else(|| CommError::Launcher(format!("abort: rank {w} published no {key}")))
        };
        let host = value(&mut e, my_world, "host")?;
        let mut pids = Vec::new();
        for (r, &w) in group.iter().enumerate() {
            if r as u32 == me || e.is_failed(w) {
                continue;
            }
            if value(&mut e, w, "host")? != host {
                return Err(CommError::InvalidArgument(format!(
                    "abort: rank {r} (world rank {w}) runs on another host; aborting a communicator across hosts is not built yet"
                )));
            }
            let pid = value(&mut e, w, "pid")?;
            let pid = <[u8; 4]>::try_from(pid.as_slice())
                .map(u32::from_le_bytes)
                .map_err(|_| {
                    CommError::Launcher(format!("abort: rank {w}'s pid is not 4 bytes"))
                })?;
            if pid == 0 || pid > i32::MAX as u32 {
                return Err(CommError::Launcher(format!("abort: rank {w}'s pid {pid}")));
            }
            pids.push(pid);
        }
        Ok(pids)
    }
}
