//! Single copy through XPMEM, where `/dev/xpmem` exists (Cray and some Linux clusters).
//!
//! **Compiled everywhere, exercised only where the device exists.** This machine (and
//! CI) has no `/dev/xpmem`: [`Xpmem::open`] returns `None` there and the transport uses
//! `process_vm_readv`. The code follows the Linux XPMEM module's ioctl interface
//! (commands `_IO('x', 0..6)`: version, make, remove, get, release, attach, detach, with
//! the argument structures below) and engages only when the device reports major
//! version 2; any failure on the path falls back to `process_vm_readv` for that message.
//!
//! Protocol: each process exposes its whole address space once (`make`, owner-only
//! permissions) and publishes the segment id in its shm segment header; a receiver
//! `get`s an access id per peer once, and for each large message attaches the pages
//! that hold it, copies them into the user's buffer, and detaches.

use std::os::fd::{AsRawFd, OwnedFd};

const IOC_MAGIC: u64 = b'x' as u64;
const fn io(nr: u64) -> u64 {
    (IOC_MAGIC << 8) | nr
}
const CMD_VERSION: u64 = io(0);
const CMD_MAKE: u64 = io(1);
const CMD_REMOVE: u64 = io(2);
const CMD_GET: u64 = io(3);
const CMD_RELEASE: u64 = io(4);
const CMD_ATTACH: u64 = io(5);
const CMD_DETACH: u64 = io(6);

const PERMIT_MODE: i32 = 0x1;
const RDONLY: i32 = 0x1;

#[repr(C)]
#[derive(Default)]
struct CmdMake {
    vaddr: u64,
    size: usize,
    permit_type: i32,
    permit_value: u64,
    segid: i64,
}

#[repr(C)]
#[derive(Default)]
struct CmdGet {
    segid: i64,
    flags: i32,
    permit_type: i32,
    permit_value: u64,
    apid: i64,
}

#[repr(C)]
#[derive(Default)]
struct CmdAttach {
    apid: i64,
    offset: i64,
    size: usize,
    vaddr: u64,
    fd: i32,
    flags: i32,
}

#[repr(C)]
struct CmdId {
    id: i64,
}

#[repr(C)]
struct CmdDetach {
    vaddr: u64,
}

/// An open XPMEM device with this process's address space exposed.
#[derive(Debug)]
pub struct Xpmem {
    fd: OwnedFd,
    segid: i64,
}

fn ioctl<T>(fd: &OwnedFd, cmd: u64, arg: &mut T) -> std::io::Result<i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument structure of the layout
    // the command expects; the kernel reads and writes only within it.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), cmd as _, arg as *mut T) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Xpmem {
    /// Opens `/dev/xpmem` and exposes this process's address space; `None` when the
    /// device is absent, of an unknown version, or refuses.
    pub fn open() -> Option<Xpmem> {
        use std::os::fd::FromRawFd;
        let path = c"/dev/xpmem";
        // SAFETY: a valid C string; a non-negative result is a new fd we own.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return None;
        }
        // SAFETY: `raw` is a fresh, owned fd.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: VERSION takes no argument; the version is the return value.
        let version = unsafe { libc::ioctl(fd.as_raw_fd(), CMD_VERSION as _, 0usize) };
        if version >> 16 != 2 {
            return None;
        }
        let mut make = CmdMake {
            vaddr: 0,
            size: usize::MAX,
            permit_type: PERMIT_MODE,
            permit_value: 0o600,
            segid: 0,
        };
        ioctl(&fd, CMD_MAKE, &mut make).ok()?;
        (make.segid > 0).then_some(Xpmem {
            fd,
            segid: make.segid,
        })
    }

    /// The segment id others use to reach this process's memory.
    pub fn segid(&self) -> i64 {
        self.segid
    }

    /// Access to the memory of the process that published `segid`.
    pub fn get(&self, segid: i64) -> Option<i64> {
        let mut get = CmdGet {
            segid,
            flags: RDONLY,
            permit_type: PERMIT_MODE,
            permit_value: 0,
            apid: 0,
        };
        ioctl(&self.fd, CMD_GET, &mut get).ok()?;
        (get.apid > 0).then_some(get.apid)
    }

    /// Copies `dst.len()` bytes at address `src` of the process behind `apid`.
    ///
    /// # Errors
    /// The OS error of attach or detach.
    pub fn read(&self, apid: i64, src: u64, dst: &mut [u8]) -> std::io::Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let page = 4096u64;
        let start = src & !(page - 1);
        let end = (src + dst.len() as u64).div_ceil(page) * page;
        let mut attach = CmdAttach {
            apid,
            offset: start as i64,
            size: (end - start) as usize,
            vaddr: 0,
            fd: self.fd.as_raw_fd(),
            flags: 0,
        };
        ioctl(&self.fd, CMD_ATTACH, &mut attach)?;
        let base = attach.vaddr as *const u8;
        // SAFETY: the attach mapped [start, end) of the peer at `base`; the message
        // lies inside it, and the sender keeps it unchanged until our FIN.
        unsafe {
            std::ptr::copy_nonoverlapping(
                base.add((src - start) as usize),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        let mut detach = CmdDetach {
            vaddr: attach.vaddr,
        };
        ioctl(&self.fd, CMD_DETACH, &mut detach).map(|_| ())
    }

    /// Gives up access obtained with [`get`](Self::get).
    pub fn release(&self, apid: i64) {
        let _ = ioctl(&self.fd, CMD_RELEASE, &mut CmdId { id: apid });
    }
}

impl Drop for Xpmem {
    fn drop(&mut self) {
        let _ = ioctl(&self.fd, CMD_REMOVE, &mut CmdId { id: self.segid });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_and_layouts_match_the_module_interface() {
        assert_eq!(
            (CMD_VERSION, CMD_MAKE, CMD_ATTACH, CMD_DETACH),
            (0x7800, 0x7801, 0x7805, 0x7806)
        );
        assert_eq!(std::mem::size_of::<CmdMake>(), 40);
        assert_eq!(std::mem::size_of::<CmdGet>(), 32);
        assert_eq!(std::mem::size_of::<CmdAttach>(), 40);
        assert_eq!(std::mem::offset_of!(CmdAttach, fd), 32);
    }

    #[test]
    fn detection_matches_the_device() {
        let present = std::path::Path::new("/dev/xpmem").exists();
        let x = Xpmem::open();
        if !present {
            assert!(x.is_none(), "no device, no xpmem");
        }
    }
}
