//! The predefined reductions on the types Rust has no arithmetic for: complex numbers
//! (`MPI_C_FLOAT_COMPLEX`, `MPI_C_DOUBLE_COMPLEX`, `MPI_COMPLEX`, `MPI_DOUBLE_COMPLEX`,
//! `MPI_C_LONG_DOUBLE_COMPLEX`: `MPI_SUM`, `MPI_PROD`) and C's `long double`
//! (`MPI_LONG_DOUBLE`: `MPI_SUM`, `MPI_PROD`, `MPI_MIN`, `MPI_MAX`; `MPI_LONG_DOUBLE_INT`:
//! `MPI_MINLOC`, `MPI_MAXLOC`).
//!
//! On x86_64 a `long double` is the x87 80-bit extended format in a 16-byte slot; its
//! sums and products are computed by the x87 unit itself (the instructions C's
//! compilers emit), so the results are C's bits. Elsewhere `long double` reductions are
//! `MPI_ERR_OP`.

use std::cmp::Ordering;

use crate::consts::Handle;
use crate::error::R;

/// `MPI_SUM`, `MPI_PROD`, `MPI_MIN`, `MPI_MAX`.
const SUM: Handle = 0x21;
const MIN: Handle = 0x22;
const MAX: Handle = 0x23;
const PROD: Handle = 0x24;

/// The bytes of one x87 extended value (its 16-byte slot's first 10 hold it).
const F80: usize = 16;

macro_rules! complex_of {
    ($t:ty, $op:expr, $acc:expr, $other:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        let part = |b: &[u8], i: usize| {
            <$t>::from_ne_bytes(b[i * N..(i + 1) * N].try_into().expect("N bytes"))
        };
        for (a, b) in $acc.chunks_exact_mut(2 * N).zip($other.chunks_exact(2 * N)) {
            let (ar, ai, br, bi) = (part(a, 0), part(a, 1), part(b, 0), part(b, 1));
            let (re, im) = if $op == SUM {
                (br + ar, bi + ai)
            } else {
                (br * ar - bi * ai, br * ai + bi * ar)
            };
            a[..N].copy_from_slice(&re.to_ne_bytes());
            a[N..].copy_from_slice(&im.to_ne_bytes());
        }
    }};
}

/// `acc = other op acc` on complex numbers of `f32` or `f64` parts (`wide` = `f64`),
/// each part computed in its own precision, as C does.
pub(crate) fn complex(op: Handle, wide: bool, acc: &mut [u8], other: &[u8]) -> R<()> {
    if op != SUM && op != PROD {
        return Err(crate::datatype::bad_op(op));
    }
    if wide {
        complex_of!(f64, op, acc, other);
    } else {
        complex_of!(f32, op, acc, other);
    }
    Ok(())
}

/// `acc = other op acc` on `long double`s.
pub(crate) fn long_double(op: Handle, acc: &mut [u8], other: &[u8]) -> R<()> {
    // Checked before the loop: an empty buffer checks the operation alone.
    if ![SUM, PROD, MIN, MAX].contains(&op) {
        return Err(crate::datatype::bad_op(op));
    }
    for (a, b) in acc.chunks_exact_mut(F80).zip(other.chunks_exact(F80)) {
        let x: [u8; F80] = a.try_into().expect("16 bytes");
        let y: [u8; F80] = b.try_into().expect("16 bytes");
        let r = match op {
            SUM => x87::add(y, x)?,
            PROD => x87::mul(y, x)?,
            // A NaN is passed over, as f64::min/max do.
            MIN => match cmp(&y, &x) {
                Some(Ordering::Less) => y,
                None if is_nan(&x) => y,
                _ => x,
            },
            MAX => match cmp(&y, &x) {
                Some(Ordering::Greater) => y,
                None if is_nan(&x) => y,
                _ => x,
            },
            _ => return Err(crate::datatype::bad_op(op)),
        };
        a.copy_from_slice(&r);
    }
    Ok(())
}

/// `acc = other op acc` on `long double _Complex` (two slots: real, imaginary).
pub(crate) fn long_double_complex(op: Handle, acc: &mut [u8], other: &[u8]) -> R<()> {
    if op != SUM && op != PROD {
        return Err(crate::datatype::bad_op(op));
    }
    let slot = |b: &[u8], i: usize| -> [u8; F80] {
        b[i * F80..(i + 1) * F80].try_into().expect("16 bytes")
    };
    for (a, b) in acc
        .chunks_exact_mut(2 * F80)
        .zip(other.chunks_exact(2 * F80))
    {
        let (ar, ai, br, bi) = (slot(a, 0), slot(a, 1), slot(b, 0), slot(b, 1));
        let (re, im) = match op {
            SUM => (x87::add(br, ar)?, x87::add(bi, ai)?),
            PROD => (
                x87::add(x87::mul(br, ar)?, negated(x87::mul(bi, ai)?))?,
                x87::add(x87::mul(br, ai)?, x87::mul(bi, ar)?)?,
            ),
            _ => return Err(crate::datatype::bad_op(op)),
        };
        a[..F80].copy_from_slice(&re);
        a[F80..].copy_from_slice(&im);
    }
    Ok(())
}

/// The order of two `long double`s (`None` when either is a NaN), read from the
/// format's bits: sign (bit 79), exponent (bits 64-78), significand (bits 0-63, the
/// integer bit explicit), so that a larger magnitude is a larger number.
pub(crate) fn cmp(x: &[u8], y: &[u8]) -> Option<Ordering> {
    if is_nan(x) || is_nan(y) {
        return None;
    }
    let key = |b: &[u8]| -> i128 {
        let mag = (u128::from(u16::from_le_bytes([b[8], b[9]]) & 0x7fff) << 64)
            | u128::from(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")));
        // At most 79 bits: fits an i128 either way round.
        let m = i128::try_from(mag).unwrap_or(i128::MAX);
        if b[9] & 0x80 != 0 {
            -m
        } else {
            m
        }
    };
    Some(key(x).cmp(&key(y)))
}

fn is_nan(b: &[u8]) -> bool {
    let exp = u16::from_le_bytes([b[8], b[9]]) & 0x7fff;
    let frac = u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) & !(1 << 63);
    exp == 0x7fff && frac != 0
}

fn negated(mut x: [u8; F80]) -> [u8; F80] {
    x[9] ^= 0x80;
    x
}

#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::F80;
    use crate::error::R;

    /// `x + y` in the x87 extended format.
    pub fn add(x: [u8; F80], y: [u8; F80]) -> R<[u8; F80]> {
        let mut r = x;
        // SAFETY: `r` and `y` are 16-byte locals, each read (and `r` written) as one
        // 10-byte extended value; the two loads are popped by the add and the store, so
        // the x87 stack is empty again at the end, as the ABI wants; st(0) and st(1)
        // are declared clobbered.
        unsafe {
            std::arch::asm!(
                "fld tbyte ptr [{y}]",
                "fld tbyte ptr [{r}]",
                "faddp st(1), st",
                "fstp tbyte ptr [{r}]",
                r = in(reg) r.as_mut_ptr(),
                y = in(reg) y.as_ptr(),
                out("st(0)") _,
                out("st(1)") _,
                options(nostack),
            );
        }
        Ok(r)
    }

    /// `x * y` in the x87 extended format.
    pub fn mul(x: [u8; F80], y: [u8; F80]) -> R<[u8; F80]> {
        let mut r = x;
        // SAFETY: as in `add`.
        unsafe {
            std::arch::asm!(
                "fld tbyte ptr [{y}]",
                "fld tbyte ptr [{r}]",
                "fmulp st(1), st",
                "fstp tbyte ptr [{r}]",
                r = in(reg) r.as_mut_ptr(),
                y = in(reg) y.as_ptr(),
                out("st(0)") _,
                out("st(1)") _,
                options(nostack),
            );
        }
        Ok(r)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x87 {
    use super::F80;
    use crate::error::{Fail, R};

    fn unsupported() -> Fail {
        Fail::new(
            crate::consts::MPI_ERR_OP,
            "long double arithmetic is implemented on x86_64 only",
        )
    }

    pub fn add(_: [u8; F80], _: [u8; F80]) -> R<[u8; F80]> {
        Err(unsupported())
    }

    pub fn mul(_: [u8; F80], _: [u8; F80]) -> R<[u8; F80]> {
        Err(unsupported())
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The extended value of a small integer: exact in the format.
    fn ld(v: i32) -> [u8; F80] {
        let mut b = [0u8; F80];
        if v != 0 {
            let m = v.unsigned_abs();
            let shift = m.leading_zeros();
            b[..8].copy_from_slice(&(u64::from(m) << (32 + shift)).to_le_bytes());
            let exp = 16383 + 31 - shift;
            let e = u16::try_from(exp).unwrap() | if v < 0 { 0x8000 } else { 0 };
            b[8..10].copy_from_slice(&e.to_le_bytes());
        }
        b
    }

    #[test]
    fn long_double_sums_products_and_order() {
        assert_eq!(x87::add(ld(3), ld(-7)).unwrap(), ld(-4));
        assert_eq!(x87::mul(ld(-3), ld(-7)).unwrap(), ld(21));
        assert_eq!(cmp(&ld(-5), &ld(2)), Some(Ordering::Less));
        assert_eq!(cmp(&ld(-5), &ld(-9)), Some(Ordering::Greater));
        assert_eq!(cmp(&ld(0), &negated(ld(0))), Some(Ordering::Equal));
        let mut a = [ld(4), ld(-2)].concat();
        long_double(MIN, &mut a, &[ld(1), ld(6)].concat()).unwrap();
        assert_eq!(a, [ld(1), ld(-2)].concat());
    }

    #[test]
    fn complex_products_take_both_parts() {
        // (1 + 2i)(3 - 1i) = 5 + 5i
        let c = |re: f64, im: f64| [re.to_ne_bytes(), im.to_ne_bytes()].concat();
        let mut a = c(3.0, -1.0);
        complex(PROD, true, &mut a, &c(1.0, 2.0)).unwrap();
        assert_eq!(a, c(5.0, 5.0));
        let mut l = [ld(3), ld(-1)].concat();
        long_double_complex(PROD, &mut l, &[ld(1), ld(2)].concat()).unwrap();
        assert_eq!(l, [ld(5), ld(5)].concat());
    }
}
