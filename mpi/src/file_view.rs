//! File views and individual file pointers (MPI 4.1 §14.3, §14.4.3): `MPI_File_set_view`,
//! `get_view`, `get_type_extent`, `seek`, `get_position`, `get_byte_offset`.
//!
//! A view is a displacement, an etype and a filetype: the file from the displacement is
//! tiled with copies of the filetype, one extent apart, and the bytes the view sees are
//! the filetype's pieces (its `typemap::Layout`) in order, tile after tile: the view's
//! *stream*. Positions (offsets, pointers) count etypes of that stream; [`View::runs`]
//! turns a stretch of it into the file's byte ranges. Only the `native` data
//! representation exists. The view keeps copies of the program's derived types (made
//! by `MPI_Type_dup`), so the program may free its own after `MPI_File_set_view`.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::file::{entry, file_call, file_size, MPI_MODE_SEQUENTIAL};
use crate::state::{call_nested, Guard};
use crate::typemap::{describe, Layout};
use crate::util::{out, read_cstr, write_str};

/// `MPI_BYTE` (the ABI's value): the default view's etype and filetype.
const MPI_BYTE: Handle = 0x247;
/// `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END` (the ABI's values).
const MPI_SEEK_CUR: c_int = 601;
const MPI_SEEK_END: c_int = 602;
const MPI_SEEK_SET: c_int = 603;

/// Where a seek by `offset` etypes from `whence` lands, the pointer at `current` and
/// the view's end of file given by `end` (asked for `MPI_SEEK_END` only):
/// `MPI_ERR_ARG` for another `whence` or a place before the view's start. The
/// individual pointer's `MPI_File_seek` and the shared one's `MPI_File_seek_shared`.
pub(crate) fn seek_target(
    whence: c_int,
    offset: i64,
    current: u64,
    end: impl FnOnce() -> R<u64>,
) -> R<u64> {
    let from = match whence {
        MPI_SEEK_SET => 0,
        MPI_SEEK_CUR => i128::from(current),
        MPI_SEEK_END => i128::from(end()?),
        _ => return Err(Fail::new(MPI_ERR_ARG, format!("whence {whence}"))),
    };
    u64::try_from(from + i128::from(offset))
        .map_err(|_| Fail::new(MPI_ERR_ARG, "a seek to before the start of the view"))
}
/// `MPI_ERR_UNSUPPORTED_DATAREP`.
const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 57;

/// A file's view.
pub(crate) struct View {
    pub disp: u64,
    /// The etype and filetype `MPI_File_get_view` describes: a predefined handle, or
    /// the view's own duplicate of the program's type.
    etype: Handle,
    filetype: Handle,
    /// The etype's size in bytes.
    pub es: usize,
    /// The filetype's pieces and extent.
    layout: Arc<Layout>,
    /// The filetype's data bytes per tile.
    tsize: u64,
}

fn ioff(v: u64) -> i128 {
    v as i128
}

impl View {
    /// The view a file is opened with: bytes from offset 0.
    pub fn bytes() -> View {
        View {
            disp: 0,
            etype: MPI_BYTE,
            filetype: MPI_BYTE,
            es: 1,
            layout: Arc::new(Layout {
                segs: vec![(0, 1)],
                lb: 0,
                extent: 1,
                true_lb: 0,
                true_ub: 1,
                align: 1,
            }),
            tsize: 1,
        }
    }

    /// Whether each tile's data is the whole tile (the file seen from `disp` on).
    fn dense(&self) -> bool {
        self.layout.segs == [(0, self.tsize as usize)] && self.layout.extent as u64 == self.tsize
    }

    /// The file byte ranges of `n` bytes of the stream from byte `p`, adjacent ones
    /// merged, in stream order.
    pub fn runs(&self, p: u64, n: usize) -> R<Vec<(u64, usize)>> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        if self.dense() {
            let at = self.disp.checked_add(p).ok_or_else(too_far)?;
            out.push((at, n));
            return Ok(out);
        }
        let (mut tile, mut within, mut left) = (p / self.tsize, p % self.tsize, n as u64);
        while left > 0 {
            let base = ioff(self.disp) + ioff(tile) * self.layout.extent as i128;
            for &(o, l) in &self.layout.segs {
                let l = l as u64;
                if within >= l {
                    within -= l;
                    continue;
                }
                let take = (l - within).min(left);
                let at = u64::try_from(base + o as i128 + ioff(within)).map_err(|_| too_far())?;
                match out.last_mut() {
                    Some((po, pl)) if *po + *pl as u64 == at => *pl += take as usize,
                    _ => out.push((at, take as usize)),
                }
                within = 0;
                left -= take;
                if left == 0 {
                    break;
                }
            }
            tile += 1;
        }
        Ok(out)
    }

    /// The file byte of view position `off` (etypes).
    fn byte_offset(&self, off: u64) -> R<u64> {
        let p = off.checked_mul(self.es as u64).ok_or_else(too_far)?;
        let (tile, mut within) = (p / self.tsize, p % self.tsize);
        let base = ioff(self.disp) + ioff(tile) * self.layout.extent as i128;
        for &(o, l) in &self.layout.segs {
            if within < l as u64 {
                return u64::try_from(base + o as i128 + ioff(within)).map_err(|_| too_far());
            }
            within -= l as u64;
        }
        Err(too_far())
    }

    /// The view position (etypes, rounded up) of the end of a file of `size` bytes:
    /// how much of the stream lies below it.
    pub fn eof_pos(&self, size: u64) -> R<u64> {
        if size <= self.disp {
            return Ok(0);
        }
        let rel = ioff(size - self.disp);
        let (ext, tub, tlb) = (
            self.layout.extent as i128,
            self.layout.true_ub as i128,
            self.layout.true_lb as i128,
        );
        // Tiles wholly below the end, then the few it cuts.
        let mut tile = if rel >= tub { (rel - tub) / ext + 1 } else { 0 };
        let mut bytes = tile * ioff(self.tsize);
        while tile * ext + tlb < rel {
            for &(o, l) in &self.layout.segs {
                let start = tile * ext + o as i128;
                bytes += (rel - start).clamp(0, l as i128);
            }
            tile += 1;
        }
        let es = self.es as i128;
        u64::try_from((bytes + es - 1) / es).map_err(|_| too_far())
    }

    /// Frees the view's duplicates of the program's types.
    pub fn release(&self, g: &mut Guard) {
        for h in [self.etype, self.filetype] {
            if crate::datatype::basic_entry(h).is_none() {
                let mut t = h;
                // SAFETY: `t` is a local the call reads and writes.
                let _ = call_nested(g, || unsafe { crate::datatype::PMPI_Type_free(&mut t) });
            }
        }
    }
}

#[cold]
fn too_far() -> Fail {
    Fail::new(MPI_ERR_ARG, "a file offset beyond what a file can hold")
}

/// The view's own handle for type `h`: `h` when predefined, else a duplicate.
fn keep_type(g: &mut Guard, h: Handle) -> R<Handle> {
    if crate::datatype::basic_entry(h).is_some() {
        return Ok(h);
    }
    let mut d = MPI_DATATYPE_NULL;
    // SAFETY: `d` is a local the call writes.
    call_nested(g, || unsafe { crate::typemap::PMPI_Type_dup(h, &mut d) })?;
    Ok(d)
}

/// Checks the view's types; `(etype size, filetype layout, filetype size)`.
fn view_types(g: &mut Guard, etype: Handle, filetype: Handle) -> R<(usize, Layout, u64)> {
    let lib = g.lib()?;
    let (et, _) = describe(lib, etype)?;
    let (ft, fl) = describe(lib, filetype)?;
    if !et.committed || !ft.committed {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "an etype or filetype not committed",
        ));
    }
    if et.size == 0 || ft.size == 0 || ft.size % et.size != 0 || fl.extent <= 0 {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "the filetype must hold a positive whole number of etypes, in a positive extent",
        ));
    }
    if fl.segs.iter().any(|&(o, _)| o < 0) {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "a filetype with a negative displacement",
        ));
    }
    Ok((et.size, fl, ft.size as u64))
}

crate::mpi_fn! {
    /// `MPI_File_set_view`: collective; the pointers go back to 0; `native` only;
    /// `info` not read.
    fn MPI_File_set_view / PMPI_File_set_view(
        fh: Handle,
        disp: i64,
        etype: Handle,
        filetype: Handle,
        datarep: *const c_char,
        _info: Handle
    ) {
        file_call(fh, |g| {
            // SAFETY: MPI's contract: `datarep` is a C string.
            let rep = unsafe { read_cstr(datarep) }?;
            let e = entry(g.lib()?, fh)?;
            let sequential = e.amode & MPI_MODE_SEQUENTIAL != 0;
            if rep != "native" {
                return Err(Fail::new(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    format!("data representation {rep:?}: only \"native\" is supported"),
                ));
            }
            if sequential {
                return Err(Fail::new(
                    MPI_ERR_UNSUPPORTED_OPERATION,
                    "views of files opened MPI_MODE_SEQUENTIAL",
                ));
            }
            let disp = u64::try_from(disp)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("displacement {disp}: negative")))?;
            let (es, layout, tsize) = view_types(g, etype, filetype)?;
            let e = entry(g.lib()?, fh)?;
            let (comm, path) = (e.comm.clone(), e.path.clone());
            g.unlocked(|| -> R<()> {
                comm.barrier()?;
                let mut class = 0;
                if comm.rank() == 0 {
                    class = crate::file_shared::reset(&path, 0).err().map_or(0, |f| f.class);
                }
                match crate::file::agree(&comm, class)? {
                    0 => Ok(()),
                    c => Err(crate::file::elsewhere(c, "the shared file pointer's reset")),
                }
            })?;
            let etype = keep_type(g, etype)?;
            let filetype = keep_type(g, filetype)?;
            let view = View { disp, etype, filetype, es, layout: Arc::new(layout), tsize };
            let e = entry(g.lib()?, fh)?;
            let old = std::mem::replace(&mut e.view, view);
            e.pos = 0;
            old.release(g);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_view`: derived types come back as new types the program frees.
    fn MPI_File_get_view / PMPI_File_get_view(
        fh: Handle,
        disp: *mut i64,
        etype: *mut Handle,
        filetype: *mut Handle,
        datarep: *mut c_char
    ) {
        file_call(fh, |g| {
            let v = &entry(g.lib()?, fh)?.view;
            let (d, et, ft) = (v.disp, v.etype, v.filetype);
            let (et, ft) = (keep_type(g, et)?, keep_type(g, ft)?);
            // SAFETY: MPI's contract: the four are valid for writes (`datarep` of
            // MPI_MAX_DATAREP_STRING bytes).
            unsafe {
                *out(disp)? = d as i64;
                *out(etype)? = et;
                *out(filetype)? = ft;
                write_str("native", datarep, 128, std::ptr::null_mut())?;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_type_extent`: a type's extent in the file (`native`: its extent).
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent(
        fh: Handle,
        datatype: Handle,
        extent: *mut isize
    ) {
        file_call(fh, |g| {
            let lib = g.lib()?;
            entry(lib, fh)?;
            let x = crate::typemap::extent_of(lib, datatype)?;
            // SAFETY: MPI's contract: `extent` is valid for a write.
            *unsafe { out(extent) }? = x;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_seek`: moves the individual pointer (etypes of the view).
    fn MPI_File_seek / PMPI_File_seek(fh: Handle, offset: i64, whence: c_int) {
        file_call(fh, |g| {
            let e = entry(g.lib()?, fh)?;
            e.not_sequential()?;
            e.pos = seek_target(whence, offset, e.pos, || e.view.eof_pos(file_size(e)?))?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_position`: the individual pointer (etypes of the view).
    fn MPI_File_get_position / PMPI_File_get_position(fh: Handle, offset: *mut i64) {
        file_call(fh, |g| {
            let e = entry(g.lib()?, fh)?;
            e.not_sequential()?;
            let p = e.pos;
            // SAFETY: MPI's contract: `offset` is valid for a write.
            *unsafe { out(offset) }? = p as i64;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_File_get_byte_offset`: the file byte of view position `offset`.
    fn MPI_File_get_byte_offset / PMPI_File_get_byte_offset(fh: Handle, offset: i64, disp: *mut i64) {
        file_call(fh, |g| {
            let e = entry(g.lib()?, fh)?;
            let off = u64::try_from(offset)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("offset {offset}: negative")))?;
            let b = e.view.byte_offset(off)?;
            // SAFETY: MPI's contract: `disp` is valid for a write.
            *unsafe { out(disp) }? = b as i64;
            Ok(())
        })
    }
}
