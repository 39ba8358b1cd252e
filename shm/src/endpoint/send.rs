//! The send protocols: inline (one cell), eager (consecutive cells), and large
//! messages by RTS, read by the receiver from our memory (single copy), with the copy
//! shared through a split slot while we wait; a receiver that cannot read our memory
//! answers RESEND and the message is streamed eagerly.

use super::eager_cost::EagerCost;
use super::{CopyPath, Endpoint, Offer, Peer, SendRequest, Waiter, SEND_TESTS_PER_CHECK};
use crate::error::ShmError;
use crate::message::{
    eager_continuations, Header, EAGER_CONT, EAGER_FIRST, FIN_FAILED, FIN_OK, FIN_RESEND,
    INLINE_MAX, SLOT_MAX,
};
use crate::ring::{Cell, Producer};
use crate::split::{self, SPLIT_MIN};
use std::time::Instant;

impl Endpoint {
    /// Whether this process may push into `dest`'s ring: `Ok(false)` while a restarted
    /// incarnation waits for the peer to admit it.
    fn ready_to_push(&mut self, dest: u32) -> Result<bool, ShmError> {
        let (me, generation) = (self.config.rank, self.config.generation);
        let peer = self.peers[dest as usize]
            .as_mut()
            .ok_or_else(|| ShmError::InvalidArgument(format!("rank {dest} not connected")))?;
        if peer.awaiting_admission {
            // A restarted process: the peer's ring still holds the dead incarnation's
            // cells until it admits us (as if full until then).
            if !peer.segment.admits(me, generation) {
                return Ok(false);
            }
            peer.tx = peer.segment.producer(me).pos();
            peer.awaiting_admission = false;
        }
        Ok(true)
    }

    /// Whether local rank `dest` lets this process push into its ring: always for a
    /// first incarnation; a restarted one waits until `dest` admitted it (which `dest`
    /// does in a progress round of its own). A caller that cannot wait in here (a
    /// wait would run no round of the caller's, and two restarted ranks would wait for
    /// each other) holds its message and asks again.
    ///
    /// # Errors
    /// [`ShmError::PeerDead`] when `dest` is dead (checked only while not admitted);
    /// [`ShmError::InvalidArgument`] for a bad rank.
    pub fn admitted_by(&mut self, dest: u32) -> Result<bool, ShmError> {
        self.check_rank(dest)?;
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        if self.ready_to_push(dest)? {
            return Ok(true);
        }
        if self.peer_dead(dest) {
            return Err(ShmError::PeerDead(dest));
        }
        Ok(false)
    }

    /// Runs `push` on this process's producer end of `dest`'s ring (with `dest`'s record
    /// of what eager writes cost), saving the producer's position after; `Ok(None)`
    /// while `dest` has not admitted this restarted process (nothing pushed).
    fn with_producer<R>(
        &mut self,
        dest: u32,
        push: impl FnOnce(&mut Producer<'_>, &mut EagerCost) -> R,
    ) -> Result<Option<R>, ShmError> {
        if !self.ready_to_push(dest)? {
            return Ok(None);
        }
        let me = self.config.rank;
        let Peer {
            segment,
            tx,
            eager_cost,
            ..
        } = self.peers[dest as usize]
            .as_mut()
            .ok_or_else(|| ShmError::InvalidArgument(format!("rank {dest} not connected")))?;
        let mut p = segment.producer_at(me, *tx);
        let out = push(&mut p, eager_cost);
        *tx = p.pos();
        Ok(Some(out))
    }

    /// Fills and pushes one cell to `dest`; `Ok(false)` when its ring is full.
    pub(super) fn try_push_with(
        &mut self,
        dest: u32,
        fill: impl FnOnce(&Cell),
    ) -> Result<bool, ShmError> {
        Ok(self
            .with_producer(dest, |p, _| p.try_push(fill))?
            .unwrap_or(false))
    }

    /// Fills and pushes between `min` and `max` consecutive cells to `dest`, published
    /// together (see [`Producer::try_push_cells`](crate::ring::Producer::try_push_cells));
    /// `Ok(0)` when fewer than `min` are free.
    pub(super) fn try_push_cells(
        &mut self,
        dest: u32,
        min: usize,
        max: usize,
        fill: impl FnMut(usize, &Cell),
    ) -> Result<usize, ShmError> {
        Ok(self
            .with_producer(dest, |p, _| p.try_push_cells(min, max, fill))?
            .unwrap_or(0))
    }

    /// Fills and pushes `n` consecutive cells to `dest` when all are free, published
    /// [`EAGER_BATCH`] at a time (see
    /// [`Producer::try_push_reserved`](crate::ring::Producer::try_push_reserved));
    /// `Ok(false)` (nothing written) when fewer are free.
    /// A message of more than `eager_cost::ALWAYS_EAGER` bytes (`len`) is timed, for the
    /// choice between the ring and single copy (`eager_cost.rs`).
    fn try_push_reserved(
        &mut self,
        dest: u32,
        n: usize,
        len: usize,
        fill: impl FnMut(usize, &Cell),
    ) -> Result<bool, ShmError> {
        let pushed = self.with_producer(dest, |p, cost| {
            let start = EagerCost::times(len).then(Instant::now);
            let pushed = p.try_push_reserved(n, EAGER_BATCH, fill);
            // Not before the ring's first lap: its pages were being touched for the
            // first time (faults, not crossings).
            if let (true, Some(start), true) = (pushed, start, p.lapped()) {
                let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                cost.record(len, ns);
            }
            pushed
        })?;
        Ok(pushed.unwrap_or(false))
    }

    /// Records that `dest` read a message of `len` bytes of ours by single copy in
    /// `read_ns` (its FIN's `status` and figure), for the ring's choice
    /// (`eager_cost.rs`); only sizes the ring could also have carried count.
    fn single_copy_took(&mut self, dest: u32, len: usize, status: u8, read_ns: u32) {
        if status != FIN_OK || read_ns == 0 || len > self.config.eager_max {
            return;
        }
        if let Some(p) = self.peers[dest as usize].as_mut() {
            p.eager_cost.record_single_copy(len, read_ns);
        }
    }

    /// Whether a message of `len` bytes (within `eager_max`) to `dest` goes through the
    /// ring rather than by single copy (`eager_cost.rs`); counts the decision.
    fn ring_takes(&mut self, dest: u32, len: usize) -> bool {
        self.peers[dest as usize]
            .as_mut()
            .is_none_or(|p| p.eager_cost.wants_ring(len))
    }

    /// Pushes one message to `dest`; `Ok(false)` when its ring is full. A message of
    /// at most [`SLOT_MAX`] bytes goes into a slot of a packed cell
    /// ([`Producer::try_push_small`]): several share a cache line.
    pub(super) fn try_push(
        &mut self,
        dest: u32,
        header: Header,
        payload: &[u8],
    ) -> Result<bool, ShmError> {
        if matches!(header, Header::Inline { len, .. } if len <= SLOT_MAX) {
            return Ok(self
                .with_producer(dest, |p, _| {
                    p.try_push_small(|cell, base| header.write_at(cell, base, payload))
                })?
                .unwrap_or(false));
        }
        self.try_push_with(dest, |cell| header.write(cell, payload))
    }

    /// Pushes one message to `dest`, draining our own rings while its ring is full (so
    /// two ranks sending to each other cannot deadlock).
    pub(super) fn push(
        &mut self,
        dest: u32,
        header: Header,
        payload: &[u8],
    ) -> Result<(), ShmError> {
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            if self.try_push(dest, header, payload)? {
                return Ok(());
            }
            self.progress()?;
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    /// Copies a medium message through consecutive cells. A message that fits the ring
    /// waits for room for all its cells, then writes and publishes them
    /// [`EAGER_BATCH`] at a time (`try_push_reserved`): the receiver copies one batch
    /// straight into its destination while we write the next, and since the room was
    /// taken first we never wait for it inside the message, so its wait for the next
    /// batch is short (`await_continuation`). A larger one (streamed after a RESEND)
    /// goes in up to a batch of cells at a time as room frees.
    pub(super) fn push_eager(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        let h = Header::Eager {
            tag,
            len: data.len(),
        };
        let cells = 1 + eager_continuations(data.len());
        let whole = cells <= self.own.geometry().ring_cells as usize;
        let fill = eager_fill(h, data);
        let mut done = 0;
        let mut waiter = Waiter::new(self.config.operation_timeout);
        while done < cells {
            if whole {
                if self.try_push_reserved(dest, cells, data.len(), &fill)? {
                    return Ok(());
                }
                self.progress()?;
                waiter.wait(|| self.peer_dead(dest), dest)?;
                continue;
            }
            let left = cells - done;
            let most = left.min(EAGER_BATCH);
            let n = self.try_push_cells(dest, 1, most, |i, cell| fill(done + i, cell))?;
            if n > 0 {
                done += n;
                waiter = Waiter::new(self.config.operation_timeout);
                continue;
            }
            self.progress()?;
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
        Ok(())
    }

    /// Sends `data` to local rank `dest` with `tag`; returns once the data is out of
    /// `data` (copied into a cell, or read by the receiver).
    ///
    /// # Errors
    /// [`ShmError::PeerDead`] when `dest` dies first; [`ShmError::InvalidArgument`] for a
    /// bad rank; [`ShmError::Timeout`] past the configured timeout.
    pub fn send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        self.check_rank(dest)?;
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        if data.len() <= INLINE_MAX {
            let h = Header::Inline {
                tag,
                len: data.len(),
            };
            return self.push(dest, h, data);
        }
        let pipelined = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::Pipelined);
        if pipelined || (data.len() <= self.config.eager_max && self.ring_takes(dest, data.len())) {
            return self.push_eager(dest, tag, data);
        }
        let token = self.next_token;
        self.next_token += 1;
        let h = self.offer_rts(dest, tag, data, token);
        if let Err(e) = self.push(dest, h, &[]) {
            self.release_offer(token);
            return Err(e);
        }
        // `data` stays borrowed until the receiver's FIN: it reads straight from it.
        let mut waiter = Waiter::new(self.config.operation_timeout);
        loop {
            // SAFETY: `data` is the buffer the RTS named, borrowed until we return.
            unsafe { self.help_split(token, data) };
            self.progress()?;
            if let Some(i) = self.fins.iter().position(|f| f.0 == token) {
                let (_, status, read_ns) = self.fins.swap_remove(i);
                self.release_offer(token);
                self.single_copy_took(dest, data.len(), status, read_ns);
                if status == FIN_RESEND {
                    // The receiver cannot read our memory: stream it, and from now on
                    // send large messages to this peer that way directly.
                    if let Some(p) = self.peers[dest as usize].as_mut() {
                        p.path = CopyPath::Pipelined;
                    }
                    return self.push_eager(dest, tag, data);
                }
                return Ok(());
            }
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    /// Starts a send without waiting for a large message to be read.
    ///
    /// Inline and eager messages are copied into the ring at once (the request is
    /// already complete); a larger one posts its descriptor and completes when the
    /// receiver has read it ([`test_send`](Self::test_send) /
    /// [`wait_send`](Self::wait_send)).
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request completes: the receiver
    /// reads it from this process's memory.
    ///
    /// # Errors
    /// As [`send`](Self::send); [`ShmError::WouldBlock`] when the ring has no room for
    /// the descriptor, or `dest` has not admitted this restarted process yet (nothing
    /// was sent).
    pub unsafe fn isend(
        &mut self,
        dest: u32,
        tag: u64,
        data: &[u8],
    ) -> Result<SendRequest, ShmError> {
        self.check_rank(dest)?;
        // The known verdict only: a pidfd poll here would put a system call on every
        // send; waits check the process (`Waiter`), `poll_deaths` refreshes the verdict.
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        // A restarted process not admitted by `dest` yet: the admission comes with a
        // progress round of the caller's (the launcher's event read there), which a
        // wait in here would never run; two restarted ranks sending to each other first
        // would each wait for the other. The caller queues and retries.
        if !self.ready_to_push(dest)? {
            return Err(ShmError::WouldBlock);
        }
        let pipelined = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::Pipelined);
        let mut req = SendRequest {
            dest,
            tag,
            data: data.as_ptr(),
            len: data.len(),
            token: 0,
            unread: false,
        };
        if pipelined {
            // Streamed through the ring: waits for room as the receiver drains it.
            self.send(dest, tag, data)?;
            return Ok(req);
        }
        if data.len() <= self.config.eager_max
            && (data.len() <= INLINE_MAX || self.ring_takes(dest, data.len()))
        {
            // Whole or not at all (never waiting: a full ring is the caller's to retry,
            // as for a descriptor below).
            self.try_send_ring(dest, tag, data)?;
            return Ok(req);
        }
        let token = self.next_token;
        let h = self.offer_rts(dest, tag, data, token);
        match self.try_push(dest, h, &[]) {
            Ok(true) => {}
            Ok(false) => {
                self.release_offer(token);
                return Err(ShmError::WouldBlock);
            }
            Err(e) => {
                self.release_offer(token);
                return Err(e);
            }
        }
        self.next_token += 1;
        req.token = token;
        Ok(req)
    }

    /// Progresses once; `Ok(true)` when `request` is complete (its buffer is free).
    ///
    /// # Errors
    /// [`ShmError::PeerDead`] when the receiver died before reading; ring errors.
    pub fn test_send(&mut self, request: &mut SendRequest) -> Result<bool, ShmError> {
        if request.token == 0 {
            return Ok(true);
        }
        // SAFETY: the caller of `isend` keeps the buffer valid until completion, which
        // has not happened yet.
        unsafe {
            let data = std::slice::from_raw_parts(request.data, request.len);
            self.help_split(request.token, data);
        }
        self.progress()?;
        let Some(i) = self.fins.iter().position(|f| f.0 == request.token) else {
            // The known verdict at every test; the process itself now and then (a
            // system call: callers poll this in their wait loops).
            self.unanswered_tests = self.unanswered_tests.wrapping_add(1);
            let check = self.unanswered_tests % SEND_TESTS_PER_CHECK == 0;
            if self.dead[request.dest as usize] || (check && self.peer_dead(request.dest)) {
                return Err(ShmError::PeerDead(request.dest));
            }
            return Ok(false);
        };
        let (_, status, read_ns) = self.fins.swap_remove(i);
        self.release_offer(request.token);
        self.single_copy_took(request.dest, request.len, status, read_ns);
        request.token = 0;
        request.unread = status == FIN_FAILED;
        if status == FIN_RESEND {
            if let Some(p) = self.peers[request.dest as usize].as_mut() {
                p.path = CopyPath::Pipelined;
            }
            // SAFETY: the caller of `isend` keeps the buffer valid until completion,
            // which is now.
            let data = unsafe { std::slice::from_raw_parts(request.data, request.len) };
            self.push_eager(request.dest, request.tag, data)?;
        }
        Ok(true)
    }

    /// Waits until `request` is complete.
    ///
    /// # Errors
    /// As [`test_send`](Self::test_send), plus [`ShmError::Timeout`].
    pub fn wait_send(&mut self, mut request: SendRequest) -> Result<(), ShmError> {
        let mut waiter = Waiter::new(self.config.operation_timeout);
        let dest = request.dest;
        loop {
            if self.test_send(&mut request)? {
                return Ok(());
            }
            waiter.wait(|| self.peer_dead(dest), dest)?;
        }
    }

    /// Sends a small or medium message without waiting, all of it copied into the
    /// ring when this returns `Ok`: [`ShmError::WouldBlock`] when the ring has no room
    /// for all its cells, or the message needs the single-copy path (larger than
    /// `eager_max`, or than 8 KiB while writing into this peer's ring has been costing
    /// more than single copy: `eager_cost.rs`) or is streamed to this peer (the
    /// pipelined path).
    ///
    /// # Errors
    /// As [`send`](Self::send), plus `WouldBlock`.
    pub fn try_send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        self.check_rank(dest)?;
        // The known verdict only (see `isend`).
        if self.dead[dest as usize] {
            return Err(ShmError::PeerDead(dest));
        }
        if data.len() > INLINE_MAX
            && (data.len() > self.config.eager_max || !self.ring_takes(dest, data.len()))
        {
            return Err(ShmError::WouldBlock);
        }
        self.try_send_ring(dest, tag, data)
    }

    /// [`try_send`](Self::try_send) once the message is to go through the ring: whole
    /// or not at all, or `WouldBlock` when the ring is too small or the peer is
    /// streamed to (or has no room now).
    #[inline]
    fn try_send_ring(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), ShmError> {
        if data.len() <= INLINE_MAX {
            let h = Header::Inline {
                tag,
                len: data.len(),
            };
            return match self.try_push(dest, h, data)? {
                true => Ok(()),
                false => Err(ShmError::WouldBlock),
            };
        }
        let cells = 1 + eager_continuations(data.len());
        let streamed = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::Pipelined);
        if streamed || cells > self.own.geometry().ring_cells as usize {
            return Err(ShmError::WouldBlock);
        }
        // All the cells or none, published batch by batch (as `push_eager` for a
        // message that fits the ring).
        let h = Header::Eager {
            tag,
            len: data.len(),
        };
        if self.try_push_reserved(dest, cells, data.len(), eager_fill(h, data))? {
            Ok(())
        } else {
            Err(ShmError::WouldBlock)
        }
    }

    /// The RTS of `token`'s large send of `data` to `dest`, with a split slot offered
    /// when one is free (release it with [`release_offer`](Self::release_offer) if the
    /// RTS never leaves).
    fn offer_rts(&mut self, dest: u32, tag: u64, data: &[u8], token: u64) -> Header {
        let split = self.offer_split(dest, token, data.len());
        Header::Rts {
            tag,
            addr: data.as_ptr() as u64,
            len: data.len() as u64,
            token,
            split,
        }
    }

    /// Takes a free split slot for a large send to `dest`, resets it and records the
    /// offer; returns the slot plus one for the RTS, 0 when the copy stays the
    /// receiver's alone (too small, disabled, XPMEM, no single copy, no free slot).
    pub(super) fn offer_split(&mut self, dest: u32, token: u64, len: usize) -> u64 {
        let single_copy = self.peers[dest as usize]
            .as_ref()
            .is_some_and(|p| p.path == CopyPath::SingleCopy);
        if !self.config.split_copy || self.xpmem.is_some() || len < SPLIT_MIN || !single_copy {
            return 0;
        }
        let free = &mut self.split_free[dest as usize];
        if *free == 0 {
            return 0;
        }
        let k = free.trailing_zeros();
        *free &= !(1 << k);
        split::reset(self.own.split_slot(dest, k));
        self.offers.push(Offer { token, dest, k });
        u64::from(k) + 1
    }

    /// Frees the split slot of `token`'s send, if it has one (its FIN arrived, or the
    /// RTS never left).
    pub(super) fn release_offer(&mut self, token: u64) {
        if let Some(i) = self.offers.iter().position(|o| o.token == token) {
            let o = self.offers.swap_remove(i);
            self.split_free[o.dest as usize] |= 1 << o.k;
        }
    }

    /// The sender's share of `token`'s copy, when the receiver has started it.
    ///
    /// # Safety
    /// `data` must be the buffer `token`'s RTS named, still valid.
    pub(super) unsafe fn help_split(&mut self, token: u64, data: &[u8]) {
        let Some(o) = self.offers.iter().find(|o| o.token == token).copied() else {
            return;
        };
        let Some(pid) = self.peers[o.dest as usize].as_ref().map(|p| p.pid) else {
            return;
        };
        let slot = self.own.split_slot(o.dest, o.k);
        // SAFETY: forwarded from the caller.
        self.split_chunks_written += unsafe { split::sender_help(slot, pid, data) };
    }

    /// Chunks of this process's large sends that it copied itself into the receiver's
    /// buffer (see [`crate::split`]); 0 when every copy was the receivers'.
    pub fn split_chunks_written(&self) -> u64 {
        self.split_chunks_written
    }
}

/// Cells of an eager message published at a time (4 KiB): the receiver copies one batch
/// while the next is written. Publishing a 32 KiB message whole made its one-way
/// latency 3.1 µs, by batches of 16 cells 2.0 (8 cells: the same within the noise).
pub(super) const EAGER_BATCH: usize = 16;

/// Fills cell `i` of an eager message: the header and the first bytes in cell 0, then
/// `EAGER_CONT` bytes per continuation cell.
fn eager_fill(h: Header, data: &[u8]) -> impl Fn(usize, &Cell) + '_ {
    move |i, cell| {
        if i == 0 {
            h.write(cell, &data[..EAGER_FIRST]);
        } else {
            let from = EAGER_FIRST + (i - 1) * EAGER_CONT;
            cell.write_bytes(0, &data[from..data.len().min(from + EAGER_CONT)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{ArrivalData, Endpoint, EndpointConfig, ShmError};

    fn pair(salt: u64) -> (Endpoint, Endpoint) {
        let job = 0x7e57_0000_0000_0000 | (salt << 32) | u64::from(std::process::id());
        // 64-cell rings (the default for many local ranks): eager is then limited to
        // what such a ring holds whole.
        let config = |rank| EndpointConfig {
            ring_cells: 64,
            ..EndpointConfig::new(job, rank, 2)
        };
        let mut a = Endpoint::open(config(0)).unwrap();
        let mut b = Endpoint::open(config(1)).unwrap();
        a.connect().unwrap();
        b.connect().unwrap();
        (a, b)
    }

    #[test]
    fn try_send_takes_an_eager_message_whole_or_not_at_all() {
        let (mut a, mut b) = pair(1);
        let msg: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        // 1000 B is 5 cells: 12 fit the 64-cell ring, the 13th finds 4 free cells.
        let mut sent = 0;
        loop {
            match a.try_send(1, 9, &msg) {
                Ok(()) => sent += 1,
                Err(ShmError::WouldBlock) => break,
                Err(e) => panic!("try_send: {e}"),
            }
        }
        assert_eq!(sent, 64 / 5, "as many whole messages as the ring holds");
        let mut got = 0;
        let mut buf = vec![0u8; 1000];
        let mut dst = |_: u32, _: u64, _: usize| Some((buf.as_mut_ptr(), buf.len()));
        // SAFETY: `buf` outlives the calls and no reference to it is alive meanwhile.
        while let Some(arrival) = unsafe { b.next_arrival(&mut dst) }.unwrap() {
            assert_eq!((arrival.source, arrival.tag, arrival.len), (0, 9, 1000));
            assert!(matches!(
                arrival.data,
                ArrivalData::Placed { truncated: false }
            ));
            got += 1;
        }
        assert_eq!(buf, msg);
        assert_eq!(got, sent, "no partial message was left in the ring");
        assert!(a.try_send(1, 9, &msg).is_ok(), "room again once read");
    }

    #[test]
    fn isend_of_an_eager_message_never_waits_for_room() {
        let (mut a, mut b) = pair(3);
        // 8000 B is 33 cells: one fits the 64-cell ring, the second must not wait.
        let msg: Vec<u8> = (0..8000u32).map(|i| (i * 31 + 1) as u8).collect();
        // SAFETY: `msg` outlives the requests (both complete at once or are refused).
        let first = unsafe { a.isend(1, 4, &msg) }.expect("room for the first");
        assert!(a.test_send(&mut { first }).unwrap());
        // SAFETY: as above.
        let second = unsafe { a.isend(1, 4, &msg) };
        assert!(matches!(second, Err(ShmError::WouldBlock)), "{second:?}");
        let mut buf = vec![0u8; msg.len()];
        let mut dst = |_: u32, _: u64, _: usize| Some((buf.as_mut_ptr(), buf.len()));
        // SAFETY: `buf` outlives the calls and no reference to it is alive meanwhile.
        let got = unsafe { b.next_arrival(&mut dst) }
            .unwrap()
            .expect("the first");
        assert!(matches!(got.data, ArrivalData::Placed { truncated: false }));
        assert_eq!(buf, msg);
        let mut none = |_: u32, _: u64, _: usize| None;
        // SAFETY: the chooser names no destination.
        let after = unsafe { b.next_arrival(&mut none) }.unwrap();
        assert!(after.is_none(), "nothing of the refused one");
        // SAFETY: as above.
        let again = unsafe { a.isend(1, 4, &msg) };
        assert!(again.is_ok(), "room again once read");
    }
}
