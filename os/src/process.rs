//! Whether a process of this host is alive, with one rule everywhere: **a zombie is
//! dead** (it runs no code and will never answer; only its parent's `wait` is left).
//!
//! A [`ProcessWatch`] opens a pidfd (Linux 5.3+) at once, so later checks cannot be
//! fooled by the pid being reused; the pidfd polls readable when the process exits,
//! zombie or not. Where pidfds are missing, [`pid_alive`] is used instead:
//! `kill(pid, 0)`, then the state in `/proc/<pid>/stat` to tell a zombie.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// Opens a pidfd for `pid`; `None` where the kernel has no `pidfd_open` (before 5.3)
/// or the process does not exist.
pub fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; it touches
    // no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: a non-negative return is a fresh descriptor that we alone own.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process behind `pidfd` has exited (zombie included): the fd polls
/// readable. Waits up to `timeout` (zero: never blocks).
pub fn pidfd_exited(pidfd: BorrowedFd<'_>, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd that lives across the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n > 0 && p.revents & (libc::POLLIN | libc::POLLHUP) != 0
}

/// Whether `pid` names a live process, by pid alone: `kill(pid, 0)` says it exists
/// (`EPERM` too: it exists, owned by someone else), then `/proc/<pid>/stat` rules out
/// a zombie. A reused pid looks alive: prefer a [`ProcessWatch`] made while the
/// process surely lived.
///
/// ```
/// assert!(steadfast_os::process::pid_alive(std::process::id()));
/// ```
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        // 0 and negative pids name process groups for kill(2), not a process.
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks existence and permission.
    let r = unsafe { libc::kill(raw, 0) };
    let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !is_zombie(pid)
}

/// Whether `/proc/<pid>/stat` shows state Z (zombie) or X (dead). A missing file is
/// not a zombie (the caller decides from `kill`).
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may contain spaces.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next());
    matches!(state, Some('Z') | Some('X'))
}

/// The kernel (system) time process `pid` has used so far, in clock ticks
/// (`/proc/<pid>/stat`, field 15), or `None` when it cannot be read (the process is
/// gone). A process in a long system call, such as a `process_vm_readv` of a large
/// message, gains it; a stopped process or one computing in user space does not.
///
/// ```
/// // A process that spends time in the kernel has some to show eventually; here only
/// // that it is readable.
/// assert!(steadfast_os::process::system_ticks(std::process::id()).is_some());
/// assert!(steadfast_os::process::system_ticks(0).is_none());
/// ```
pub fn system_ticks(pid: u32) -> Option<u64> {
    if pid == 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    system_ticks_of(&stat)
}

/// Field 15 (`stime`) of a `/proc/<pid>/stat` line. The fields after the command name
/// are counted from its closing parenthesis (the name may hold spaces and parentheses):
/// the first of them is field 3, so field 15 is the thirteenth.
fn system_ticks_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(12)?.parse().ok()
}

/// A watch on one process of this host.
///
/// ```
/// use steadfast_os::ProcessWatch;
///
/// let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
/// let watch = ProcessWatch::new(child.id());
/// assert!(!watch.has_exited());
/// child.kill().unwrap();
/// // Killed but not reaped (a zombie): already counted as exited.
/// assert!(watch.wait_exit(std::time::Duration::from_secs(10)));
/// child.wait().unwrap();
/// ```
#[derive(Debug)]
pub struct ProcessWatch {
    pid: u32,
    pidfd: Option<OwnedFd>,
}

impl ProcessWatch {
    /// Starts watching `pid`. Opening the pidfd right away makes later checks immune
    /// to pid reuse; call it while the process is known to live.
    pub fn new(pid: u32) -> Self {
        ProcessWatch {
            pid,
            pidfd: pidfd_open(pid),
        }
    }

    /// The pid watched.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the watch holds a pidfd (else checks go by pid, see [`pid_alive`]).
    pub fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// The pidfd, to poll together with others; `None` without pidfds.
    pub fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(AsFd::as_fd)
    }

    /// Whether the process has exited (a zombie counts as exited). Never blocks.
    pub fn has_exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => pidfd_exited(fd.as_fd(), Duration::ZERO),
            None => !pid_alive(self.pid),
        }
    }

    /// Waits up to `timeout` for the process to exit; whether it has. With a pidfd the
    /// wait sleeps in `poll`; without, it checks every millisecond.
    pub fn wait_exit(&self, timeout: Duration) -> bool {
        match &self.pidfd {
            Some(fd) => pidfd_exited(fd.as_fd(), timeout),
            None => {
                let end = std::time::Instant::now() + timeout;
                loop {
                    if !pid_alive(self.pid) {
                        return true;
                    }
                    if std::time::Instant::now() >= end {
                        return false;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn system_ticks_are_field_15_whatever_the_command_name() {
        let line = "42 (a b) (c)) S 1 42 42 0 -1 4194560 100 0 0 0 7 913 0 0 20 0 1 0 5";
        assert_eq!(system_ticks_of(line), Some(913));
        assert_eq!(system_ticks_of("42 (x) S 1"), None);
        assert_eq!(system_ticks_of("garbage"), None);
    }

    #[test]
    fn self_is_alive() {
        assert!(!ProcessWatch::new(std::process::id()).has_exited());
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
    }

    #[test]
    fn a_zombie_is_dead_by_pidfd_and_by_pid() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ProcessWatch::new(child.id());
        assert!(watch.has_pidfd(), "Linux 5.3+ expected on the test machine");
        assert!(!watch.has_exited());
        assert!(pid_alive(child.id()));
        child.kill().unwrap();
        // Not reaped: the child is a zombie, and both ways must call it dead.
        assert!(watch.wait_exit(Duration::from_secs(10)), "kill not seen");
        let pid_only = ProcessWatch {
            pid: child.id(),
            pidfd: None,
        };
        assert!(
            is_zombie(child.id()),
            "the child must still be a zombie here"
        );
        assert!(!pid_alive(child.id()));
        assert!(pid_only.has_exited());
        child.wait().unwrap();
        assert!(!pid_alive(child.id()));
    }

    #[test]
    fn wait_exit_times_out_on_a_live_process() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ProcessWatch::new(child.id());
        assert!(!watch.wait_exit(Duration::from_millis(20)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
