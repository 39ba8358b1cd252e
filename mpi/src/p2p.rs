//! Point to point: `MPI_Send`, `Rsend`, `Recv`, `Isend`, `Irsend`, `Irecv`, `Ssend`,
//! `Issend`, `Probe`, `Iprobe` (`Sendrecv`: `sendrecv.rs`); `MPI_PROC_NULL`. Every path
//! (self, shared memory, fabric) matches in the runtime's one matcher, so probes and
//! synchronous sends work whatever the peer's route. A type with gaps is packed before
//! a send and unpacked after a receive (`typemap`).

use std::ffi::{c_int, c_void};

use sf::Comm;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::request::{write_status, write_status_ok, MPI_Status, Op, Outcome, Req};
use crate::state::{call, CommKind, Guard};
use crate::typemap::{send_bytes, Buffer, Unpack};
use crate::util::{bytes_mut, new_request_out, out, rank_arg, recv_tag_arg, tag_arg};

/// Where the program's messages on a communicator travel: the runtime communicator,
/// and the rank there of the program's peer rank 0. An intra-communicator's peers are
/// its own ranks (offset 0); an inter-communicator's are its remote group, which sits
/// at `InterComm::remote_offset` in the communicator over both groups underneath
/// (`InterComm::union`). A rank the program names is checked against the entry's size
/// (the remote group's, for an inter-communicator) before the offset is added, and a
/// status's source has it taken off again.
#[inline(always)]
pub(crate) fn peers(kind: &CommKind) -> (&Comm, u32) {
    match kind {
        CommKind::Intra { p2p, .. } => (p2p, 0),
        CommKind::Inter { p2p, .. } => (p2p.union(), p2p.remote_offset()),
    }
}

/// [`peers`] of `comm`, cloned (for a call that gives the lock up while it waits),
/// with the number of peers.
pub(crate) fn peers_of(g: &mut Guard, comm: Handle) -> R<(Comm, u32, u32)> {
    let e = g.lib()?.comm(comm)?;
    let (c, offset) = peers(&e.kind);
    Ok((c.clone(), offset, e.size))
}

/// Standard or (`Mode::Sync`) synchronous send.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Standard,
    Sync,
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn send(
    g: &mut Guard,
    buf: *const c_void,
    count: impl Into<i64>,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    mode: Mode,
) -> R<()> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, dt)?;
    let tag = tag_arg(tag)?;
    let e = lib.comm(comm)?;
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    let dest = rank_arg(dest, e.size)?;
    let mut packed = None;
    // SAFETY: MPI's contract: `buf` holds `count` items of `dt`, unchanged during the
    // call.
    let data = unsafe { send_bytes(buffer, buf, &mut packed) }?;
    let (p2p, offset) = peers(&e.kind);
    if lib.multiple() {
        // Other threads' calls go on while this one waits (the runtime is
        // thread-safe): the lock is only held for the lookup.
        let c = p2p.clone();
        return Ok(g.unlocked(|| send_on(&c, offset + dest, tag, data, mode))?);
    }
    // The latency path: no other thread may call meanwhile, so the runtime's blocking
    // send runs on the table's communicator, without a clone.
    Ok(send_on(p2p, offset + dest, tag, data, mode)?)
}

/// The runtime's blocking standard or synchronous send.
#[inline(always)]
fn send_on(c: &Comm, dest: u32, tag: u32, data: &[u8], mode: Mode) -> Result<(), sf::CommError> {
    match mode {
        Mode::Standard => c.send(dest, tag, data),
        Mode::Sync => c.ssend(dest, tag, data),
    }
}

/// Starts a standard or synchronous send on `c`.
///
/// # Safety
/// As `Comm::isend`: `data` stays valid and unchanged until the request completes or
/// is dropped, and the request is not leaked.
pub(crate) unsafe fn start_send<'a>(
    c: &Comm,
    dest: u32,
    tag: u32,
    data: &'a [u8],
    mode: Mode,
) -> Result<sf::comm::SendRequest<'a>, sf::CommError> {
    match mode {
        // SAFETY: the caller's contract.
        Mode::Standard => unsafe { c.isend(dest, tag, data) },
        // SAFETY: the caller's contract.
        Mode::Sync => unsafe { c.issend(dest, tag, data) },
    }
}

/// Extends a borrowed send request to `'static` to keep it in a [`Req`].
pub(crate) fn extend_send(r: sf::comm::SendRequest<'_>) -> sf::comm::SendRequest<'static> {
    // SAFETY: the request only refers to the program's buffer, which MPI's rules keep
    // valid and unchanged until the request completes or is freed; the `Req` holding
    // it is completed or dropped (which cancels or finishes it) within those rules.
    unsafe { std::mem::transmute::<sf::comm::SendRequest<'_>, sf::comm::SendRequest<'static>>(r) }
}

crate::mpi_fn! {
    /// `MPI_Send`: returns once `buf` may be reused.
    fn MPI_Send / PMPI_Send(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::p2p_fast::send(buf, count, datatype, dest, tag, comm) }
    }
}

crate::mpi_fn! {
    /// `MPI_Rsend`: a ready send is a standard send here (which MPI allows).
    fn MPI_Rsend / PMPI_Rsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle
    ) {
        call(comm, |g| send(g, buf, count, datatype, dest, tag, comm, Mode::Standard))
    }
}

crate::mpi_fn! {
    /// `MPI_Ssend`: returns once the matching receive has started (MPI 4.1, 3.4), on
    /// every route and on inter-communicators too.
    fn MPI_Ssend / PMPI_Ssend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle
    ) {
        call(comm, |g| send(g, buf, count, datatype, dest, tag, comm, Mode::Sync))
    }
}

crate::mpi_fn! {
    /// `MPI_Issend`: the request completes once the matching receive has started; as
    /// `MPI_Ssend` for what is supported.
    fn MPI_Issend / PMPI_Issend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| isend(g, buf, count, datatype, dest, tag, comm, request, Mode::Sync))
    }
}

/// The runtime communicator a probe of `comm` looks at, the offset of the peers in it
/// and their number ([`peers`]).
pub(crate) fn probe_target(g: &mut Guard, comm: Handle) -> R<(Comm, u32, u32)> {
    peers_of(g, comm)
}

/// A probe's outcome; the source as the program names it (`offset`: [`peers`]).
pub(crate) fn probe_outcome(st: sf::comm::Status, offset: u32) -> Outcome {
    Outcome::ok((st.source - offset) as c_int, st.tag as c_int, st.len)
}

/// `MPI_Iprobe`: one look; `*flag` says whether a message matched.
fn iprobe(
    g: &mut Guard,
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> R<()> {
    // SAFETY: MPI's contract: `flag` is valid for a write.
    let flag = unsafe { out(flag) }?;
    let tag = recv_tag_arg(tag)?;
    g.lib()?.comm(comm)?;
    if source == MPI_PROC_NULL {
        *flag = 1;
        // SAFETY: MPI's contract: `status` is null or valid for a write.
        unsafe { write_status(status, &Outcome::proc_null(), false) };
        return Ok(());
    }
    let (c, offset, size) = probe_target(g, comm)?;
    let source = recv_source(source, size)?.map(|s| offset + s);
    let found = c.iprobe(source, tag)?;
    *flag = c_int::from(found.is_some());
    if let Some(st) = found {
        // SAFETY: MPI's contract: `status` is null or valid for a write.
        unsafe { write_status(status, &probe_outcome(st, offset), false) };
    }
    Ok(())
}

/// `MPI_Probe`: waits for a message without receiving it. A wildcard probe that meets
/// an unacknowledged failure fails with `MPIX_ERR_PROC_FAILED` (a blocking wildcard
/// operation, as `MPI_Recv`).
fn probe(g: &mut Guard, source: c_int, tag: c_int, comm: Handle, status: *mut MPI_Status) -> R<()> {
    let tag = recv_tag_arg(tag)?;
    g.lib()?.comm(comm)?;
    if source == MPI_PROC_NULL {
        // SAFETY: MPI's contract: `status` is null or valid for a write.
        unsafe { write_status(status, &Outcome::proc_null(), false) };
        return Ok(());
    }
    let (c, offset, size) = probe_target(g, comm)?;
    let source = recv_source(source, size)?.map(|s| offset + s);
    let st = if g.lib()?.multiple() {
        // Let other threads in between two looks (one of them may send the message).
        let mut spin = crate::util::spin_wait();
        loop {
            g.lib()?;
            match c.iprobe(source, tag) {
                Ok(Some(st)) => break st,
                Ok(None) => g.relax(&mut spin),
                Err(sf::CommError::ProcFailedPending { ranks }) => {
                    return Err(sf::CommError::ProcFailed { ranks }.into())
                }
                Err(e) => return Err(e.into()),
            }
        }
    } else {
        c.probe(source, tag)?
    };
    // SAFETY: MPI's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &probe_outcome(st, offset), false) };
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Probe`: the earliest waiting message a receive `(source, tag)` would get,
    /// from any route (self, shared memory, fabric).
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut MPI_Status) {
        call(comm, |g| probe(g, source, tag, comm, status))
    }
}

crate::mpi_fn! {
    /// `MPI_Iprobe`: as `MPI_Probe`, without waiting.
    fn MPI_Iprobe / PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: Handle,
        flag: *mut c_int,
        status: *mut MPI_Status
    ) {
        call(comm, |g| iprobe(g, source, tag, comm, flag, status))
    }
}

#[inline]
pub(crate) fn recv_source(source: c_int, size: u32) -> R<Option<u32>> {
    if source == MPI_ANY_SOURCE {
        Ok(None)
    } else {
        rank_arg(source, size).map(Some)
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn recv(
    g: &mut Guard,
    buf: *mut c_void,
    count: impl Into<i64>,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MPI_Status,
) -> R<()> {
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, dt)?;
    let tag = recv_tag_arg(tag)?;
    let e = lib.comm(comm)?;
    if source == MPI_PROC_NULL {
        // SAFETY: MPI's contract: `status` is null or valid for a write.
        unsafe { write_status(status, &Outcome::proc_null(), false) };
        return Ok(());
    }
    let (p2p, offset) = peers(&e.kind);
    let source = recv_source(source, e.size)?.map(|s| offset + s);
    let len = match buffer {
        Buffer::Contig(len) => len,
        packed => {
            let c = p2p.clone();
            return recv_unpacked(g, &c, offset, source, tag, Unpack::of(&packed, buf), status);
        }
    };
    // SAFETY: MPI's contract: `buf` holds `count` items of `dt`, untouched by the
    // program during the call.
    let data = unsafe { bytes_mut(buf, len) }?;
    let outcome = if lib.multiple() {
        // Without the lock while it waits, as in `send`.
        let c = p2p.clone();
        g.unlocked(|| recv_on(&c, offset, source, tag, data))
    } else {
        // The latency path, as in `send`; a success writes the status from the
        // runtime's fields one by one (see `write_status_ok`).
        match p2p.recv(source, tag, data) {
            Ok(st) => {
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status_ok(status, st.source - offset, st.tag, st.len) };
                return Ok(());
            }
            Err(err) => {
                let posted = posted(source, tag, offset);
                // SAFETY: as above.
                return Err(unsafe { recv_error(err, len, posted, status) });
            }
        }
    };
    let outcome = blocking(outcome);
    // SAFETY: MPI's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &outcome, false) };
    if outcome.error != MPI_SUCCESS {
        return Err(Fail::new(outcome.error, "receive failed"));
    }
    Ok(())
}

/// A blocking receive into a type with gaps: into `u`'s buffer, then unpacked.
fn recv_unpacked(
    g: &mut Guard,
    c: &Comm,
    offset: u32,
    source: Option<u32>,
    tag: Option<u32>,
    u: Option<Unpack>,
    status: *mut MPI_Status,
) -> R<()> {
    let mut u =
        u.ok_or_else(|| Fail::new(MPI_ERR_INTERN, "an unpacked receive without a layout"))?;
    let o = if g.lib()?.multiple() {
        g.unlocked(|| recv_on(c, offset, source, tag, &mut u.temp))
    } else {
        recv_on(c, offset, source, tag, &mut u.temp)
    };
    if o.error == MPI_SUCCESS || o.error == MPI_ERR_TRUNCATE {
        // SAFETY: MPI's contract: the program's buffer holds the items; the receive
        // into `temp` is over.
        unsafe { u.apply(o.bytes) };
    }
    let o = blocking(o);
    // SAFETY: MPI's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &o, false) };
    if o.error != MPI_SUCCESS {
        return Err(Fail::new(o.error, "receive failed"));
    }
    Ok(())
}

/// The runtime's blocking receive into `data`, as an outcome (its source less `offset`,
/// [`peers`]).
#[inline(always)]
fn recv_on(
    c: &Comm,
    offset: u32,
    source: Option<u32>,
    tag: Option<u32>,
    data: &mut [u8],
) -> Outcome {
    let len = data.len();
    match c.recv(source, tag, data) {
        Ok(st) => Outcome::ok((st.source - offset) as c_int, st.tag as c_int, st.len),
        Err(e) => recv_failed(e, len, posted(source, tag, offset)),
    }
}

/// What a receive was posted with: its source (`MPI_ANY_SOURCE` for a wildcard) and tag
/// (`MPI_ANY_TAG`) as the program names them, and the remote group's offset among the
/// runtime's ranks (0 on an intra-communicator).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Posted {
    source: c_int,
    tag: c_int,
    offset: u32,
}

/// The [`Posted`] of a receive from runtime rank `source` (comm rank + `offset`) with
/// `tag`, `None` for wildcards.
#[inline]
pub(crate) fn posted(source: Option<u32>, tag: Option<u32>, offset: u32) -> Posted {
    Posted {
        source: source.map_or(MPI_ANY_SOURCE, |s| (s - offset) as c_int),
        tag: tag.map_or(MPI_ANY_TAG, |t| t as c_int),
        offset,
    }
}

impl Posted {
    /// The source and tag the status of a receive that failed with `e` names: for a
    /// truncation, the matched message's (MPI: the status describes the message
    /// received) when the runtime reports them, else those the receive was posted with.
    pub(crate) fn envelope(&self, e: &sf::CommError) -> (c_int, c_int) {
        match *e {
            sf::CommError::Truncated {
                sender: Some(s),
                tag: Some(t),
                ..
            } => (s.saturating_sub(self.offset) as c_int, t as c_int),
            _ => (self.source, self.tag),
        }
    }
}

/// The failure of a blocking receive into a buffer of `len` bytes, its status written.
///
/// # Safety
/// `status` is null or valid for a write.
#[cold]
#[inline(never)]
pub(crate) unsafe fn recv_error(
    e: sf::CommError,
    len: usize,
    posted: Posted,
    status: *mut MPI_Status,
) -> Fail {
    let outcome = blocking(recv_failed(e, len, posted));
    // SAFETY: the caller's contract.
    unsafe { write_status(status, &outcome, false) };
    Fail::new(outcome.error, "receive failed")
}

/// The outcome of a failed receive into a buffer of `len` bytes; a truncated one's
/// status names the message's source and tag ([`Posted::envelope`]).
#[cold]
#[inline(never)]
fn recv_failed(e: sf::CommError, len: usize, posted: Posted) -> Outcome {
    let failed = Outcome::failed(crate::error::class_of(&e));
    if matches!(e, sf::CommError::Truncated { .. }) {
        let (source, tag) = posted.envelope(&e);
        Outcome {
            bytes: len,
            source,
            tag,
            ..failed
        }
    } else {
        failed
    }
}

/// ULFM: a blocking wildcard receive that meets an unacknowledged failure completes
/// with `MPIX_ERR_PROC_FAILED` (only a non-blocking one stays pending with
/// `MPIX_ERR_PROC_FAILED_PENDING`), as Open MPI does.
pub(crate) fn blocking(o: Outcome) -> Outcome {
    if o.error == MPI_ERR_PROC_FAILED_PENDING {
        Outcome {
            keep: false,
            ..Outcome::failed(MPI_ERR_PROC_FAILED)
        }
    } else {
        o
    }
}

/// A receive request into the program's `buf` of `len` bytes.
#[inline(always)]
pub(crate) fn irecv_req(
    c: &Comm,
    comm: Handle,
    source: Option<u32>,
    tag: Option<u32>,
    buf: *mut u8,
    len: usize,
) -> R<Req> {
    irecv_req_at(c, 0, comm, source, tag, buf, len)
}

/// As [`irecv_req`] on a communicator whose peers sit at `offset` ([`peers`]): `source`
/// is already the runtime's rank; the status's source has `offset` taken off.
pub(crate) fn irecv_req_at(
    c: &Comm,
    offset: u32,
    comm: Handle,
    source: Option<u32>,
    tag: Option<u32>,
    buf: *mut u8,
    len: usize,
) -> R<Req> {
    let slice: &'static mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: MPI's contract: the buffer stays valid and untouched by the program
        // until the request completes or is freed; the request never outlives that
        // (completion or drop cancels it).
        unsafe { std::slice::from_raw_parts_mut(buf, len) }
    };
    // SAFETY: as above: the request is kept in a `Req`, completed or dropped within
    // MPI's rules for the buffer.
    let req = match unsafe { c.irecv(source, tag, slice) } {
        Ok(req) => req,
        Err(e) => return deferred(comm, Err(e.into())),
    };
    Ok(Req::new(
        comm,
        Op::Recv {
            req,
            source,
            tag,
            buf,
            len,
            offset,
            // Only a wildcard receive is posted again (after a failure, ULFM's
            // pending state): a named source's does without the clone.
            comm: source.is_none().then(|| c.clone()),
        },
    ))
}

crate::mpi_fn! {
    /// `MPI_Recv`.
    fn MPI_Recv / PMPI_Recv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        status: *mut MPI_Status
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::p2p_fast::recv(buf, count, datatype, source, tag, comm, status) }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn isend(
    g: &mut Guard,
    buf: *const c_void,
    count: impl Into<i64>,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    mode: Mode,
) -> R<()> {
    // SAFETY: MPI's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, dt)?;
    let e = lib.comm(comm)?;
    let tag = tag_arg(tag)?;
    let req = if dest == MPI_PROC_NULL {
        Req::finished(comm, Outcome::empty())
    } else {
        let dest = rank_arg(dest, e.size)?;
        let (c, offset) = peers(&e.kind);
        let mut packed = None;
        // SAFETY: MPI's contract: `buf` stays valid and unchanged until the request
        // completes or is freed.
        let data = unsafe { send_bytes(buffer, buf, &mut packed) }?;
        // SAFETY: `data` is the program's buffer (as above) or the packed copy, which
        // the `Req` keeps in `packed` until after its request is dropped.
        let data: &'static [u8] = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
        // SAFETY: as above; the request lives in a `Req` within those rules.
        let r = unsafe { start_send(c, offset + dest, tag, data, mode) };
        let mut req = deferred(
            comm,
            r.map(|r| Req::new(comm, Op::Send(r))).map_err(Fail::from),
        )?;
        req.packed = packed;
        req
    };
    let h = lib.add_request(req)?;
    *slot = h;
    Ok(())
}

/// A non-blocking operation whose start met a process failure: the request is made,
/// complete with `MPIX_ERR_PROC_FAILED`, which its completion call (`MPI_Wait`,
/// `MPI_Test`...) reports. ULFM reports process failures of a non-blocking operation
/// at its completion, not at its start (ICLDisco's `stress/isend-err.c` checks that
/// an `MPI_Isend` to a rank known dead returns `MPI_SUCCESS`). Other errors (bad
/// arguments, a revoked communicator: `mpi/tests/c/ft.c`) stay the start's.
pub(crate) fn deferred(comm: Handle, started: R<Req>) -> R<Req> {
    match started {
        Err(f) if f.class == MPI_ERR_PROC_FAILED => {
            Ok(Req::finished(comm, Outcome::failed(f.class)))
        }
        other => other,
    }
}

crate::mpi_fn! {
    /// `MPI_Isend`.
    fn MPI_Isend / PMPI_Isend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::p2p_fast::isend(buf, count, datatype, dest, tag, comm, request) }
    }
}

crate::mpi_fn! {
    /// `MPI_Irsend`: as `MPI_Isend`.
    fn MPI_Irsend / PMPI_Irsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        call(comm, |g| isend(g, buf, count, datatype, dest, tag, comm, request, Mode::Standard))
    }
}

crate::mpi_fn! {
    /// `MPI_Irecv`: posted at the call, so receives match in posting order, whatever
    /// the route (`docs/matching.md` section 5).
    fn MPI_Irecv / PMPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // SAFETY: this function's contract, the same.
        unsafe { crate::p2p_fast::irecv(buf, count, datatype, source, tag, comm, request) }
    }
}

/// `MPI_Irecv`'s general path: every check, every case.
#[allow(clippy::too_many_arguments)]
pub(crate) fn irecv(
    g: &mut Guard,
    buf: *mut c_void,
    count: impl Into<i64>,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> R<()> {
    // SAFETY: MPI's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let lib = g.lib()?;
    let buffer = lib.buffer_of(count, datatype)?;
    let e = lib.comm(comm)?;
    let tag = recv_tag_arg(tag)?;
    let req = if source == MPI_PROC_NULL {
        Req::finished(comm, Outcome::proc_null())
    } else {
        let (c, offset) = peers(&e.kind);
        let source = recv_source(source, e.size)?.map(|s| offset + s);
        match Unpack::of(&buffer, buf) {
            None => {
                let Buffer::Contig(len) = buffer else {
                    return Err(Fail::new(
                        MPI_ERR_INTERN,
                        "a packed buffer without a layout",
                    ));
                };
                if len > 0 && buf.is_null() {
                    return Err(Fail::new(MPI_ERR_BUFFER, "a null receive buffer"));
                }
                irecv_req_at(c, offset, comm, source, tag, buf.cast(), len)?
            }
            Some(mut u) => {
                // Into the `Unpack`'s buffer, whose heap bytes stay where they are
                // while the `Req` keeps it (after its request, which is dropped first).
                let (p, n) = (u.temp.as_mut_ptr(), u.temp.len());
                let mut req = irecv_req_at(c, offset, comm, source, tag, p, n)?;
                req.unpack = Some(Box::new(u));
                req
            }
        }
    };
    let h = lib.add_request(req)?;
    *slot = h;
    Ok(())
}
