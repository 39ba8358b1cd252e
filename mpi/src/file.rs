//! Files (MPI 4.1 chapter 14, I/O) over POSIX files: `MPI_File_open`, `close`,
//! `delete`, `get_size`, `set_size`, `preallocate`, `get_amode`, `get_group`, `sync`,
//! `set_info`, `get_info`, the file error handlers and the handle conversions. Views
//! and pointers are in `file_view`, the data access calls in `file_io`.
//!
//! Every member of the file's communicator opens the file itself (rank 0 first, so a
//! file it creates exists before the others open it); the data access calls are
//! `pread`/`pwrite` at the byte ranges the view maps to. The file keeps a runtime
//! communicator of its own (a dup of the one it was opened on) for its collective
//! steps, so they never meet the program's collectives. Consistency is POSIX's: a
//! write is in the file when it returns, seen by every process that reads after it
//! (`MPI_File_sync` and a barrier order them); atomic mode is not offered.
//!
//! Errors of a call on a file go to the file's error handler; those of `MPI_File_open`,
//! `MPI_File_delete` and of calls naming no valid file go to the handler of
//! `MPI_FILE_NULL`. Both start as `MPI_ERRORS_RETURN` (MPI 4.1 §9.3).

use std::ffi::{c_char, c_int};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use sf::comm::ReduceOp;
use sf::Comm;

use crate::consts::*;
use crate::error::{self, Fail, R};
use crate::file_view::View;
use crate::state::{call, ErrFn, Guard, Handler, Lib, Map, NO_OBJECT};
use crate::util::{out, read_cstr};

/// `MPI_FILE_NULL` (the ABI's value).
pub(crate) const MPI_FILE_NULL: Handle = 0x118;
/// The I/O error classes (the ABI's values).
pub(crate) const MPI_ERR_ACCESS: c_int = 20;
pub(crate) const MPI_ERR_AMODE: c_int = 21;
pub(crate) const MPI_ERR_BAD_FILE: c_int = 23;
pub(crate) const MPI_ERR_FILE_EXISTS: c_int = 28;
pub(crate) const MPI_ERR_FILE: c_int = 30;
pub(crate) const MPI_ERR_IO: c_int = 35;
pub(crate) const MPI_ERR_NO_SPACE: c_int = 41;
pub(crate) const MPI_ERR_NO_SUCH_FILE: c_int = 42;
pub(crate) const MPI_ERR_QUOTA: c_int = 45;
pub(crate) const MPI_ERR_READ_ONLY: c_int = 46;
/// The access modes (the MPI 5.0 ABI's values: powers of two, none shared with the
/// windows' `MPI_MODE_NOCHECK` and kin, which start at 1024).
pub(crate) const MPI_MODE_APPEND: c_int = 1;
pub(crate) const MPI_MODE_CREATE: c_int = 2;
pub(crate) const MPI_MODE_DELETE_ON_CLOSE: c_int = 4;
pub(crate) const MPI_MODE_EXCL: c_int = 8;
pub(crate) const MPI_MODE_RDONLY: c_int = 16;
pub(crate) const MPI_MODE_RDWR: c_int = 32;
pub(crate) const MPI_MODE_SEQUENTIAL: c_int = 64;
pub(crate) const MPI_MODE_UNIQUE_OPEN: c_int = 128;
pub(crate) const MPI_MODE_WRONLY: c_int = 256;
const ALL_MODES: c_int = MPI_MODE_APPEND
    | MPI_MODE_CREATE
    | MPI_MODE_DELETE_ON_CLOSE
    | MPI_MODE_EXCL
    | MPI_MODE_RDONLY
    | MPI_MODE_RDWR
    | MPI_MODE_SEQUENTIAL
    | MPI_MODE_UNIQUE_OPEN
    | MPI_MODE_WRONLY;

/// An open file.
pub(crate) struct FileEntry {
    pub file: Arc<File>,
    /// The file's own runtime communicator (a dup of the one it was opened on).
    pub comm: Comm,
    pub path: std::path::PathBuf,
    pub amode: c_int,
    /// The world ranks of its group (`MPI_File_get_group`).
    group: Vec<u32>,
    pub errhandler: Handle,
    pub view: View,
    /// The individual file pointer, in etypes of the view.
    pub pos: u64,
    /// Atomic mode (`MPI_File_set_atomicity`): each access holds a lock on the file.
    pub atomic: bool,
    /// The split collective begun and not ended yet (`file_split.rs`): its name and
    /// the bytes it moved.
    pub split: Option<(&'static str, usize)>,
}

impl FileEntry {
    /// Refuses a read from a file opened write-only.
    pub fn readable(&self) -> R<()> {
        if self.amode & MPI_MODE_WRONLY != 0 {
            return Err(Fail::new(
                MPI_ERR_ACCESS,
                "a read from a file opened MPI_MODE_WRONLY",
            ));
        }
        Ok(())
    }

    /// Refuses a write to a file opened read-only.
    pub fn writable(&self) -> R<()> {
        if self.amode & MPI_MODE_RDONLY != 0 {
            return Err(Fail::new(
                MPI_ERR_READ_ONLY,
                "a write to a file opened MPI_MODE_RDONLY",
            ));
        }
        Ok(())
    }

    /// Refuses explicit offsets and individual pointers on a file opened
    /// `MPI_MODE_SEQUENTIAL` (MPI 4.1 §14.2.1: only shared pointers).
    pub fn not_sequential(&self) -> R<()> {
        if self.amode & MPI_MODE_SEQUENTIAL != 0 {
            return Err(Fail::new(
                MPI_ERR_UNSUPPORTED_OPERATION,
                "explicit offsets and individual pointers on a file opened MPI_MODE_SEQUENTIAL",
            ));
        }
        Ok(())
    }
}

/// The open files and `MPI_FILE_NULL`'s error handler.
pub(crate) struct Files {
    pub map: Map<FileEntry>,
    /// The handler of `MPI_FILE_NULL`, which new files start with.
    pub null_errhandler: Handle,
}

impl Default for Files {
    fn default() -> Self {
        Files {
            map: Map::default(),
            null_errhandler: MPI_ERRORS_RETURN,
        }
    }
}

/// The file of handle `h`.
pub(crate) fn entry(lib: &mut Lib, h: Handle) -> R<&mut FileEntry> {
    lib.files.map.get_mut(&h).ok_or_else(|| bad_file(h))
}

#[cold]
fn bad_file(h: Handle) -> Fail {
    if h == MPI_FILE_NULL {
        Fail::new(MPI_ERR_FILE, "MPI_FILE_NULL")
    } else {
        Fail::new(MPI_ERR_FILE, format!("{h:#x} is not a file"))
    }
}

/// The class of a failed POSIX call (MPI 4.1 §14.7).
pub(crate) fn io_fail(e: &std::io::Error, what: &str) -> Fail {
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EACCES) | Some(libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::ENOSPC) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        Some(libc::EISDIR) | Some(libc::ENAMETOOLONG) | Some(libc::ENOTDIR) => MPI_ERR_BAD_FILE,
        _ => match e.kind() {
            ErrorKind::NotFound => MPI_ERR_NO_SUCH_FILE,
            ErrorKind::PermissionDenied => MPI_ERR_ACCESS,
            _ => MPI_ERR_IO,
        },
    };
    Fail::new(class, format!("{what}: {e}"))
}

/// The body of an entry point on file `fh`: [`call`]'s, with a failure handed to the
/// file's error handler, or to `MPI_FILE_NULL`'s when `fh` is not an open file.
pub(crate) fn file_call(fh: Handle, f: impl FnOnce(&mut Guard) -> R<()>) -> c_int {
    let Some(mut guard) = Guard::lock() else {
        return crate::state::wrong_thread();
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut guard)));
    guard.run_deferred();
    let fail = match outcome {
        Ok(Ok(())) => return MPI_SUCCESS,
        Ok(Err(fail)) => fail,
        Err(_) => Fail::new(
            MPI_ERR_INTERN,
            "a bug in libsteadfast-mpi (a panic, caught)",
        ),
    };
    let found = guard.lib().ok().map(|lib| {
        let (obj, h) = match lib.files.map.get(&fh) {
            Some(e) => (fh, e.errhandler),
            None => (MPI_FILE_NULL, lib.files.null_errhandler),
        };
        (
            obj,
            Handler::of(h, lib.errhandlers.get(&h).copied()),
            lib.ft,
        )
    });
    match found {
        Some((obj, handler, ft)) => {
            // A handler may call MPI: the lock goes first.
            drop(guard);
            error::raise(obj, fail, handler, ft)
        }
        None => crate::state::failed(guard, NO_OBJECT, fail),
    }
}

/// Checks an access mode (MPI 4.1 §14.2.1).
fn amode_arg(amode: c_int) -> R<()> {
    let bad = |why: &str| Err(Fail::new(MPI_ERR_AMODE, format!("amode {amode:#x}: {why}")));
    if amode & !ALL_MODES != 0 {
        return bad("bits that name no access mode");
    }
    let kinds = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY];
    if kinds.iter().filter(|&&k| amode & k != 0).count() != 1 {
        return bad("not exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY");
    }
    if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        return bad("MPI_MODE_RDONLY with MPI_MODE_CREATE or MPI_MODE_EXCL");
    }
    if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        return bad("MPI_MODE_RDWR with MPI_MODE_SEQUENTIAL");
    }
    Ok(())
}

/// Opens `path` as `amode` says; `create` lets it create the file (rank 0).
fn open_posix(path: &str, amode: c_int, create: bool) -> R<File> {
    let mut o = OpenOptions::new();
    o.read(amode & MPI_MODE_WRONLY == 0);
    o.write(amode & MPI_MODE_RDONLY == 0);
    if create && amode & MPI_MODE_CREATE != 0 {
        if amode & MPI_MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    o.mode(0o644);
    o.open(path)
        .map_err(|e| io_fail(&e, &format!("open {path}")))
}

/// Every member's outcome of one step: the largest error class (0: all succeeded), so
/// that all members fail or succeed together.
pub(crate) fn agree(comm: &Comm, mine: c_int) -> R<c_int> {
    let mut v = [mine.max(0) as u64];
    comm.allreduce(&mut v, ReduceOp::Max)?;
    Ok(v[0] as c_int)
}

/// The error of a step that failed at another member.
pub(crate) fn elsewhere(class: c_int, what: &str) -> Fail {
    Fail::new(
        class,
        format!("{what} failed at another member of the file's group"),
    )
}

/// What `MPI_File_open` does without the lock: rank 0 opens (creating) first, then the
/// others; every member gets the same outcome.
fn open_all(fc: &Comm, path: &str, amode: c_int) -> R<File> {
    let first = if fc.rank() == 0 {
        let opened = open_posix(path, amode, true);
        if let Ok(f) = &opened {
            // A shared pointer left by an earlier open (a crash) goes; APPEND starts
            // it at the end. A failure here (a read-only directory) leaves it absent.
            let end = f.metadata().map_or(0, |m| m.len());
            let at = if amode & MPI_MODE_APPEND != 0 { end } else { 0 };
            let _ = crate::file_shared::reset(std::path::Path::new(path), at);
        }
        Some(opened)
    } else {
        None
    };
    let class = first
        .as_ref()
        .map_or(0, |r| r.as_ref().err().map_or(0, |f| f.class));
    let seen = agree(fc, class)?;
    let mine = match first {
        Some(r) => r,
        None if seen != 0 => Err(elsewhere(seen, "MPI_File_open")),
        None => open_posix(path, amode, false),
    };
    let class = mine.as_ref().err().map_or(0, |f| f.class);
    let seen = agree(fc, class)?;
    match mine {
        Ok(_) if seen != 0 => Err(elsewhere(seen, "MPI_File_open")),
        other => other,
    }
}

crate::mpi_fn! {
    /// `MPI_File_open`: collective over the intra-communicator `comm` (every member
    /// names the same file and mode); `info` not read.
    fn MPI_File_open / PMPI_File_open(
        comm: Handle,
        filename: *const c_char,
        amode: c_int,
        _info: Handle,
        fh: *mut Handle
    ) {
        file_call(MPI_FILE_NULL, |g| {
            // SAFETY: MPI's contract: `fh` is valid for a write.
            let slot = unsafe { out(fh) }?;
            *slot = MPI_FILE_NULL;
            // SAFETY: MPI's contract: `filename` is a C string.
            let path = unsafe { read_cstr(filename) }?;
            amode_arg(amode)?;
            let lib = g.lib()?;
            let (p2p, _) = lib.intra(comm)?;
            let group = crate::comm::group_of(lib, comm)?;
            let errhandler = lib.files.null_errhandler;
            let (fc, file) = g.unlocked(|| -> R<(Comm, File)> {
                let fc = p2p.dup()?;
                match open_all(&fc, &path, amode) {
                    Ok(file) => Ok((fc, file)),
                    Err(e) => {
                        let _ = fc.free();
                        Err(e)
                    }
                }
            })?;
            let mut e = FileEntry {
                file: Arc::new(file),
                comm: fc,
                path: path.into(),
                amode,
                group,
                errhandler,
                view: View::bytes(),
                pos: 0,
                atomic: false,
                split: None,
            };
            if amode & MPI_MODE_APPEND != 0 {
                e.pos = e.view.eof_pos(file_size(&e)?)?;
            }
            let lib = g.lib()?;
            let h = lib.new_handle();
            lib.files.map.insert(h, e);
            *slot = h;
            Ok(())
        })
    }
}

/// The file's size in bytes.
pub(crate) fn file_size(e: &FileEntry) -> R<u64> {
    Ok(e.file
        .metadata()
        .map_err(|err| io_fail(&err, "fstat"))?
        .len())
}

crate::mpi_fn! {
    /// `MPI_File_close`: collective; `*fh` becomes `MPI_FILE_NULL`; a file opened
    /// `MPI_MODE_DELETE_ON_CLOSE` is removed by rank 0 once every member closed it.
    fn MPI_File_close / PMPI_File_close(fh: *mut Handle) {
        // SAFETY: MPI's contract: `fh` is valid for reads and writes.
        let h = unsafe { fh.as_ref() }.copied().unwrap_or(MPI_FILE_NULL);
        file_call(h, |g| {
            // SAFETY: as above.
            let slot = unsafe { out(fh) }?;
            entry(g.lib()?, h)?;
            let e = g.lib()?.files.map.remove(&h).ok_or_else(|| bad_file(h))?;
            *slot = MPI_FILE_NULL;
            let FileEntry { file, comm, path, amode, view, .. } = e;
            view.release(g);
            drop(file);
            g.unlocked(|| -> R<()> {
                comm.barrier()?;
                let mut class = 0;
                if comm.rank() == 0 {
                    let _ = crate::file_shared::reset(&path, 0);
                }
                if amode & MPI_MODE_DELETE_ON_CLOSE != 0 && comm.rank() == 0 {
                    if let Err(err) = std::fs::remove_file(&path) {
                        class = io_fail(&err, "unlink").class;
                    }
                }
                let seen = agree(&comm, class);
                let _ = comm.free();
                match seen? {
                    0 => Ok(()),
                    c => Err(elsewhere(c, "the removal of a MPI_MODE_DELETE_ON_CLOSE file")),
                }
            })
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_delete`: removes the file (not collective); `info` not read.
    fn MPI_File_delete / PMPI_File_delete(filename: *const c_char, _info: Handle) {
        file_call(MPI_FILE_NULL, |_| {
            // SAFETY: MPI's contract: `filename` is a C string.
            let path = unsafe { read_cstr(filename) }?;
            std::fs::remove_file(&path).map_err(|e| io_fail(&e, &format!("unlink {path}")))
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_size`: the file's size in bytes.
    fn MPI_File_get_size / PMPI_File_get_size(fh: Handle, size: *mut i64) {
        file_call(fh, |g| {
            let n = file_size(entry(g.lib()?, fh)?)?;
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = n as i64;
            Ok(())
        })
    }
}

/// The body of `MPI_File_set_size` and `MPI_File_preallocate`: collective; rank 0 sets
/// the length (`grow_only`: only when it is shorter) between two barriers.
fn resize(g: &mut Guard, fh: Handle, size: i64, grow_only: bool) -> R<()> {
    let e = entry(g.lib()?, fh)?;
    e.writable()?;
    let n = u64::try_from(size)
        .map_err(|_| Fail::new(MPI_ERR_ARG, format!("size {size}: negative")))?;
    let (file, comm) = (Arc::clone(&e.file), e.comm.clone());
    g.unlocked(|| -> R<()> {
        comm.barrier()?;
        let mut class = 0;
        if comm.rank() == 0 {
            let now = file.metadata().map_err(|err| io_fail(&err, "fstat"))?.len();
            if !(grow_only && now >= n) {
                if let Err(err) = file.set_len(n) {
                    class = io_fail(&err, "ftruncate").class;
                }
            }
        }
        match agree(&comm, class)? {
            0 => Ok(()),
            c => Err(elsewhere(c, "the resize")),
        }
    })
}

crate::mpi_fn! {
    /// `MPI_File_set_size`: collective; truncates or extends the file to `size` bytes.
    fn MPI_File_set_size / PMPI_File_set_size(fh: Handle, size: i64) {
        file_call(fh, |g| resize(g, fh, size, false))
    }
}

crate::mpi_fn! {
    /// `MPI_File_preallocate`: collective; extends the file to at least `size` bytes.
    fn MPI_File_preallocate / PMPI_File_preallocate(fh: Handle, size: i64) {
        file_call(fh, |g| resize(g, fh, size, true))
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_amode`.
    fn MPI_File_get_amode / PMPI_File_get_amode(fh: Handle, amode: *mut c_int) {
        file_call(fh, |g| {
            let a = entry(g.lib()?, fh)?.amode;
            // SAFETY: MPI's contract: `amode` is valid for a write.
            *unsafe { out(amode) }? = a;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_set_atomicity`: collective, every member passing the same `flag`
    /// (checked: `MPI_ERR_ARG` at every member otherwise). In atomic mode each access
    /// holds a `flock` on the file while it moves its bytes (shared for a read,
    /// exclusive for a write: `file_io::AccessLock`), so no access sees another half
    /// done, whatever the view's runs.
    fn MPI_File_set_atomicity / PMPI_File_set_atomicity(fh: Handle, flag: c_int) {
        file_call(fh, |g| {
            let comm = entry(g.lib()?, fh)?.comm.clone();
            let on = flag != 0;
            let mut v = [u64::from(on), u64::from(!on)];
            g.unlocked(|| comm.allreduce(&mut v, ReduceOp::Sum))?;
            if v[0] != 0 && v[1] != 0 {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    "MPI_File_set_atomicity: the members passed different flags",
                ));
            }
            entry(g.lib()?, fh)?.atomic = on;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_atomicity`: 1 in atomic mode, else 0.
    fn MPI_File_get_atomicity / PMPI_File_get_atomicity(fh: Handle, flag: *mut c_int) {
        file_call(fh, |g| {
            let on = entry(g.lib()?, fh)?.atomic;
            // SAFETY: MPI's contract: `flag` is valid for a write.
            *unsafe { out(flag) }? = c_int::from(on);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_group`: a new group of the file's members.
    fn MPI_File_get_group / PMPI_File_get_group(fh: Handle, group: *mut Handle) {
        file_call(fh, |g| {
            // SAFETY: MPI's contract: `group` is valid for a write.
            let slot = unsafe { out(group) }?;
            let lib = g.lib()?;
            let members = entry(lib, fh)?.group.clone();
            let h = lib.new_handle();
            lib.groups.insert(h, members);
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_sync`: collective; this process's writes reach the storage device,
    /// then a barrier.
    fn MPI_File_sync / PMPI_File_sync(fh: Handle) {
        file_call(fh, |g| {
            let e = entry(g.lib()?, fh)?;
            let (file, comm) = (Arc::clone(&e.file), e.comm.clone());
            g.unlocked(|| -> R<()> {
                let class = file.sync_all().map_err(|err| io_fail(&err, "fsync")).err().map_or(0, |f| f.class);
                match agree(&comm, class)? {
                    0 => Ok(()),
                    c => Err(elsewhere(c, "MPI_File_sync")),
                }
            })
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_set_info`: collective in MPI; hints accepted, none used.
    fn MPI_File_set_info / PMPI_File_set_info(fh: Handle, info: Handle) {
        file_call(fh, |g| {
            let lib = g.lib()?;
            entry(lib, fh)?;
            if info != MPI_INFO_NULL && !lib.infos.contains_key(&info) {
                return Err(Fail::new(MPI_ERR_INFO, format!("{info:#x} is not an info object")));
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_info`: a new, empty info object (no hint is used).
    fn MPI_File_get_info / PMPI_File_get_info(fh: Handle, info_used: *mut Handle) {
        file_call(fh, |g| {
            // SAFETY: MPI's contract: `info_used` is valid for a write.
            let slot = unsafe { out(info_used) }?;
            let lib = g.lib()?;
            entry(lib, fh)?;
            let h = lib.new_handle();
            lib.infos.insert(h, Vec::new());
            *slot = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_create_errhandler`: the function is kept beside the communicators'.
    fn MPI_File_create_errhandler / PMPI_File_create_errhandler(
        function: Option<ErrFn>,
        errhandler: *mut Handle
    ) {
        call(NO_OBJECT, |g| crate::comm::create_errhandler(g.lib()?, function, errhandler))
    }
}

crate::mpi_fn! {
    /// `MPI_File_set_errhandler`: on `MPI_FILE_NULL`, the handler of errors that
    /// concern no open file, which files opened later start with.
    fn MPI_File_set_errhandler / PMPI_File_set_errhandler(fh: Handle, errhandler: Handle) {
        file_call(fh, |g| {
            let lib = g.lib()?;
            crate::comm::check_errhandler(lib, errhandler)?;
            if fh == MPI_FILE_NULL {
                lib.files.null_errhandler = errhandler;
            } else {
                entry(lib, fh)?.errhandler = errhandler;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_errhandler` (of `MPI_FILE_NULL` too).
    fn MPI_File_get_errhandler / PMPI_File_get_errhandler(fh: Handle, errhandler: *mut Handle) {
        file_call(fh, |g| {
            let lib = g.lib()?;
            let h = if fh == MPI_FILE_NULL { lib.files.null_errhandler } else { entry(lib, fh)?.errhandler };
            // SAFETY: MPI's contract: `errhandler` is valid for a write.
            *unsafe { out(errhandler) }? = h;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_call_errhandler`: calls the handler of `fh` (or of `MPI_FILE_NULL`)
    /// with `errorcode`; returns `MPI_SUCCESS` once a handler that returns has run
    /// (`MPI_ERRORS_RETURN`: the code).
    fn MPI_File_call_errhandler / PMPI_File_call_errhandler(fh: Handle, errorcode: c_int) {
        let Some(mut g) = Guard::lock() else {
            return crate::state::wrong_thread();
        };
        let found = g.lib().and_then(|lib| {
            let h = if fh == MPI_FILE_NULL { lib.files.null_errhandler } else { entry(lib, fh)?.errhandler };
            Ok((Handler::of(h, lib.errhandlers.get(&h).copied()), lib.ft))
        });
        match found {
            Err(f) => crate::state::failed(g, NO_OBJECT, f),
            Ok((handler, ft)) => {
                drop(g);
                let rc = error::raise(fh, Fail::new(errorcode, "MPI_File_call_errhandler"), handler, ft);
                if matches!(handler, Handler::User(_)) { MPI_SUCCESS } else { rc }
            }
        }
    }
}
