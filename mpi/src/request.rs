//! Requests and their completion: `MPI_Wait*`, `MPI_Test*` (`MPI_Wait` and `MPI_Test`
//! themselves, with their fast entries, in `wait.rs`), `MPI_Cancel`,
//! `MPI_Request_free`, statuses (`MPI_STATUS_IGNORE`, `MPI_ERR_IN_STATUS` per request;
//! what a status says: `status.rs`).

pub use crate::outcome::MPI_Status;
pub(crate) use crate::outcome::Outcome;
pub(crate) use crate::status::{write_status, write_status_ok};
use std::ffi::c_int;

use sf::comm::{AgreeRequest, RecvRequest, SendRequest};
use sf::{Comm, CommError};

use crate::coll::Ibarrier;
use crate::consts::*;
use crate::error::{class_of, Fail, R};
use crate::state::NO_OBJECT;
use crate::state::{call, Lib};
use crate::util::{count_arg, out};

/// What a request does.
pub(crate) enum Op {
    Send(SendRequest<'static>),
    Recv {
        req: RecvRequest<'static>,
        source: Option<u32>,
        tag: Option<u32>,
        buf: *mut u8,
        len: usize,
        /// The runtime rank of the program's peer 0, taken off the status's source
        /// (an inter-communicator's remote group: `p2p::peers`).
        offset: u32,
        /// Where to post it again (a wildcard receive only: `repost`).
        comm: Option<Comm>,
    },
    /// Finished when started (`MPI_PROC_NULL`, a shrink, a cancelled receive).
    Done,
    Agree {
        req: AgreeRequest,
        flag: *mut c_int,
    },
    Barrier(Box<Ibarrier>),
    /// `MPI_Ibcast`, `MPI_Iallreduce`... (`nbc.rs`).
    Nbc(Box<crate::nbc::Nbc>),
    /// A buffered send's copy in flight (`bsend.rs`), in `Lib::detached`.
    Buffered(Box<crate::bsend::Buffered>),
    /// `MPI_Buffer_iflush` and the like (`buffer_attach.rs`).
    Flush(Box<crate::bsend::Flush>),
    /// `MPIX_Comm_irestart_rank`.
    Restart(sf::comm::RestartRequest),
    /// `MPI_Comm_idup` (`idup.rs`): registered by [`attempt`] when it completes.
    Idup(Box<crate::idup::Idup>),
    /// `MPI_Comm_free`'s closing (`comm_close.rs`), in `Lib::detached`.
    Closing(Box<crate::comm_close::Closing>),
    /// `MPI_Isendrecv`'s receive and send (`isendrecv.rs`).
    Pair(Box<crate::isendrecv::Pair>),
    /// A generalized request (`greq.rs`).
    Grequest(Box<crate::greq::Greq>),
    /// A partitioned send started with some partition not ready (`partitioned.rs`):
    /// pending, nothing sent yet.
    Held,
}

/// A request: its operation, its communicator (whose error handler its errors go to)
/// and its outcome once known.
pub(crate) struct Req {
    pub comm: Handle,
    pub op: Op,
    pub done: Option<Outcome>,
    /// A persistent request's operation (`MPI_Send_init`, `MPI_Recv_init`...), which
    /// `MPI_Start` starts again each time; `None` for the others.
    pub persistent: Option<Box<crate::persistent::Persistent>>,
    /// A packed copy a send sends from (a type with gaps): after `op`, so dropped
    /// after the request.
    pub packed: Option<Box<[u8]>>,
    /// A receive into a type with gaps, unpacked when it completes.
    pub unpack: Option<Box<crate::typemap::Unpack>>,
}

impl Req {
    pub fn new(comm: Handle, op: Op) -> Self {
        Req {
            comm,
            op,
            done: None,
            persistent: None,
            packed: None,
            unpack: None,
        }
    }

    pub fn finished(comm: Handle, outcome: Outcome) -> Self {
        Req {
            comm,
            op: Op::Done,
            done: Some(outcome),
            persistent: None,
            packed: None,
            unpack: None,
        }
    }

    /// Whether this is a persistent request not started (or completed since): a
    /// completion call finds it complete at once with an empty status, and the `*any`
    /// and `*some` calls pass over it as over `MPI_REQUEST_NULL` (MPI 4.1, 3.9).
    pub fn inactive(&self) -> bool {
        self.persistent.as_ref().is_some_and(|p| !p.active)
    }

    /// Progresses once; the outcome once known (kept until consumed).
    pub fn test(&mut self) -> Option<Outcome> {
        if let Some(o) = self.done {
            return Some(o);
        }
        let o = match &mut self.op {
            Op::Done => Outcome::empty(),
            Op::Held => return None,
            Op::Send(r) => match r.test() {
                Ok(false) => return None,
                Ok(true) => Outcome::empty(),
                Err(e) => Outcome::failed(class_of(&e)),
            },
            Op::Recv {
                req,
                len,
                offset,
                source,
                tag,
                ..
            } => match req.test() {
                Ok(None) => return None,
                Ok(Some(st)) => {
                    Outcome::ok((st.source - *offset) as c_int, st.tag as c_int, st.len)
                }
                Err(CommError::ProcFailedPending { .. }) => return Some(self.repost()),
                Err(e @ CommError::Truncated { .. }) => {
                    let (source, tag) = crate::p2p::posted(*source, *tag, *offset).envelope(&e);
                    Outcome {
                        bytes: *len,
                        source,
                        tag,
                        ..Outcome::failed(class_of(&e))
                    }
                }
                Err(e) => Outcome::failed(class_of(&e)),
            },
            Op::Agree { req, flag } => match req.test() {
                Ok(None) => return None,
                Ok(Some(a)) => {
                    // SAFETY: the flag stays valid until the request completes (the
                    // MPIX_Comm_iagree contract), which is now.
                    unsafe { **flag = a.value as u32 as c_int };
                    if a.all_acked {
                        Outcome::empty()
                    } else {
                        Outcome::failed(MPI_ERR_PROC_FAILED)
                    }
                }
                Err(e) => Outcome::failed(class_of(&e)),
            },
            Op::Barrier(b) => match b.test() {
                Ok(false) => return None,
                Ok(true) => Outcome::empty(),
                Err(f) => Outcome::failed(f.class),
            },
            Op::Nbc(s) => match s.test() {
                Ok(false) => return None,
                Ok(true) => Outcome::empty(),
                Err(f) => Outcome::failed(f.class),
            },
            Op::Buffered(b) => match b.test() {
                Ok(false) => return None,
                Ok(true) => Outcome::empty(),
                Err(e) => {
                    // Nobody waits for a buffered send: its failure can only be logged.
                    log::debug!("a buffered send failed: {e}");
                    Outcome::failed(class_of(&e))
                }
            },
            Op::Idup(i) => match i.test() {
                Ok(false) => return None,
                Ok(true) => Outcome::empty(),
                Err(f) => Outcome::failed(f.class),
            },
            Op::Grequest(q) => q.test()?,
            Op::Pair(p) => match p.test() {
                None => return None,
                // A wildcard receive's pending failure: reported, the pair goes on.
                Some(o) if o.keep => return Some(o),
                Some(o) => o,
            },
            Op::Flush(f) => match f.test() {
                false => return None,
                true => Outcome::empty(),
            },
            Op::Closing(c) => match c.test() {
                false => return None,
                true => Outcome::empty(),
            },
            Op::Restart(r) => match crate::restart::test_restart(r)? {
                MPI_SUCCESS => Outcome::empty(),
                class => Outcome::failed(class),
            },
        };
        Some(self.finish(o))
    }

    /// ULFM: a wildcard receive that met an unacknowledged failure stays pending; the
    /// runtime's request is over, so a new one is posted into the same buffer (after
    /// the old one is gone: never two requests on it).
    fn repost(&mut self) -> Outcome {
        let Op::Recv {
            source,
            tag,
            buf,
            len,
            offset,
            comm,
            ..
        } = std::mem::replace(&mut self.op, Op::Done)
        else {
            unreachable!("called for receives only");
        };
        let slice: &'static mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: the program's buffer stays valid until the request completes or
            // is freed (MPI's contract); the previous request on it was dropped above.
            unsafe { std::slice::from_raw_parts_mut(buf, len) }
        };
        let Some(c) = &comm else {
            // Only a wildcard receive stays pending after a failure (see `Op::Recv`).
            return self.finish(Outcome::failed(MPI_ERR_PROC_FAILED));
        };
        // SAFETY: as above: the new request lives in this `Req`, completed or dropped
        // (cancelled) before the request is freed.
        match unsafe { c.irecv(source, tag, slice) } {
            Ok(req) => {
                self.op = Op::Recv {
                    req,
                    source,
                    tag,
                    buf,
                    len,
                    offset,
                    comm,
                };
                Outcome {
                    keep: true,
                    ..Outcome::failed(MPI_ERR_PROC_FAILED_PENDING)
                }
            }
            Err(e) => self.finish(Outcome::failed(class_of(&e))),
        }
    }

    fn finish(&mut self, mut o: Outcome) -> Outcome {
        if let Some(tag) = self.persistent.as_deref().and_then(|p| p.status_tag()) {
            o.tag = tag;
        }
        self.done = Some(o);
        // A collective's outcome counts no bytes: a packed receive of one (`nbc_packed`)
        // unpacks whole.
        let bytes = if matches!(self.op, Op::Nbc(_)) {
            usize::MAX
        } else {
            o.bytes
        };
        // The runtime's request is over: drop it now (a receive lets go of the buffer).
        // A dup keeps its communicator for `attempt` to register.
        if !matches!(self.op, Op::Idup(_)) {
            self.op = Op::Done;
        }
        if let Some(u) = self.unpack.take() {
            if !o.cancelled && (o.error == MPI_SUCCESS || o.error == MPI_ERR_TRUNCATE) {
                // SAFETY: the program's buffer stays valid until the request completes
                // (MPI's contract), which is now; the receive into `temp` is dropped.
                unsafe { u.apply(bytes) };
            }
        }
        o
    }

    /// `MPI_Cancel`: a receive not yet matched is withdrawn (it completes cancelled);
    /// anything else completes normally (MPI allows a cancel to fail).
    pub fn cancel(&mut self) {
        if self.done.is_some() || !matches!(self.op, Op::Recv { .. }) {
            return;
        }
        if self.test().is_none() {
            // Dropping the receive withdraws it (the transport lets go of the buffer).
            self.finish(Outcome {
                cancelled: true,
                ..Outcome::empty()
            });
        }
    }
}

/// Progresses the requests freed while active.
pub(crate) fn progress_detached(lib: &mut Lib) {
    if !lib.detached.is_empty() {
        lib.detached.retain_mut(|r| r.test().is_none());
    }
}

/// One attempt at request `*slot`: `None` while pending; else its outcome, and the
/// request is freed (`*slot` becomes `MPI_REQUEST_NULL`) unless it stays active.
pub(crate) fn attempt(lib: &mut Lib, slot: &mut Handle) -> R<Option<(Outcome, Handle)>> {
    if *slot == MPI_REQUEST_NULL {
        return Ok(Some((Outcome::empty(), MPI_COMM_WORLD)));
    }
    let r = lib
        .requests
        .get_mut(slot)
        .ok_or_else(|| Fail::new(MPI_ERR_REQUEST, format!("{:#x} is not a request", *slot)))?;
    let comm = r.comm;
    let Some(o) = r.test() else {
        return Ok(None);
    };
    if o.keep {
        // Reported once; the request goes on.
        r.done = None;
    } else if let Some(p) = &mut r.persistent {
        // Completed: inactive until started again; the handle stays.
        p.active = false;
        r.op = Op::Done;
        r.done = Some(Outcome::empty());
    } else {
        let done = lib.requests.remove(slot);
        *slot = MPI_REQUEST_NULL;
        if let Some(Op::Idup(idup)) = done.map(|r| r.op) {
            idup.settle(lib, o.error == MPI_SUCCESS);
        }
    }
    Ok(Some((o, comm)))
}

pub(crate) fn outcome_result(o: &Outcome, comm: Handle) -> R<()> {
    if o.error == MPI_SUCCESS {
        Ok(())
    } else {
        Err(Fail::new(o.error, "the request failed").on(comm))
    }
}

/// The requests of an array argument.
///
/// # Safety
/// `p` is valid for reads and writes of `n` handles when `n > 0`.
unsafe fn request_array<'a>(p: *mut Handle, n: c_int) -> R<&'a mut [Handle]> {
    let n = count_arg(n)?;
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request array"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The `i`-th status of an array (null: `MPI_STATUSES_IGNORE`).
fn nth(st: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if st.is_null() {
        st
    } else {
        st.wrapping_add(i)
    }
}

/// The outcomes table of one `*all` / `*some` call: `lib.scratch` taken out for the
/// call (another thread's call meanwhile, under `MPI_THREAD_MULTIPLE`, finds it empty
/// and grows its own) and given back by [`Scratch::give_back`].
struct Scratch(Vec<Option<(Outcome, Handle)>>);

impl Scratch {
    /// `n` empty entries, from the library's kept table.
    fn take(lib: &mut Lib, n: usize) -> Scratch {
        let mut v = std::mem::take(&mut lib.scratch);
        v.clear();
        v.resize(n, None);
        Scratch(v)
    }

    /// Keeps the table for the next call (the larger of the two when another thread
    /// kept one meanwhile).
    fn give_back(self, lib: &mut Lib) {
        if self.0.capacity() > lib.scratch.capacity() {
            lib.scratch = self.0;
        }
    }
}

/// Runs one pass over `reqs` for the `*all` and `*some` calls: collects the outcome of
/// every request that finished (freed unless it stays active).
fn pass(lib: &mut Lib, reqs: &mut [Handle], got: &mut [Option<(Outcome, Handle)>]) -> R<()> {
    progress_detached(lib);
    for (slot, got) in reqs.iter_mut().zip(got.iter_mut()) {
        if got.is_none() {
            *got = attempt(lib, slot)?;
        }
    }
    Ok(())
}

/// Writes the statuses of the `*all` calls; `MPI_ERR_IN_STATUS` when one failed.
///
/// # Safety
/// `statuses` is null or valid for writes of `got.len()` statuses.
unsafe fn report_all(got: &[Option<(Outcome, Handle)>], statuses: *mut MPI_Status) -> R<()> {
    let failed = got.iter().flatten().find(|(o, _)| o.error != MPI_SUCCESS);
    for (i, o) in got.iter().enumerate() {
        let o = o.map_or(
            Outcome {
                error: MPI_ERR_PENDING,
                ..Outcome::empty()
            },
            |(o, _)| o,
        );
        // SAFETY: the caller's contract.
        unsafe { write_status(nth(statuses, i), &o, failed.is_some()) };
    }
    match failed {
        Some((o, comm)) => Err(in_status(o.error, *comm)),
        None => Ok(()),
    }
}

crate::mpi_fn! {
    /// `MPI_Waitall`: waits until every request has completed or failed; a failure
    /// (a dead peer) does not stop the others from completing, and is reported in its
    /// status with `MPI_ERR_IN_STATUS`.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut MPI_Status) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `count` requests.
            let reqs = unsafe { request_array(requests, count) }?;
            let mut got = Scratch::take(g.lib()?, reqs.len());
            let mut spin = crate::util::spin_wait();
            loop {
                pass(g.lib()?, reqs, &mut got.0)?;
                if got.0.iter().all(Option::is_some) {
                    break;
                }
                g.relax(&mut spin);
            }
            // SAFETY: MPI's contract: `statuses` is null or holds `count` statuses.
            let r = unsafe { report_all(&got.0, statuses) };
            got.give_back(g.lib()?);
            r
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Testall`: completes all or none (a request that finished stays with its
    /// outcome until all have).
    fn MPI_Testall / PMPI_Testall(
        count: c_int,
        requests: *mut Handle,
        flag: *mut c_int,
        statuses: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `count` requests, `flag` valid for a write.
            let (reqs, flag) = unsafe { (request_array(requests, count)?, out(flag)?) };
            let lib = g.lib()?;
            progress_detached(lib);
            let mut all = true;
            for slot in reqs.iter() {
                if *slot == MPI_REQUEST_NULL {
                    continue;
                }
                let r = lib.requests.get_mut(slot).ok_or_else(|| {
                    Fail::new(MPI_ERR_REQUEST, format!("{:#x} is not a request", *slot))
                })?;
                all &= r.test().is_some();
            }
            *flag = c_int::from(all);
            if !all {
                return Ok(());
            }
            let mut got = Scratch::take(lib, reqs.len());
            pass(lib, reqs, &mut got.0)?;
            // SAFETY: MPI's contract: `statuses` is null or holds `count` statuses.
            let r = unsafe { report_all(&got.0, statuses) };
            got.give_back(lib);
            r
        })
    }
}

/// Whether the `*any` and `*some` calls pass over handle `h`: `MPI_REQUEST_NULL` or an
/// inactive persistent request (an unknown handle is not: its attempt reports it).
fn passed_over(lib: &mut Lib, h: Handle) -> bool {
    h == MPI_REQUEST_NULL || lib.requests.get_mut(&h).is_some_and(|r| r.inactive())
}

/// Whether every handle of `reqs` is [`passed_over`]: then `*any` and `*some` return
/// `MPI_UNDEFINED` at once.
fn all_passed_over(lib: &mut Lib, reqs: &[Handle]) -> bool {
    reqs.iter().all(|&h| passed_over(lib, h))
}

/// One pass of `*any`: the first request that finished, by index.
fn any_pass(lib: &mut Lib, reqs: &mut [Handle]) -> R<Option<(usize, Outcome, Handle)>> {
    progress_detached(lib);
    for (i, slot) in reqs.iter_mut().enumerate() {
        if passed_over(lib, *slot) {
            continue;
        }
        if let Some((o, comm)) = attempt(lib, slot)? {
            return Ok(Some((i, o, comm)));
        }
    }
    Ok(None)
}

crate::mpi_fn! {
    /// `MPI_Waitany`.
    fn MPI_Waitany / PMPI_Waitany(
        count: c_int,
        requests: *mut Handle,
        index: *mut c_int,
        status: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `count` requests, `index` valid for a write.
            let (reqs, index) = unsafe { (request_array(requests, count)?, out(index)?) };
            if all_passed_over(g.lib()?, reqs) {
                *index = MPI_UNDEFINED;
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status(status, &Outcome::empty(), false) };
                return Ok(());
            }
            let mut spin = crate::util::spin_wait();
            loop {
                if let Some((i, o, comm)) = any_pass(g.lib()?, reqs)? {
                    *index = i as c_int;
                    // SAFETY: as above.
                    unsafe { write_status(status, &o, false) };
                    return outcome_result(&o, comm);
                }
                g.relax(&mut spin);
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Testany`.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        requests: *mut Handle,
        index: *mut c_int,
        flag: *mut c_int,
        status: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `count` requests; `index`, `flag` valid for writes.
            let (reqs, index, flag) =
                unsafe { (request_array(requests, count)?, out(index)?, out(flag)?) };
            if all_passed_over(g.lib()?, reqs) {
                *index = MPI_UNDEFINED;
                *flag = 1;
                // SAFETY: MPI's contract: `status` is null or valid for a write.
                unsafe { write_status(status, &Outcome::empty(), false) };
                return Ok(());
            }
            match any_pass(g.lib()?, reqs)? {
                Some((i, o, comm)) => {
                    *index = i as c_int;
                    *flag = 1;
                    // SAFETY: as above.
                    unsafe { write_status(status, &o, false) };
                    outcome_result(&o, comm)
                }
                None => {
                    *index = MPI_UNDEFINED;
                    *flag = 0;
                    Ok(())
                }
            }
        })
    }
}

/// The common part of `Waitsome` / `Testsome` after a pass: indices and statuses of
/// what finished; `MPI_ERR_IN_STATUS` when one of them failed.
///
/// # Safety
/// `indices` and `statuses` (null allowed) hold `got.len()` entries.
unsafe fn report_some(
    got: &[Option<(Outcome, Handle)>],
    outcount: &mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> R<()> {
    let done = || {
        got.iter()
            .enumerate()
            .filter_map(|(i, o)| o.map(|(o, c)| (i, o, c)))
    };
    let failed = done()
        .find(|(_, o, _)| o.error != MPI_SUCCESS)
        .map(|(_, o, c)| (o.error, c));
    *outcount = done().count() as c_int;
    for (k, (i, o, _)) in done().enumerate() {
        if !indices.is_null() {
            // SAFETY: the caller's contract (k < got.len()).
            unsafe { *indices.add(k) = i as c_int };
        }
        // SAFETY: the caller's contract.
        unsafe { write_status(nth(statuses, k), &o, failed.is_some()) };
    }
    match failed {
        Some((error, comm)) => Err(in_status(error, comm)),
        None => Ok(()),
    }
}

/// `MPI_ERR_IN_STATUS` raised on `comm`: the call returns it, but a user error handler
/// is called with the first failed request's `error` (as Open MPI's ULFM does: the
/// handlers of ULFM programs test for `MPIX_ERR_PROC_FAILED`, and ICLDisco's
/// `stress/pingpairs.c` and `isend-err.c` abort otherwise; MPI 4.1 does not say which
/// code the handler gets).
fn in_status(error: c_int, comm: Handle) -> Fail {
    Fail::new(MPI_ERR_IN_STATUS, "a request failed")
        .on(comm)
        .handler_gets(error)
}

/// A pass of `*some` over the active requests only, into `got` (all `None` before).
fn some_pass(lib: &mut Lib, reqs: &mut [Handle], got: &mut [Option<(Outcome, Handle)>]) -> R<()> {
    progress_detached(lib);
    for (slot, got) in reqs.iter_mut().zip(got.iter_mut()) {
        if !passed_over(lib, *slot) {
            *got = attempt(lib, slot)?;
        }
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Waitsome`.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        requests: *mut Handle,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `incount` requests, `outcount` valid for a write.
            let (reqs, outcount) = unsafe { (request_array(requests, incount)?, out(outcount)?) };
            if all_passed_over(g.lib()?, reqs) {
                *outcount = MPI_UNDEFINED;
                return Ok(());
            }
            let mut got = Scratch::take(g.lib()?, reqs.len());
            let mut spin = crate::util::spin_wait();
            loop {
                // Every entry is `None` here: a pass that finds nothing leaves them so.
                some_pass(g.lib()?, reqs, &mut got.0)?;
                if got.0.iter().any(Option::is_some) {
                    // SAFETY: MPI's contract: `indices`/`statuses` hold `incount` entries.
                    let r = unsafe { report_some(&got.0, outcount, indices, statuses) };
                    got.give_back(g.lib()?);
                    return r;
                }
                g.relax(&mut spin);
            }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Testsome`.
    fn MPI_Testsome / PMPI_Testsome(
        incount: c_int,
        requests: *mut Handle,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut MPI_Status
    ) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `incount` requests, `outcount` valid for a write.
            let (reqs, outcount) = unsafe { (request_array(requests, incount)?, out(outcount)?) };
            if all_passed_over(g.lib()?, reqs) {
                *outcount = MPI_UNDEFINED;
                return Ok(());
            }
            let lib = g.lib()?;
            let mut got = Scratch::take(lib, reqs.len());
            some_pass(lib, reqs, &mut got.0)?;
            // SAFETY: MPI's contract: `indices`/`statuses` hold `incount` entries.
            let r = unsafe { report_some(&got.0, outcount, indices, statuses) };
            got.give_back(lib);
            r
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Cancel`: withdraws a receive not matched yet; a send cannot be withdrawn
    /// here and completes normally (`MPI_Test_cancelled` then says false).
    fn MPI_Cancel / PMPI_Cancel(request: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `request` is valid for reads.
            let h = unsafe { crate::util::read_handle(request) }?;
            if crate::greq::cancel(g, h)? {
                return Ok(());
            }
            let r = g.lib()?.requests.get_mut(&h).ok_or_else(|| {
                Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a request"))
            })?;
            r.cancel();
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Request_free`: an active request goes on (a send is delivered, a receive
    /// fills its buffer) and is progressed by later calls and by `MPI_Finalize`.
    fn MPI_Request_free / PMPI_Request_free(request: *mut Handle) {
        call(NO_OBJECT, |g| {
            // SAFETY: MPI's contract: `request` is valid for reads and writes.
            let slot = unsafe { out(request) }?;
            let lib = g.lib()?;
            let mut r = lib.requests.remove(slot).ok_or_else(|| {
                Fail::new(MPI_ERR_REQUEST, format!("{:#x} is not a request", *slot))
            })?;
            *slot = MPI_REQUEST_NULL;
            // A held partitioned send has sent nothing: it just goes.
            if r.test().is_none() && !matches!(r.op, Op::Held) {
                lib.detached.push(r);
            }
            Ok(())
        })
    }
}
