//! Non-blocking collectives on intra-communicators (MPI 4.1, 6.12): `MPI_Ibcast`,
//! `MPI_Ireduce`, `MPI_Iallreduce`, `MPI_Igather`, `MPI_Iscatter`, `MPI_Iallgather`,
//! `MPI_Ialltoall` (`MPI_Ibarrier` is `coll::Ibarrier`). Each call builds a schedule
//! ([`Nbc`]): a list of steps, each one exchange (sends and receives posted at once
//! and waited for together) or one local step (a reduction, a copy), and returns a
//! request; every test of the request (`MPI_Test`, `MPI_Wait`...) advances it as far
//! as it can without waiting. Messages go over the communicator's collective twin with
//! one tag of its sequence per call, taken at the call, so they never meet the
//! program's messages nor another collective's, blocking or not.
//!
//! The algorithms: a broadcast down a binomial tree from the root; a reduction up a
//! binomial tree over the ranks in their order towards rank 0 (each rank combines its
//! range of ranks with the next higher range, so the result is the reduction in rank
//! order, which a non-commutative operation needs), then from rank 0 to the root;
//! an allreduce as that reduction followed by a broadcast from rank 0; gather, scatter,
//! allgather and alltoall send every block straight between the program's buffers.
//! A request being tested gives up as the blocking collectives do: `MPI_ERR_REVOKED`
//! on a revoke, `MPI_ERR_PROC_FAILED` once a member is known failed while it waits.
//!
//! The program's buffers are used from the call until the request completes (MPI's
//! contract for non-blocking collectives); reduction inputs are copied at the call.
//! A user operation's function is not called inside a test: the `Reduce` step queues
//! it on the testing thread, which runs it once it holds nothing of the library's
//! state (`op_deferred`), and the step is done at a later test.

use std::ffi::{c_int, c_void};

use sf::comm::{RecvRequest, SendRequest};

use crate::coll::{root_arg, Coll, INTERRUPT_POLLS};
use crate::consts::*;
use crate::datatype::TypeEntry;
use crate::error::{Fail, R};
use crate::op::Reduction;
use crate::op_deferred::{defer, Operands, Pending};
use crate::request::{Op, Outcome, Req};
use crate::state::{call, Guard, Lib};
use crate::util::{bytes, new_request_out};

/// Memory a step reads or writes: the program's buffer or the schedule's scratch
/// (whose boxes never move while the schedule lives).
#[derive(Clone, Copy)]
pub(crate) struct Span {
    ptr: *mut u8,
    pub(crate) len: usize,
}

impl Span {
    /// `len` bytes at `ptr` (a null pointer only with `len == 0`).
    pub(crate) fn at(ptr: *mut u8, len: usize) -> R<Span> {
        if ptr.is_null() && len > 0 {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                format!("a null buffer for {len} bytes"),
            ));
        }
        Ok(Span { ptr, len })
    }

    /// Block `i` of `len` bytes.
    fn block(self, i: u32, len: usize) -> Span {
        Span {
            // Within the span: the callers' blocks are those of its layout.
            ptr: self.ptr.wrapping_add(i as usize * len),
            len,
        }
    }

    /// `len` bytes from byte `offset` (a block of a `v` layout, inside the span).
    pub(crate) fn sub(self, offset: usize, len: usize) -> Span {
        Span {
            ptr: self.ptr.wrapping_add(offset),
            len,
        }
    }

    /// # Safety
    /// The span is valid for reads for the returned lifetime.
    unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// # Safety
    /// The span is valid for writes, and not otherwise accessed, for the returned
    /// lifetime.
    unsafe fn bytes_mut<'a>(self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// One step of a schedule.
pub(crate) enum Step {
    /// Posts every send and receive at once; done when all are.
    Exchange {
        sends: Vec<(u32, Span)>,
        recvs: Vec<(u32, Span)>,
    },
    /// Combines two partial results into `acc`: `acc = other op acc` when `other`
    /// holds the lower ranks' part (`other_lower`), else `acc = acc op other`. A user
    /// operation may overwrite `other` (it runs with the higher part as its
    /// `inoutvec`, `op_deferred`).
    Reduce {
        acc: Span,
        other: Span,
        other_lower: bool,
    },
    /// Copies `from` into `to` (the same length).
    Copy { from: Span, to: Span },
}

/// A non-blocking collective in flight (see the module doc).
pub(crate) struct Nbc {
    c: Coll,
    /// The operation of a reduction (`None` for the other collectives).
    pub(crate) reduction: Option<Reduction>,
    pub(crate) steps: Vec<Step>,
    next: usize,
    polls: u32,
    sends: Vec<SendRequest<'static>>,
    /// Each receive with its source and the length it must have.
    recvs: Vec<(RecvRequest<'static>, u32, usize)>,
    /// The user function call of the current `Reduce` step, while it is queued.
    deferred: Option<Pending>,
    /// Declared after the requests, so dropped after them: a receive in flight into
    /// scratch is withdrawn before its memory goes.
    scratch: Vec<Box<[u8]>>,
}

impl Drop for Nbc {
    fn drop(&mut self) {
        if self.deferred.as_ref().is_some_and(|p| !p.is_done()) {
            // A queued user function still reads and writes the scratch (a request
            // dropped before the call ran: `MPI_Finalize` with it freed while active).
            std::mem::forget(std::mem::take(&mut self.scratch));
        }
    }
}

impl Nbc {
    pub(crate) fn new(c: Coll) -> Self {
        Nbc {
            c,
            reduction: None,
            steps: Vec::new(),
            next: 0,
            polls: 0,
            sends: Vec::new(),
            recvs: Vec::new(),
            deferred: None,
            scratch: Vec::new(),
        }
    }

    /// This rank's rank in the communicator.
    pub(crate) fn rank(&self) -> u32 {
        self.c.me
    }

    /// The communicator's size.
    pub(crate) fn size(&self) -> u32 {
        self.c.n
    }

    /// `len` bytes of scratch holding `init` (zeros when `None`).
    pub(crate) fn scratch(&mut self, len: usize, init: Option<&[u8]>) -> Span {
        let mut b = vec![0u8; len].into_boxed_slice();
        if let Some(i) = init {
            b.copy_from_slice(i);
        }
        let s = Span {
            ptr: b.as_mut_ptr(),
            len,
        };
        self.scratch.push(b);
        s
    }

    /// Progresses as far as it can without waiting; `true` once every step is done.
    pub fn test(&mut self) -> R<bool> {
        loop {
            if let Some(p) = &self.deferred {
                if !p.is_done() {
                    return Ok(false);
                }
                self.deferred = None;
            }
            if self.pending()? {
                self.polls = self.polls.wrapping_add(1);
                if self.polls % INTERRUPT_POLLS == 0 {
                    if let Some(f) = self.c.interrupted() {
                        return Err(f);
                    }
                }
                return Ok(false);
            }
            let Some(step) = self.steps.get(self.next) else {
                return Ok(true);
            };
            self.next += 1;
            match step {
                Step::Exchange { sends, recvs } => {
                    for &(src, span) in recvs {
                        // SAFETY: the span is the program's receive buffer (valid and
                        // untouched by it until the request completes, MPI's contract)
                        // or scratch the schedule owns; the request is completed or
                        // dropped (withdrawn) before either goes.
                        let buf = unsafe { span.bytes_mut() };
                        // SAFETY: as above.
                        let r = unsafe { self.c.coll.irecv(Some(src), Some(self.c.tag), buf) }?;
                        self.recvs.push((r, src, span.len));
                    }
                    for &(dest, span) in sends {
                        // SAFETY: as above, for the data sent (unchanged meanwhile).
                        let data = unsafe { span.bytes() };
                        // SAFETY: as above.
                        let s = unsafe { self.c.coll.isend(dest, self.c.tag, data) }?;
                        self.sends.push(s);
                    }
                }
                &Step::Reduce {
                    acc,
                    other,
                    other_lower,
                } => {
                    let red = self
                        .reduction
                        .as_ref()
                        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "a reduction without an op"))?;
                    if let Some(user) = red.user_call() {
                        let ops = if other_lower {
                            Operands {
                                invec: other.ptr,
                                inout: acc.ptr,
                                copy_to: std::ptr::null_mut(),
                                len: acc.len,
                            }
                        } else {
                            Operands {
                                invec: acc.ptr,
                                inout: other.ptr,
                                copy_to: acc.ptr,
                                len: acc.len,
                            }
                        };
                        // SAFETY: scratch or the program's buffers of equal length
                        // (the schedule's layout), with no request on them now (the
                        // exchanges before this step are done) and none until the call
                        // has run (`test` waits on it first); the scratch outlives the
                        // call (`Drop`), the program's buffers live until the request
                        // completes (MPI's contract), which it does not before.
                        self.deferred = Some(unsafe { defer(user, ops) });
                        continue;
                    }
                    // SAFETY: scratch or the program's buffers, no request on them now
                    // (the exchanges before this step are done).
                    let (a, o) = unsafe { (acc.bytes_mut(), other.bytes()) };
                    red.reduce_predefined(a, o)?;
                }
                Step::Copy { from, to } => {
                    // SAFETY: as above; `copy` allows the two to overlap.
                    unsafe { std::ptr::copy(from.ptr, to.ptr, from.len.min(to.len)) };
                }
            }
        }
    }

    /// Tests the requests in flight once; whether any is still pending. A message of
    /// another length than expected is `MPI_ERR_TRUNCATE`.
    fn pending(&mut self) -> R<bool> {
        let mut i = 0;
        while i < self.sends.len() {
            if self.sends[i].test()? {
                // Completed: dropping it is its end.
                drop(self.sends.swap_remove(i));
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.recvs.len() {
            let (r, src, len) = &mut self.recvs[i];
            match r.test()? {
                Some(st) if st.len != *len => {
                    return Err(Fail::new(
                        MPI_ERR_TRUNCATE,
                        format!(
                            "rank {src} sent {} bytes where {len} were expected: the ranks \
                             passed different counts or types",
                            st.len
                        ),
                    ))
                }
                Some(_) => {
                    // Completed: dropping it is its end.
                    drop(self.recvs.swap_remove(i));
                }
                None => i += 1,
            }
        }
        Ok(!self.sends.is_empty() || !self.recvs.is_empty())
    }

    /// A binomial broadcast of `buf` from `root`: receive from the parent, then send
    /// to every child at once.
    pub(crate) fn bcast(&mut self, buf: Span, root: u32) {
        let (me, n) = (self.c.me, self.c.n);
        let vr = (me + n - root) % n;
        let abs = |v: u32| (v + root) % n;
        let low = if vr == 0 {
            n.next_power_of_two()
        } else {
            vr & vr.wrapping_neg()
        };
        if vr != 0 {
            self.steps.push(Step::Exchange {
                sends: Vec::new(),
                recvs: vec![(abs(vr - low), buf)],
            });
        }
        let mut sends = Vec::new();
        let mut mask = 1;
        while mask < low {
            if vr + mask < n {
                sends.push((abs(vr + mask), buf));
            }
            mask <<= 1;
        }
        if !sends.is_empty() {
            self.steps.push(Step::Exchange {
                sends,
                recvs: Vec::new(),
            });
        }
    }

    /// Reduces `acc` (this rank's input, in scratch) up a binomial tree over the ranks
    /// in order: rank 0 ends with the reduction of all, in rank order.
    pub(crate) fn reduce_to_zero(&mut self, acc: Span) {
        let (me, n) = (self.c.me, self.c.n);
        let mut children = Vec::new();
        let mut mask = 1;
        while mask < n && me & mask == 0 {
            if me + mask < n {
                children.push(me + mask);
            }
            mask <<= 1;
        }
        if !children.is_empty() {
            let tmps: Vec<Span> = children
                .iter()
                .map(|_| self.scratch(acc.len, None))
                .collect();
            self.steps.push(Step::Exchange {
                sends: Vec::new(),
                recvs: children.iter().copied().zip(tmps.iter().copied()).collect(),
            });
            // Each child holds the ranks just above those `acc` holds by then.
            for other in tmps {
                self.steps.push(Step::Reduce {
                    acc,
                    other,
                    other_lower: false,
                });
            }
        }
        if me != 0 {
            self.steps.push(Step::Exchange {
                sends: vec![(me - (me & me.wrapping_neg()), acc)],
                recvs: Vec::new(),
            });
        }
    }

    /// Registers the schedule as a request and writes its handle.
    pub(crate) fn submit(mut self, g: &mut Guard, comm: Handle, slot: &mut Handle) -> R<()> {
        // Whatever needs no message (a copy, the whole call at one rank) is done now,
        // and the first exchange is posted. A process failure met there is the
        // request's outcome, reported at completion (as `p2p::deferred` does).
        let req = match self.test() {
            Ok(true) => Req::finished(comm, Outcome::empty()),
            Ok(false) => Req::new(comm, Op::Nbc(Box::new(self))),
            Err(f) if f.class == MPI_ERR_PROC_FAILED => {
                Req::finished(comm, Outcome::failed(f.class))
            }
            Err(f) => return Err(f),
        };
        *slot = g.lib()?.add_request(req)?;
        Ok(())
    }
}

/// The request argument, checked; set to `MPI_REQUEST_NULL` until the call succeeds.
///
/// # Safety
/// `request` is null or valid for a write.
pub(crate) unsafe fn request_slot<'a>(request: *mut Handle) -> R<&'a mut Handle> {
    // SAFETY: the caller's contract.
    unsafe { new_request_out(request) }
}

crate::mpi_fn! {
    /// `MPI_Ibcast`.
    fn MPI_Ibcast / PMPI_Ibcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`nbc_packed`).
        if let Some(rc) = crate::coll_packed::bcast(buffer, count, datatype, root, comm, Some(request)) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let buf = crate::coll_inter::RecvArg { ptr: buffer, count, dt: datatype };
                return crate::nbc_inter::ibcast(g, comm, buf, root, slot);
            }
            let (len, _) = g.lib()?.byte_len(count, datatype)?;
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let mut s = Nbc::new(c);
            s.bcast(Span::at(buffer.cast(), len)?, root);
            s.submit(g, comm, slot)
        })
    }
}

/// The operation of a non-blocking reduction of `datatype` (whose entry is `t`),
/// checked before the call takes its tag: a predefined operation defined on the type's
/// elements, or the program's, whose function runs where this thread holds nothing of
/// the library's state (`op_deferred`).
pub(crate) fn reduction(lib: &Lib, op: Handle, datatype: Handle, t: &TypeEntry) -> R<Reduction> {
    Reduction::new(lib, op, datatype, t)
}

/// The input of a reduction at this rank, copied into scratch: `sendbuf`, or with
/// `MPI_IN_PLACE` (where allowed) `recvbuf`.
pub(crate) fn reduction_input(
    s: &mut Nbc,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    len: usize,
) -> R<Span> {
    let from = if sendbuf as usize == IN_PLACE {
        recvbuf.cast_const()
    } else {
        sendbuf
    };
    // SAFETY: MPI's contract: the buffer holds `count` items.
    let input = unsafe { bytes(from, len) }?;
    Ok(s.scratch(len, Some(input)))
}

crate::mpi_fn! {
    /// `MPI_Ireduce`.
    fn MPI_Ireduce / PMPI_Ireduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Reduce { root }, sendbuf, recvbuf, count, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count, dt: datatype };
                return crate::nbc_inter::ireduce(g, comm, sendbuf, recv, op, root, slot);
            }
            let (len, t) = g.lib()?.byte_len(count, datatype)?;
            let red = reduction(g.lib()?, op, datatype, &t)?;
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let me = c.me;
            if sendbuf as usize == IN_PLACE && me != root {
                return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE outside the root"));
            }
            let mut s = Nbc::new(c);
            s.reduction = Some(red);
            let acc = reduction_input(&mut s, sendbuf, recvbuf, len)?;
            s.reduce_to_zero(acc);
            let out = if me == root { Some(Span::at(recvbuf.cast(), len)?) } else { None };
            match (me == 0, out) {
                (true, Some(out)) => s.steps.push(Step::Copy { from: acc, to: out }),
                (true, None) => s.steps.push(Step::Exchange {
                    sends: vec![(root, acc)],
                    recvs: Vec::new(),
                }),
                (false, Some(out)) => s.steps.push(Step::Exchange {
                    sends: Vec::new(),
                    recvs: vec![(0, out)],
                }),
                (false, None) => {}
            }
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Iallreduce`: the reduction to rank 0, then a broadcast from it.
    fn MPI_Iallreduce / PMPI_Iallreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`reduce_packed`).
        if let Some(rc) = crate::reduce_packed::reduced(
            crate::reduce_packed::Which::Allreduce, sendbuf, recvbuf, count, datatype, op, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count, dt: datatype };
                return crate::nbc_inter::iallreduce(g, comm, sendbuf, recv, op, slot);
            }
            let (len, t) = g.lib()?.byte_len(count, datatype)?;
            let red = reduction(g.lib()?, op, datatype, &t)?;
            let c = Coll::start(g, comm)?;
            let me = c.me;
            let mut s = Nbc::new(c);
            s.reduction = Some(red);
            let acc = reduction_input(&mut s, sendbuf, recvbuf, len)?;
            let out = Span::at(recvbuf.cast(), len)?;
            s.reduce_to_zero(acc);
            if me == 0 {
                s.steps.push(Step::Copy { from: acc, to: out });
            }
            s.bcast(out, 0);
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Igather`: every block straight into its place at the root.
    fn MPI_Igather / PMPI_Igather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`nbc_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Gather,
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                return crate::nbc_inter::igather(g, comm, send, recv, root, slot);
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let (me, n) = (c.me, c.n);
            let in_place = me == root && sendbuf as usize == IN_PLACE;
            let mine = if in_place {
                None
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                Some(Span::at(sendbuf.cast_mut().cast(), slen)?)
            };
            let mut s = Nbc::new(c);
            if me != root {
                let mine = mine.unwrap_or(Span { ptr: std::ptr::null_mut(), len: 0 });
                s.steps.push(Step::Exchange { sends: vec![(root, mine)], recvs: Vec::new() });
            } else {
                let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
                let out = Span::at(recvbuf.cast(), rlen * n as usize)?;
                if let Some(mine) = mine {
                    own_fits(mine.len, rlen)?;
                    s.steps.push(Step::Copy { from: mine, to: out.block(root, mine.len) });
                }
                let recvs = (0..n).filter(|&r| r != root).map(|r| (r, out.block(r, rlen))).collect();
                s.steps.push(Step::Exchange { sends: Vec::new(), recvs });
            }
            s.submit(g, comm, slot)
        })
    }
}

/// A scatter's receive buffer: `None` at the root with `MPI_IN_PLACE`.
pub(crate) fn scatter_out(
    g: &mut Guard,
    is_root: bool,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
) -> R<Option<Span>> {
    if is_root && recvbuf as usize == IN_PLACE {
        return Ok(None);
    }
    let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
    Span::at(recvbuf.cast(), rlen).map(Some)
}

/// The root's own block must fit its place (`MPI_ERR_TRUNCATE`: the counts or types
/// differ).
pub(crate) fn own_fits(len: usize, block: usize) -> R<()> {
    if len > block {
        return Err(Fail::new(
            MPI_ERR_TRUNCATE,
            format!("{len} bytes sent where blocks of {block} are received"),
        ));
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Iscatter`: every block straight from the root's buffer.
    fn MPI_Iscatter / PMPI_Iscatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`nbc_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Scatter,
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                return crate::nbc_inter::iscatter(g, comm, send, recv, root, slot);
            }
            let c = Coll::start(g, comm)?;
            let root = root_arg(root, c.n)?;
            let (me, n) = (c.me, c.n);
            let out = scatter_out(g, me == root, recvbuf, recvcount, recvtype)?;
            let mut s = Nbc::new(c);
            if me != root {
                let out = out.unwrap_or(Span { ptr: std::ptr::null_mut(), len: 0 });
                s.steps.push(Step::Exchange { sends: Vec::new(), recvs: vec![(root, out)] });
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                let all = Span::at(sendbuf.cast_mut().cast(), slen * n as usize)?;
                if let Some(out) = out {
                    own_fits(slen, out.len)?;
                    s.steps.push(Step::Copy { from: all.block(root, slen), to: out });
                }
                let sends = (0..n).filter(|&r| r != root).map(|r| (r, all.block(r, slen))).collect();
                s.steps.push(Step::Exchange { sends, recvs: Vec::new() });
            }
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Iallgather`: every rank's block to every other at once.
    fn MPI_Iallgather / PMPI_Iallgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`nbc_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Allgather,
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                return crate::nbc_inter::iallgather(g, comm, send, recv, slot);
            }
            let c = Coll::start(g, comm)?;
            let (me, n) = (c.me, c.n);
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let out = Span::at(recvbuf.cast(), rlen * n as usize)?;
            let mut s = Nbc::new(c);
            let mine = if sendbuf as usize == IN_PLACE {
                out.block(me, rlen)
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                own_fits(slen, rlen)?;
                let mine = Span::at(sendbuf.cast_mut().cast(), slen)?;
                s.steps.push(Step::Copy { from: mine, to: out.block(me, slen) });
                mine
            };
            let others = || (0..n).filter(move |&r| r != me);
            s.steps.push(Step::Exchange {
                sends: others().map(|r| (r, mine)).collect(),
                recvs: others().map(|r| (r, out.block(r, rlen))).collect(),
            });
            s.submit(g, comm, slot)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Ialltoall`: every block straight to its rank at once (`MPI_IN_PLACE`: from
    /// a copy of `recvbuf` taken at the call).
    fn MPI_Ialltoall / PMPI_Ialltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle
    ) {
        // A type with gaps: packed, then the call below (`nbc_packed`).
        if let Some(rc) = crate::coll_packed::moved(
            crate::coll_packed::Kind::Alltoall,
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm, Some(request),
        ) {
            return rc;
        }
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` is valid for a write.
            let slot = unsafe { request_slot(request) }?;
            if crate::coll_inter::is_inter(g, comm)? {
                let send = crate::coll_inter::SendArg { ptr: sendbuf, count: sendcount, dt: sendtype };
                let recv = crate::coll_inter::RecvArg { ptr: recvbuf, count: recvcount, dt: recvtype };
                return crate::nbc_inter::ialltoall(g, comm, send, recv, slot);
            }
            let c = Coll::start(g, comm)?;
            let (me, n) = (c.me, c.n);
            let (rlen, _) = g.lib()?.byte_len(recvcount, recvtype)?;
            let out = Span::at(recvbuf.cast(), rlen * n as usize)?;
            let mut s = Nbc::new(c);
            let (all, slen) = if sendbuf as usize == IN_PLACE {
                // SAFETY: MPI's contract: `recvbuf` holds `n * recvcount` items.
                let copy = unsafe { bytes(recvbuf.cast_const(), rlen * n as usize) }?;
                (s.scratch(copy.len(), Some(copy)), rlen)
            } else {
                let (slen, _) = g.lib()?.byte_len(sendcount, sendtype)?;
                (Span::at(sendbuf.cast_mut().cast(), slen * n as usize)?, slen)
            };
            own_fits(slen, rlen)?;
            s.steps.push(Step::Copy { from: all.block(me, slen), to: out.block(me, slen) });
            let others = || (0..n).filter(move |&r| r != me);
            s.steps.push(Step::Exchange {
                sends: others().map(|r| (r, all.block(r, slen))).collect(),
                recvs: others().map(|r| (r, out.block(r, rlen))).collect(),
            });
            s.submit(g, comm, slot)
        })
    }
}
