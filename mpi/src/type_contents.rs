//! `MPI_Type_get_envelope` and `MPI_Type_get_contents` (MPI 4.1 §5.1.13): each
//! constructor records its combiner and arguments beside the new type. A derived type
//! among the arguments is kept by value (its entry, layout and own contents, shared
//! through `Arc`s), so freeing it does not lose the description; `MPI_Type_get_contents`
//! hands out a new handle for each such type (the program frees it) and the predefined
//! ones as they are.
//!
//! A type made by a large-count constructor (`MPI_Type_vector_c`...) reports its
//! `MPI_Count` arguments as large counts (`array_of_large_counts` of
//! `MPI_Type_get_contents_c`), its `int` ones as integers and no addresses, as MPI
//! 4.1's decoding table says; the `int` queries refuse such a type (`MPI_ERR_TYPE`:
//! they have no array for its large counts), the `_c` queries answer for every type.

use std::ffi::c_int;
use std::sync::Arc;

use crate::consts::*;
use crate::datatype::TypeEntry;
use crate::error::{Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::typemap::Layout;
use crate::util::out;

/// The combiners (the ABI table's values).
pub(crate) const NAMED: c_int = 301;
pub(crate) const DUP: c_int = 302;
pub(crate) const CONTIGUOUS: c_int = 303;
pub(crate) const VECTOR: c_int = 304;
pub(crate) const HVECTOR: c_int = 305;
pub(crate) const INDEXED: c_int = 306;
pub(crate) const HINDEXED: c_int = 307;
pub(crate) const INDEXED_BLOCK: c_int = 308;
pub(crate) const HINDEXED_BLOCK: c_int = 309;
pub(crate) const STRUCT: c_int = 310;
pub(crate) const SUBARRAY: c_int = 311;
pub(crate) const RESIZED: c_int = 316;

/// A type argument of a constructor.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    /// A predefined type: handed back as it is.
    Named(Handle),
    /// A derived type, by value.
    Derived {
        entry: TypeEntry,
        layout: Option<Arc<Layout>>,
        contents: Option<Arc<Contents>>,
    },
}

/// How a derived type was made.
#[derive(Debug)]
pub(crate) struct Contents {
    /// The constructor (one of the combiner constants above).
    pub(crate) combiner: c_int,
    /// Its `int` arguments.
    pub(crate) ints: Vec<c_int>,
    /// Its `MPI_Aint` arguments.
    pub(crate) aints: Vec<isize>,
    /// The `MPI_Count` arguments of a large-count constructor (empty otherwise).
    pub(crate) large: Vec<i64>,
    /// Its type arguments.
    pub(crate) types: Vec<Arg>,
}

/// Records that the type at `*newtype` was made by `combiner` from these arguments.
///
/// # Safety
/// `newtype` is valid for reads (the constructor just wrote it).
pub(crate) unsafe fn record(
    lib: &mut Lib,
    newtype: *const Handle,
    combiner: c_int,
    ints: Vec<c_int>,
    aints: Vec<isize>,
    types: &[Handle],
) -> R<()> {
    // SAFETY: the caller's contract.
    let h = unsafe { crate::util::read_handle(newtype) }?;
    let types = types
        .iter()
        .map(|&t| arg_of(lib, t))
        .collect::<R<Vec<_>>>()?;
    let c = Contents {
        combiner,
        ints,
        aints,
        large: Vec::new(),
        types,
    };
    lib.type_contents.insert(h, Arc::new(c));
    Ok(())
}

/// Records that derived type `h`, just made by an `int` constructor on behalf of its
/// large-count form, was made by the large-count form: its integer arguments `ints`
/// and `MPI_Count` arguments `large` replace what the `int` form recorded (the
/// combiner and the type arguments stay).
///
/// # Errors
/// `MPI_ERR_INTERN` when `h` has no recorded constructor.
pub(crate) fn record_large(lib: &mut Lib, h: Handle, ints: Vec<c_int>, large: Vec<i64>) -> R<()> {
    let old = lib.type_contents.get(&h).cloned().ok_or_else(|| {
        Fail::new(
            MPI_ERR_INTERN,
            format!("type {h:#x} has no recorded constructor"),
        )
    })?;
    let c = Contents {
        combiner: old.combiner,
        ints,
        aints: Vec::new(),
        large,
        types: old.types.clone(),
    };
    lib.type_contents.insert(h, Arc::new(c));
    Ok(())
}

fn arg_of(lib: &Lib, t: Handle) -> R<Arg> {
    if crate::datatype::basic_entry(t).is_some() {
        return Ok(Arg::Named(t));
    }
    let entry = *lib
        .types
        .get(&t)
        .ok_or_else(|| Fail::new(MPI_ERR_TYPE, format!("{t:#x} is not a datatype")))?;
    Ok(Arg::Derived {
        entry,
        layout: lib.layouts.get(&t).cloned(),
        contents: lib.type_contents.get(&t).cloned(),
    })
}

/// A handle for argument `a`: a predefined type itself, a new handle for a derived one.
fn handle_of(lib: &mut Lib, a: &Arg) -> Handle {
    match a {
        Arg::Named(h) => *h,
        Arg::Derived {
            entry,
            layout,
            contents,
        } => {
            let h = lib.new_handle();
            lib.types.insert(h, *entry);
            if let Some(l) = layout {
                lib.layouts.insert(h, Arc::clone(l));
            }
            if let Some(c) = contents {
                lib.type_contents.insert(h, Arc::clone(c));
            }
            h
        }
    }
}

/// The contents of derived type `h`: `None` for a predefined type.
pub(crate) fn contents_of(lib: &Lib, h: Handle) -> R<Option<Arc<Contents>>> {
    if crate::datatype::basic_entry(h).is_some() {
        return Ok(None);
    }
    if !lib.types.contains_key(&h) {
        return Err(Fail::new(MPI_ERR_TYPE, format!("{h:#x} is not a datatype")));
    }
    lib.type_contents.get(&h).cloned().map(Some).ok_or_else(|| {
        Fail::new(
            MPI_ERR_INTERN,
            format!("type {h:#x} has no recorded constructor"),
        )
    })
}

fn count(n: usize) -> R<c_int> {
    c_int::try_from(n).map_err(|_| Fail::new(MPI_ERR_COUNT, "too many arguments for an int"))
}

/// The contents of `h` for an `int` query: a type made by a large-count constructor is
/// `MPI_ERR_TYPE` (its large counts have no place in the `int` forms' arrays).
fn int_contents_of(lib: &Lib, h: Handle) -> R<Option<Arc<Contents>>> {
    let c = contents_of(lib, h)?;
    if c.as_ref().is_some_and(|c| !c.large.is_empty()) {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            format!(
                "type {h:#x} was made by a large-count constructor: \
                 MPI_Type_get_envelope_c and MPI_Type_get_contents_c describe it"
            ),
        ));
    }
    Ok(c)
}

crate::mpi_fn! {
    /// `MPI_Type_get_envelope`: how many integers, addresses and types made `datatype`
    /// and with which combiner (`MPI_COMBINER_NAMED` for a predefined type).
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: Handle,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            let c = int_contents_of(g.lib()?, datatype)?;
            let (ni, na, nd, comb) = match &c {
                None => (0, 0, 0, NAMED),
                Some(c) => (count(c.ints.len())?, count(c.aints.len())?, count(c.types.len())?, c.combiner),
            };
            // SAFETY: MPI's contract: the four are valid for writes.
            unsafe {
                *out(num_integers)? = ni;
                *out(num_addresses)? = na;
                *out(num_datatypes)? = nd;
                *out(combiner)? = comb;
            }
            Ok(())
        })
    }
}

/// Copies `values` into the program's array `p` of `max` entries.
///
/// # Safety
/// `p` holds `max` entries when `values` is not empty.
unsafe fn put<T: Copy>(p: *mut T, max: i64, values: &[T]) -> R<()> {
    if values.is_empty() {
        return Ok(());
    }
    if usize::try_from(max).map_or(true, |m| m < values.len()) || p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("an array of {max} for {} values", values.len()),
        ));
    }
    // SAFETY: the caller's contract; `values.len()` <= `max`.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), p, values.len()) };
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Type_get_contents`: the arguments that made derived `datatype` (a
    /// predefined one is `MPI_ERR_TYPE`); each derived type among them comes back as a
    /// new handle.
    fn MPI_Type_get_contents / PMPI_Type_get_contents(
        datatype: Handle,
        max_integers: c_int,
        max_addresses: c_int,
        max_datatypes: c_int,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut isize,
        array_of_datatypes: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let c = int_contents_of(lib, datatype)?
                .ok_or_else(|| Fail::new(MPI_ERR_TYPE, "a predefined type has no contents"))?;
            let max = [max_integers, max_addresses, 0, max_datatypes].map(i64::from);
            // SAFETY: MPI's contract: the arrays hold `max_*` entries.
            unsafe { put_all(lib, &c, max, array_of_integers, array_of_addresses, std::ptr::null_mut(), array_of_datatypes) }
        })
    }
}

/// Writes `c`'s arguments to the program's arrays (`max`: their lengths, integers,
/// addresses, large counts, types), a new handle for each derived type argument.
///
/// # Safety
/// Each array holds its `max` entries.
unsafe fn put_all(
    lib: &mut Lib,
    c: &Contents,
    max: [i64; 4],
    ints: *mut c_int,
    aints: *mut isize,
    large: *mut i64,
    types: *mut Handle,
) -> R<()> {
    if usize::try_from(max[3]).map_or(true, |m| m < c.types.len()) {
        return Err(Fail::new(MPI_ERR_ARG, "array_of_datatypes is too short"));
    }
    // SAFETY: the caller's contract.
    unsafe {
        put(ints, max[0], &c.ints)?;
        put(aints, max[1], &c.aints)?;
        put(large, max[2], &c.large)?;
    }
    let handles: Vec<Handle> = c.types.iter().map(|a| handle_of(lib, a)).collect();
    // SAFETY: as above; checked long enough.
    unsafe { put(types, max[3], &handles) }
}

/// A length as an `MPI_Count`.
fn wide(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

crate::mpi_fn! {
    /// `MPI_Type_get_envelope_c`: `MPI_Type_get_envelope` with `MPI_Count` results and
    /// the number of large counts, for every type (MPI 4.1 §5.1.13).
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(
        datatype: Handle,
        num_integers: *mut i64,
        num_addresses: *mut i64,
        num_large_counts: *mut i64,
        num_datatypes: *mut i64,
        combiner: *mut c_int
    ) {
        call(NO_OBJECT, |g| {
            let c = contents_of(g.lib()?, datatype)?;
            let (n, comb) = match &c {
                None => ([0; 4], NAMED),
                Some(c) => ([c.ints.len(), c.aints.len(), c.large.len(), c.types.len()].map(wide), c.combiner),
            };
            // SAFETY: MPI's contract: the five are valid for writes.
            unsafe {
                *out(num_integers)? = n[0];
                *out(num_addresses)? = n[1];
                *out(num_large_counts)? = n[2];
                *out(num_datatypes)? = n[3];
                *out(combiner)? = comb;
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Type_get_contents_c`: `MPI_Type_get_contents` with `MPI_Count` lengths and
    /// the large counts (`MPI_Count` arguments of a large-count constructor), for every
    /// derived type.
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(
        datatype: Handle,
        max_integers: i64,
        max_addresses: i64,
        max_large_counts: i64,
        max_datatypes: i64,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut isize,
        array_of_large_counts: *mut i64,
        array_of_datatypes: *mut Handle
    ) {
        call(NO_OBJECT, |g| {
            let lib = g.lib()?;
            let c = contents_of(lib, datatype)?
                .ok_or_else(|| Fail::new(MPI_ERR_TYPE, "a predefined type has no contents"))?;
            let max = [max_integers, max_addresses, max_large_counts, max_datatypes];
            // SAFETY: MPI's contract: the arrays hold `max_*` entries.
            unsafe {
                put_all(lib, &c, max, array_of_integers, array_of_addresses, array_of_large_counts, array_of_datatypes)
            }
        })
    }
}
