//! Buffered sends (MPI 4.1, 3.6): `MPI_Buffer_attach`, `MPI_Buffer_detach`, `MPI_Bsend`,
//! `MPI_Ibsend`, `MPI_Bsend_init` (each `MPI_Start` of it is an `MPI_Ibsend` with its
//! arguments, made as a persistent collective's start is: `coll_persistent.rs`). A buffered send copies the message at the call and returns; the copy
//! travels as a standard send that later calls progress (with the requests freed while
//! active, `Lib::detached`). The copy is made in the library's own memory, not in the
//! attached buffer (the program cannot tell where), but the attached size is the limit
//! MPI gives it: a message that does not fit beside the ones still in flight (each
//! counting its length plus `MPI_BSEND_OVERHEAD`) is `MPI_ERR_BUFFER`.
//! `MPI_Buffer_detach` waits until every buffered message has left.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use sf::comm::SendRequest;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::p2p::{peers, start_send, Mode};
use crate::request::{progress_detached, Op, Outcome, Req};
use crate::state::NO_OBJECT;
use crate::state::{call, Guard, Lib};
use crate::util::{new_request_out, out, rank_arg, tag_arg};

/// `MPI_BSEND_OVERHEAD`: what each buffered message counts beyond its bytes.
pub(crate) const BSEND_OVERHEAD: usize = 96;

/// A buffered message in flight: its send and the copy it sends from. The request is
/// declared first, so dropped first: the copy outlives every use of it.
pub(crate) struct Buffered {
    req: SendRequest<'static>,
    copy: Box<[u8]>,
}

impl Buffered {
    /// Progresses; `true` once sent.
    pub fn test(&mut self) -> Result<bool, sf::CommError> {
        self.req.test()
    }

    /// What it counts against the attached buffer.
    fn footprint(&self) -> usize {
        self.copy.len() + BSEND_OVERHEAD
    }
}

/// The attached buffer's address and size, if any.
fn attached(lib: &Lib) -> Option<(usize, usize)> {
    lib.bsend_buffer
}

/// What the buffered messages still in flight count.
fn in_use(lib: &Lib) -> usize {
    lib.detached
        .iter()
        .map(|r| match &r.op {
            Op::Buffered(b) => b.footprint(),
            _ => 0,
        })
        .sum()
}

/// Copies the message and starts its send (see the module doc).
#[allow(clippy::too_many_arguments)]
fn bsend(
    g: &mut Guard,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> R<()> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, dt)?;
    let len = buffer.len();
    let tag = tag_arg(tag)?;
    let e = lib.comm(comm)?;
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    let dest = rank_arg(dest, e.size)?;
    let (c, offset) = peers(&e.kind);
    let c = c.clone();
    progress_detached(lib);
    let (_, size) = attached(lib)
        .ok_or_else(|| Fail::new(MPI_ERR_BUFFER, "MPI_Bsend without an attached buffer"))?;
    let used = in_use(lib);
    if used + len + BSEND_OVERHEAD > size {
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            format!(
                "a buffered message of {len} bytes does not fit: {used} of the {size} \
                 attached are in use"
            ),
        ));
    }
    // SAFETY: MPI's contract: `buf` holds `count` items of `dt`.
    let copy = unsafe { buffer.copy_of(buf) }?;
    // SAFETY: `copy` is moved into the `Buffered` with the request and outlives it (the
    // request is dropped first); its heap bytes never move.
    let data: &'static [u8] = unsafe { std::slice::from_raw_parts(copy.as_ptr(), copy.len()) };
    // SAFETY: as above; the request is kept in `Lib::detached` until it completes.
    let req = unsafe { start_send(&c, offset + dest, tag, data, Mode::Standard) }?;
    let lib = g.lib()?;
    lib.detached.push(Req::new(
        comm,
        Op::Buffered(Box::new(Buffered { req, copy })),
    ));
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Bsend`: returns once the message is copied.
    fn MPI_Bsend / PMPI_Bsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle
    ) {
        call(comm, |g| bsend(g, buf, count, datatype, dest, tag, comm))
    }
}

crate::mpi_fn! {
    /// `MPI_Ibsend`: as `MPI_Bsend`; the request is complete when it returns.
    fn MPI_Ibsend / PMPI_Ibsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { new_request_out(request) }?;
            bsend(g, buf, count, datatype, dest, tag, comm)?;
            *slot = g.lib()?.add_request(Req::finished(comm, Outcome::empty()))?;
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Bsend_init`: a persistent buffered send; each start copies the message as
    /// `MPI_Ibsend` does, so it completes without a matching receive.
    fn MPI_Bsend_init / PMPI_Bsend_init(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| {
            let lib = g.lib()?;
            lib.buffer_of(count, datatype)?;
            let size = lib.comm(comm)?.size;
            tag_arg(tag)?;
            if dest != MPI_PROC_NULL {
                rank_arg(dest, size)?;
            }
            // The address kept as a number: the start runs on whichever thread calls
            // `MPI_Start`.
            let addr = buf as usize;
            let start: crate::persistent::CollStart = Arc::new(move |req: *mut Handle| {
                // SAFETY: the arguments as the program gave them to `MPI_Bsend_init`,
                // which MPI keeps valid while the request lives; `req` is the start's
                // local handle.
                unsafe { PMPI_Ibsend(addr as *const c_void, count, datatype, dest, tag, comm, req) }
            });
            crate::coll_persistent::init(g, comm, request, start)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Buffer_attach`: `size` bytes for buffered sends (one buffer at a time).
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) {
        call(NO_OBJECT, |g| {
            let size = usize::try_from(size)
                .map_err(|_| Fail::new(MPI_ERR_ARG, format!("a buffer of {size} bytes")))?;
            let lib = g.lib()?;
            if lib.bsend_buffer.is_some() {
                return Err(Fail::new(MPI_ERR_BUFFER, "a buffer is already attached"));
            }
            lib.bsend_buffer = Some((buffer as usize, size));
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Buffer_detach`: waits until every buffered message has left, then gives
    /// the buffer's address (in `*(void **)buffer_addr`) and size back.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) {
        call(NO_OBJECT, |g| {
            let mut spin = crate::util::spin_wait();
            loop {
                let lib = g.lib()?;
                progress_detached(lib);
                if in_use(lib) == 0 {
                    break;
                }
                g.relax(&mut spin);
            }
            let lib = g.lib()?;
            let (addr, n) = lib.bsend_buffer.take().unwrap_or((0, 0));
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *` to write,
            // `size` to an int.
            unsafe {
                *out(buffer_addr.cast::<*mut c_void>())? = addr as *mut c_void;
                *out(size)? = c_int::try_from(n).unwrap_or(c_int::MAX);
            }
            Ok(())
        })
    }
}
