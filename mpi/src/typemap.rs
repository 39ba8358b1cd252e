//! Derived datatypes with gaps (MPI 4.1, chapter 5): `MPI_Type_vector`,
//! `MPI_Type_create_hvector`, `MPI_Type_indexed`, `MPI_Type_create_hindexed`,
//! `MPI_Type_create_indexed_block`, `MPI_Type_create_struct`, `MPI_Type_create_resized`,
//! `MPI_Type_dup`, `MPI_Type_get_true_extent`, and `MPI_Pack` / `MPI_Unpack` /
//! `MPI_Pack_size`.
//!
//! A type whose item is not one piece from offset 0 with extent equal to its size has a
//! [`Layout`] in `Lib::layouts`: the contiguous pieces of one item (offset, length) in
//! type-map order, adjacent pieces merged, and its bounds. Its `TypeEntry` keeps the
//! packed size. The point-to-point calls pack such a type's data into a contiguous
//! buffer before sending and unpack what they received ([`Lib::buffer_of`]), and so do
//! the collectives (`coll_packed`, `coll_packed_v`, `nbc_packed`, `reduce_packed`);
//! the neighborhood collectives and persistent point-to-point requests take only
//! contiguous types (`Lib::byte_len` refuses the
//! others with `MPI_ERR_TYPE`).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::consts::*;
use crate::datatype::{basic_entry, Elem, TypeEntry};
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::type_contents as tc;
use crate::util::{count_arg, out};

/// One item of a type with gaps (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `(offset, length)` of each contiguous piece, in type-map order.
    pub segs: Vec<(isize, usize)>,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_ub: isize,
    /// The largest alignment of its basic types (a struct's extent is rounded to it).
    pub align: usize,
}

impl Layout {
    /// The layout of a contiguous type of `size` bytes and basic alignment `align`.
    fn contiguous(size: usize, align: usize) -> Layout {
        Layout {
            segs: if size > 0 {
                vec![(0, size)]
            } else {
                Vec::new()
            },
            lb: 0,
            extent: size as isize,
            true_lb: 0,
            true_ub: size as isize,
            align,
        }
    }

    /// Whether items of it lie back to back with no gap (then no layout is kept).
    fn is_plain(&self, size: usize) -> bool {
        self.lb == 0
            && self.extent == size as isize
            && (self.segs.is_empty() || self.segs == [(0, size)])
    }

    /// The pieces of `count` items from `base`, in order.
    pub(crate) fn pieces(&self, count: usize) -> impl Iterator<Item = (isize, usize)> + '_ {
        (0..count).flat_map(move |i| {
            let at = self.extent.wrapping_mul(i as isize);
            self.segs.iter().map(move |&(o, l)| (at.wrapping_add(o), l))
        })
    }
}

/// Builds a layout from items of an old type placed at byte offsets.
pub(crate) struct Builder {
    pub layout: Layout,
    pub first: bool,
}

impl Builder {
    pub(crate) fn new() -> Self {
        Builder {
            layout: Layout {
                segs: Vec::new(),
                lb: 0,
                extent: 0,
                true_lb: 0,
                true_ub: 0,
                align: 1,
            },
            first: true,
        }
    }

    /// Places one item of `old` at byte offset `at`.
    fn place(&mut self, old: &Layout, at: isize) {
        let l = &mut self.layout;
        let (lb, ub) = (at + old.lb, at + old.lb + old.extent);
        let (tlb, tub) = (at + old.true_lb, at + old.true_ub);
        if self.first {
            (l.lb, l.extent, l.true_lb, l.true_ub) = (lb, ub - lb, tlb, tub);
            self.first = false;
        } else {
            let new_lb = l.lb.min(lb);
            let new_ub = (l.lb + l.extent).max(ub);
            (l.lb, l.extent) = (new_lb, new_ub - new_lb);
            l.true_lb = l.true_lb.min(tlb);
            l.true_ub = l.true_ub.max(tub);
        }
        l.align = l.align.max(old.align);
        for &(o, len) in &old.segs {
            let o = at + o;
            match l.segs.last_mut() {
                Some((po, pl)) if *po + *pl as isize == o => *pl += len,
                _ => l.segs.push((o, len)),
            }
        }
    }
}

/// A type's entry and layout (a contiguous one's made up), for building on it.
pub(crate) fn describe(lib: &Lib, h: Handle) -> R<(TypeEntry, Layout)> {
    let t = match basic_entry(h) {
        Some(t) => t,
        None => *lib
            .types
            .get(&h)
            .ok_or_else(|| Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype")))?,
    };
    let l = match lib.layouts.get(&h) {
        Some(l) => (**l).clone(),
        None => Layout::contiguous(t.size, align_of(&t)),
    };
    Ok((t, l))
}

/// The alignment of a type's basic elements (at most 16).
fn align_of(t: &TypeEntry) -> usize {
    let each = t.size.checked_div(t.elems).unwrap_or(1);
    match t.elem {
        // C's long double (x86_64) and what holds one: 16.
        Elem::F80 | Elem::C80 | Elem::Pair(crate::datatype::PairValue::F80, _) => 16,
        // A complex number: its parts'.
        Elem::C32 => 4,
        Elem::C64 => 8,
        Elem::Pair(..) | Elem::Opaque => each.clamp(1, 16).next_power_of_two().min(8),
        _ => each.clamp(1, 8),
    }
}

/// Registers a new type from the parts placed (not committed).
pub(crate) fn register(lib: &mut Lib, b: Builder, size: usize, elem: Elem, elems: usize) -> Handle {
    let h = lib.new_handle();
    lib.types.insert(
        h,
        TypeEntry {
            size,
            elem,
            elems,
            committed: false,
        },
    );
    if !b.layout.is_plain(size) {
        lib.layouts.insert(h, Arc::new(b.layout));
    }
    h
}

/// The element kind of a type made of `parts`: theirs when they agree, else opaque
/// (moved, never reduced).
fn common_elem(parts: impl IntoIterator<Item = Elem>) -> Elem {
    let mut it = parts.into_iter();
    let Some(first) = it.next() else {
        return Elem::Byte;
    };
    if it.all(|e| e == first) {
        first
    } else {
        Elem::Opaque
    }
}

/// Reads `n` values the program passed.
///
/// # Safety
/// `p` holds `n` values when `n > 0`.
pub(crate) unsafe fn arr<'a, T>(p: *const T, n: usize, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("a null {what}")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `blocks` of `(count, byte displacement)` of `old`: the general constructor.
pub(crate) fn blocks_of(
    lib: &mut Lib,
    old: Handle,
    blocks: impl Iterator<Item = (usize, isize)>,
    newtype: *mut Handle,
) -> R<()> {
    // SAFETY: MPI's contract: `newtype` is valid for a write.
    let slot = unsafe { out(newtype) }?;
    let (t, l) = describe(lib, old)?;
    let mut b = Builder::new();
    let mut items = 0usize;
    for (count, disp) in blocks {
        for j in 0..count {
            b.place(&l, disp + l.extent * j as isize);
        }
        items += count;
    }
    let size = t
        .size
        .checked_mul(items)
        .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "type size overflows"))?;
    *slot = register(lib, b, size, t.elem, t.elems * items);
    Ok(())
}

/// A non-negative count argument of a constructor.
pub(crate) fn n_arg(c: c_int) -> R<usize> {
    count_arg(c)
}

/// `oldtype`'s extent (for displacements counted in items).
pub(crate) fn extent_of(lib: &Lib, h: Handle) -> R<isize> {
    Ok(describe(lib, h)?.1.extent)
}

crate::mpi_fn! {
    /// `MPI_Type_vector`: `count` blocks of `blocklength` items, `stride` items apart.
    fn MPI_Type_vector / PMPI_Type_vector(
        count: c_int,
        blocklength: c_int,
        stride: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let (n, bl) = (n_arg(count)?, n_arg(blocklength)?);
            let ext = extent_of(lib, oldtype)?;
            let blocks = (0..n).map(|i| (bl, i as isize * stride as isize * ext));
            blocks_of(lib, oldtype, blocks, newtype)?;
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::VECTOR, vec![count, blocklength, stride], vec![], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_hvector`: as `MPI_Type_vector`, the stride in bytes.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(
        count: c_int,
        blocklength: c_int,
        stride: isize,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let (n, bl) = (n_arg(count)?, n_arg(blocklength)?);
            let blocks = (0..n).map(|i| (bl, i as isize * stride));
            blocks_of(lib, oldtype, blocks, newtype)?;
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::HVECTOR, vec![count, blocklength], vec![stride], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_indexed`: blocks of given lengths at displacements counted in items.
    fn MPI_Type_indexed / PMPI_Type_indexed(
        count: c_int,
        blocklengths: *const c_int,
        displacements: *const c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let n = n_arg(count)?;
            // SAFETY: MPI's contract: both arrays hold `count` values.
            let (bl, d) = unsafe { (arr(blocklengths, n, "blocklengths")?, arr(displacements, n, "displacements")?) };
            let ext = extent_of(lib, oldtype)?;
            let lens = bl.iter().map(|&b| n_arg(b)).collect::<R<Vec<_>>>()?;
            let blocks = lens.into_iter().zip(d).map(|(b, &x)| (b, x as isize * ext));
            blocks_of(lib, oldtype, blocks, newtype)?;
            let ints = [&[count][..], bl, d].concat();
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::INDEXED, ints, vec![], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_hindexed`: as `MPI_Type_indexed`, displacements in bytes.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(
        count: c_int,
        blocklengths: *const c_int,
        displacements: *const isize,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let n = n_arg(count)?;
            // SAFETY: MPI's contract: both arrays hold `count` values.
            let (bl, d) = unsafe { (arr(blocklengths, n, "blocklengths")?, arr(displacements, n, "displacements")?) };
            let lens = bl.iter().map(|&b| n_arg(b)).collect::<R<Vec<_>>>()?;
            let blocks = lens.into_iter().zip(d.iter().copied());
            blocks_of(lib, oldtype, blocks, newtype)?;
            let ints = [&[count][..], bl].concat();
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::HINDEXED, ints, d.to_vec(), &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_indexed_block`: blocks of one length at displacements counted
    /// in items.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(
        count: c_int,
        blocklength: c_int,
        displacements: *const c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let (n, bl) = (n_arg(count)?, n_arg(blocklength)?);
            // SAFETY: MPI's contract: `displacements` holds `count` values.
            let d = unsafe { arr(displacements, n, "displacements") }?;
            let ext = extent_of(lib, oldtype)?;
            let blocks = d.iter().map(|&x| (bl, x as isize * ext));
            blocks_of(lib, oldtype, blocks, newtype)?;
            let ints = [&[count, blocklength][..], d].concat();
            // SAFETY: `blocks_of` wrote `*newtype`.
            unsafe { tc::record(lib, newtype, tc::INDEXED_BLOCK, ints, vec![], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_struct`: blocks of different types at byte displacements; the
    /// extent is rounded up to the largest alignment of the basic types in it.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(
        count: c_int,
        blocklengths: *const c_int,
        displacements: *const isize,
        types: *const Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let n = n_arg(count)?;
            // SAFETY: MPI's contract: the arrays hold `count` values.
            let (bl, d, ts) = unsafe {
                (arr(blocklengths, n, "blocklengths")?, arr(displacements, n, "displacements")?, arr(types, n, "types")?)
            };
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            let slot = unsafe { out(newtype) }?;
            let mut b = Builder::new();
            let (mut size, mut elems, mut kinds) = (0usize, 0usize, Vec::new());
            for i in 0..n {
                let (t, l) = describe(lib, ts[i])?;
                let count = n_arg(bl[i])?;
                for j in 0..count {
                    b.place(&l, d[i] + l.extent * j as isize);
                }
                size = t.size.checked_mul(count).and_then(|s| s.checked_add(size))
                    .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "type size overflows"))?;
                elems += t.elems * count;
                if count > 0 {
                    kinds.push(t.elem);
                }
            }
            let a = b.layout.align.max(1) as isize;
            b.layout.extent = (b.layout.extent + a - 1) / a * a;
            *slot = register(lib, b, size, common_elem(kinds), elems);
            let ints = [&[count][..], bl].concat();
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, tc::STRUCT, ints, d.to_vec(), ts) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_create_resized`: the same pieces with lower bound `lb` and extent
    /// `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(
        oldtype: Handle,
        lb: isize,
        extent: isize,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            let slot = unsafe { out(newtype) }?;
            let (t, l) = describe(lib, oldtype)?;
            let mut b = Builder::new();
            b.layout = Layout { lb, extent, ..l };
            b.first = false;
            *slot = register(lib, b, t.size, t.elem, t.elems);
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, tc::RESIZED, vec![], vec![lb, extent], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_dup`: a new handle for the same type (committed if it was).
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: Handle, newtype: *mut Handle) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            let slot = unsafe { out(newtype) }?;
            let (t, l) = describe(lib, oldtype)?;
            let h = lib.new_handle();
            lib.types.insert(h, TypeEntry { committed: true, ..t });
            if !l.is_plain(t.size) {
                lib.layouts.insert(h, Arc::new(l));
            }
            *slot = h;
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, tc::DUP, vec![], vec![], &[oldtype]) }?;
            crate::attr::copy_all(g, oldtype, h)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_true_extent`: the bounds of the data itself (no resizing).
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(
        datatype: Handle,
        true_lb: *mut isize,
        true_extent: *mut isize
    ) {
        call(NO_OBJECT, |g| {
            let (_, l) = describe(g.lib()?, datatype)?;
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(true_lb)? = l.true_lb;
                *out(true_extent)? = l.true_ub - l.true_lb;
            }
            Ok(())
        })
    }
}

/// `(lb, extent)` of a type, for `MPI_Type_get_extent`.
pub(crate) fn bounds(lib: &Lib, h: Handle) -> R<(isize, isize)> {
    let (_, l) = describe(lib, h)?;
    Ok((l.lb, l.extent))
}

/// A point-to-point buffer: contiguous bytes, or items of a type with gaps.
#[derive(Clone)]
pub(crate) enum Buffer {
    Contig(usize),
    Packed {
        layout: Arc<Layout>,
        count: usize,
        /// The packed length.
        len: usize,
    },
}

impl Buffer {
    /// Its bytes (packed, for a type with gaps).
    pub fn len(&self) -> usize {
        match self {
            Buffer::Contig(n) | Buffer::Packed { len: n, .. } => *n,
        }
    }

    /// A contiguous copy of the data at `buf` (packed, for a type with gaps).
    ///
    /// # Safety
    /// MPI's contract for the buffer: its items at `buf`, readable.
    pub unsafe fn copy_of(&self, buf: *const c_void) -> R<Box<[u8]>> {
        match self {
            // SAFETY: the caller's contract.
            Buffer::Contig(n) => Ok(unsafe { crate::util::bytes(buf, *n) }?.into()),
            Buffer::Packed { layout, count, len } => {
                // SAFETY: as above.
                Ok(unsafe { packed_copy(layout, buf, *count, *len) })
            }
        }
    }
}

impl Lib {
    /// The buffer of `count` items of `dt` for a point-to-point call.
    pub fn buffer_of(&self, count: impl Into<i64>, dt: Handle) -> R<Buffer> {
        let count: i64 = count.into();
        if let Some(len) = crate::datatype::basic_bytes(count, dt) {
            return Ok(Buffer::Contig(len));
        }
        if count == 0 && dt == MPI_DATATYPE_NULL {
            // No items: the type is never looked at (MPICH accepts this too, and
            // programs pass it for the ranks that send or receive nothing).
            return Ok(Buffer::Contig(0));
        }
        match self.layouts.get(&dt) {
            None => self.byte_count(count, dt).map(Buffer::Contig),
            Some(l) => {
                let t = self.datatype(dt)?;
                let count = count_arg(count)?;
                let len = t
                    .size
                    .checked_mul(count)
                    .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "count times type size overflows"))?;
                Ok(Buffer::Packed {
                    layout: Arc::clone(l),
                    count,
                    len,
                })
            }
        }
    }
}

/// Packs `count` items of `l` from `base` into `out` (`l`'s packed size each).
///
/// # Safety
/// Every piece of the `count` items from `base` is valid for reads.
pub(crate) unsafe fn pack(l: &Layout, base: *const u8, count: usize, out: &mut [u8]) {
    let mut at = 0;
    for (o, len) in l.pieces(count) {
        let Some(dst) = out.get_mut(at..at + len) else {
            return;
        };
        // SAFETY: the caller's contract; `dst` is `len` bytes of `out`.
        unsafe { std::ptr::copy_nonoverlapping(base.wrapping_offset(o), dst.as_mut_ptr(), len) };
        at += len;
    }
}

/// Unpacks `packed` into the pieces of up to `count` items of `l` at `base`, in order,
/// as far as `packed` goes (a shorter message fills the first pieces).
///
/// # Safety
/// Every piece of the `count` items from `base` is valid for writes.
pub(crate) unsafe fn unpack(l: &Layout, packed: &[u8], base: *mut u8, count: usize) {
    let mut at = 0;
    for (o, len) in l.pieces(count) {
        if at >= packed.len() {
            return;
        }
        let n = len.min(packed.len() - at);
        // SAFETY: the caller's contract; `n` bytes of `packed` from `at`.
        unsafe { std::ptr::copy_nonoverlapping(packed[at..].as_ptr(), base.wrapping_offset(o), n) };
        at += n;
    }
}

/// Packs a point-to-point send buffer into a new contiguous one.
///
/// # Safety
/// MPI's contract for the buffer: `count` items of the type at `buf`, readable.
pub(crate) unsafe fn packed_copy(
    l: &Layout,
    buf: *const c_void,
    count: usize,
    len: usize,
) -> Box<[u8]> {
    let mut v = vec![0u8; len].into_boxed_slice();
    // SAFETY: the caller's contract.
    unsafe { pack(l, buf.cast(), count, &mut v) };
    v
}

/// The bytes a send of `buffer` at `buf` sends: the program's own (contiguous), or a
/// packed copy, kept in `keep` (which must outlive the send).
///
/// # Safety
/// MPI's contract for the buffer: readable, and for a contiguous one unchanged while
/// the returned slice is used.
pub(crate) unsafe fn send_bytes(
    buffer: Buffer,
    buf: *const c_void,
    keep: &mut Option<Box<[u8]>>,
) -> R<&[u8]> {
    match buffer {
        // SAFETY: the caller's contract.
        Buffer::Contig(len) => unsafe { crate::util::bytes(buf, len) },
        Buffer::Packed { layout, count, len } => {
            // SAFETY: the caller's contract.
            let copy = keep.insert(unsafe { packed_copy(&layout, buf, count, len) });
            Ok(&copy[..])
        }
    }
}

/// A receive into a type with gaps: received into `temp`, then unpacked into the
/// program's buffer once complete (`Req::finish`, or the blocking calls).
pub(crate) struct Unpack {
    pub layout: Arc<Layout>,
    pub base: *mut u8,
    pub count: usize,
    pub temp: Box<[u8]>,
}

impl Unpack {
    /// A receive buffer for `buffer` at `buf`: `None` for a contiguous one.
    pub fn of(buffer: &Buffer, buf: *mut c_void) -> Option<Unpack> {
        match buffer {
            Buffer::Contig(_) => None,
            Buffer::Packed { layout, count, len } => Some(Unpack {
                layout: Arc::clone(layout),
                base: buf.cast(),
                count: *count,
                temp: vec![0u8; *len].into_boxed_slice(),
            }),
        }
    }

    /// Unpacks the first `bytes` received.
    ///
    /// # Safety
    /// The program's buffer (MPI's contract) is valid for writes of `count` items, and
    /// no receive writes `temp` any more.
    pub unsafe fn apply(&self, bytes: usize) {
        let n = bytes.min(self.temp.len());
        // SAFETY: the caller's contract.
        unsafe { unpack(&self.layout, &self.temp[..n], self.base, self.count) };
    }
}

crate::mpi_fn! {
    /// `MPI_Pack_size`: the bytes `MPI_Pack` needs for `incount` items.
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: Handle, _comm: Handle, size: *mut c_int) {
        call(NO_OBJECT, |g| {
            let n = g.lib()?.buffer_of(incount, datatype)?.len();
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = c_int::try_from(n)
                .map_err(|_| Fail::new(MPI_ERR_COUNT, "the packed size overflows an int"))?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Pack`: appends `incount` items of `datatype` to `outbuf` at `*position`.
    fn MPI_Pack / PMPI_Pack(
        inbuf: *const c_void,
        incount: c_int,
        datatype: Handle,
        outbuf: *mut c_void,
        outsize: c_int,
        position: *mut c_int,
        _comm: Handle
    ) {
        call(NO_OBJECT, |g| {
            let buffer = g.lib()?.buffer_of(incount, datatype)?;
            // SAFETY: MPI's contract: `position` is valid for reads and writes.
            let pos = unsafe { out(position) }?;
            let (at, room) = (n_arg(*pos)?, n_arg(outsize)?);
            let n = buffer.len();
            if at.checked_add(n).is_none_or(|end| end > room) {
                return Err(Fail::new(MPI_ERR_TRUNCATE, format!("{n} bytes do not fit at {at} of {room}")));
            }
            // SAFETY: MPI's contract: `outbuf` holds `outsize` bytes.
            let dst = unsafe { crate::util::bytes_mut(outbuf, room) }?;
            let dst = &mut dst[at..at + n];
            match buffer {
                // SAFETY: MPI's contract: `inbuf` holds `incount` items.
                Buffer::Contig(n) => dst.copy_from_slice(unsafe { crate::util::bytes(inbuf, n) }?),
                // SAFETY: as above.
                Buffer::Packed { layout, count, .. } => unsafe { pack(&layout, inbuf.cast(), count, dst) },
            }
            *pos = (at + n) as c_int;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Unpack`: takes `outcount` items of `datatype` from `inbuf` at `*position`.
    fn MPI_Unpack / PMPI_Unpack(
        inbuf: *const c_void,
        insize: c_int,
        position: *mut c_int,
        outbuf: *mut c_void,
        outcount: c_int,
        datatype: Handle,
        _comm: Handle
    ) {
        call(NO_OBJECT, |g| {
            let buffer = g.lib()?.buffer_of(outcount, datatype)?;
            // SAFETY: MPI's contract: `position` is valid for reads and writes.
            let pos = unsafe { out(position) }?;
            let (at, size) = (n_arg(*pos)?, n_arg(insize)?);
            let n = buffer.len();
            if at.checked_add(n).is_none_or(|end| end > size) {
                return Err(Fail::new(MPI_ERR_TRUNCATE, format!("{n} bytes are not there at {at} of {size}")));
            }
            // SAFETY: MPI's contract: `inbuf` holds `insize` bytes.
            let src = &unsafe { crate::util::bytes(inbuf, size) }?[at..at + n];
            match buffer {
                // SAFETY: MPI's contract: `outbuf` holds `outcount` items.
                Buffer::Contig(n) => unsafe { crate::util::bytes_mut(outbuf, n) }?.copy_from_slice(src),
                // SAFETY: as above.
                Buffer::Packed { layout, count, .. } => unsafe { unpack(&layout, src, outbuf.cast(), count) },
            }
            *pos = (at + n) as c_int;
            Ok(())
        })
    }
}

/// Removes a type's layout with the type (`MPI_Type_free`).
pub(crate) fn forget(lib: &mut Lib, h: Handle) {
    lib.layouts.remove(&h);
    lib.type_contents.remove(&h);
    crate::reduce_packed::forget(lib, h);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int4() -> Layout {
        Layout::contiguous(4, 4)
    }

    #[test]
    fn a_vector_of_ints_is_its_blocks_merged_and_bounded() {
        let mut b = Builder::new();
        // vector(3, 2, 4, int): blocks of 2 ints every 4 ints.
        for i in 0..3 {
            for j in 0..2 {
                b.place(&int4(), 16 * i + 4 * j);
            }
        }
        let l = b.layout;
        assert_eq!(l.segs, vec![(0, 8), (16, 8), (32, 8)]);
        assert_eq!((l.lb, l.extent, l.true_lb, l.true_ub), (0, 40, 0, 40));
        let data: Vec<u8> = (0..48u8).collect();
        let mut packed = vec![0u8; 24];
        // SAFETY: 40 bytes of `data` cover one item.
        unsafe { pack(&l, data.as_ptr(), 1, &mut packed) };
        assert_eq!(&packed[..8], &data[..8]);
        assert_eq!(&packed[8..16], &data[16..24]);
        let mut back = vec![0xffu8; 48];
        // SAFETY: as above.
        unsafe { unpack(&l, &packed, back.as_mut_ptr(), 1) };
        assert_eq!(&back[16..24], &data[16..24]);
        assert_eq!(back[8], 0xff, "gaps stay untouched");
    }

    #[test]
    fn a_short_message_fills_the_first_pieces_only() {
        let l = Layout {
            segs: vec![(0, 4), (8, 4)],
            lb: 0,
            extent: 12,
            true_lb: 0,
            true_ub: 12,
            align: 4,
        };
        let mut out = vec![0u8; 24];
        // SAFETY: two items of 12 bytes fit in `out`.
        unsafe { unpack(&l, &[1, 2, 3, 4, 5, 6], out.as_mut_ptr(), 2) };
        assert_eq!(&out[..12], &[1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0]);
    }
}
