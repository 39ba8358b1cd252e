//! Whether a process on this host is alive, and which host this is.
//!
//! A peer on the same host is checked through its pid: a pidfd (Linux 5.3+) becomes
//! readable when the process has exited, zombie or not; where pidfd_open is
//! unavailable, `/proc/<pid>/stat` is read instead.

use std::os::fd::{FromRawFd, OwnedFd};

/// FNV-1a, 64-bit: a stable hash for identities carried in addresses.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// An identity of this host and pid namespace: equal for two processes exactly when
/// their pids name processes of the same kernel and namespace.
pub fn host_identity() -> u64 {
    let boot_id = std::fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut bytes = boot_id;
    bytes.extend_from_slice(pid_ns.as_bytes());
    fnv1a64(&bytes)
}

/// A watch on one process of this host.
#[derive(Debug)]
pub struct ProcessWatch {
    pid: u32,
    pidfd: Option<OwnedFd>,
}

impl ProcessWatch {
    /// Starts watching `pid`. Opening the pidfd right away makes later checks immune to
    /// pid reuse.
    pub fn new(pid: u32) -> Self {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd =
            unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0 as libc::c_uint) };
        let pidfd = (fd >= 0).then(|| {
            // SAFETY: fd is a fresh descriptor that we alone own.
            unsafe { OwnedFd::from_raw_fd(fd as i32) }
        });
        ProcessWatch { pid, pidfd }
    }

    /// The pid watched.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the process has exited (a zombie counts as exited).
    pub fn has_exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                let mut pfd = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: pfd is one valid pollfd; a zero timeout never blocks.
                let n = unsafe { libc::poll(&mut pfd, 1, 0) };
                n == 1 && pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0
            }
            None => !proc_stat_alive(self.pid),
        }
    }
}

/// Reads `/proc/<pid>/stat`: alive unless missing or in state Z (zombie) or X (dead).
fn proc_stat_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may contain spaces.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next());
    !matches!(state, Some('Z') | Some('X') | None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn self_is_alive_and_killed_child_is_not() {
        assert!(!ProcessWatch::new(std::process::id()).has_exited());
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ProcessWatch::new(child.id());
        assert!(!watch.has_exited());
        child.kill().unwrap();
        // Not reaped yet: a zombie must already count as exited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !watch.has_exited() {
            assert!(std::time::Instant::now() < deadline, "kill not seen");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!proc_stat_alive(child.id()));
        child.wait().unwrap();
    }

    #[test]
    fn host_identity_is_stable() {
        assert_eq!(host_identity(), host_identity());
    }
}
