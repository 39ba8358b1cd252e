//! Buffered sends (MPI 4.1, 3.6): `MPI_Buffer_attach`, `MPI_Buffer_detach`, `MPI_Bsend`,
//! `MPI_Ibsend`, `MPI_Bsend_init` (each `MPI_Start` of it is an `MPI_Ibsend` with its
//! arguments, made as a persistent collective's start is: `coll_persistent.rs`). A buffered send copies the message at the call and returns; the copy
//! travels as a standard send that later calls progress (with the requests freed while
//! active, `Lib::detached`). The copy is made in the library's own memory, not in the
//! attached buffer (the program cannot tell where), but the attached size is the limit
//! MPI gives it: a message that does not fit beside the ones still in flight (each
//! counting its length plus `MPI_BSEND_OVERHEAD`) is `MPI_ERR_BUFFER`.
//! `MPI_Buffer_detach` waits until every buffered message has left.
//!
//! MPI 4.1 (§3.6.1) adds buffers of a communicator and of a session (`buffer_attach.rs`)
//! and `MPI_BUFFER_AUTOMATIC` (no limit): a buffered send on a communicator draws on
//! the communicator's buffer, else on the buffer of the session it was made from, else
//! on the process's ([`Buffers::pool_for`]). A communicator counts as made from a
//! session when it was created from a group of `MPI_Group_from_session_pset` itself
//! (a group derived from such a group, by `MPI_Group_incl` say, is not followed).

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Weak};

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

/// `MPI_BUFFER_AUTOMATIC`'s address (MPI 5.0 ABI: `(void *)2`).
pub(crate) const AUTOMATIC: usize = 2;

/// Whose buffer a buffered message counts against.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pool {
    /// The process's (`MPI_Buffer_attach`).
    Process,
    /// A communicator's (`MPI_Comm_attach_buffer`).
    Comm(Handle),
    /// A session's (`MPI_Session_attach_buffer`).
    Session(Handle),
}

/// An attached buffer: the address and size the program gave (address
/// [`AUTOMATIC`]: no limit).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Attached {
    pub addr: usize,
    pub size: usize,
}

/// The attached buffers, and which session each group and communicator comes from.
#[derive(Default)]
pub(crate) struct Buffers {
    attached: Vec<(Pool, Attached)>,
    /// (group or communicator, its session).
    session_of: Vec<(Handle, Handle)>,
}

impl Buffers {
    /// `pool`'s buffer, if one is attached.
    pub fn get(&self, pool: Pool) -> Option<Attached> {
        self.attached
            .iter()
            .find(|(p, _)| *p == pool)
            .map(|&(_, a)| a)
    }

    /// Attaches `a` to `pool`; `MPI_ERR_BUFFER` when one is attached already.
    pub fn attach(&mut self, pool: Pool, a: Attached) -> R<()> {
        if self.get(pool).is_some() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a buffer is already attached"));
        }
        self.attached.push((pool, a));
        Ok(())
    }

    /// Takes `pool`'s buffer off.
    pub fn detach(&mut self, pool: Pool) -> Option<Attached> {
        let i = self.attached.iter().position(|(p, _)| *p == pool)?;
        Some(self.attached.swap_remove(i).1)
    }

    /// Records that group or communicator `object` comes from `session`.
    pub fn note_session(&mut self, object: Handle, session: Handle) {
        self.session_of.push((object, session));
    }

    /// The session group or communicator `object` comes from, if recorded.
    pub fn session_of(&self, object: Handle) -> Option<Handle> {
        self.session_of
            .iter()
            .find(|(o, _)| *o == object)
            .map(|&(_, s)| s)
    }

    /// Forgets freed group, communicator or session `h`: its buffer and its links.
    pub fn forget(&mut self, h: Handle) {
        self.attached
            .retain(|(p, _)| *p != Pool::Comm(h) && *p != Pool::Session(h));
        self.session_of.retain(|&(o, s)| o != h && s != h);
    }

    /// The buffer a buffered send on `comm` draws on: the communicator's, else its
    /// session's, else the process's.
    pub fn pool_for(&self, comm: Handle) -> Option<(Pool, Attached)> {
        let session = self.session_of(comm).map(Pool::Session);
        [Some(Pool::Comm(comm)), session, Some(Pool::Process)]
            .into_iter()
            .flatten()
            .find_map(|p| self.get(p).map(|a| (p, a)))
    }
}

/// A buffered message in flight: its send and the copy it sends from. The request is
/// declared first, so dropped first: the copy outlives every use of it.
pub(crate) struct Buffered {
    req: SendRequest<'static>,
    copy: Box<[u8]>,
    pool: Pool,
    /// Dropped with the message once it has left: what a non-blocking flush watches.
    alive: Arc<()>,
}

/// A non-blocking flush (`MPI_Buffer_iflush`...): the buffered messages of its pool in
/// flight at the call, each seen through the token it drops once it has left.
pub(crate) struct Flush(Vec<Weak<()>>);

impl Flush {
    /// Whether every message it waits for has left. The requests freed while active,
    /// those messages among them, are progressed by every completion call before it
    /// tests its requests (`request::progress_detached`).
    pub fn test(&self) -> bool {
        self.0.iter().all(|w| w.strong_count() == 0)
    }
}

/// The flush of the messages now counted against `pool`.
pub(crate) fn iflush(lib: &mut Lib, pool: Pool) -> Flush {
    progress_detached(lib);
    let pending = lib.detached.iter().filter_map(|r| match &r.op {
        Op::Buffered(b) if b.pool == pool => Some(Arc::downgrade(&b.alive)),
        _ => None,
    });
    Flush(pending.collect())
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

/// What the buffered messages still in flight count against `pool`.
fn in_use(lib: &Lib, pool: Pool) -> usize {
    lib.detached
        .iter()
        .map(|r| match &r.op {
            Op::Buffered(b) if b.pool == pool => b.footprint(),
            _ => 0,
        })
        .sum()
}

/// Waits until every buffered message counted against `pool` has left (a detach or a
/// flush).
pub(crate) fn flush(g: &mut Guard, pool: Pool) -> R<()> {
    let mut spin = crate::util::spin_wait();
    loop {
        let lib = g.lib()?;
        progress_detached(lib);
        if in_use(lib, pool) == 0 {
            return Ok(());
        }
        g.relax(&mut spin);
    }
}

/// Detaches `pool`'s buffer once its messages have left: its address and size
/// (none attached: a null address and 0).
pub(crate) fn detach(g: &mut Guard, pool: Pool) -> R<Attached> {
    flush(g, pool)?;
    let none = Attached { addr: 0, size: 0 };
    Ok(g.lib()?.buffers.detach(pool).unwrap_or(none))
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
    let (pool, a) = lib
        .buffers
        .pool_for(comm)
        .ok_or_else(|| Fail::new(MPI_ERR_BUFFER, "MPI_Bsend without an attached buffer"))?;
    let (used, size) = (in_use(lib, pool), a.size);
    if a.addr != AUTOMATIC && used + len + BSEND_OVERHEAD > size {
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
        Op::Buffered(Box::new(Buffered {
            req,
            copy,
            pool,
            alive: Arc::new(()),
        })),
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
    /// `MPI_Buffer_attach`: `size` bytes for buffered sends (one buffer at a time;
    /// `MPI_BUFFER_AUTOMATIC`: no limit).
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) {
        call(NO_OBJECT, |g| attach(g, Pool::Process, buffer, i64::from(size)))
    }
}

/// Attaches `buffer` of `size` bytes to `pool` (`MPI_ERR_ARG` for a negative size).
pub(crate) fn attach(g: &mut Guard, pool: Pool, buffer: *mut c_void, size: i64) -> R<()> {
    let size = usize::try_from(size)
        .map_err(|_| Fail::new(MPI_ERR_ARG, format!("a buffer of {size} bytes")))?;
    let a = Attached {
        addr: buffer as usize,
        size,
    };
    g.lib()?.buffers.attach(pool, a)
}

/// Writes a detached buffer's address to `*(void **)buffer_addr` and its size to
/// `*size` (`MPI_Count` or `int`, saturated).
///
/// # Safety
/// `buffer_addr` points to a `void *` to write, `size` to a `T`.
pub(crate) unsafe fn give_back<T: TryFrom<usize> + Copy>(
    a: Attached,
    buffer_addr: *mut c_void,
    size: *mut T,
    max: T,
) -> R<()> {
    // SAFETY: the caller's contract.
    unsafe {
        *out(buffer_addr.cast::<*mut c_void>())? = a.addr as *mut c_void;
        *out(size)? = T::try_from(a.size).unwrap_or(max);
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Buffer_detach`: waits until every buffered message has left, then gives
    /// the buffer's address (in `*(void **)buffer_addr`) and size back.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) {
        call(NO_OBJECT, |g| {
            let a = detach(g, Pool::Process)?;
            // SAFETY: MPI's contract: `buffer_addr` points to a `void *` to write,
            // `size` to an int.
            unsafe { give_back(a, buffer_addr, size, c_int::MAX) }
        })
    }
}
