//! A number that names the calling thread among the live threads of the process, for
//! the checks on the hot path that ask "is this the thread that ...?".
//!
//! On x86-64 Linux it is the thread pointer (`%fs:0`, the address of the thread's
//! control block: what `pthread_self` returns, without the call); elsewhere the address
//! of a thread-local byte. Both are unique among live threads, never 0, and aligned (so
//! never 1 or 2 either); a thread that exits may leave its number to a later thread.
//! The thread-local form costs a `__tls_get_addr` call in a shared library, which is
//! why the fast form exists: `libsteadfast-mpi` asks at every MPI call and the runtime
//! at every take of its engine.
//!
//! ```
//! use steadfast_os::thread_id::current;
//! let here = current();
//! assert_ne!(here, 0);
//! assert_eq!(here, current());
//! std::thread::scope(|s| {
//!     // A thread alive at the same time has another number.
//!     assert_ne!(s.spawn(current).join().unwrap(), here);
//! });
//! ```

/// The calling thread's number (see the module docs).
#[inline(always)]
pub fn current() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tcb: usize;
        // SAFETY: on x86-64 Linux (glibc and musl alike) `%fs` points at the thread's
        // control block, whose first word is its own address (the TLS ABI's
        // `tcbhead` self pointer); reading it has no side effect.
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tcb,
                options(nostack, readonly, preserves_flags, pure)
            );
        }
        tcb
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        thread_local! {
            static MARK: u8 = const { 0 };
        }
        MARK.with(|m| std::ptr::from_ref(m) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_threads_have_distinct_numbers() {
        let here = current();
        assert!(here > 2 && here % 8 == 0, "{here:#x}");
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(current()).unwrap();
            stop_rx.recv().unwrap();
        });
        let there = rx.recv().unwrap();
        assert_ne!(here, there, "two live threads");
        stop_tx.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(here, current());
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn it_is_what_pthread_self_returns() {
        // SAFETY: pthread_self has no preconditions.
        assert_eq!(current(), unsafe { libc::pthread_self() } as usize);
    }
}
