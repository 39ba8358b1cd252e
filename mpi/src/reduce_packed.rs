//! The reductions (`MPI_Reduce`, `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`,
//! `MPI_Reduce_scatter_block`, `MPI_Reduce_scatter`, their non-blocking forms and so
//! their persistent ones) with a type with gaps, on intra- and inter-communicators.
//!
//! As `coll_packed` does for the collectives that move data, each significant buffer
//! is packed (its pieces one after another) and the call runs on the packed bytes; its
//! result is unpacked into the program's buffer after the call (blocking) or when a
//! completion call completes the request (`nbc_packed::attach`, `Req::unpack`). The
//! packed call's datatype is the type's *packed twin*: a contiguous type of the same
//! size and elements, made once per type ([`Twins`]) and forgotten with it. A
//! predefined operation reduces the twin's elements as they come, which is exactly
//! MPI's element-wise reduction of the type's basic elements (MPI 4.1 §6.9.2: a
//! derived type whose basic elements are all one predefined type, a `MINLOC`/`MAXLOC`
//! pair type among them; a struct mixing kinds is refused with `MPI_ERR_OP`). A user
//! function (`op::Reduction::new` sees the twin) is called as MPI specifies: with the
//! program's datatype, on buffers laid out as it describes ([`call_laid_out`] unpacks
//! both operands into aligned temporaries, calls it, and packs `inoutvec` back), as
//! MPICH does (it reduces in the program's layout).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::coll_packed::maybe_gapped;
use crate::consts::*;
use crate::error::{Fail, R};
use crate::op_c::UserFunction;
use crate::state::{call, CommKind, Lib, Map};
use crate::typemap::{pack, unpack, Layout, Unpack};

/// The packed twins of the types with gaps that reductions used.
#[derive(Default)]
pub(crate) struct Twins {
    /// A program's type to its twin.
    of: Map<Handle>,
    /// A twin to the program's type.
    origin: Map<Twin>,
}

/// What a twin stands for.
pub(crate) struct Twin {
    pub program: Handle,
    pub layout: Arc<Layout>,
}

impl Twins {
    /// The program's type twin `h` stands for, if it is one.
    pub(crate) fn origin(&self, h: Handle) -> Option<&Twin> {
        self.origin.get(&h)
    }
}

/// Forgets program type `h`'s twin with it (`MPI_Type_free`); a call already running
/// with the twin keeps what it resolved at its start.
pub(crate) fn forget(lib: &mut Lib, h: Handle) {
    if let Some(t) = lib.twins.of.remove(&h) {
        lib.twins.origin.remove(&t);
        lib.types.remove(&t);
    }
}

/// The twin of program type `dt` (with `layout`), made at its first use.
fn twin_of(lib: &mut Lib, dt: Handle, layout: &Arc<Layout>) -> R<Handle> {
    if let Some(&t) = lib.twins.of.get(&dt) {
        return Ok(t);
    }
    let entry = lib.datatype(dt)?;
    let t = lib.new_handle();
    lib.types.insert(t, entry);
    lib.twins.of.insert(dt, t);
    lib.twins.origin.insert(
        t,
        Twin {
            program: dt,
            layout: Arc::clone(layout),
        },
    );
    Ok(t)
}

/// A type with gaps and the communicator's facts, as the front end needs them.
struct Prep {
    twin: Handle,
    layout: Arc<Layout>,
    /// Packed bytes of one item.
    size: usize,
    /// This process's rank in its (local) group, and that group's size.
    rank: u32,
    local_size: u32,
    inter: bool,
}

/// `dt`'s twin and `comm`'s facts when `dt` has gaps; `None`: the entry point's own
/// path (no gaps, or anything it will report itself).
fn prepare(dt: Handle, comm: Handle) -> Option<Prep> {
    let mut found = None;
    // Never an error here: whatever is wrong, the entry point's own path reports.
    call(comm, |g| {
        let Ok(lib) = g.lib() else { return Ok(()) };
        let Some(layout) = lib.layouts.get(&dt).cloned() else {
            return Ok(());
        };
        let Ok(size) = lib.datatype(dt).map(|t| t.size) else {
            return Ok(());
        };
        let Ok(e) = lib.comm(comm) else { return Ok(()) };
        let (rank, local_size, inter) = match &e.kind {
            CommKind::Intra { .. } => (e.rank, e.size, false),
            CommKind::Inter { coll, .. } => (e.rank, coll.local_size(), true),
        };
        if let Ok(twin) = twin_of(lib, dt, &layout) {
            found = Some(Prep {
                twin,
                layout,
                size,
                rank,
                local_size,
                inter,
            });
        }
        Ok(())
    });
    found
}

/// Which reduction a front end runs, with its own count arguments.
#[derive(Clone, Copy)]
pub(crate) enum Which {
    Reduce { root: c_int },
    Allreduce,
    Scan,
    Exscan,
    ScatterBlock { recvcount: c_int },
    Scatter { recvcounts: *const c_int },
}

/// The items this process's input holds and those its result holds (`None`: its
/// receive buffer is not significant); `None`: the entry point's own path reports.
fn shape(which: Which, p: &Prep, count: c_int) -> Option<(usize, Option<usize>)> {
    let items = |c: c_int| usize::try_from(c).ok();
    let (me, n) = (p.rank as usize, p.local_size as usize);
    Some(match which {
        Which::Reduce { root } if p.inter => match root {
            MPI_ROOT => (0, Some(items(count)?)),
            MPI_PROC_NULL => (0, None),
            _ => (items(count)?, None),
        },
        Which::Reduce { root } => {
            let c = items(count)?;
            (c, (root == me as c_int).then_some(c))
        }
        Which::Allreduce => (items(count)?, Some(items(count)?)),
        // Not defined on inter-communicators: the entry point reports.
        Which::Scan | Which::Exscan if p.inter => return None,
        Which::Scan => (items(count)?, Some(items(count)?)),
        Which::Exscan => (items(count)?, (me != 0).then_some(items(count)?)),
        Which::ScatterBlock { recvcount } => {
            let c = items(recvcount)?;
            (c.checked_mul(n)?, Some(c))
        }
        Which::Scatter { recvcounts } => {
            if recvcounts.is_null() {
                return None;
            }
            // SAFETY: MPI's contract: one count per rank of the (local) group.
            let counts = unsafe { std::slice::from_raw_parts(recvcounts, n) };
            let mut total = 0usize;
            for &c in counts {
                total = total.checked_add(items(c)?)?;
            }
            (total, Some(items(*counts.get(me)?)?))
        }
    })
}

/// The packed buffers of one call: the input to own until it completes and the
/// result to unpack into the program's receive buffer.
struct Plan {
    send_ptr: *const c_void,
    recv_ptr: *mut c_void,
    send: Option<Box<[u8]>>,
    recv: Option<Unpack>,
}

/// Packs the input (`in_items` from `sendbuf`, or in place from `recvbuf`) and makes
/// room for the result (`out_items`); a null buffer passes to the call, which reports.
fn plan(
    p: &Prep,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    in_items: usize,
    out_items: Option<usize>,
) -> Option<Plan> {
    let in_place = sendbuf as usize == IN_PLACE;
    let bytes = |n: usize| p.size.checked_mul(n);
    let mut send = None;
    let mut send_ptr = sendbuf;
    if !in_place && !sendbuf.is_null() && in_items > 0 {
        let mut b = vec![0u8; bytes(in_items)?].into_boxed_slice();
        // SAFETY: MPI's contract: the send buffer holds `in_items` items of the type.
        unsafe { pack(&p.layout, sendbuf.cast(), in_items, &mut b) };
        send_ptr = b.as_ptr().cast();
        send = Some(b);
    }
    let mut recv = None;
    let mut recv_ptr = recvbuf;
    // In place, the receive buffer holds the input (a reduce-scatter's whole vector),
    // packed even where no result comes back (`MPI_Exscan`'s rank 0).
    let significant = out_items.is_some() || in_place;
    if significant && !recvbuf.is_null() {
        let out = out_items.unwrap_or(0);
        let room = if in_place { out.max(in_items) } else { out };
        let mut temp = vec![0u8; bytes(room)?].into_boxed_slice();
        if in_place {
            // SAFETY: MPI's contract: in place, the receive buffer holds the input.
            unsafe { pack(&p.layout, recvbuf.cast_const().cast(), in_items, &mut temp) };
        }
        recv_ptr = temp.as_mut_ptr().cast();
        recv = Some(Unpack {
            layout: Arc::clone(&p.layout),
            base: recvbuf.cast(),
            count: out,
            temp,
        });
    }
    Some(Plan {
        send_ptr,
        recv_ptr,
        send,
        recv,
    })
}

/// A reduction of `which` kind with a type with gaps, blocking (`request` `None`) or
/// not; `None`: the entry point's own path (no gaps, or an argument it reports).
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduced(
    which: Which,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    request: Option<*mut Handle>,
) -> Option<c_int> {
    if !maybe_gapped(dt) {
        return None;
    }
    let p = prepare(dt, comm)?;
    let (in_items, out_items) = shape(which, &p, count)?;
    let plan = plan(&p, sendbuf, recvbuf, in_items, out_items)?;
    let (s, r, t) = (plan.send_ptr, plan.recv_ptr, p.twin);
    // SAFETY: the program's buffers and arrays (MPI's contract) or the packed copies,
    // which live until the call returns or in the request until it completes.
    let code = unsafe {
        match (which, request) {
            (Which::Reduce { root }, None) => {
                crate::coll::PMPI_Reduce(s, r, count, t, op, root, comm)
            }
            (Which::Reduce { root }, Some(q)) => {
                crate::nbc::PMPI_Ireduce(s, r, count, t, op, root, comm, q)
            }
            (Which::Allreduce, None) => crate::coll::PMPI_Allreduce(s, r, count, t, op, comm),
            (Which::Allreduce, Some(q)) => crate::nbc::PMPI_Iallreduce(s, r, count, t, op, comm, q),
            (Which::Scan, None) => crate::coll_scan::PMPI_Scan(s, r, count, t, op, comm),
            (Which::Scan, Some(q)) => crate::nbc_scan::PMPI_Iscan(s, r, count, t, op, comm, q),
            (Which::Exscan, None) => crate::coll_scan::PMPI_Exscan(s, r, count, t, op, comm),
            (Which::Exscan, Some(q)) => crate::nbc_scan::PMPI_Iexscan(s, r, count, t, op, comm, q),
            (Which::ScatterBlock { recvcount: c }, None) => {
                crate::coll_scan::PMPI_Reduce_scatter_block(s, r, c, t, op, comm)
            }
            (Which::ScatterBlock { recvcount: c }, Some(q)) => {
                crate::nbc_scan::PMPI_Ireduce_scatter_block(s, r, c, t, op, comm, q)
            }
            (Which::Scatter { recvcounts: c }, None) => {
                crate::coll_scan::PMPI_Reduce_scatter(s, r, c, t, op, comm)
            }
            (Which::Scatter { recvcounts: c }, Some(q)) => {
                crate::nbc_scan::PMPI_Ireduce_scatter(s, r, c, t, op, comm, q)
            }
        }
    };
    Some(crate::nbc_packed::end(
        code, comm, request, plan.send, plan.recv,
    ))
}

/// `MPI_Reduce_local` with a type with gaps: both buffers packed, the twin reduced,
/// `inoutbuf` unpacked; `None`: the entry point's own path.
pub(crate) fn reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> Option<c_int> {
    if !maybe_gapped(dt) || inbuf.is_null() || inoutbuf.is_null() {
        return None;
    }
    if inbuf as usize == IN_PLACE || inoutbuf as usize == IN_PLACE {
        return None;
    }
    let p = prepare(dt, MPI_COMM_SELF)?;
    let n = usize::try_from(count).ok()?;
    // Packs `n` items from the program's buffer at `from`.
    let packed = |from: *const c_void| -> Option<Box<[u8]>> {
        let mut b = vec![0u8; p.size.checked_mul(n)?].into_boxed_slice();
        // SAFETY: MPI's contract: each buffer holds `count` items of the type.
        unsafe { pack(&p.layout, from.cast(), n, &mut b) };
        Some(b)
    };
    let input = packed(inbuf)?;
    let mut acc = packed(inoutbuf.cast_const())?;
    // SAFETY: both packed buffers hold `count` items of the twin.
    let code = unsafe {
        crate::op::PMPI_Reduce_local(
            input.as_ptr().cast(),
            acc.as_mut_ptr().cast(),
            count,
            p.twin,
            op,
        )
    };
    if code == MPI_SUCCESS {
        // SAFETY: MPI's contract: `inoutbuf` holds `count` items, the program's alone
        // during the call.
        unsafe { unpack(&p.layout, &acc, inoutbuf.cast(), n) };
    }
    Some(code)
}

/// Bytes aligned for any basic type, holding `n` items of a layout laid out from a
/// base inside them.
struct LaidOut {
    room: Vec<u128>,
    /// The byte offset of item 0's start in `room`.
    base: usize,
}

impl LaidOut {
    /// Room for `n` items of `l`, zeroed (the gaps).
    fn new(l: &Layout, n: usize) -> R<LaidOut> {
        let too_large = || Fail::new(MPI_ERR_COUNT, "a reduction's items span too far");
        let last = isize::try_from(n.saturating_sub(1))
            .ok()
            .and_then(|k| k.checked_mul(l.extent))
            .ok_or_else(too_large)?;
        let lo = l
            .true_lb
            .min(l.true_lb.checked_add(last).ok_or_else(too_large)?);
        let hi = l
            .true_ub
            .max(l.true_ub.checked_add(last).ok_or_else(too_large)?);
        // Item 0's start 16-aligned (as a program's buffer is for its types), with
        // room below it for pieces at negative offsets.
        let below = usize::try_from(-lo.min(0)).map_err(|_| too_large())?;
        let base = below.checked_next_multiple_of(16).ok_or_else(too_large)?;
        let above = usize::try_from(hi.max(0)).map_err(|_| too_large())?;
        let bytes = base.checked_add(above).ok_or_else(too_large)?;
        Ok(LaidOut {
            room: vec![0u128; bytes.div_ceil(16).max(1)],
            base,
        })
    }

    fn ptr(&mut self) -> *mut u8 {
        self.room.as_mut_ptr().cast::<u8>().wrapping_add(self.base)
    }
}

/// Calls user function `f(invec, inoutvec, &len, &dt)` for `n` items of program type
/// `dt` (layout `l`) whose packed operands are `a` and `b`: both unpacked into the
/// type's layout, and `inoutvec`'s result packed back into `b`.
pub(crate) fn call_laid_out(
    f: UserFunction,
    l: &Layout,
    n: usize,
    dt: Handle,
    a: &[u8],
    b: &mut [u8],
) -> R<()> {
    let (mut x, mut y) = (LaidOut::new(l, n)?, LaidOut::new(l, n)?);
    let (px, py) = (x.ptr(), y.ptr());
    // SAFETY: `LaidOut::new` made room for every piece of `n` items from each base.
    unsafe {
        unpack(l, a, px, n);
        unpack(l, b, py, n);
    }
    // SAFETY: both buffers hold `n` items of `dt` laid out as it describes, the
    // function's alone for the call (the caller gives at most `f.max_items()`).
    unsafe { f.call(px.cast(), py.cast(), n, dt) };
    // SAFETY: as above; `b` holds the packed bytes of `n` items.
    unsafe { pack(l, py, n, b) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds `invec` to `inoutvec` where an item of the test layout has its ints
    /// (bytes -8..-4 and 4..8 of each 16-byte item), and checks the gaps are zero.
    unsafe extern "C" fn add_pieces(
        a: *mut c_void,
        b: *mut c_void,
        len: *mut c_int,
        _: *mut Handle,
    ) {
        // SAFETY: the test's call: `len` items of 16 bytes around each base.
        unsafe {
            for k in 0..*len as isize {
                let (x, y) = (a.cast::<i32>().offset(4 * k), b.cast::<i32>().offset(4 * k));
                assert_eq!(*y.offset(-1), 0, "the gap between the pieces");
                *y.offset(-2) += *x.offset(-2);
                *y.offset(1) += *x.offset(1);
            }
        }
    }

    #[test]
    fn a_user_function_gets_the_items_laid_out_below_and_above_their_base() {
        let l = Layout {
            segs: vec![(-8, 4), (4, 4)],
            lb: -8,
            extent: 16,
            true_lb: -8,
            true_ub: 8,
            align: 4,
        };
        let words = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
        let a = words(&[1, 2, 3, 4]);
        let mut b = words(&[10, 20, 30, 40]);
        call_laid_out(UserFunction::Int(add_pieces), &l, 2, 0x201, &a, &mut b).unwrap();
        assert_eq!(b, words(&[11, 22, 33, 44]));
        let room = LaidOut::new(&l, 2).unwrap();
        assert_eq!(room.base % 16, 0);
        assert!(room.base >= 8 && room.room.len() * 16 >= room.base + 24);
    }
}
