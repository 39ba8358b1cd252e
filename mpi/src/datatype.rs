//! Datatypes (the basic ones of the ABI and contiguous derived types) and the
//! predefined reduction operations on them.

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::type_contents as tc;
use crate::util::{out, read_handle};

/// What one element of a type is, for reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Bool,
    Byte,
    /// Value-index pairs of MINLOC/MAXLOC: the value's kind, the index's offset.
    Pair(PairValue, usize),
    /// Complex numbers of `f32` parts, of `f64` parts.
    C32,
    C64,
    /// C's `long double` (x86_64: the x87 extended format in 16 bytes), and complex
    /// numbers of two.
    F80,
    C80,
    /// Moved, never reduced (types mixing elements of several kinds).
    Opaque,
}

/// The value of a MINLOC/MAXLOC pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PairValue {
    F32,
    F64,
    I64,
    I32,
    I16,
    /// `long double`, its index at 16.
    F80,
}

/// A datatype: its size in bytes (contiguous: extent = size), what its elements are and
/// how many one item holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeEntry {
    pub size: usize,
    pub elem: Elem,
    pub elems: usize,
    pub committed: bool,
}

/// The basic types of `mpi.h`: size and element.
#[inline]
const fn basic(h: Handle) -> Option<(usize, Elem)> {
    use Elem::*;
    Some(match h {
        0x243 | 0x244 | 0x240 => (1, I8),
        0x245 | 0x241 => (1, U8),
        0x247 | 0x207 => (1, Byte),
        0x208 | 0x248 => (2, I16),
        0x20c | 0x249 => (2, U16),
        // MPI_INTEGER and MPI_LOGICAL (Fortran's default kinds, 4 bytes; a LOGICAL
        // reduces as a C int: LAND/LOR/LXOR give 0 or 1) are C's int here.
        0x209 | 0x250 | 0x23c | 0x218 | 0x219 => (4, I32),
        0x20d | 0x251 => (4, U32),
        0x20a | 0x20b | 0x258 | 0x201 | 0x202 | 0x203 => (8, I64),
        0x20e | 0x20f | 0x259 => (8, U64),
        0x210 | 0x21a => (4, F32),
        0x214 | 0x21c => (8, F64),
        0x21b => (8, C32),
        0x21d => (16, C64),
        0x238 => (1, Bool),
        0x220 => (16, F80),
        0x212 => (8, C32),
        0x216 => (16, C64),
        0x224 => (32, C80),
        0x228 => (8, Pair(PairValue::F32, 4)),
        0x229 => (16, Pair(PairValue::F64, 8)),
        0x22a => (16, Pair(PairValue::I64, 8)),
        0x22b => (8, Pair(PairValue::I32, 4)),
        0x22c => (8, Pair(PairValue::I16, 4)),
        0x22d => (32, Pair(PairValue::F80, 16)),
        // C++'s bool and complex types (the same bits as C's).
        0x239 => (1, Bool),
        0x213 => (8, C32),
        0x217 => (16, C64),
        0x225 => (32, C80),
        // Fortran's sized types: INTEGER1/2/4/8, REAL4/8, COMPLEX8/16 reduce as the C
        // types of their sizes; CHARACTER, INTEGER16, REAL16 and COMPLEX32 (IEEE
        // quadruple precision, not C's long double) are moved, never reduced.
        0x2c0 => (1, I8),
        0x2c8 => (2, I16),
        0x2d0 => (4, I32),
        0x2d8 => (8, I64),
        0x2d2 => (4, F32),
        0x2da => (8, F64),
        0x2db => (8, C32),
        0x2e3 => (16, C64),
        0x2c3 => (1, Opaque),
        0x2e0 | 0x2e2 => (16, Opaque),
        0x2eb => (32, Opaque),
        _ => return None,
    })
}

/// The entry of basic type `h`.
pub(crate) fn basic_entry(h: Handle) -> Option<TypeEntry> {
    basic(h).map(|(size, elem)| TypeEntry {
        size,
        elem,
        elems: 1,
        committed: true,
    })
}

/// The first handle of a basic type and how many handles from there may be one.
const BASIC_FIRST: Handle = 0x200;
const BASIC_SPAN: usize = 0xf0;

/// The size of each basic type by handle from [`BASIC_FIRST`] (0: not a basic type):
/// a send's or receive's byte count without a match or a table lookup.
const BASIC_SIZES: [u8; BASIC_SPAN] = {
    let mut sizes = [0u8; BASIC_SPAN];
    let mut i = 0;
    while i < BASIC_SPAN {
        if let Some((size, _)) = basic(BASIC_FIRST + i) {
            assert!(size > 0 && size <= u8::MAX as usize);
            sizes[i] = size as u8;
        }
        i += 1;
    }
    sizes
};

/// The bytes of `count` items of basic type `dt`: `None` when `dt` is not a basic type,
/// `count` is negative or the length overflows (the callers' general path then decides,
/// and reports). `count` is an `int` or a large-count call's `MPI_Count`.
#[inline(always)]
pub(crate) fn basic_bytes(count: impl Into<i64>, dt: Handle) -> Option<usize> {
    let size = *BASIC_SIZES.get(dt.wrapping_sub(BASIC_FIRST))?;
    let n = usize::try_from(count.into()).ok()?;
    // Never overflows for an `int` count on 64 bits (times at most 255), so free there.
    let len = n.checked_mul(usize::from(size))?;
    (size != 0).then_some(len)
}

impl Lib {
    /// The bytes of `count` items of `dt` (as [`Lib::byte_len`], the point-to-point
    /// calls' form: a basic type costs one table read).
    #[inline]
    pub fn byte_count(&self, count: impl Into<i64> + Copy, dt: Handle) -> R<usize> {
        if let Some(len) = basic_bytes(count, dt) {
            return Ok(len);
        }
        self.byte_len(count, dt).map(|(len, _)| len)
    }

    /// The type of handle `h`, committed (usable for communication).
    #[inline]
    pub fn datatype(&self, h: Handle) -> R<TypeEntry> {
        if let Some((size, elem)) = basic(h) {
            return Ok(TypeEntry {
                size,
                elem,
                elems: 1,
                committed: true,
            });
        }
        match self.types.get(&h) {
            Some(t) if t.committed => Ok(*t),
            Some(_) => Err(Fail::new(MPI_ERR_TYPE, "datatype not committed")),
            None => Err(Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype"))),
        }
    }

    /// Checks that `h` is a datatype, committed or not (what attributes and names
    /// need).
    pub fn is_datatype(&self, h: Handle) -> R<()> {
        if basic(h).is_some() || self.types.contains_key(&h) {
            Ok(())
        } else {
            Err(Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype")))
        }
    }

    /// The byte length of `count` items of `dt`.
    #[inline]
    pub fn byte_len(&self, count: impl Into<i64>, dt: Handle) -> R<(usize, TypeEntry)> {
        let n = crate::util::count_arg(count)?;
        if n == 0 && dt == MPI_DATATYPE_NULL {
            // No items: the type is never looked at (as `Lib::buffer_of`).
            let none = TypeEntry {
                size: 0,
                elem: Elem::U8,
                elems: 0,
                committed: true,
            };
            return Ok((0, none));
        }
        let t = self.datatype(dt)?;
        if self.layouts.contains_key(&dt) {
            return Err(Fail::new(
                MPI_ERR_TYPE,
                "a datatype with gaps is not taken by this call (point-to-point calls, \
                 MPI_Pack and the collectives take it)",
            ));
        }
        let len = n
            .checked_mul(t.size)
            .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "count times type size overflows"))?;
        Ok((len, t))
    }
}

fn apply<T: Copy, const N: usize>(
    acc: &mut [u8],
    other: &[u8],
    from: fn([u8; N]) -> T,
    to: fn(T) -> [u8; N],
    f: impl Fn(T, T) -> T,
) {
    for (a, b) in acc.chunks_exact_mut(N).zip(other.chunks_exact(N)) {
        let x = from(a.try_into().expect("chunk of N"));
        let y = from(b.try_into().expect("chunk of N"));
        a.copy_from_slice(&to(f(x, y)));
    }
}

macro_rules! int_op {
    ($t:ty, $op:expr, $acc:expr, $other:expr) => {{
        let f: fn($t, $t) -> $t = match $op {
            0x21 => |a, b| a.wrapping_add(b),
            0x24 => |a, b| a.wrapping_mul(b),
            0x22 => |a: $t, b| a.min(b),
            0x23 => |a: $t, b| a.max(b),
            0x28 => |a, b| a & b,
            0x29 => |a, b| a | b,
            0x2a => |a, b| a ^ b,
            0x30 => |a, b| ((a != 0) && (b != 0)) as $t,
            0x31 => |a, b| ((a != 0) || (b != 0)) as $t,
            0x32 => |a, b| ((a != 0) != (b != 0)) as $t,
            _ => return Err(bad_op($op)),
        };
        apply($acc, $other, <$t>::from_ne_bytes, <$t>::to_ne_bytes, f);
        Ok(())
    }};
}

macro_rules! float_op {
    ($t:ty, $op:expr, $acc:expr, $other:expr) => {{
        let f: fn($t, $t) -> $t = match $op {
            0x21 => |a, b| a + b,
            0x24 => |a, b| a * b,
            0x22 => |a: $t, b| a.min(b),
            0x23 => |a: $t, b| a.max(b),
            _ => return Err(bad_op($op)),
        };
        apply($acc, $other, <$t>::from_ne_bytes, <$t>::to_ne_bytes, f);
        Ok(())
    }};
}

pub(crate) fn bad_op(op: Handle) -> Fail {
    Fail::new(
        MPI_ERR_OP,
        format!("operation {op:#x} is not a predefined operation defined on this datatype"),
    )
}

/// `acc = other (op) acc`, element-wise (every predefined operation commutes).
pub(crate) fn reduce(op: Handle, elem: Elem, acc: &mut [u8], other: &[u8]) -> R<()> {
    match elem {
        Elem::I8 => int_op!(i8, op, acc, other),
        Elem::U8 => int_op!(u8, op, acc, other),
        Elem::I16 => int_op!(i16, op, acc, other),
        Elem::U16 => int_op!(u16, op, acc, other),
        Elem::I32 => int_op!(i32, op, acc, other),
        Elem::U32 => int_op!(u32, op, acc, other),
        Elem::I64 => int_op!(i64, op, acc, other),
        Elem::U64 => int_op!(u64, op, acc, other),
        Elem::F32 => float_op!(f32, op, acc, other),
        Elem::F64 => float_op!(f64, op, acc, other),
        Elem::Bool | Elem::Byte => {
            let logical = elem == Elem::Bool;
            let f: fn(u8, u8) -> u8 = match (op, logical) {
                (0x30, true) => |a, b| ((a != 0) && (b != 0)) as u8,
                (0x31, true) => |a, b| ((a != 0) || (b != 0)) as u8,
                (0x32, true) => |a, b| ((a != 0) != (b != 0)) as u8,
                (0x28, false) => |a, b| a & b,
                (0x29, false) => |a, b| a | b,
                (0x2a, false) => |a, b| a ^ b,
                _ => return Err(bad_op(op)),
            };
            apply(acc, other, u8::from_ne_bytes, u8::to_ne_bytes, f);
            Ok(())
        }
        Elem::C32 => crate::reduce_wide::complex(op, false, acc, other),
        Elem::C64 => crate::reduce_wide::complex(op, true, acc, other),
        Elem::F80 => crate::reduce_wide::long_double(op, acc, other),
        Elem::C80 => crate::reduce_wide::long_double_complex(op, acc, other),
        Elem::Pair(value, index_at) => pair_op(op, value, index_at, acc, other),
        Elem::Opaque => Err(bad_op(op)),
    }
}

/// MINLOC / MAXLOC on value-index pairs: the smaller (larger) value, the smaller index
/// on a tie.
fn pair_op(op: Handle, value: PairValue, index_at: usize, acc: &mut [u8], other: &[u8]) -> R<()> {
    let max = match op {
        0x39 => true,
        0x38 => false,
        _ => return Err(bad_op(op)),
    };
    // The pair's C struct: the index after the value, padded to the value's alignment.
    let size = match index_at {
        16 => 32,
        8 => 16,
        _ => 8,
    };
    let val = |b: &[u8]| -> f64 {
        match value {
            PairValue::F32 => f64::from(f32::from_ne_bytes(b[..4].try_into().expect("4"))),
            PairValue::F64 => f64::from_ne_bytes(b[..8].try_into().expect("8")),
            PairValue::I32 => f64::from(i32::from_ne_bytes(b[..4].try_into().expect("4"))),
            PairValue::I16 => f64::from(i16::from_ne_bytes(b[..2].try_into().expect("2"))),
            // Compared exactly below; the f64 is only for the other kinds.
            PairValue::I64 | PairValue::F80 => 0.0,
        }
    };
    let idx = |b: &[u8]| i32::from_ne_bytes(b[index_at..index_at + 4].try_into().expect("4"));
    for (a, b) in acc.chunks_exact_mut(size).zip(other.chunks_exact(size)) {
        let ord = if value == PairValue::I64 {
            let x = i64::from_ne_bytes(a[..8].try_into().expect("8"));
            let y = i64::from_ne_bytes(b[..8].try_into().expect("8"));
            x.cmp(&y)
        } else if value == PairValue::F80 {
            crate::reduce_wide::cmp(a, b).unwrap_or(std::cmp::Ordering::Equal)
        } else {
            val(a)
                .partial_cmp(&val(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        };
        let take_other = match ord {
            std::cmp::Ordering::Equal => idx(b) < idx(a),
            std::cmp::Ordering::Less => max,
            std::cmp::Ordering::Greater => !max,
        };
        if take_other {
            a.copy_from_slice(b);
        }
    }
    Ok(())
}

/// The bytes of data in one value-index pair of a predefined pair type, without the
/// padding its C struct has (`MPI_DOUBLE_INT`: 8 + 4 of 16); `None` for the other types.
/// `MPI_Type_size` reports these; the library moves whole pairs (extent bytes).
fn pair_data_size(h: Handle) -> Option<usize> {
    match basic(h)? {
        (_, Elem::Pair(value, _)) => Some(
            4 + match value {
                PairValue::F32 | PairValue::I32 => 4,
                PairValue::F64 | PairValue::I64 => 8,
                PairValue::I16 => 2,
                PairValue::F80 => 16,
            },
        ),
        _ => None,
    }
}

crate::mpi_fn! {
    /// `MPI_Type_size` (of a pair type: its data, not its padding).
    fn MPI_Type_size / PMPI_Type_size(datatype: Handle, size: *mut c_int) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let t = match basic(datatype) {
                Some((s, _)) => pair_data_size(datatype).unwrap_or(s),
                None => lib.types.get(&datatype).map(|t| t.size).ok_or_else(|| {
                    Fail::new(MPI_ERR_TYPE, format!("{datatype:#x} is not a datatype"))
                })?,
            };
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = c_int::try_from(t).unwrap_or(MPI_UNDEFINED);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_size_x`: `MPI_Type_size` as an `MPI_Count` (never `MPI_UNDEFINED`).
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: Handle, size: *mut i64) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let t = match basic(datatype) {
                Some((s, _)) => pair_data_size(datatype).unwrap_or(s),
                None => lib.types.get(&datatype).map(|t| t.size).ok_or_else(|| {
                    Fail::new(MPI_ERR_TYPE, format!("{datatype:#x} is not a datatype"))
                })?,
            };
            // SAFETY: MPI's contract: `size` is valid for a write.
            *unsafe { out(size) }? = i64::try_from(t).unwrap_or(i64::MAX);
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_extent` (contiguous types: lower bound 0, extent = size).
    fn MPI_Type_get_extent / PMPI_Type_get_extent(
        datatype: Handle,
        lb: *mut isize,
        extent: *mut isize
    ) {
        call(NO_OBJECT, |g| {
            let (l, e) = crate::typemap::bounds(g.lib()?, datatype)?;
            // SAFETY: MPI's contract: both are valid for writes.
            unsafe {
                *out(lb)? = l;
                *out(extent)? = e;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_contiguous`: `count` copies of `oldtype` back to back.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(
        count: c_int,
        oldtype: Handle,
        newtype: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let n = crate::util::count_arg(count)?;
            if lib.layouts.contains_key(&oldtype) {
                // Items with gaps, one extent apart.
                crate::typemap::blocks_of(lib, oldtype, std::iter::once((n, 0)), newtype)?;
                // SAFETY: `blocks_of` wrote `*newtype`.
                return unsafe { tc::record(lib, newtype, tc::CONTIGUOUS, vec![count], vec![], &[oldtype]) };
            }
            let old = match basic(oldtype) {
                Some((size, elem)) => TypeEntry { size, elem, elems: 1, committed: true },
                None => *lib.types.get(&oldtype).ok_or_else(|| {
                    Fail::new(MPI_ERR_TYPE, format!("{oldtype:#x} is not a datatype"))
                })?,
            };
            let size = old
                .size
                .checked_mul(n)
                .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "type size overflows"))?;
            // SAFETY: MPI's contract: `newtype` is valid for a write.
            let slot = unsafe { out(newtype) }?;
            let h = lib.new_handle();
            lib.types.insert(
                h,
                TypeEntry { size, elem: old.elem, elems: old.elems * n, committed: false },
            );
            *slot = h;
            // SAFETY: `newtype` was just written.
            unsafe { tc::record(lib, newtype, tc::CONTIGUOUS, vec![count], vec![], &[oldtype]) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_commit`.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut Handle) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            // SAFETY: MPI's contract: `datatype` is valid for reads.
            let h = unsafe { read_handle(datatype) }?;
            if basic(h).is_some() {
                return Ok(());
            }
            let t = lib
                .types
                .get_mut(&h)
                .ok_or_else(|| Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype")))?;
            t.committed = true;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_free` (`*datatype` becomes `MPI_DATATYPE_NULL`).
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `datatype` is valid for reads and writes.
            let slot = unsafe { out(datatype) }?;
            if g.lib()?.types.contains_key(slot) {
                // Its attributes' delete callbacks run first (MPI 4.1 §7.7.4).
                crate::attr::delete_all(g, *slot)?;
            }
            let lib = g.lib()?;
            crate::typemap::forget(lib, *slot);
            lib.type_names.remove(slot);
            if lib.types.remove(slot).is_none() {
                return Err(Fail::new(
                    MPI_ERR_TYPE,
                    format!("{:#x} is not a derived datatype", *slot),
                ));
            }
            *slot = MPI_DATATYPE_NULL;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn integer_sum_max_and_logical_ops() {
        let mut a = ints(&[1, 5, 0]);
        reduce(0x21, Elem::I32, &mut a, &ints(&[2, -7, 0])).unwrap();
        assert_eq!(a, ints(&[3, -2, 0]));
        reduce(0x23, Elem::I32, &mut a, &ints(&[4, -9, 1])).unwrap();
        assert_eq!(a, ints(&[4, -2, 1]));
        reduce(0x30, Elem::I32, &mut a, &ints(&[1, 0, 5])).unwrap();
        assert_eq!(a, ints(&[1, 0, 1]));
    }

    #[test]
    fn floats_refuse_bitwise_ops_and_opaque_types_refuse_all() {
        let mut a = 1.5f64.to_ne_bytes().to_vec();
        reduce(0x24, Elem::F64, &mut a, &2.0f64.to_ne_bytes()).unwrap();
        assert_eq!(f64::from_ne_bytes(a[..].try_into().unwrap()), 3.0);
        assert_eq!(
            reduce(0x28, Elem::F64, &mut a, &[0; 8]).unwrap_err().class,
            MPI_ERR_OP
        );
        assert_eq!(
            reduce(0x21, Elem::Opaque, &mut a, &[0; 8])
                .unwrap_err()
                .class,
            MPI_ERR_OP
        );
    }

    #[test]
    fn maxloc_takes_the_larger_value_and_the_smaller_index_on_ties() {
        let pair = |v: f64, i: i32| {
            let mut b = v.to_ne_bytes().to_vec();
            b.extend_from_slice(&i.to_ne_bytes());
            b.extend_from_slice(&[0; 4]);
            b
        };
        let mut a = [pair(1.0, 3), pair(2.0, 5)].concat();
        let b = [pair(4.0, 7), pair(2.0, 1)].concat();
        reduce(0x39, Elem::Pair(PairValue::F64, 8), &mut a, &b).unwrap();
        assert_eq!(a, [pair(4.0, 7), pair(2.0, 1)].concat());
        reduce(
            0x38,
            Elem::Pair(PairValue::F64, 8),
            &mut a,
            &[pair(0.5, 9), pair(3.0, 0)].concat(),
        )
        .unwrap();
        assert_eq!(a, [pair(0.5, 9), pair(2.0, 1)].concat());
    }
}
