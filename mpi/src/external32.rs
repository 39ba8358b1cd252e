//! The "external32" data representation of the basic types (MPI 4.1 §14.5.2): every
//! value big-endian, at the size the standard's table gives it, whatever the native
//! size. `MPI_Pack_external` and `MPI_Unpack_external` (`pack_external`) convert with
//! these, item by item in type-map order (`ext32_typemap`).
//!
//! The sizes: 1 byte for the chars, `MPI_BYTE`, `MPI_PACKED`, `MPI_C_BOOL`,
//! `MPI_CXX_BOOL`, `MPI_INT8_T`, `MPI_UINT8_T`, `MPI_CHARACTER` and `MPI_INTEGER1`;
//! 2 for `MPI_WCHAR` (4 natively), the shorts and the 16-bit integers; 4 for `MPI_INT`,
//! `MPI_UNSIGNED`, `MPI_LONG` and `MPI_UNSIGNED_LONG` (8 natively), `MPI_FLOAT`, the
//! 32-bit integers and Fortran's default `INTEGER`, `LOGICAL` and `REAL`; 8 for the
//! long longs, `MPI_DOUBLE`, the 64-bit integers, `MPI_AINT`, `MPI_OFFSET` and
//! `MPI_COUNT`; 16 for `MPI_LONG_DOUBLE` (IEEE quadruple precision), `MPI_INTEGER16`
//! and `MPI_REAL16`. A complex number is its two parts; a value-index pair
//! (`MPI_DOUBLE_INT`...) is its two members back to back, without the padding its C
//! struct has (`MPI_DOUBLE_INT`: 8 + 4 bytes, 16 natively).
//!
//! Narrower external integers keep the low-order bytes (the standard's advice to
//! implementors: no error when the value fits); unpacking sign-extends the signed ones
//! and zero-extends the unsigned ones and `MPI_WCHAR` (a 16-bit code unit).
//!
//! `MPI_LONG_DOUBLE` on x86_64 is the x87 80-bit format: its sign and 15-bit exponent
//! (the same bias as quadruple precision) are kept and its 63 fraction bits become the
//! top of the 112; zeros, subnormals, infinities and NaNs keep their class (an x87
//! "unnormal", which no arithmetic produces, becomes a quiet NaN). Unpacking rounds the
//! 112 fraction bits to 63, to nearest, ties to even (a value too large becomes an
//! infinity; a NaN stays a NaN). Elsewhere `long double` is taken to be IEEE quadruple
//! precision already and is only byte-swapped.

use crate::consts::Handle;

/// How one basic value converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conv {
    /// The same `n` bytes, in big-endian order.
    Same(u8),
    /// A native integer of `native` bytes as `ext` big-endian bytes (its low-order ones).
    Narrow { native: u8, ext: u8, signed: bool },
    /// C's `long double` as IEEE quadruple precision (16 bytes each side).
    Quad,
}

impl Conv {
    /// Its native bytes.
    pub(crate) const fn native(self) -> usize {
        match self {
            Conv::Same(n) => n as usize,
            Conv::Narrow { native, .. } => native as usize,
            Conv::Quad => 16,
        }
    }

    /// Its external32 bytes.
    pub(crate) const fn ext(self) -> usize {
        match self {
            Conv::Same(n) => n as usize,
            Conv::Narrow { ext, .. } => ext as usize,
            Conv::Quad => 16,
        }
    }
}

/// A basic type in external32: its native bytes and its members, each at a native
/// byte offset (one member, or two for a complex number or a pair).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Basic {
    /// Its native size (a pair's C struct: with its padding).
    pub native: usize,
    /// `(native offset, conversion)` of each member, in order.
    pub parts: &'static [(usize, Conv)],
}

impl Basic {
    /// Its external32 size.
    pub(crate) fn ext(&self) -> usize {
        self.parts.iter().map(|(_, c)| c.ext()).sum()
    }
}

const S1: Conv = Conv::Same(1);
const S2: Conv = Conv::Same(2);
const S4: Conv = Conv::Same(4);
const S8: Conv = Conv::Same(8);
const S16: Conv = Conv::Same(16);
const LONG: Conv = Conv::Narrow {
    native: 8,
    ext: 4,
    signed: true,
};
const ULONG: Conv = Conv::Narrow {
    native: 8,
    ext: 4,
    signed: false,
};
const WCHAR: Conv = Conv::Narrow {
    native: 4,
    ext: 2,
    signed: false,
};

/// The external32 form of basic type `h` (`None`: not a basic type).
pub(crate) const fn basic(h: Handle) -> Option<Basic> {
    let (native, parts): (usize, &'static [(usize, Conv)]) =
        match h {
            // MPI_PACKED, MPI_BYTE, the chars, the bools, the 8-bit integers,
            // MPI_CHARACTER, MPI_INTEGER1.
            0x207 | 0x247 | 0x240 | 0x241 | 0x243 | 0x244 | 0x245 | 0x238 | 0x239 | 0x2c0
            | 0x2c3 => (1, &[(0, S1)]),
            // The shorts, the 16-bit integers, MPI_INTEGER2.
            0x208 | 0x20c | 0x248 | 0x249 | 0x2c8 => (2, &[(0, S2)]),
            // MPI_WCHAR: wchar_t is 4 bytes here, 2 in external32.
            0x23c => (4, &[(0, WCHAR)]),
            // int, unsigned, the 32-bit integers, INTEGER, LOGICAL, INTEGER4; float, REAL,
            // REAL4.
            0x209 | 0x20d | 0x250 | 0x251 | 0x218 | 0x219 | 0x2d0 | 0x210 | 0x21a | 0x2d2 => {
                (4, &[(0, S4)])
            }
            0x20a => (8, &[(0, LONG)]),
            0x20e => (8, &[(0, ULONG)]),
            // MPI_AINT, MPI_COUNT, MPI_OFFSET, the long longs, the 64-bit integers,
            // INTEGER8; double, DOUBLE PRECISION, REAL8.
            0x201 | 0x202 | 0x203 | 0x20b | 0x20f | 0x258 | 0x259 | 0x2d8 | 0x214 | 0x21c
            | 0x2da => (8, &[(0, S8)]),
            // INTEGER16, REAL16 (IEEE quadruple precision natively too).
            0x2e0 | 0x2e2 => (16, &[(0, S16)]),
            0x220 => (16, &[(0, Conv::Quad)]),
            // Complex numbers of floats, doubles, long doubles, REAL16s.
            0x212 | 0x213 | 0x21b | 0x2db => (8, &[(0, S4), (4, S4)]),
            0x216 | 0x217 | 0x21d | 0x2e3 => (16, &[(0, S8), (8, S8)]),
            0x224 | 0x225 => (32, &[(0, Conv::Quad), (16, Conv::Quad)]),
            0x2eb => (32, &[(0, S16), (16, S16)]),
            // The value-index pairs: the value, then the int at its C struct's offset.
            0x228 | 0x22b => (8, &[(0, S4), (4, S4)]),
            0x229 => (16, &[(0, S8), (8, S4)]),
            0x22a => (16, &[(0, LONG), (8, S4)]),
            0x22c => (8, &[(0, S2), (4, S4)]),
            0x22d => (32, &[(0, Conv::Quad), (16, S4)]),
            _ => return None,
        };
    Some(Basic { native, parts })
}

/// Writes the external32 form of the native value `native` (`c.native()` bytes) to
/// `ext` (`c.ext()` bytes).
pub(crate) fn encode(c: Conv, native: &[u8], ext: &mut [u8]) {
    match c {
        Conv::Same(_) => {
            ext.copy_from_slice(native);
            if cfg!(target_endian = "little") {
                ext.reverse();
            }
        }
        Conv::Narrow { .. } => {
            let n = ext.len();
            if cfg!(target_endian = "little") {
                ext.copy_from_slice(&native[..n]);
                ext.reverse();
            } else {
                ext.copy_from_slice(&native[native.len() - n..]);
            }
        }
        Conv::Quad => {
            let mut v = [0u8; 16];
            v.copy_from_slice(native);
            ext.copy_from_slice(&long_double_to_quad(v));
        }
    }
}

/// Writes the native value of the external32 bytes `ext` to `native` (the reverse of
/// [`encode`]).
pub(crate) fn decode(c: Conv, ext: &[u8], native: &mut [u8]) {
    match c {
        Conv::Same(_) => {
            native.copy_from_slice(ext);
            if cfg!(target_endian = "little") {
                native.reverse();
            }
        }
        Conv::Narrow { signed, .. } => {
            let negative = signed && ext[0] & 0x80 != 0;
            native.fill(if negative { 0xff } else { 0 });
            let n = ext.len();
            if cfg!(target_endian = "little") {
                native[..n].copy_from_slice(ext);
                native[..n].reverse();
            } else {
                let at = native.len() - n;
                native[at..].copy_from_slice(ext);
            }
        }
        Conv::Quad => {
            let mut v = [0u8; 16];
            v.copy_from_slice(ext);
            native.copy_from_slice(&quad_to_long_double(v));
        }
    }
}

/// The quadruple-precision exponent of infinities and NaNs (x87's too).
const EXP_MAX: u16 = 0x7fff;
/// x87's explicit integer bit.
const INT_BIT: u64 = 1 << 63;
/// The fraction bits quadruple precision has beyond x87's 63.
const EXTRA: u32 = 112 - 63;

/// A native `long double` (x87, little-endian, in 16 bytes) as big-endian quadruple
/// precision.
#[cfg(target_arch = "x86_64")]
fn long_double_to_quad(v: [u8; 16]) -> [u8; 16] {
    let m = u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8]));
    let se = u16::from_le_bytes([v[8], v[9]]);
    let sign = u128::from(se >> 15) << 127;
    let mut exp = se & EXP_MAX;
    let frac = u128::from(m & !INT_BIT);
    let int = m & INT_BIT != 0;
    let bits = if exp == 0 && int {
        // A pseudo-denormal: the same value as the smallest exponent's normal.
        exp = 1;
        frac << EXTRA
    } else if exp != 0 && exp != EXP_MAX && !int {
        // An unnormal (invalid on x87): a quiet NaN.
        exp = EXP_MAX;
        1 << 111
    } else {
        frac << EXTRA
    };
    (sign | (u128::from(exp) << 112) | bits).to_be_bytes()
}

/// Big-endian quadruple precision as a native `long double` (x87, little-endian, in
/// 16 bytes, the last 6 zero), its fraction rounded to nearest, ties to even.
#[cfg(target_arch = "x86_64")]
fn quad_to_long_double(q: [u8; 16]) -> [u8; 16] {
    let q = u128::from_be_bytes(q);
    let sign = ((q >> 127) as u16) << 15;
    let mut exp = ((q >> 112) as u16) & EXP_MAX;
    let frac = q & ((1u128 << 112) - 1);
    let mut sig = (frac >> EXTRA) as u64;
    if exp == EXP_MAX {
        // An infinity, or a NaN whose payload may lie in the dropped bits only.
        if frac != 0 && sig == 0 {
            sig = 1 << 62;
        }
        sig |= INT_BIT;
    } else {
        if exp != 0 {
            sig |= INT_BIT;
        }
        let rest = frac & ((1u128 << EXTRA) - 1);
        let half = 1u128 << (EXTRA - 1);
        if rest > half || (rest == half && sig & 1 == 1) {
            let (s, carry) = sig.overflowing_add(1);
            sig = if carry { INT_BIT } else { s };
            if carry || (exp == 0 && sig & INT_BIT != 0) {
                // Rounded up into the next binade (or out of the subnormals).
                exp += 1;
            }
            if exp == EXP_MAX {
                sig = INT_BIT;
            }
        }
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&sig.to_le_bytes());
    out[8..10].copy_from_slice(&(sign | exp).to_le_bytes());
    out
}

/// Elsewhere `long double` is taken to be quadruple precision already.
#[cfg(not(target_arch = "x86_64"))]
fn long_double_to_quad(v: [u8; 16]) -> [u8; 16] {
    let mut v = v;
    if cfg!(target_endian = "little") {
        v.reverse();
    }
    v
}

/// Elsewhere `long double` is taken to be quadruple precision already.
#[cfg(not(target_arch = "x86_64"))]
fn quad_to_long_double(q: [u8; 16]) -> [u8; 16] {
    long_double_to_quad(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(h: Handle, native: &[u8]) -> Vec<u8> {
        let b = basic(h).unwrap();
        let mut out = vec![0u8; b.ext()];
        let mut at = 0;
        for &(o, c) in b.parts {
            encode(c, &native[o..o + c.native()], &mut out[at..at + c.ext()]);
            at += c.ext();
        }
        out
    }

    fn dec(h: Handle, ext: &[u8]) -> Vec<u8> {
        let b = basic(h).unwrap();
        let mut out = vec![0u8; b.native];
        let mut at = 0;
        for &(o, c) in b.parts {
            decode(c, &ext[at..at + c.ext()], &mut out[o..o + c.native()]);
            at += c.ext();
        }
        out
    }

    #[test]
    fn every_basic_type_has_its_native_size_and_members_inside_it() {
        for h in 0x200..0x2f0 {
            let (Some(t), b) = (crate::datatype::basic_entry(h), basic(h)) else {
                assert!(basic(h).is_none(), "{h:#x} is not basic");
                continue;
            };
            let b = b.unwrap_or_else(|| panic!("{h:#x} has no external32 form"));
            assert_eq!(b.native, t.size, "{h:#x}");
            for &(o, c) in b.parts {
                assert!(o + c.native() <= b.native, "{h:#x}");
            }
        }
    }

    #[test]
    fn the_standard_sizes() {
        let size = |h| basic(h).unwrap().ext();
        // int, long, unsigned long, long long, wchar, C bool, long double, double int,
        // long int, short int, aint, offset, count, long double complex.
        let want = [
            (0x209, 4),
            (0x20a, 4),
            (0x20e, 4),
            (0x20b, 8),
            (0x23c, 2),
            (0x238, 1),
            (0x220, 16),
            (0x229, 12),
            (0x22a, 8),
            (0x22c, 6),
            (0x201, 8),
            (0x203, 8),
            (0x202, 8),
            (0x224, 32),
            (0x22d, 20),
        ];
        for (h, n) in want {
            assert_eq!(size(h), n, "{h:#x}");
        }
    }

    #[test]
    fn integers_are_big_endian_and_narrowed_longs_keep_their_sign() {
        assert_eq!(enc(0x209, &0x0102_0304i32.to_ne_bytes()), [1, 2, 3, 4]);
        assert_eq!(enc(0x20a, &(-2i64).to_ne_bytes()), [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(dec(0x20a, &[0xff, 0xff, 0xff, 0xfe]), (-2i64).to_ne_bytes());
        assert_eq!(
            dec(0x20e, &[0xff, 0xff, 0xff, 0xfe]),
            0xffff_fffeu64.to_ne_bytes()
        );
        assert_eq!(enc(0x23c, &0x20ACi32.to_ne_bytes()), [0x20, 0xac]);
        assert_eq!(dec(0x23c, &[0xff, 0xfe]), 0xfffei32.to_ne_bytes());
        assert_eq!(enc(0x208, &(-3i16).to_ne_bytes()), [0xff, 0xfd]);
        assert_eq!(enc(0x243, &[0x41]), [0x41]);
        let big = 0x0102_0304_0506_0708u64;
        assert_eq!(enc(0x203, &big.to_ne_bytes()), big.to_be_bytes());
        assert_eq!(dec(0x203, &big.to_be_bytes()), big.to_ne_bytes());
    }

    #[test]
    fn floats_complexes_and_pairs_are_their_members_without_padding() {
        assert_eq!(enc(0x214, &1.0f64.to_ne_bytes()), 1.0f64.to_be_bytes());
        let mut z = 1.5f32.to_ne_bytes().to_vec();
        z.extend_from_slice(&(-2.0f32).to_ne_bytes());
        let e = enc(0x212, &z);
        assert_eq!(e, [1.5f32.to_be_bytes(), (-2.0f32).to_be_bytes()].concat());
        assert_eq!(dec(0x212, &e), z);
        let mut pair = 2.5f64.to_ne_bytes().to_vec();
        pair.extend_from_slice(&7i32.to_ne_bytes());
        pair.extend_from_slice(&[0; 4]);
        let e = enc(0x229, &pair);
        assert_eq!(e, [&2.5f64.to_be_bytes()[..], &[0, 0, 0, 7]].concat());
        assert_eq!(dec(0x229, &e), pair);
        let mut si = (-1i16).to_ne_bytes().to_vec();
        si.extend_from_slice(&[0, 0]);
        si.extend_from_slice(&9i32.to_ne_bytes());
        assert_eq!(enc(0x22c, &si), [0xff, 0xff, 0, 0, 0, 9]);
    }

    /// An x87 value: sign and exponent, 64-bit significand.
    #[cfg(target_arch = "x86_64")]
    fn x87(se: u16, m: u64) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&m.to_le_bytes());
        v[8..10].copy_from_slice(&se.to_le_bytes());
        v
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_doubles_become_quads_and_come_back() {
        let one = x87(0x3fff, INT_BIT);
        let q = long_double_to_quad(one);
        assert_eq!(q, [&[0x3f, 0xff][..], &[0; 14]].concat()[..]);
        assert_eq!(quad_to_long_double(q), one);
        // -2.5: 1.01b x 2^1.
        let v = x87(0xc000, INT_BIT | 1 << 61);
        let q = long_double_to_quad(v);
        assert_eq!(&q[..3], &[0xc0, 0x00, 0x40]);
        assert_eq!(quad_to_long_double(q), v);
        // The smallest subnormal, an infinity, a NaN, a negative zero.
        for v in [
            x87(0, 1),
            x87(0x7fff, INT_BIT),
            x87(0xffff, INT_BIT | 1 << 62),
            x87(0x8000, 0),
        ] {
            assert_eq!(quad_to_long_double(long_double_to_quad(v)), v);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn quads_round_to_nearest_even_and_keep_nans() {
        let quad = |exp: u128, frac: u128| (exp << 112 | frac).to_be_bytes();
        // Just above half an x87 unit: up; exactly half with an even last bit: down.
        let up = quad_to_long_double(quad(0x3fff, (1 << 48) + 1));
        assert_eq!(up, x87(0x3fff, INT_BIT | 1));
        let tie = quad_to_long_double(quad(0x3fff, 1 << 48));
        assert_eq!(tie, x87(0x3fff, INT_BIT));
        // All fraction bits set rounds into the next binade.
        let carry = quad_to_long_double(quad(0x3fff, (1 << 112) - 1));
        assert_eq!(carry, x87(0x4000, INT_BIT));
        // A NaN whose payload is in the dropped bits stays a NaN.
        let nan = quad_to_long_double(quad(0x7fff, 1));
        assert_eq!(nan, x87(0x7fff, INT_BIT | 1 << 62));
        // The largest finite quad is an infinity as an x87 value.
        let inf = quad_to_long_double(quad(0x7ffe, (1 << 112) - 1));
        assert_eq!(inf, x87(0x7fff, INT_BIT));
    }
}
