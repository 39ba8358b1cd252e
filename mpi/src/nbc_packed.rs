//! How a collective run on packed bytes (a type with gaps: `coll_packed`,
//! `coll_packed_v`, `reduce_packed`) ends, blocking or not. A blocking call unpacks what
//! it received into the program's buffer when it returns; a non-blocking one (and so a
//! persistent one's start) gives its request the packed bytes to own and the unpacking
//! to do when a completion call completes it (`Req::finish` with `Req::unpack`), or does
//! it at once when the request completed at the call. The bytes thus outlive every
//! transfer that reads or writes them.

use std::ffi::c_int;

use crate::consts::*;
use crate::state::call;
use crate::typemap::Unpack;

/// Ends a packed call: blocking (`request` `None`), what it received is unpacked now
/// (if it succeeded) and the packed bytes dropped; non-blocking, the started request
/// owns them and unpacks when it completes ([`attach`]). Every packed front end's
/// (`coll_packed`, `coll_packed_v`, `reduce_packed`).
pub(crate) fn end(
    code: c_int,
    comm: Handle,
    request: Option<*mut Handle>,
    send: Option<Box<[u8]>>,
    recv: Option<Unpack>,
) -> c_int {
    match request {
        Some(q) => attach(code, comm, q, send, recv),
        None => {
            if let (MPI_SUCCESS, Some(u)) = (code, &recv) {
                // SAFETY: MPI's contract for the receive buffer; the call is over and
                // nothing writes the packed bytes any more.
                unsafe { u.apply(usize::MAX) };
            }
            drop(send);
            code
        }
    }
}

/// Gives the started request at `*request` the packed send bytes to own and the
/// packed receive to unpack when it completes (at once when it already has).
/// `code`: the start's. Also the non-blocking reductions' (`reduce_packed`) and `v`
/// forms' (`nbc_packed_v`).
pub(crate) fn attach(
    code: c_int,
    comm: Handle,
    request: *mut Handle,
    send: Option<Box<[u8]>>,
    unpack: Option<Unpack>,
) -> c_int {
    if code != MPI_SUCCESS {
        return code;
    }
    // SAFETY: MPI's contract: `request` is valid for reads (the start just wrote it).
    let h = unsafe { *request };
    call(comm, |g| {
        let Some(r) = g.lib()?.requests.get_mut(&h) else {
            return Ok(());
        };
        match (&r.done, unpack) {
            // Complete at the call (one member, `MPI_PROC_NULL`...): unpacked now.
            // SAFETY: MPI's contract for the receive buffer; nothing writes `temp`.
            (Some(o), Some(u)) if o.error == MPI_SUCCESS => unsafe { u.apply(usize::MAX) },
            (_, u) => r.unpack = u.map(Box::new),
        }
        r.packed = send;
        Ok(())
    })
}
