//! Single-copy reads from another process's memory (Linux CMA, `process_vm_readv`).

use std::io;

/// Copies `dst.len()` bytes from address `src` of process `pid` into `dst`, in as many
/// calls as the kernel needs.
///
/// # Errors
/// The OS error: EPERM when the ptrace policy (yama) forbids it, ESRCH when the process
/// is gone, EFAULT when the remote range is not mapped.
pub fn read_from(pid: u32, src: u64, dst: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < dst.len() {
        let local = libc::iovec {
            iov_base: dst[done..].as_mut_ptr().cast(),
            iov_len: dst.len() - done,
        };
        let remote = libc::iovec {
            iov_base: (src as usize + done) as *mut libc::c_void,
            iov_len: dst.len() - done,
        };
        // SAFETY: `local` covers memory we own exclusively (a &mut slice); the kernel
        // checks `remote` against the other process's mappings and fails with EFAULT
        // instead of touching anything else.
        let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "process_vm_readv read nothing",
            ));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn reads_own_memory_and_refuses_unmapped() {
        let src: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; src.len()];
        super::read_from(std::process::id(), src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(dst, src);
        assert!(super::read_from(std::process::id(), 8, &mut dst[..8]).is_err());
    }
}
