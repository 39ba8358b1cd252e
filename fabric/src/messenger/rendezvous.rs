//! The receiver's side of the rendezvous protocol: RMA reads of the sender's buffer,
//! in chunks, straight into the user's receive buffer, and their completions.

use crate::error::Error;
use crate::objects::Posted;
use crate::PeerId;

use super::slots::{Completion, Op, Outcome};
use super::wire::{FinStatus, Rts};
use super::Messenger;
use std::time::{Duration, Instant};

/// How rendezvous receives read the sender's buffer: messages up to `whole_max` bytes
/// in one read, larger ones in reads of `chunk` bytes with at most `pipeline` of them
/// in flight per receive, and at most `budget` read chunks in flight over every
/// receive (each holds a request slot: the rest stay for the user's operations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ReadPlan {
    pub whole_max: usize,
    pub chunk: usize,
    pub pipeline: u32,
    pub budget: usize,
}

impl ReadPlan {
    /// The plan for `provider` (libfabric's name, `tcp;ofi_rxm`), with the caller's
    /// `chunk` and `pipeline` where set (a set chunk is also the largest whole read),
    /// for a table of `slots` request slots.
    ///
    /// Over `tcp;ofi_rxm` every read becomes one `sendmsg` by the sender's provider,
    /// during which the sender holds its socket: the kernel then handles the
    /// receiver's acknowledgements, and sends the rest of the data, on the sender's
    /// core, which becomes the bottleneck (97% of its time in the kernel for a stream
    /// of 4 MiB messages). Between 256 KiB reads it lets the socket go, and the
    /// receiver's core carries part of that work. Measured on the 2-core loopback host
    /// (`steadfast-bench bw` / `latency --route fabric`, interleaved rounds):
    /// window-of-64 bandwidth at 2 and 4 MiB 4.4-6.2 GB/s in one read, 5.3-9.3 in
    /// 256 KiB reads with 8 in flight (the higher figures in the host's fast state);
    /// 4 MiB one-way 601-737 µs against 441-687. Two or four in flight were slower
    /// than one read (the read requests' turn-around shows), and at 512 KiB-1 MiB one
    /// read stays best. Over `net` (a 1-3% loss in
    /// ping-pong) and on RDMA providers a message is read whole up to 8 MiB.
    pub fn for_provider(
        provider: &str,
        chunk: Option<usize>,
        pipeline: Option<u32>,
        slots: usize,
    ) -> ReadPlan {
        let (whole_max, default_chunk, default_pipeline) = if provider == "tcp;ofi_rxm" {
            (1 << 20, 256 << 10, 8)
        } else {
            (8 << 20, 8 << 20, 4)
        };
        let (whole_max, chunk) = match chunk {
            Some(c) => (c.max(1), c.max(1)),
            None => (whole_max, default_chunk),
        };
        let pipeline = pipeline.unwrap_or(default_pipeline).max(1);
        ReadPlan {
            whole_max,
            chunk,
            pipeline,
            budget: (slots / 16).max(pipeline as usize),
        }
    }

    /// The size of each read of a `total`-byte message (but the last).
    pub fn chunk_for(&self, total: usize) -> usize {
        if total <= self.whole_max {
            total.max(1)
        } else {
            self.chunk
        }
    }
}

impl Messenger {
    pub(super) fn start_rendezvous_read(&mut self, index: u32, source: PeerId, rts: Rts) {
        let (buf, len) = (self.slots.get(index).buf, rts.message_len as usize);
        match self.local_desc(buf, len) {
            Ok((_, mr)) => {
                let slot = self.slots.get_mut(index);
                slot.mr = mr;
                slot.rts = Some(rts);
                slot.next_offset = 0;
                slot.chunks_in_flight = 0;
                slot.matched.len = len;
                self.post_read_chunks(index, source);
            }
            Err(e) => {
                let fin = self.fin(FinStatus::Failed, rts.token);
                let _ = self.send_control(source, fin);
                self.finish(index, Outcome::Failed(e));
            }
        }
    }

    /// Posts reads of a rendezvous receive until the pipeline is full.
    pub(super) fn post_read_chunks(&mut self, index: u32, source: PeerId) {
        let Ok(src) = self.peer_addr(source) else {
            let reason = self
                .peer_failure(source)
                .unwrap_or("unknown peer")
                .to_owned();
            return self.fail_rendezvous_recv(
                index,
                Error::PeerUnreachable {
                    peer: source,
                    reason,
                },
            );
        };
        let desc = self
            .slots
            .get(index)
            .mr
            .map_or(std::ptr::null_mut(), |mr| self.cache.region(mr).desc());
        loop {
            let slot = self.slots.get(index);
            let rts = slot.rts.expect("rendezvous receive has its header");
            let total = rts.message_len as usize;
            if slot.next_offset >= total
                || slot.chunks_in_flight >= self.read_plan.pipeline
                || slot.pending_error.is_some()
                || self.reads_in_flight >= self.read_plan.budget
            {
                break;
            }
            let offset = slot.next_offset;
            let chunk = (total - offset)
                .min(self.read_plan.chunk_for(total))
                .min(self.info.max_msg_size());
            let Ok(child) = self.slots.take(Op::ReadChunk, Some(source)) else {
                break;
            };
            let child_slot = self.slots.get_mut(child);
            child_slot.parent = index;
            child_slot.detached = true;
            child_slot.len = chunk;
            let ctx = self.slots.context(child);
            // SAFETY: buf + offset .. + chunk lies within the user's receive buffer
            // (message_len <= buffer length was checked), valid until the receive
            // completes, which waits for every chunk.
            let target = unsafe { self.slots.get(index).buf.add(offset) };
            // SAFETY: as above; ctx is the child slot's context.
            let posted = unsafe {
                self.endpoint.post_read(
                    target,
                    chunk,
                    desc,
                    src,
                    rts.remote_addr + offset as u64,
                    rts.key,
                    ctx,
                )
            };
            match posted {
                Ok(Posted::Yes) => {
                    self.slots.get_mut(child).posted = true;
                    self.reads_in_flight += 1;
                    let slot = self.slots.get_mut(index);
                    slot.next_offset += chunk;
                    slot.chunks_in_flight += 1;
                }
                Ok(Posted::Again) => {
                    self.slots.release(child);
                    if self.slots.get(index).chunks_in_flight == 0 {
                        // Nothing in flight will call us again: retry from progress.
                        self.deferred_reads.push(index);
                    }
                    break;
                }
                Err(e) => {
                    self.slots.release(child);
                    return self.fail_rendezvous_recv(index, e);
                }
            }
        }
        if self.slots.get(index).chunks_in_flight == 0 && !self.deferred_reads.contains(&index) {
            if let Some(e) = self.slots.get_mut(index).pending_error.take() {
                return self.fail_rendezvous_recv(index, e);
            }
            if self.reads_in_flight > 0 {
                // Other receives' reads hold the budget or the slots: they end (or
                // fail) and free them, and progress retries this one.
                self.deferred_reads.push(index);
            } else {
                // Nothing could be posted and no read is in flight: out of slots.
                let e = Error::TooManyRequests(self.slots.capacity());
                self.fail_rendezvous_recv(index, e);
            }
        }
    }

    /// Retries rendezvous reads that met back-pressure with nothing in flight.
    pub(super) fn retry_deferred_reads(&mut self) {
        let pending = std::mem::take(&mut self.deferred_reads);
        for index in pending.iter().copied() {
            let slot = self.slots.get(index);
            // A receive given up meanwhile (cancelled, its peer dead) has an outcome;
            // its slot may even serve another operation now.
            if slot.op != Op::Recv
                || slot.rts.is_none()
                || !matches!(slot.outcome, Outcome::Pending)
            {
                continue;
            }
            let source = slot.matched.source;
            self.post_read_chunks(index, source);
        }
        let mut pending = pending;
        pending.clear();
        if self.deferred_reads.is_empty() {
            self.deferred_reads = pending;
        }
    }

    /// Ends a rendezvous receive with an error once no read is in flight.
    pub(super) fn fail_rendezvous_recv(&mut self, index: u32, error: Error) {
        let slot = self.slots.get_mut(index);
        if slot.chunks_in_flight > 0 {
            slot.pending_error.get_or_insert(error);
            return;
        }
        if let Error::Withdrawn { peer } = error {
            // A cancelled read: its sender withdrew the message, or died and its
            // connection dropped. Settled by `settle_withdrawn`; meanwhile the receive
            // stays pending (a death fails it through `mark_peer_dead`).
            if self.peer_failure(peer).is_none() {
                let token = self.slots.token(index);
                if !self.withdrawn_suspects.iter().any(|&(t, _)| t == token) {
                    // The process check only: a probe sent now fails on rxm's
                    // connection while it recovers from the cancelled read
                    // (ENOTCONN), which would count the live sender dead again.
                    self.withdrawn_suspects.push((token, Instant::now()));
                    self.check_liveness(peer, false);
                    return;
                }
            }
        }
        self.end_rendezvous_recv(index, error);
    }

    /// How long a receive whose read was cancelled waits for its sender's death to show
    /// before it ends as withdrawn: far beyond the process check of a peer on this host
    /// (a killed process's connections drop just before its exit shows). A sender on
    /// another host that died shows through later operations (and the runtime's
    /// detector), not here.
    pub(super) const WITHDRAWN_GRACE: Duration = Duration::from_millis(200);

    /// Settles the receives whose read was cancelled (`fail_rendezvous_recv`): one
    /// whose sender is found dead was failed by `mark_peer_dead`; one whose sender
    /// still looks alive after [`WITHDRAWN_GRACE`](Self::WITHDRAWN_GRACE) ends with
    /// `Error::Withdrawn`.
    pub(super) fn settle_withdrawn(&mut self) {
        let mut i = 0;
        while i < self.withdrawn_suspects.len() {
            let (token, since) = self.withdrawn_suspects[i];
            let Some(index) = self.slots.index_of_token(token) else {
                self.withdrawn_suspects.swap_remove(i);
                continue;
            };
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                self.withdrawn_suspects.swap_remove(i);
                continue;
            }
            let peer = self.slots.get(index).matched.source;
            self.check_liveness(peer, false);
            if !matches!(self.slots.get(index).outcome, Outcome::Pending) {
                self.withdrawn_suspects.swap_remove(i);
                continue;
            }
            if since.elapsed() >= Self::WITHDRAWN_GRACE {
                self.withdrawn_suspects.swap_remove(i);
                self.end_rendezvous_recv(index, Error::Withdrawn { peer });
                continue;
            }
            i += 1;
        }
    }

    /// Ends a rendezvous receive with `error`, telling its live sender.
    fn end_rendezvous_recv(&mut self, index: u32, error: Error) {
        let slot = self.slots.get(index);
        let (source, token) = (slot.matched.source, slot.rts.map(|r| r.token));
        if let (Some(token), None) = (token, self.peer_failure(source)) {
            let fin = self.fin(FinStatus::Failed, token);
            let _ = self.send_control(source, fin);
        }
        self.finish(index, Outcome::Failed(error));
    }

    /// A rendezvous read chunk ended (`error` set if it failed).
    pub(super) fn on_read_chunk(&mut self, child: u32, error: Option<Error>) {
        self.reads_in_flight -= 1;
        let parent = self.slots.get(child).parent;
        if parent == super::ORPHAN {
            self.slots.get_mut(child).posted = false;
            return self.finish(child, Outcome::Done(Completion::default()));
        }
        let source = self.slots.get(child).peer.unwrap_or_default();
        self.finish(child, Outcome::Done(Completion::default()));
        let slot = self.slots.get_mut(parent);
        slot.chunks_in_flight -= 1;
        if let Some(error) = error {
            slot.pending_error.get_or_insert(error);
        }
        if let Some(error) = slot.pending_error.take() {
            return self.fail_rendezvous_recv(parent, error);
        }
        let rts = slot.rts.expect("rendezvous receive has its header");
        if slot.next_offset < rts.message_len as usize {
            return self.post_read_chunks(parent, source);
        }
        if slot.chunks_in_flight == 0 {
            let fin = self.fin(FinStatus::Done, rts.token);
            // If the FIN cannot be sent the sender is gone; our data is complete anyway.
            let _ = self.send_control(source, fin);
            let c = self.slots.get(parent).matched;
            self.finish(parent, Outcome::Done(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReadPlan;

    #[test]
    fn tcp_under_rxm_reads_large_messages_in_quarter_mebibytes() {
        let p = ReadPlan::for_provider("tcp;ofi_rxm", None, None, 1024);
        assert_eq!((p.pipeline, p.budget), (8, 64));
        assert_eq!(p.chunk_for(64 << 10), 64 << 10);
        assert_eq!(p.chunk_for(1 << 20), 1 << 20, "up to 1 MiB: one read");
        assert_eq!(p.chunk_for((1 << 20) + 1), 256 << 10);
        assert_eq!(p.chunk_for(4 << 20), 256 << 10);
    }

    #[test]
    fn other_providers_read_whole_up_to_eight_mebibytes() {
        for provider in ["net", "tcp", "shm", "verbs;ofi_rxm"] {
            let p = ReadPlan::for_provider(provider, None, None, 1024);
            assert_eq!(p.pipeline, 4, "{provider}");
            assert_eq!(p.chunk_for(4 << 20), 4 << 20, "{provider}");
            assert_eq!(p.chunk_for(64 << 20), 8 << 20, "{provider}");
        }
    }

    #[test]
    fn a_chosen_chunk_is_also_the_largest_whole_read() {
        let p = ReadPlan::for_provider("tcp;ofi_rxm", Some(1 << 20), Some(2), 64);
        assert_eq!(p.chunk_for(1 << 20), 1 << 20);
        assert_eq!(p.chunk_for(3 << 20), 1 << 20);
        assert_eq!(p.pipeline, 2);
        // The budget never stops a single receive's pipeline.
        assert_eq!(p.budget, 4);
        let tiny = ReadPlan::for_provider("net", Some(0), Some(0), 0);
        assert_eq!((tiny.chunk_for(10), tiny.pipeline, tiny.budget), (1, 1, 1));
    }
}
