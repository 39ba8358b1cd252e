//! `MPI_Type_get_envelope` and `MPI_Type_get_contents` (MPI 4.1 §5.1.13): each
//! constructor records its combiner and arguments beside the new type. A derived type
//! among the arguments is kept by value (its entry, layout and own contents, shared
//! through `Arc`s), so freeing it does not lose the description; `MPI_Type_get_contents`
//! hands out a new handle for each such type (the program frees it) and the predefined
//! ones as they are.

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
enum Arg {
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
    combiner: c_int,
    ints: Vec<c_int>,
    aints: Vec<isize>,
    types: Vec<Arg>,
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
        types,
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
fn contents_of(lib: &Lib, h: Handle) -> R<Option<Arc<Contents>>> {
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
            let c = contents_of(g.lib()?, datatype)?;
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
unsafe fn put<T: Copy>(p: *mut T, max: c_int, values: &[T]) -> R<()> {
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
            let c = contents_of(lib, datatype)?
                .ok_or_else(|| Fail::new(MPI_ERR_TYPE, "a predefined type has no contents"))?;
            if usize::try_from(max_datatypes).map_or(true, |m| m < c.types.len()) {
                return Err(Fail::new(MPI_ERR_ARG, "array_of_datatypes is too short"));
            }
            // SAFETY: MPI's contract: the arrays hold `max_*` entries.
            unsafe {
                put(array_of_integers, max_integers, &c.ints)?;
                put(array_of_addresses, max_addresses, &c.aints)?;
            }
            let handles: Vec<Handle> = c.types.iter().map(|a| handle_of(lib, a)).collect();
            // SAFETY: as above; checked long enough.
            unsafe { put(array_of_datatypes, max_datatypes, &handles) }
        })
    }
}
