//! Children that die with their parent.
//!
//! Linux's `PR_SET_PDEATHSIG` asks the kernel to send the child a signal when its
//! parent goes. Two details make it subtle, and both are handled here once:
//!
//! - the parent that counts is the **thread** that forked: a child started from a
//!   thread that later ends is killed then, even though the process lives on. Start
//!   children from a thread that lives as long as they should;
//! - the parent may die **between `fork` and `prctl`**: the signal is then never sent,
//!   because the child was already reparented. After `prctl` the child compares
//!   `getppid()` with the pid its parent had, and gives up (the spawn fails) when they
//!   differ.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes a [`Command`]'s child die (SIGKILL, or a signal of the caller's choice) when
/// the thread that spawns it ends, or its process dies.
///
/// ```
/// use std::process::Command;
/// use steadfast_os::DieWithParent;
///
/// let mut child = Command::new("true").die_with_parent().spawn().unwrap();
/// assert!(child.wait().unwrap().success());
/// ```
pub trait DieWithParent {
    /// Sets the parent-death signal to SIGKILL in the child, before `exec`.
    fn die_with_parent(&mut self) -> &mut Self;

    /// Sets the parent-death signal to `signal` in the child, before `exec`: for a
    /// child that must clean up on its way out (e.g. `srun`, which cancels its job
    /// step on SIGTERM but cannot on SIGKILL).
    fn die_with_parent_by(&mut self, signal: libc::c_int) -> &mut Self;
}

impl DieWithParent for Command {
    fn die_with_parent(&mut self) -> &mut Self {
        self.die_with_parent_by(libc::SIGKILL)
    }

    fn die_with_parent_by(&mut self, signal: libc::c_int) -> &mut Self {
        // Read in the parent, before the fork: the child compares its parent with it.
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        let signal = libc::c_ulong::try_from(signal).unwrap_or(libc::SIGKILL as libc::c_ulong);
        let hook = move || -> std::io::Result<()> {
            // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of the calling process.
            if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: getppid has no preconditions and cannot fail.
            if unsafe { libc::getppid() } != parent {
                // The parent died before prctl: no signal will come. ESRCH, "no such
                // process", names the parent that is gone.
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        };
        // SAFETY: the hook runs in the forked child before exec and calls only prctl and
        // getppid, both async-signal-safe system calls; it allocates nothing (the
        // error values are made from raw codes) and takes no lock.
        unsafe { self.pre_exec(hook) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProcessWatch;
    use std::os::unix::process::ExitStatusExt;
    use std::time::Duration;

    /// Spawns `sleep 60` configured by `set` from a thread that then ends (the
    /// "parent" of PR_SET_PDEATHSIG is the spawning thread) and returns the signal the
    /// child died of.
    fn death_signal_when_the_parent_thread_ends(
        set: fn(&mut Command) -> &mut Command,
    ) -> Option<i32> {
        let mut child = std::thread::spawn(move || {
            let mut cmd = Command::new("sleep");
            cmd.arg("60");
            set(&mut cmd).spawn().unwrap()
        })
        .join()
        .unwrap();
        let watch = ProcessWatch::new(child.id());
        assert!(
            watch.wait_exit(Duration::from_secs(20)),
            "child outlived its parent"
        );
        child.wait().unwrap().signal()
    }

    #[test]
    fn child_dies_when_its_parent_thread_ends() {
        let signal = death_signal_when_the_parent_thread_ends(|c| c.die_with_parent());
        assert_eq!(signal, Some(libc::SIGKILL));
    }

    #[test]
    fn the_parent_death_signal_can_be_chosen() {
        let signal =
            death_signal_when_the_parent_thread_ends(|c| c.die_with_parent_by(libc::SIGTERM));
        assert_eq!(signal, Some(libc::SIGTERM));
    }

    #[test]
    fn child_lives_while_its_parent_does() {
        let mut child = Command::new("sleep")
            .arg("60")
            .die_with_parent()
            .spawn()
            .unwrap();
        let watch = ProcessWatch::new(child.id());
        assert!(!watch.wait_exit(Duration::from_millis(100)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
