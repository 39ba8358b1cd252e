//! Ranks as Slurm job steps (`--spawner slurm`, the default inside an allocation).
//!
//! Inside a Slurm allocation, `steadfast-run` starts each rank, and each restarted
//! incarnation, as a job step of one task of the allocation on this node: `srun
//! --jobid=J --overlap -N1 -n1 --nodelist=<this node> --mpi=none --export=ALL ...
//! PROGRAM ARGS`, with the environment a forked rank gets (srun exports it to the
//! task). Slurm then accounts for, contains and cleans up every rank like any step of
//! the job, and a restart is one more step. The launcher's service stays the job's bootstrap and
//! store, as when it forks the ranks: the ranks talk to it, never to Slurm's PMI.
//!
//! The launcher's child is the `srun` client, not the rank: the rank's end is seen as
//! the client's exit, and a rank killed by signal N makes srun exit with status 128 + N
//! ([`rank_status`] turns it back into a death by that signal). A signal never crosses
//! srun, so the clean-up takes three forms:
//!
//! - every `srun` dies with the launcher by SIGTERM (not SIGKILL), on which it cancels
//!   its step;
//! - the launcher stops a step by sending SIGTERM (or the user's SIGINT: srun runs with
//!   `--quit-on-interrupt`) to its `srun`, never SIGKILL, which would leave the step;
//! - every step is named `steadfast-<job>-<rank>` ([`Slurm::step_name`]): at the end,
//!   and in the reaper if the launcher was SIGKILLed, [`cancel_steps`] cancels any step
//!   of that name still listed by `squeue -s`.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};

/// Where and how this launcher starts its steps.
#[derive(Debug, Clone)]
pub struct Slurm {
    /// The allocation (`SLURM_JOB_ID`).
    pub job_id: String,
    /// This node's name in Slurm (`SLURMD_NODENAME`, else the short host name).
    pub node: String,
    /// The prefix of every step name of this launcher (`steadfast-<job>-`).
    pub prefix: String,
}

/// Whether `prog` is an executable file in one of `$PATH`'s directories.
fn in_path(prog: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(prog))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// This host's short name (up to the first dot).
fn short_hostname() -> String {
    let me = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let me = me.trim();
    me.split('.').next().unwrap_or(me).to_string()
}

impl Slurm {
    /// The allocation this launcher runs in, for job `job` (the launcher's job id),
    /// when `--spawner slurm` was asked for (`required`) or `--spawner auto` applies:
    /// `SLURM_JOB_ID` set, not inside a job step (`SLURM_STEP_ID` unset: the batch
    /// script or the `salloc` shell), `srun` in `PATH`, and this node one of the
    /// allocation's (when `scontrol` can tell; `auto` warns and forks otherwise).
    ///
    /// # Errors
    /// With `required`, a message naming what is missing.
    pub fn detect(job: u64, required: bool) -> Result<Option<Slurm>, String> {
        let job_id = std::env::var("SLURM_JOB_ID")
            .or_else(|_| std::env::var("SLURM_JOBID"))
            .ok()
            .filter(|j| !j.is_empty());
        let in_step = std::env::var_os("SLURM_STEP_ID").is_some();
        let srun = in_path("srun");
        let Some(job_id) = job_id else {
            return if required {
                Err("--spawner slurm: not inside a Slurm allocation (SLURM_JOB_ID is not set); run steadfast-run in a batch script or under salloc".into())
            } else {
                Ok(None)
            };
        };
        if !srun {
            return if required {
                Err("--spawner slurm: srun is not in PATH".into())
            } else {
                Ok(None)
            };
        }
        if in_step && !required {
            // Inside a step (e.g. `srun steadfast-run ...`): the step's CPUs are held,
            // steps started from it could wait for them; fork, as outside Slurm.
            return Ok(None);
        }
        let node = std::env::var("SLURMD_NODENAME")
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(short_hostname);
        if let Some(nodes) = job_nodes().filter(|nodes| !nodes.contains(&node)) {
            let why = format!(
                "this node ({node}) is not one of Slurm job {job_id}'s ({}); steadfast-run starts its ranks on its own node: run it on a node of the allocation (e.g. in the batch script)",
                nodes.join(",")
            );
            if required {
                return Err(format!("--spawner slurm: {why}"));
            }
            log::warn!("{why}; the ranks are forked here instead of job steps");
            return Ok(None);
        }
        Ok(Some(Slurm {
            job_id,
            node,
            prefix: format!("steadfast-{job:016x}-"),
        }))
    }

    /// The name of `rank`'s steps (every incarnation's).
    pub fn step_name(&self, rank: u32) -> String {
        format!("{}{rank}", self.prefix)
    }

    /// The `srun` command that starts `rank` running `prog` as a step of one task on
    /// this node; the caller adds the environment (exported to the task) and output.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, rank: u32, prog: &[S]) -> Command {
        let mut cmd = Command::new("srun");
        cmd.arg(format!("--jobid={}", self.job_id))
            .arg(format!("--job-name={}", self.step_name(rank)))
            .arg(format!("--nodelist={}", self.node))
            .args([
                "--overlap",
                "--nodes=1",
                "--ntasks=1",
                "--mpi=none",
                // The rank's bootstrap is in the environment: exported whatever the
                // site's default (SLURM_EXPORT_ENV=NONE is common).
                "--export=ALL",
                "--kill-on-bad-exit=0",
                "--quit-on-interrupt",
                "--input=none",
                "--quiet",
                "--",
            ])
            .args(prog)
            .stdin(Stdio::null());
        cmd
    }
}

/// The nodes of the allocation (`SLURM_JOB_NODELIST` expanded by `scontrol show
/// hostnames`); `None` when they cannot be told.
fn job_nodes() -> Option<Vec<String>> {
    let list = std::env::var("SLURM_JOB_NODELIST")
        .or_else(|_| std::env::var("SLURM_NODELIST"))
        .ok()?;
    let out = Command::new("scontrol")
        .args(["show", "hostnames", &list])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    (!nodes.is_empty()).then_some(nodes)
}

/// A rank's status from its `srun`'s: srun exits with 128 + N when its task was
/// killed by signal N (a program's own exit status above 128 reads the same way).
pub fn rank_status(srun: ExitStatus) -> ExitStatus {
    match srun.code() {
        Some(c @ 129..=192) => ExitStatus::from_raw(c - 128),
        _ => srun,
    }
}

/// The steps of allocation `job_id` whose name starts with `prefix`, from `squeue
/// -s` (empty when it cannot be run).
pub fn steps_named(job_id: &str, prefix: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["-s", "-h", "-j", job_id, "-o", "%i %j"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, name)| name.trim().starts_with(prefix))
        .map(|(id, _)| id.trim().to_string())
        .collect()
}

/// Cancels the steps of `job_id` named with `prefix` that are still there; returns
/// how many were cancelled (their srun clients are gone or going: nobody else would).
pub fn cancel_steps(job_id: &str, prefix: &str) -> usize {
    let steps = steps_named(job_id, prefix);
    if !steps.is_empty() {
        let _ = Command::new("scancel")
            .args(&steps)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    steps.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_death_is_read_back_from_sruns_status() {
        let killed = rank_status(ExitStatus::from_raw(137 << 8));
        assert_eq!(killed.signal(), Some(9));
        let exited = rank_status(ExitStatus::from_raw(3 << 8));
        assert_eq!(exited.code(), Some(3));
        let srun_killed = rank_status(ExitStatus::from_raw(libc::SIGTERM));
        assert_eq!(srun_killed.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn the_step_command_names_the_rank_and_this_node() {
        let s = Slurm {
            job_id: "42".into(),
            node: "n1".into(),
            prefix: "steadfast-00000000000000ab-".into(),
        };
        let cmd = s.command(3, &["prog", "-x"]);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(cmd.get_program(), "srun");
        assert!(args.contains(&"--jobid=42".to_string()), "{args:?}");
        assert!(
            args.contains(&"--job-name=steadfast-00000000000000ab-3".to_string()),
            "{args:?}"
        );
        assert!(args.contains(&"--nodelist=n1".to_string()), "{args:?}");
        assert_eq!(args[args.len() - 3..], ["--", "prog", "-x"]);
    }
}
