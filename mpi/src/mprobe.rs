//! Matched probes: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`, `MPI_Imrecv`, over the
//! runtime's `Comm::mprobe`/`improbe` (every route: self, shared memory, fabric). A taken
//! message is a handle in the library's table until `MPI_Mrecv` receives it;
//! `MPI_MESSAGE_NO_PROC` stands for a probe of `MPI_PROC_NULL`.

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::count_c::MpiCount;
use crate::error::{class_of, Fail, R};
use crate::p2p::{probe_outcome, probe_target, recv_source};
use crate::request::{write_status, MPI_Status, Outcome, Req};
use crate::state::NO_OBJECT;
use crate::state::{call, Guard};
use crate::util::{bytes_mut, new_request_out, out, recv_tag_arg};

/// Takes a message: `None` when none is there yet and `!block`.
fn take(
    g: &mut Guard,
    source: c_int,
    tag: c_int,
    comm: Handle,
    block: bool,
    message: *mut Handle,
    status: *mut MPI_Status,
) -> R<bool> {
    // SAFETY: MPI's contract: `message` is valid for a write.
    let slot = unsafe { out(message) }?;
    let tag = recv_tag_arg(tag)?;
    g.lib()?.comm(comm)?;
    if source == MPI_PROC_NULL {
        *slot = MPI_MESSAGE_NO_PROC;
        // SAFETY: MPI's contract: `status` is null or valid for a write.
        unsafe { write_status(status, &Outcome::proc_null(), false) };
        return Ok(true);
    }
    let (c, offset, size) = probe_target(g, comm)?;
    let source = recv_source(source, size)?.map(|s| offset + s);
    let found = if !block {
        c.improbe(source, tag)?
    } else if g.lib()?.multiple() {
        // Let other threads in between two looks, as `MPI_Probe`.
        let mut spin = crate::util::spin_wait();
        loop {
            g.lib()?;
            match c.improbe(source, tag) {
                Ok(Some(m)) => break Some(m),
                Ok(None) => g.relax(&mut spin),
                Err(sf::CommError::ProcFailedPending { ranks }) => {
                    return Err(sf::CommError::ProcFailed { ranks }.into())
                }
                Err(e) => return Err(e.into()),
            }
        }
    } else {
        Some(c.mprobe(source, tag)?)
    };
    let Some(m) = found else {
        return Ok(false);
    };
    // SAFETY: MPI's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &probe_outcome(m.status(), offset), false) };
    let lib = g.lib()?;
    let h = lib.new_handle();
    lib.messages.insert(h, (comm, m, offset));
    *slot = h;
    Ok(true)
}

crate::mpi_fn! {
    /// `MPI_Mprobe`: waits for a message and takes it (no other receive can get it).
    fn MPI_Mprobe / PMPI_Mprobe(
        source: c_int,
        tag: c_int,
        comm: Handle,
        message: *mut Handle,
        status: *mut MPI_Status
    ) {
        call(comm, |g| take(g, source, tag, comm, true, message, status).map(|_| ()))
    }
}

crate::mpi_fn! {
    /// `MPI_Improbe`: takes a message if one is there (`*flag`).
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: Handle,
        flag: *mut c_int,
        message: *mut Handle,
        status: *mut MPI_Status
    ) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `flag` is valid for a write.
            let flag = unsafe { out(flag) }?;
            *flag = c_int::from(take(g, source, tag, comm, false, message, status)?);
            Ok(())
        })
    }
}

/// Receives taken message `*message` into `buf`: its outcome and communicator.
fn receive(
    g: &mut Guard,
    buf: *mut c_void,
    count: MpiCount,
    dt: Handle,
    message: *mut Handle,
) -> R<(Outcome, Handle)> {
    // SAFETY: MPI's contract: `message` is valid for reads and writes.
    let slot = unsafe { out(message) }?;
    let lib = g.lib()?;
    // A type with gaps is received into a contiguous copy, unpacked after.
    let buffer = lib.buffer_of(count, dt)?;
    let len = buffer.len();
    let mut unpack = crate::typemap::Unpack::of(&buffer, buf);
    if *slot == MPI_MESSAGE_NO_PROC {
        *slot = MPI_MESSAGE_NULL;
        return Ok((Outcome::proc_null(), MPI_COMM_WORLD));
    }
    let (comm, m, offset) = lib
        .messages
        .remove(&*slot)
        .ok_or_else(|| Fail::new(MPI_ERR_REQUEST, "not a message from MPI_Mprobe"))?;
    *slot = MPI_MESSAGE_NULL;
    let data = match unpack.as_mut() {
        Some(u) => &mut u.temp[..],
        // SAFETY: MPI's contract: `buf` holds `count` items of `dt`, the program's alone
        // during the call.
        None => unsafe { bytes_mut(buf, len) }?,
    };
    let st = m.status();
    let received = m.recv(data);
    if let (Some(u), Ok(st)) = (&unpack, &received) {
        // SAFETY: MPI's contract: `buf` holds `count` items of `dt`, writable; the
        // receive is over, so nothing writes `temp` any more.
        unsafe { u.apply(st.len) };
    }
    let outcome = match received {
        Ok(st) => Outcome::ok((st.source - offset) as c_int, st.tag as c_int, st.len),
        Err(e) => Outcome {
            source: (st.source - offset) as c_int,
            tag: st.tag as c_int,
            bytes: if matches!(e, sf::CommError::Truncated { .. }) {
                len
            } else {
                0
            },
            ..Outcome::failed(class_of(&e))
        },
    };
    Ok((outcome, comm))
}

/// `MPI_Mrecv`'s body with a count of any size (`MPI_Mrecv_c` beyond the `int` range
/// calls it too).
///
/// # Safety
/// MPI's contract: `buf` holds room for `count` items of `datatype`, the program's
/// alone during the call; `message` is valid for reads and writes; `status` is null or
/// valid for a write.
pub(crate) unsafe fn mrecv_counted(
    g: &mut Guard,
    buf: *mut c_void,
    count: MpiCount,
    datatype: Handle,
    message: *mut Handle,
    status: *mut MPI_Status,
) -> R<()> {
    let (o, comm) = receive(g, buf, count, datatype, message)?;
    // SAFETY: the caller's contract: `status` is null or valid for a write.
    unsafe { write_status(status, &o, false) };
    if o.error != MPI_SUCCESS {
        return Err(Fail::new(o.error, "MPI_Mrecv failed").on(comm));
    }
    Ok(())
}

/// `MPI_Imrecv`'s body with a count of any size.
///
/// # Safety
/// As [`mrecv_counted`], with `request` valid for a write instead of `status`.
pub(crate) unsafe fn imrecv_counted(
    g: &mut Guard,
    buf: *mut c_void,
    count: MpiCount,
    datatype: Handle,
    message: *mut Handle,
    request: *mut Handle,
) -> R<()> {
    // SAFETY: the caller's contract: `request` is valid for a write.
    let slot = unsafe { new_request_out(request) }?;
    let (o, comm) = receive(g, buf, count, datatype, message)?;
    let lib = g.lib()?;
    let h = lib.add_request(Req::finished(comm, o))?;
    *slot = h;
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Mrecv`: receives a message taken by `MPI_Mprobe`/`MPI_Improbe`.
    fn MPI_Mrecv / PMPI_Mrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        message: *mut Handle,
        status: *mut MPI_Status
    ) {
        // SAFETY: this function's contract, which is `mrecv_counted`'s.
        call(NO_OBJECT, |g| unsafe {
            mrecv_counted(g, buf, count.into(), datatype, message, status)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Imrecv`: as `MPI_Mrecv`; the message is already here, so the request is
    /// complete when it returns (its outcome reported by `MPI_Wait`/`MPI_Test`).
    fn MPI_Imrecv / PMPI_Imrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        message: *mut Handle,
        request: *mut Handle
    ) {
        // SAFETY: this function's contract, which is `imrecv_counted`'s.
        call(NO_OBJECT, |g| unsafe {
            imrecv_counted(g, buf, count.into(), datatype, message, request)
        })
    }
}
