//! `MPI_Pack_external`, `MPI_Unpack_external`, `MPI_Pack_external_size` and their
//! large-count forms (MPI 4.1 §5.2.3): packing in the portable "external32" data
//! representation (§14.5.2; the conversions are `external32`'s), the only one taken.
//!
//! Packing packs the items natively as `MPI_Pack` does (the type map's order, gaps
//! skipped; no copy for a contiguous type), then converts the packed bytes value by
//! value along the type's basic types ([`ext32_typemap`](crate::ext32_typemap));
//! unpacking converts into a native packed buffer (or straight into a contiguous
//! receive buffer) and unpacks that, leaving the gaps untouched. Positions and sizes
//! are bytes of the external32 buffer. A buffer too small for the data is
//! `MPI_ERR_TRUNCATE`, as `MPI_Pack`'s; another data representation than
//! "external32", a negative size or position are `MPI_ERR_ARG`; a type with a basic
//! type of no external32 form, or one made by a constructor not recorded, is
//! `MPI_ERR_TYPE`. Errors go to the handler of the objectless calls.

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;
use crate::count_c::MpiCount;
use crate::error::{Fail, R};
use crate::ext32_typemap::{ext_len, from_external, seq_of, to_external};
use crate::state::{call, Lib, NO_OBJECT};
use crate::typemap::Buffer;
use crate::util::{bytes, bytes_mut, count_arg, out, read_cstr};

/// The one data representation these calls take.
const EXTERNAL32: &str = "external32";

/// Checks that `datarep` is "external32".
///
/// # Safety
/// `datarep` is null or a NUL-terminated string.
unsafe fn check_datarep(datarep: *const c_char) -> R<()> {
    // SAFETY: the caller's contract.
    let rep = unsafe { read_cstr(datarep) }?;
    if rep == EXTERNAL32 {
        return Ok(());
    }
    Err(Fail::new(
        MPI_ERR_ARG,
        format!("data representation {rep:?} is not supported: only \"{EXTERNAL32}\" is"),
    ))
}

/// A non-negative byte size or position argument.
fn bytes_arg(v: i64, what: &str) -> R<usize> {
    usize::try_from(v).map_err(|_| Fail::new(MPI_ERR_ARG, format!("a negative {what} ({v})")))
}

/// The external32 bytes of `count` items of `dt` (checked to be a committed datatype).
fn size_of(lib: &Lib, count: i64, dt: Handle) -> R<usize> {
    lib.buffer_of(count, dt)?;
    let n = count_arg(count)?;
    if n == 0 {
        return Ok(0);
    }
    ext_len(&seq_of(lib, dt, n)?)
}

/// Packs `incount` items of `dt` at `inbuf` in external32 into `outbuf` (`outsize`
/// bytes) at byte `at`: the position after them.
///
/// # Safety
/// MPI's contract: `inbuf` holds the items, `outbuf` `outsize` bytes.
unsafe fn pack(
    lib: &Lib,
    inbuf: *const c_void,
    incount: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    at: i64,
) -> R<i64> {
    let buffer = lib.buffer_of(incount, dt)?;
    let (at, room) = (bytes_arg(at, "position")?, bytes_arg(outsize, "outsize")?);
    let count = count_arg(incount)?;
    if count == 0 {
        return Ok(at as i64);
    }
    let seq = seq_of(lib, dt, count)?;
    let n = ext_len(&seq)?;
    if at.checked_add(n).is_none_or(|end| end > room) {
        return Err(Fail::new(
            MPI_ERR_TRUNCATE,
            format!("{n} bytes of external32 data do not fit at {at} of {room}"),
        ));
    }
    // SAFETY: MPI's contract: `outbuf` holds `outsize` bytes, and `at + n` is within.
    let dst = unsafe { bytes_mut(outbuf.cast::<u8>().wrapping_add(at).cast(), n) }?;
    match &buffer {
        Buffer::Contig(len) => {
            // SAFETY: MPI's contract: `inbuf` holds the items, contiguous.
            to_external(&seq, unsafe { bytes(inbuf, *len) }?, dst)?
        }
        Buffer::Packed { .. } => {
            // SAFETY: MPI's contract: `inbuf` holds the items.
            let native = unsafe { buffer.copy_of(inbuf) }?;
            to_external(&seq, &native, dst)?
        }
    }
    Ok((at + n) as i64)
}

/// Unpacks `outcount` items of `dt` into `outbuf` from the external32 data in `inbuf`
/// (`insize` bytes) at byte `at`: the position after them.
///
/// # Safety
/// MPI's contract: `inbuf` holds `insize` bytes, `outbuf` room for the items.
unsafe fn unpack(
    lib: &Lib,
    inbuf: *const c_void,
    insize: i64,
    at: i64,
    outbuf: *mut c_void,
    outcount: i64,
    dt: Handle,
) -> R<i64> {
    let buffer = lib.buffer_of(outcount, dt)?;
    let (at, size) = (bytes_arg(at, "position")?, bytes_arg(insize, "insize")?);
    let count = count_arg(outcount)?;
    if count == 0 {
        return Ok(at as i64);
    }
    let seq = seq_of(lib, dt, count)?;
    let n = ext_len(&seq)?;
    if at.checked_add(n).is_none_or(|end| end > size) {
        return Err(Fail::new(
            MPI_ERR_TRUNCATE,
            format!("{n} bytes of external32 data are not there at {at} of {size}"),
        ));
    }
    // SAFETY: MPI's contract: `inbuf` holds `insize` bytes, and `at + n` is within.
    let src = unsafe { bytes(inbuf.cast::<u8>().wrapping_add(at).cast(), n) }?;
    match buffer {
        Buffer::Contig(len) => {
            // SAFETY: MPI's contract: `outbuf` holds the items, contiguous.
            from_external(&seq, src, unsafe { bytes_mut(outbuf, len) }?)?
        }
        Buffer::Packed { layout, count, len } => {
            let mut native = vec![0u8; len];
            from_external(&seq, src, &mut native)?;
            // SAFETY: MPI's contract: `outbuf` holds room for the items.
            unsafe { crate::typemap::unpack(&layout, &native, outbuf.cast(), count) }
        }
    }
    Ok((at + n) as i64)
}

crate::mpi_fn! {
    /// `MPI_Pack_external`: appends `incount` items of `datatype` to `outbuf` at
    /// `*position`, in external32.
    fn MPI_Pack_external / PMPI_Pack_external(
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: c_int,
        datatype: Handle,
        outbuf: *mut c_void,
        outsize: isize,
        position: *mut isize
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `datarep` is a string, `position` valid for reads
            // and writes.
            let pos = unsafe { check_datarep(datarep).and_then(|()| out(position)) }?;
            // SAFETY: MPI's contract for the buffers.
            let end = unsafe { pack(g.lib()?, inbuf, incount.into(), datatype, outbuf, outsize as i64, *pos as i64) }?;
            *pos = end as isize;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Unpack_external`: takes `outcount` items of `datatype` from the external32
    /// data in `inbuf` at `*position`.
    fn MPI_Unpack_external / PMPI_Unpack_external(
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: isize,
        position: *mut isize,
        outbuf: *mut c_void,
        outcount: c_int,
        datatype: Handle
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: as `MPI_Pack_external`'s.
            let pos = unsafe { check_datarep(datarep).and_then(|()| out(position)) }?;
            // SAFETY: MPI's contract for the buffers.
            let end = unsafe { unpack(g.lib()?, inbuf, insize as i64, *pos as i64, outbuf, outcount.into(), datatype) }?;
            *pos = end as isize;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Pack_external_size`: the external32 bytes of `incount` items of `datatype`.
    fn MPI_Pack_external_size / PMPI_Pack_external_size(
        datarep: *const c_char,
        incount: c_int,
        datatype: Handle,
        size: *mut isize
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `datarep` is a string.
            unsafe { check_datarep(datarep) }?;
            let n = size_of(g.lib()?, incount.into(), datatype)?;
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = isize::try_from(n).map_err(|_| too_big())?;
            Ok(())
        })
    }
}

fn too_big() -> Fail {
    Fail::new(MPI_ERR_COUNT, "the external32 size overflows an MPI_Aint")
}

crate::mpi_fn! {
    /// `MPI_Pack_external_c`: `MPI_Pack_external` with `MPI_Count` count, size and
    /// position.
    fn MPI_Pack_external_c / PMPI_Pack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: MpiCount,
        datatype: Handle,
        outbuf: *mut c_void,
        outsize: MpiCount,
        position: *mut MpiCount
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: as `MPI_Pack_external`'s.
            let pos = unsafe { check_datarep(datarep).and_then(|()| out(position)) }?;
            // SAFETY: MPI's contract for the buffers.
            *pos = unsafe { pack(g.lib()?, inbuf, incount, datatype, outbuf, outsize, *pos) }?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Unpack_external_c`: `MPI_Unpack_external` with `MPI_Count` size, position
    /// and count.
    fn MPI_Unpack_external_c / PMPI_Unpack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: MpiCount,
        position: *mut MpiCount,
        outbuf: *mut c_void,
        outcount: MpiCount,
        datatype: Handle
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: as `MPI_Pack_external`'s.
            let pos = unsafe { check_datarep(datarep).and_then(|()| out(position)) }?;
            // SAFETY: MPI's contract for the buffers.
            *pos = unsafe { unpack(g.lib()?, inbuf, insize, *pos, outbuf, outcount, datatype) }?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Pack_external_size_c`: `MPI_Pack_external_size` as an `MPI_Count`.
    fn MPI_Pack_external_size_c / PMPI_Pack_external_size_c(
        datarep: *const c_char,
        incount: MpiCount,
        datatype: Handle,
        size: *mut MpiCount
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `datarep` is a string.
            unsafe { check_datarep(datarep) }?;
            let n = size_of(g.lib()?, incount, datatype)?;
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = MpiCount::try_from(n).map_err(|_| too_big())?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_external32_is_taken() {
        // SAFETY: NUL-terminated literals.
        unsafe {
            assert!(check_datarep(c"external32".as_ptr()).is_ok());
            let e = check_datarep(c"native".as_ptr()).unwrap_err();
            assert_eq!(e.class, MPI_ERR_ARG);
            assert_eq!(
                check_datarep(std::ptr::null()).unwrap_err().class,
                MPI_ERR_ARG
            );
        }
        assert_eq!(bytes_arg(-1, "position").unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(bytes_arg(7, "position").unwrap(), 7);
    }
}
