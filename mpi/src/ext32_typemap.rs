//! The basic types of a datatype in type-map order, for converting its data to and
//! from external32 (`external32`, `pack_external`).
//!
//! A type's [`Layout`](crate::typemap::Layout) knows where its bytes are but not which
//! basic type each is, and a type's element kind (`Elem::I64`) does not tell
//! `MPI_LONG` (4 bytes in external32) from `MPI_LONG_LONG` (8). The recorded
//! constructor arguments (`type_contents`) do: [`Seq`] is the sequence of basic types
//! of one item, built from them, compressed as runs and repetitions so that its size is
//! that of the constructor tree, not of the data.
//!
//! Its order is that of the type's native packed form (`MPI_Pack`: the type map's
//! order), and the packed form holds each basic value whole, so converting the packed
//! bytes value by value along the sequence is converting the data: every combiner with
//! one type argument (contiguous, vectors, indexed ones, subarray, darray, resized, dup)
//! packs its type argument's packed form some number of times (its size over the
//! argument's), and a struct packs each block's in turn.

use crate::consts::*;
use crate::error::{Fail, R};
use crate::external32::{basic, decode, encode, Basic};
use crate::state::Lib;
use crate::type_contents::{self as tc, Arg, Contents};

/// The basic types of some data, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seq {
    /// `n` values of one basic type.
    Run(Handle, usize),
    /// `n` times a sequence.
    Rep(usize, Box<Seq>),
    /// Sequences one after another.
    Cat(Vec<Seq>),
}

/// `n` times `s`, runs merged.
fn rep(n: usize, s: Seq) -> R<Seq> {
    Ok(match s {
        _ if n == 1 => s,
        Seq::Run(h, k) => Seq::Run(h, k.checked_mul(n).ok_or_else(too_long)?),
        s => Seq::Rep(n, Box::new(s)),
    })
}

fn too_long() -> Fail {
    Fail::new(MPI_ERR_COUNT, "the data's length overflows")
}

/// The sequence of `count` items of `dt`, which the caller has checked is a datatype.
pub(crate) fn seq_of(lib: &Lib, dt: Handle, count: usize) -> R<Seq> {
    let one = match tc::contents_of(lib, dt)? {
        None => Seq::Run(dt, 1),
        Some(c) => {
            let size = lib.datatype(dt)?.size;
            of_contents(&c, size, 0)?
        }
    };
    rep(count, one)
}

/// How deep constructors may nest (a bound on the recursion; the types programs make
/// nest a few levels).
const MAX_DEPTH: usize = 256;

/// The sequence of one item of a derived type of packed size `size` made as `c` says.
fn of_contents(c: &Contents, size: usize, depth: usize) -> R<Seq> {
    if depth > MAX_DEPTH {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "datatype constructors nest too deep",
        ));
    }
    // A Fortran type by precision and range: the sized type its arguments select.
    if let Some(h) = crate::f90types::sized_type_of(c.combiner, &c.ints) {
        return Ok(Seq::Run(h, 1));
    }
    if c.combiner == tc::STRUCT {
        let n = c.types.len();
        // The blocklengths follow the count: `int`s, or a large-count constructor's.
        let lens: Vec<i64> = if c.large.is_empty() {
            c.ints
                .get(1..=n)
                .map(|v| v.iter().map(|&b| i64::from(b)).collect())
        } else {
            c.large.get(1..=n).map(<[i64]>::to_vec)
        }
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "a struct type's recorded arguments"))?;
        let mut parts = Vec::with_capacity(n);
        for (a, &len) in c.types.iter().zip(&lens) {
            let (s, _) = of_arg(a, depth)?;
            parts.push(rep(usize::try_from(len).unwrap_or(0), s)?);
        }
        return Ok(Seq::Cat(parts));
    }
    let [a] = &c.types[..] else {
        return Err(Fail::new(
            MPI_ERR_INTERN,
            format!(
                "combiner {} with {} type arguments",
                c.combiner,
                c.types.len()
            ),
        ));
    };
    let (s, each) = of_arg(a, depth)?;
    // Each copy of the argument packs its whole packed form.
    rep(size.checked_div(each).unwrap_or(0), s)
}

/// The sequence of one item of a type argument, and its packed size.
fn of_arg(a: &Arg, depth: usize) -> R<(Seq, usize)> {
    match a {
        Arg::Named(h) => {
            let b = basic(*h).ok_or_else(|| not_convertible(*h))?;
            Ok((Seq::Run(*h, 1), b.native))
        }
        Arg::Derived {
            entry,
            contents: Some(c),
            ..
        } => Ok((of_contents(c, entry.size, depth + 1)?, entry.size)),
        Arg::Derived { contents: None, .. } => Err(Fail::new(
            MPI_ERR_TYPE,
            "a datatype argument without a recorded constructor has no external32 form",
        )),
    }
}

fn not_convertible(h: Handle) -> Fail {
    Fail::new(
        MPI_ERR_TYPE,
        format!("datatype {h:#x} has no external32 representation"),
    )
}

/// The external32 bytes of the data `s` describes.
pub(crate) fn ext_len(s: &Seq) -> R<usize> {
    match s {
        Seq::Run(h, n) => {
            let b = basic(*h).ok_or_else(|| not_convertible(*h))?;
            b.ext().checked_mul(*n).ok_or_else(too_long)
        }
        Seq::Rep(n, s) => ext_len(s)?.checked_mul(*n).ok_or_else(too_long),
        Seq::Cat(v) => v.iter().try_fold(0usize, |acc, s| {
            acc.checked_add(ext_len(s)?).ok_or_else(too_long)
        }),
    }
}

/// Which way a conversion goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Native to external32.
    Out,
    /// External32 to native.
    In,
}

/// Converts along a sequence from `src` to `dst`: the byte positions reached in each.
struct Walk<'a> {
    src: &'a [u8],
    dst: &'a mut [u8],
    s_at: usize,
    d_at: usize,
    dir: Dir,
}

impl Walk<'_> {
    fn run(&mut self, s: &Seq) -> R<()> {
        match s {
            Seq::Run(h, n) => {
                let b = basic(*h).ok_or_else(|| not_convertible(*h))?;
                for _ in 0..*n {
                    self.value(b)?;
                }
            }
            Seq::Rep(n, s) => {
                for _ in 0..*n {
                    self.run(s)?;
                }
            }
            Seq::Cat(v) => {
                for s in v {
                    self.run(s)?;
                }
            }
        }
        Ok(())
    }

    /// Converts one value of basic type `b` at the current positions.
    fn value(&mut self, b: Basic) -> R<()> {
        let (s_len, d_len) = match self.dir {
            Dir::Out => (b.native, b.ext()),
            Dir::In => (b.ext(), b.native),
        };
        let (s_end, d_end) = (self.s_at + s_len, self.d_at + d_len);
        let (Some(src), Some(dst)) = (
            self.src.get(self.s_at..s_end),
            self.dst.get_mut(self.d_at..d_end),
        ) else {
            return Err(mismatch());
        };
        let mut at = 0;
        for &(o, c) in b.parts {
            match self.dir {
                Dir::Out => encode(c, &src[o..o + c.native()], &mut dst[at..at + c.ext()]),
                Dir::In => decode(c, &src[at..at + c.ext()], &mut dst[o..o + c.native()]),
            }
            at += c.ext();
        }
        (self.s_at, self.d_at) = (s_end, d_end);
        Ok(())
    }

    /// Checks that the whole of both buffers was converted.
    fn done(&self) -> R<()> {
        if self.s_at == self.src.len() && self.d_at == self.dst.len() {
            Ok(())
        } else {
            Err(mismatch())
        }
    }
}

fn mismatch() -> Fail {
    Fail::new(
        MPI_ERR_INTERN,
        "a datatype's basic types do not cover its packed bytes",
    )
}

/// Converts along `s` in direction `dir`, the whole of `src` into the whole of `dst`.
fn convert(s: &Seq, dir: Dir, src: &[u8], dst: &mut [u8]) -> R<()> {
    let mut w = Walk {
        src,
        dst,
        s_at: 0,
        d_at: 0,
        dir,
    };
    w.run(s)?;
    w.done()
}

/// Converts `native` (the native packed form of the data `s` describes) to external32
/// in `ext` (exactly [`ext_len`] bytes).
pub(crate) fn to_external(s: &Seq, native: &[u8], ext: &mut [u8]) -> R<()> {
    convert(s, Dir::Out, native, ext)
}

/// Converts `ext` (the external32 form of the data `s` describes) to the native packed
/// form in `native` (the packed size of that data).
pub(crate) fn from_external(s: &Seq, ext: &[u8], native: &mut [u8]) -> R<()> {
    convert(s, Dir::In, ext, native)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{Elem, TypeEntry};
    use std::sync::Arc;

    const INT: Handle = 0x209;
    const LONG: Handle = 0x20a;
    const DOUBLE: Handle = 0x214;

    fn contents(combiner: std::ffi::c_int, ints: Vec<i32>, types: Vec<Arg>) -> Arc<Contents> {
        Arc::new(Contents {
            combiner,
            ints,
            aints: Vec::new(),
            large: Vec::new(),
            types,
        })
    }

    fn derived(size: usize, c: Arc<Contents>) -> Arg {
        Arg::Derived {
            entry: TypeEntry {
                size,
                elem: Elem::Opaque,
                elems: 1,
                committed: true,
            },
            layout: None,
            contents: Some(c),
        }
    }

    /// struct { int; double } (packed: 12 bytes).
    fn int_double() -> Arc<Contents> {
        contents(
            tc::STRUCT,
            vec![2, 1, 1],
            vec![Arg::Named(INT), Arg::Named(DOUBLE)],
        )
    }

    #[test]
    fn a_vector_of_longs_is_one_run() {
        let c = contents(tc::VECTOR, vec![3, 2, 4], vec![Arg::Named(LONG)]);
        let s = of_contents(&c, 48, 0).unwrap();
        assert_eq!(s, Seq::Run(LONG, 6));
        assert_eq!(ext_len(&s).unwrap(), 24);
    }

    #[test]
    fn structs_resized_and_dup_types_keep_their_members_in_order() {
        let resized = contents(tc::RESIZED, vec![], vec![derived(12, int_double())]);
        let dup = contents(tc::DUP, vec![], vec![derived(12, resized)]);
        let vec2 = contents(tc::CONTIGUOUS, vec![2], vec![derived(12, dup)]);
        let s = rep(2, of_contents(&vec2, 24, 0).unwrap()).unwrap();
        let one = Seq::Cat(vec![Seq::Run(INT, 1), Seq::Run(DOUBLE, 1)]);
        assert_eq!(s, Seq::Rep(2, Box::new(Seq::Rep(2, Box::new(one)))));
        assert_eq!(ext_len(&s).unwrap(), 48);
        let mut native = Vec::new();
        for i in 0..4i32 {
            native.extend_from_slice(&i.to_ne_bytes());
            native.extend_from_slice(&f64::from(i).to_ne_bytes());
        }
        let mut ext = vec![0u8; 48];
        to_external(&s, &native, &mut ext).unwrap();
        assert_eq!(&ext[12..16], &[0, 0, 0, 1]);
        assert_eq!(&ext[16..24], &1.0f64.to_be_bytes());
        let mut back = vec![0u8; 48];
        from_external(&s, &ext, &mut back).unwrap();
        assert_eq!(back, native);
    }

    #[test]
    fn a_large_count_struct_takes_its_blocklengths_from_the_large_counts() {
        let c = Arc::new(Contents {
            combiner: tc::STRUCT,
            ints: Vec::new(),
            aints: Vec::new(),
            large: vec![2, 3, 1, 0, 8],
            types: vec![Arg::Named(LONG), Arg::Named(INT)],
        });
        let s = of_contents(&c, 28, 0).unwrap();
        assert_eq!(s, Seq::Cat(vec![Seq::Run(LONG, 3), Seq::Run(INT, 1)]));
        assert_eq!(ext_len(&s).unwrap(), 16);
    }

    #[test]
    fn buffers_that_disagree_with_the_sequence_are_refused() {
        let s = Seq::Run(LONG, 2);
        let mut ext = vec![0u8; 8];
        assert_eq!(
            to_external(&s, &[0; 8], &mut ext).unwrap_err().class,
            MPI_ERR_INTERN
        );
        assert!(to_external(&s, &[0; 16], &mut ext).is_ok());
        assert_eq!(
            ext_len(&Seq::Run(0x7777, 1)).unwrap_err().class,
            MPI_ERR_TYPE
        );
    }
}
