//! Persistent requests (MPI 4.1, 3.9): `MPI_Send_init`, `MPI_Ssend_init`,
//! `MPI_Rsend_init`, `MPI_Recv_init` make an inactive request that remembers its
//! arguments; `MPI_Start` / `MPI_Startall` start the operation (as `MPI_Isend` /
//! `MPI_Irecv` with those arguments, on any communicator, inter-communicators included);
//! a completion call (`MPI_Wait`, `MPI_Test`, the `*all`/`*any`/`*some` ones) completes
//! it and leaves it inactive, its handle valid, until it is started again or freed with
//! `MPI_Request_free` (`request::attempt`). An inactive request completes at once with
//! an empty status, and the `*any`/`*some` calls pass over it as over
//! `MPI_REQUEST_NULL`. A type with gaps is packed into a copy at each start of a send
//! and received into a temporary unpacked at each completion (`typemap::Unpack`). A
//! partitioned send (`partitioned.rs`) is held at its start until every partition is
//! ready ([`post_held`]).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::p2p::{deferred, irecv_req_at, peers, recv_source, start_send, Mode};
use crate::partitioned::Part;
use crate::request::{Op, Outcome, Req};
use crate::state::NO_OBJECT;
use crate::state::{call, Guard, Lib};
use crate::typemap::{send_bytes, Buffer, Unpack};
use crate::util::{new_request_out, out, rank_arg, recv_tag_arg, tag_arg};

/// A persistent collective's start: the non-blocking collective's entry point with
/// the arguments given at its `_init`, writing the new request's handle.
pub(crate) type CollStart = Arc<dyn Fn(*mut Handle) -> c_int>;

/// What a persistent request does each time it is started.
pub(crate) struct Persistent {
    /// A persistent collective (`coll_persistent.rs`): the rest is unused then.
    pub coll: Option<CollStart>,
    /// A send in this mode, or (`None`) a receive.
    pub send: Option<Mode>,
    buf: *mut u8,
    /// The program's buffer: its bytes, or items of a type with gaps.
    buffer: Buffer,
    /// The destination or source as the program passed it (`MPI_PROC_NULL`,
    /// `MPI_ANY_SOURCE` included), checked when made.
    peer: c_int,
    /// The tag as the program passed it (`MPI_ANY_TAG` for a receive), checked.
    tag: c_int,
    /// Started and not completed since.
    pub active: bool,
    /// A partitioned request's partitions (`partitioned.rs`).
    pub part: Option<Part>,
}

impl Persistent {
    /// The tag a completed partitioned receive reports: the program's, not the one
    /// its message travelled with.
    pub(crate) fn status_tag(&self) -> Option<c_int> {
        (self.send.is_none() && self.part.as_ref()?.wire_tag.is_some()).then_some(self.tag)
    }

    /// A persistent collective, inactive, started by `start`.
    pub(crate) fn collective(start: CollStart) -> Persistent {
        Persistent {
            coll: Some(start),
            send: None,
            buf: std::ptr::null_mut(),
            buffer: Buffer::Contig(0),
            peer: MPI_PROC_NULL,
            tag: 0,
            active: false,
            part: None,
        }
    }
}

/// Makes the inactive persistent request and writes its handle (a partitioned one
/// with `part`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn init(
    g: &mut Guard,
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    send: Option<Mode>,
    part: Option<Part>,
) -> R<()> {
    // SAFETY: MPI's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, datatype)?;
    let size = lib.comm(comm)?.size;
    if send.is_some() {
        tag_arg(tag)?;
        if peer != MPI_PROC_NULL {
            rank_arg(peer, size)?;
        }
    } else {
        recv_tag_arg(tag)?;
        if peer != MPI_PROC_NULL {
            recv_source(peer, size)?;
        }
        if buffer.len() > 0 && buf.is_null() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a null receive buffer"));
        }
    }
    let mut req = Req::finished(comm, Outcome::empty());
    req.persistent = Some(Box::new(Persistent {
        coll: None,
        send,
        buf: buf.cast(),
        buffer,
        peer,
        tag,
        active: false,
        part,
    }));
    *slot = lib.add_request(req)?;
    Ok(())
}

/// Starts the persistent request `h` (`MPI_Start`).
fn start(g: &mut Guard, h: Handle) -> R<()> {
    let lib = g.lib()?;
    let not_persistent = || {
        Fail::new(
            MPI_ERR_REQUEST,
            format!("{h:#x} is not an inactive persistent request"),
        )
    };
    let r = lib.requests.get_mut(&h).ok_or_else(not_persistent)?;
    let p = r.persistent.as_deref_mut().ok_or_else(not_persistent)?;
    if p.active {
        return Err(not_persistent());
    }
    if let Some(f) = p.coll.clone() {
        return crate::coll_persistent::start(g, h, f);
    }
    if let (Some(part), Some(_)) = (&mut p.part, p.send) {
        // A partitioned send waits for its partitions (`post_held`).
        part.restart();
        p.active = true;
        r.op = Op::Held;
        r.done = None;
        return Ok(());
    }
    operate(lib, h)
}

/// Starts the operation of persistent request `h` (its checks done) and makes it
/// active: `MPI_Start`'s, and a partitioned send's once its partitions are all ready.
fn operate(lib: &mut Lib, h: Handle) -> R<()> {
    let gone = || Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a request"));
    let r = lib.requests.get_mut(&h).ok_or_else(gone)?;
    let comm = r.comm;
    let p = r.persistent.as_deref().ok_or_else(gone)?;
    let (send, buf, buffer, peer, tag) = (p.send, p.buf, p.buffer.clone(), p.peer, p.tag);
    let wire = p.part.as_ref().and_then(|part| part.wire_tag);
    let started = if peer == MPI_PROC_NULL {
        // A send's status says nothing; a receive's names `MPI_PROC_NULL`.
        let o = if send.is_some() {
            Outcome::empty()
        } else {
            Outcome::proc_null()
        };
        Req::finished(comm, o)
    } else {
        let e = lib.comm(comm)?;
        let (mut c, offset) = peers(&e.kind);
        if wire.is_some() {
            // A partitioned message: on the collective half (`partitioned.rs`).
            c = e.halves().1;
        }
        match send {
            Some(mode) => {
                let dest = rank_arg(peer, e.size)?;
                let tag = wire.map_or_else(|| tag_arg(tag), Ok)?;
                let mut packed = None;
                // SAFETY: MPI's contract: `buf` holds the items, valid and unchanged
                // until the request completes or is freed (persistent or not).
                let data = unsafe { send_bytes(buffer, buf.cast_const().cast(), &mut packed) }?;
                // SAFETY: `data` is the program's buffer (as above) or the packed copy,
                // which the `Req` keeps in `packed` until after its request is dropped.
                let data: &'static [u8] =
                    unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
                // SAFETY: as above; the request lives in the table's `Req`.
                let r = unsafe { start_send(c, offset + dest, tag, data, mode) };
                let mut req = deferred(
                    comm,
                    r.map(|r| Req::new(comm, Op::Send(r))).map_err(Fail::from),
                )?;
                req.packed = packed;
                req
            }
            None => {
                let source = recv_source(peer, e.size)?.map(|s| offset + s);
                let tag = wire.map_or_else(|| recv_tag_arg(tag), |w| Ok(Some(w)))?;
                match Unpack::of(&buffer, buf.cast()) {
                    None => irecv_req_at(c, offset, comm, source, tag, buf, buffer.len())?,
                    Some(mut u) => {
                        // Into the `Unpack`'s heap bytes, which stay where they are
                        // while the `Req` keeps them (after its request, dropped first).
                        let (t, n) = (u.temp.as_mut_ptr(), u.temp.len());
                        let mut req = irecv_req_at(c, offset, comm, source, tag, t, n)?;
                        req.unpack = Some(Box::new(u));
                        req
                    }
                }
            }
        }
    };
    let r = lib.requests.get_mut(&h).ok_or_else(gone)?;
    r.op = started.op;
    r.done = started.done;
    r.packed = started.packed;
    r.unpack = started.unpack;
    if let Some(p) = &mut r.persistent {
        p.active = true;
    }
    Ok(())
}

/// Posts the held send of partitioned request `h`, every partition ready.
pub(crate) fn post_held(lib: &mut Lib, h: Handle) -> R<()> {
    operate(lib, h)
}

macro_rules! send_init {
    ($(#[$doc:meta])* $name:ident / $pname:ident, $mode:expr) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: *const c_void,
                count: c_int,
                datatype: Handle,
                dest: c_int,
                tag: c_int,
                comm: Handle,
                request: *mut Handle
            ) {
                call(comm, |g| {
                    init(g, buf.cast_mut(), count, datatype, dest, tag, comm, request, Some($mode), None)
                })
            }
        }
    };
}

send_init!(
    /// `MPI_Send_init`: a persistent standard send.
    MPI_Send_init / PMPI_Send_init,
    Mode::Standard
);
send_init!(
    /// `MPI_Ssend_init`: a persistent synchronous send.
    MPI_Ssend_init / PMPI_Ssend_init,
    Mode::Sync
);
send_init!(
    /// `MPI_Rsend_init`: a persistent ready send (a standard send here).
    MPI_Rsend_init / PMPI_Rsend_init,
    Mode::Standard
);

crate::mpi_fn! {
    /// `MPI_Recv_init`: a persistent receive.
    fn MPI_Recv_init / PMPI_Recv_init(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| init(g, buf, count, datatype, source, tag, comm, request, None, None))
    }
}

crate::mpi_fn! {
    /// `MPI_Start`: starts an inactive persistent request.
    fn MPI_Start / PMPI_Start(request: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `request` is valid for reads.
            let h = *unsafe { out(request) }?;
            start(g, h)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Startall`: starts each request in order; the first that cannot be started
    /// is reported (the ones before it stay started).
    fn MPI_Startall / PMPI_Startall(count: c_int, requests: *mut Handle) {
        call(NO_OBJECT, |g| {
            let n = crate::util::count_arg(count)?;
            if n > 0 && requests.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "a null array of requests"));
            }
            for i in 0..n {
                // SAFETY: MPI's contract: `requests` holds `count` handles.
                let h = unsafe { *requests.add(i) };
                start(g, h)?;
            }
            Ok(())
        })
    }
}
