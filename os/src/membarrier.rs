//! `membarrier(2)` with `MEMBARRIER_CMD_GLOBAL`: makes every running thread of the
//! system execute a full memory barrier before the call returns. A biased lock uses it
//! as the heavy side of an asymmetric fence (`steadfast_agreement::shared::biased`):
//! the owner's fast path then needs only a compiler fence.
//!
//! The global command needs no registration (it changes no process-wide state); it
//! waits for an RCU grace period, milliseconds, which is why it is used only for rare
//! events (a bias revoked once in a process's life).

/// `MEMBARRIER_CMD_QUERY`.
const CMD_QUERY: libc::c_int = 0;
/// `MEMBARRIER_CMD_GLOBAL` (formerly `MEMBARRIER_CMD_SHARED`).
const CMD_GLOBAL: libc::c_int = 1;

/// Whether this kernel offers the global membarrier (Linux 4.3 and later, unless
/// a seccomp filter or `nohz_full` CPUs take it away).
pub fn global_available() -> bool {
    // SAFETY: membarrier with QUERY reads no memory and changes nothing.
    let mask = unsafe { libc::syscall(libc::SYS_membarrier, CMD_QUERY, 0) };
    mask >= 0 && mask & libc::c_long::from(CMD_GLOBAL) != 0
}

/// Runs a global memory barrier; the kernel's error when it refused.
///
/// # Errors
/// `ENOSYS`, `EINVAL` (not offered), `EPERM` (a seccomp filter).
pub fn global() -> std::io::Result<()> {
    // SAFETY: membarrier with GLOBAL reads no memory of this process and changes
    // nothing but the ordering of other threads' memory accesses.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, CMD_GLOBAL, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_global_barrier_runs_where_it_is_offered() {
        if global_available() {
            global().expect("offered, so it runs");
        }
    }
}
