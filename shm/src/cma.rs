//! Single-copy reads from and writes to another process's memory (Linux CMA,
//! `process_vm_readv` / `process_vm_writev`).

use std::io;

/// Copies `dst.len()` bytes from address `src` of process `pid` into `dst`, in as many
/// calls as the kernel needs.
///
/// # Errors
/// The OS error: EPERM when the ptrace policy (yama) forbids it, ESRCH when the process
/// is gone, EFAULT when the remote range is not mapped.
pub fn read_from(pid: u32, src: u64, dst: &mut [u8]) -> io::Result<()> {
    let len = dst.len();
    transfer(len, "process_vm_readv", |done| {
        let local = libc::iovec {
            iov_base: dst[done..].as_mut_ptr().cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (src as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: `local` covers memory we own exclusively (a &mut slice); the kernel
        // checks `remote` against the other process's mappings and fails with EFAULT
        // instead of touching anything else.
        unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) }
    })
}

/// Copies `src` to address `dst` of process `pid` (`process_vm_writev`), in as many
/// calls as the kernel needs. When it returns, the bytes are in the other process's
/// memory.
///
/// # Safety
/// When `pid` is this process (or shares its address space), the write lands in this
/// process's own memory behind the compiler's back: `dst..dst + src.len()` must then be
/// memory that no live Rust reference covers and that may hold any bytes. Another
/// process's memory is that process's business (it exposed the range for this).
///
/// # Errors
/// As [`read_from`].
pub unsafe fn write_to(pid: u32, dst: u64, src: &[u8]) -> io::Result<()> {
    let len = src.len();
    transfer(len, "process_vm_writev", |done| {
        let local = libc::iovec {
            iov_base: src[done..].as_ptr().cast_mut().cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (dst as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the kernel only reads `local` (our slice); it checks `remote` against
        // the other process's mappings and fails with EFAULT instead of writing
        // anywhere else. What the other process does with that memory is its contract.
        unsafe { libc::process_vm_writev(pid as libc::pid_t, &local, 1, &remote, 1, 0) }
    })
}

/// Runs `call(done)` until `len` bytes are moved, retrying on EINTR.
fn transfer(len: usize, what: &str, mut call: impl FnMut(usize) -> isize) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = call(done);
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
                format!("{what} moved nothing"),
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

    #[test]
    fn writes_own_memory_and_refuses_unmapped() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let dst = vec![0u8; src.len()];
        // SAFETY: `dst` is ours and no reference to it is used until the write returns.
        unsafe { super::write_to(std::process::id(), dst.as_ptr() as u64, &src) }.unwrap();
        // The kernel wrote behind the compiler's back: read through a volatile view.
        let seen: Vec<u8> = (0..dst.len())
            // SAFETY: in bounds of dst, which is alive.
            .map(|i| unsafe { std::ptr::read_volatile(dst.as_ptr().add(i)) })
            .collect();
        assert_eq!(seen, src);
        // SAFETY: address 8 is never mapped: the kernel refuses (EFAULT).
        assert!(unsafe { super::write_to(std::process::id(), 8, &src[..8]) }.is_err());
    }
}
