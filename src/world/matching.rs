//! The process's MPI matching (`steadfast_matching::Engine`, docs/matching.md) as the
//! runtime's engine drives it: receives posted in posting order, every message of the
//! self and shm paths delivered on arrival, ULFM's failure, acknowledgement and revoke
//! rules applied to every open communicator context.
//!
//! A posted receive lives in a slot that holds its buffer by raw parts: a match may
//! happen during any progress round (another request's wait), and then the payload is
//! copied (or pulled) into that buffer at once. The buffer's owner keeps it valid until
//! the receive completed or was cancelled (`Comm::irecv`'s contract; the safe requests
//! own their buffers and leak them with a leaked request), so a slot's pointer is valid
//! whenever the slot is posted.
//!
//! This module holds the bookkeeping; the engine (`engine.rs`) moves the bytes, since
//! pulling a large shm message needs the endpoint.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;

use steadfast_fabric::{RemoteMessage, Request};
use steadfast_matching::{
    Arrival as Delivered, ContextId, Engine as Matcher, Envelope, Event, FxHasher, Limits, Match,
    MatchError, PostOutcome, Rank, RecvId, RecvSpec, Rejected, Tag,
};
use steadfast_shm::PullTicket;

/// Context-keyed maps, looked up for every message: FxHash (keys come from the job's
/// own processes).
type CtxMap<V> = HashMap<u32, V, BuildHasherDefault<FxHasher>>;

/// Arrivals kept by the runtime for contexts not open yet (a fast peer's first
/// messages on a new communicator), or behind a full queue; past this the shm rings
/// are left undrained (back-pressure, never loss).
pub(crate) const HELD_MAX: usize = 4096;

/// `Matching::last_rank` holding nothing (no context has id `u32::MAX`: ids are
/// below 2^16, `tags::CONTEXT_BITS`).
const NO_RANK_CACHED: (u32, u32, u32) = (u32::MAX, u32::MAX, u32::MAX);

/// A synchronous send's message: who answers it once matched (the sender's world
/// rank and the send's sequence number there; `tags::SYNC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncToken {
    pub world: u32,
    pub seq: u32,
}

/// Where a message's bytes are, for every path; `sync` names the sender to answer
/// when the message is a synchronous send's.
#[derive(Debug)]
pub(crate) enum Payload {
    /// Already copied into the buffer of the receive it matched (the shm latency path;
    /// nothing copied when `truncated`).
    Placed {
        truncated: bool,
        sync: Option<SyncToken>,
    },
    /// Bytes of their own: a message to self, or an shm or fabric eager message copied
    /// out of the ring or staging buffer.
    Bytes(Vec<u8>, Option<SyncToken>),
    /// A large shm message still in its sender's memory (local rank `local`).
    ShmPull {
        local: u32,
        wire_tag: u64,
        ticket: PullTicket,
        sync: Option<SyncToken>,
    },
    /// A fabric rendezvous message still in its sender's memory: read (`fi_read`)
    /// after the match, or declined (the sender is told either way).
    FabricPull {
        message: RemoteMessage,
        sync: Option<SyncToken>,
    },
}

impl Payload {
    /// The synchronous sender to answer once this message is matched.
    pub(crate) fn sync(&self) -> Option<SyncToken> {
        match self {
            Payload::Placed { sync, .. }
            | Payload::Bytes(_, sync)
            | Payload::ShmPull { sync, .. }
            | Payload::FabricPull { sync, .. } => *sync,
        }
    }
}

/// A receive's token in the matcher: its slot and the slot's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecvKey {
    slot: u32,
    generation: u32,
}

/// The receive a message is copied into on arrival ([`Matching::placement`]), and the
/// sender's comm rank there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement {
    key: RecvKey,
    pub source: u32,
    pub cap: usize,
}

/// What a completed receive got (comm rank, application tag, bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Got {
    pub source: u32,
    pub tag: u32,
    pub len: usize,
}

/// Why a receive failed.
#[derive(Clone, Debug)]
pub(crate) enum RecvFailure {
    /// The matched message (`got`: its source, tag and whole length) is longer than
    /// the buffer (`capacity` bytes).
    Truncated {
        got: Got,
        capacity: usize,
    },
    /// Its named source failed (comm rank) and no message from it waits.
    ProcFailed(u32),
    Revoked,
    /// This process was excluded (suspected while alive) while the receive waited.
    Excluded,
    /// The communicator was freed with the receive pending.
    Freed,
    /// The transport failed the pull of a large message.
    Transport(std::sync::Arc<steadfast_shm::ShmError>),
    /// The fabric failed the read of a rendezvous message.
    Fabric(std::sync::Arc<steadfast_fabric::Error>),
    /// The matcher refused the receive (a full posted queue).
    Refused(MatchError),
}

pub(crate) type Outcome = Result<Got, RecvFailure>;

#[derive(Debug)]
enum SlotState {
    Free,
    Posted {
        id: RecvId,
        ctx: u32,
        wildcard: bool,
    },
    /// Matched with a fabric rendezvous message being read into its buffer by `req`,
    /// sent on context `ctx` by world rank `world`.
    Pulling {
        req: Request,
        got: Got,
        ctx: u32,
        world: u32,
    },
    /// Its message was withdrawn by its sender during the read (at `since`;
    /// `matching_withdrawn.rs`): it ends at the revoke of `ctx` or the failure of
    /// `world` (comm rank `source`), whichever this process learns first.
    Withdrawn {
        ctx: u32,
        world: u32,
        source: u32,
        since: std::time::Instant,
    },
    Done(Outcome),
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    buf: *mut u8,
    cap: usize,
    state: SlotState,
}

/// An open context: its communicator's group, from world ranks.
#[derive(Debug)]
struct CtxInfo {
    /// World rank -> comm rank (`u32::MAX`: not a member).
    to_comm: Vec<u32>,
}

/// An arrival kept back (see [`HELD_MAX`]).
#[derive(Debug)]
struct Held {
    ctx: u32,
    world_source: u32,
    tag: u32,
    len: usize,
    payload: Payload,
}

/// What became of a message handed to [`Matching::deliver`].
pub(crate) enum Delivery {
    /// It completed a receive: the engine moves the bytes, then calls `finish`.
    Matched(Match<RecvKey, Payload>),
    /// It waits (unexpected, or held for its context).
    Kept,
    /// It can never be received (revoked or retired context): release the payload.
    Dropped(Payload),
}

/// What became of a posted receive.
pub(crate) enum Posting {
    /// A waiting message fit: the engine moves the bytes, then calls `finish`.
    Matched(Match<RecvKey, Payload>),
    /// Posted (or already failed: its slot holds the outcome).
    Slot(RecvKey),
}

/// The runtime's matching state (see the module doc).
pub(crate) struct Matching {
    matcher: Matcher<RecvKey, Payload>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    ctxs: CtxMap<CtxInfo>,
    /// The last `(context, world rank) -> comm rank` looked up (`u32::MAX` context:
    /// none): every message is looked up twice (placement, then delivery), and a
    /// stream comes from one sender on one context. Forgotten whenever `ctxs` changes.
    last_rank: std::cell::Cell<(u32, u32, u32)>,
    held: VecDeque<Held>,
    /// Contexts of communicators freed unclean (revoked, or a failed closing barrier):
    /// never reused by this process, so messages still arriving for them are dropped.
    retired: HashSet<u32>,
    world_size: u32,
    /// Payloads of messages that can never be received, for the engine to release.
    dropped: Vec<Payload>,
}

// SAFETY: (Send) the slots' raw pointers name receive buffers whose owners keep them
// valid until the receive completes or is cancelled (module doc); they are written only
// by the holder of the progress token, whichever thread that is.
unsafe impl Send for Matching {}

impl Matching {
    pub(crate) fn new(world_size: u32) -> Self {
        Matching {
            matcher: Matcher::new(Limits::default()),
            slots: Vec::new(),
            free: Vec::new(),
            ctxs: CtxMap::default(),
            last_rank: std::cell::Cell::new(NO_RANK_CACHED),
            held: VecDeque::new(),
            retired: HashSet::new(),
            world_size,
            dropped: Vec::new(),
        }
    }

    /// Opens context `ctx` for a communicator over `group` (comm rank -> world rank);
    /// members in `failed` are notified at once, and a `revoked` communicator revoked.
    pub(crate) fn open(&mut self, ctx: u64, group: &[u32], failed: &[u32], revoked: bool) {
        let id = ContextId(ctx as u32);
        if let Err(e) = self.matcher.open_context(id, group.len() as u32) {
            log::warn!("matching: opening context {ctx}: {e}");
            return;
        }
        self.retired.remove(&(ctx as u32));
        let mut to_comm = vec![u32::MAX; self.world_size as usize];
        for (r, &w) in group.iter().enumerate() {
            if let Some(slot) = to_comm.get_mut(w as usize) {
                *slot = r as u32;
            }
        }
        self.ctxs.insert(ctx as u32, CtxInfo { to_comm });
        self.last_rank.set(NO_RANK_CACHED);
        for &w in failed {
            self.notify_failure(w);
        }
        if revoked {
            self.revoke(ctx);
        }
    }

    /// Closes context `ctx` (its communicator was freed): pending receives fail with
    /// `Freed`, waiting messages are dropped (returned: how many). `retire` when the id
    /// is never reused here: later arrivals for it are dropped.
    pub(crate) fn close(&mut self, ctx: u64, retire: bool) -> usize {
        let id = ContextId(ctx as u32);
        let before = self.dropped.len();
        self.last_rank.set(NO_RANK_CACHED);
        if self.ctxs.remove(&(ctx as u32)).is_some() {
            let _ = self.matcher.close_context(id);
            self.handle_events();
            self.end_withdrawn(|c, _, _| (c == ctx as u32).then_some(RecvFailure::Freed));
        }
        if retire {
            self.retired.insert(ctx as u32);
            let mut kept = VecDeque::new();
            for h in std::mem::take(&mut self.held) {
                if h.ctx == ctx as u32 {
                    self.dropped.push(h.payload);
                } else {
                    kept.push_back(h);
                }
            }
            self.held = kept;
        }
        self.dropped.len() - before
    }

    /// Posts a receive on `ctx` from comm rank `source` (any: `None`) with `tag` (any:
    /// `None`) into `buf`, which must stay valid for writes of `cap` bytes until the
    /// receive completes or is cancelled.
    #[inline]
    pub(crate) fn post(
        &mut self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
        buf: *mut u8,
        cap: usize,
    ) -> Posting {
        let key = self.alloc(buf, cap);
        let spec = RecvSpec::new(source.map(Rank), tag.map(Tag));
        match self.matcher.post_recv(ContextId(ctx as u32), spec, key) {
            Ok(PostOutcome::Matched(m)) => Posting::Matched(m),
            Ok(PostOutcome::Posted { id, .. }) => {
                self.slots[key.slot as usize].state = SlotState::Posted {
                    id,
                    ctx: ctx as u32,
                    wildcard: source.is_none(),
                };
                Posting::Slot(key)
            }
            Err(Rejected { error, item }) => {
                self.slots[item.slot as usize].state = SlotState::Done(Err(failure_of(error)));
                Posting::Slot(item)
            }
        }
    }

    fn alloc(&mut self, buf: *mut u8, cap: usize) -> RecvKey {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    buf: std::ptr::null_mut(),
                    cap: 0,
                    state: SlotState::Free,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        s.buf = buf;
        s.cap = cap;
        s.state = SlotState::Done(Err(RecvFailure::Freed));
        RecvKey {
            slot,
            generation: s.generation,
        }
    }

    fn slot(&self, key: RecvKey) -> Option<&Slot> {
        self.slots
            .get(key.slot as usize)
            .filter(|s| s.generation == key.generation && !matches!(s.state, SlotState::Free))
    }

    fn release_slot(&mut self, key: RecvKey) {
        let s = &mut self.slots[key.slot as usize];
        s.generation = s.generation.wrapping_add(1);
        s.buf = std::ptr::null_mut();
        s.cap = 0;
        s.state = SlotState::Free;
        self.free.push(key.slot);
    }

    /// The buffer of a matched receive (raw parts).
    pub(crate) fn buffer(&self, key: RecvKey) -> (*mut u8, usize) {
        self.slot(key)
            .map_or((std::ptr::null_mut(), 0), |s| (s.buf, s.cap))
    }

    /// Records the outcome of a matched receive.
    pub(crate) fn finish(&mut self, key: RecvKey, outcome: Outcome) {
        if self.slot(key).is_some() {
            self.slots[key.slot as usize].state = SlotState::Done(outcome);
        }
    }

    /// A matched receive's buffer is being filled by fabric read `req` (then
    /// [`finish`](Self::finish) it).
    /// `world` sent the message on `ctx`.
    pub(crate) fn start_pull(
        &mut self,
        key: RecvKey,
        req: Request,
        got: Got,
        ctx: u32,
        world: u32,
    ) {
        if self.slot(key).is_some() {
            self.slots[key.slot as usize].state = SlotState::Pulling {
                req,
                got,
                ctx,
                world,
            };
        }
    }

    /// The fabric read filling a matched receive's buffer, if one is.
    pub(crate) fn pulling(&self, key: RecvKey) -> Option<(Request, Got)> {
        match self.slot(key)?.state {
            SlotState::Pulling { req, got, .. } => Some((req, got)),
            _ => None,
        }
    }

    /// Whether context `ctx` is revoked here.
    pub(crate) fn is_revoked(&self, ctx: u32) -> bool {
        self.matcher.is_revoked(ContextId(ctx)).unwrap_or(false)
    }

    /// The outcome of a completed receive (its slot is freed), `None` while posted.
    pub(crate) fn take(&mut self, key: RecvKey) -> Option<Outcome> {
        self.withdrawn_expired(key);
        let s = self.slot(key)?;
        if !matches!(s.state, SlotState::Done(_)) {
            return None;
        }
        let state = std::mem::replace(&mut self.slots[key.slot as usize].state, SlotState::Free);
        self.release_slot(key);
        match state {
            SlotState::Done(o) => Some(o),
            _ => None,
        }
    }

    /// Cancels a receive: `None` when it was still posted (now withdrawn), else its
    /// outcome (it completed first). Either way its slot is freed.
    pub(crate) fn cancel(&mut self, key: RecvKey) -> Option<Outcome> {
        let withdrawn = match self.slot(key)?.state {
            SlotState::Posted { id, .. } => self.matcher.cancel(id).is_some(),
            // Its sender withdrew its message: nothing will land in the buffer.
            SlotState::Withdrawn { .. } => true,
            _ => false,
        };
        if withdrawn {
            self.release_slot(key);
            return None;
        }
        self.take(key)
    }

    /// Whether a posted wildcard-source receive should report a pending failure now.
    pub(crate) fn failure_pending(&self, key: RecvKey) -> bool {
        match self.slot(key).map(|s| &s.state) {
            Some(SlotState::Posted {
                ctx,
                wildcard: true,
                ..
            }) => self
                .matcher
                .failure_pending(ContextId(*ctx))
                .unwrap_or(false),
            _ => false,
        }
    }

    /// The comm rank of world rank `w` in `ctx`, if open and a member.
    fn comm_rank(&self, ctx: u32, w: u32) -> Option<u32> {
        let (c, cw, cr) = self.last_rank.get();
        if (c, cw) == (ctx, w) {
            return Some(cr);
        }
        let r = *self.ctxs.get(&ctx)?.to_comm.get(w as usize)?;
        if r == u32::MAX {
            return None;
        }
        self.last_rank.set((ctx, w, r));
        Some(r)
    }

    /// The buffer of the receive a message from world rank `w` with `tag` on `ctx`
    /// would complete now, for copying straight into it (then [`deliver`] it with
    /// [`Payload::Placed`], with no other call in between).
    ///
    /// [`deliver`]: Self::deliver
    pub(crate) fn placement(
        &self,
        ctx: u32,
        w: u32,
        tag: u32,
    ) -> Option<(*mut u8, usize, Placement)> {
        if !self.held.is_empty() {
            // Keep order behind the held messages of this context.
            return None;
        }
        let r = self.comm_rank(ctx, w)?;
        let key = *self
            .matcher
            .peek_match(ContextId(ctx), Rank(r), Tag(tag))
            .ok()??;
        self.slot(key).map(|s| {
            let p = Placement {
                key,
                source: r,
                cap: s.cap,
            };
            (s.buf, s.cap, p)
        })
    }

    /// Completes the receive [`placement`](Self::placement) named with `outcome`, once
    /// its message was copied into the buffer: in the same hold of the engine, with no
    /// other call in between, so it is still the receive that message matches (what
    /// [`deliver`](Self::deliver) would find again, without the search).
    pub(crate) fn finish_placed(&mut self, p: Placement, outcome: Outcome) {
        let Some(&Slot {
            state: SlotState::Posted { id, .. },
            ..
        }) = self.slot(p.key)
        else {
            log::error!("matching: a placed receive is no longer posted");
            return;
        };
        if self.matcher.cancel(id).is_none() {
            log::error!("matching: a placed receive was not in the matcher");
        }
        self.slots[p.key.slot as usize].state = SlotState::Done(outcome);
    }

    /// Delivers a message from world rank `w` on `ctx`.
    pub(crate) fn deliver(
        &mut self,
        ctx: u32,
        w: u32,
        tag: u32,
        len: usize,
        payload: Payload,
    ) -> Delivery {
        if !self.retired.is_empty() && self.retired.contains(&ctx) {
            return Delivery::Dropped(payload);
        }
        if !self.held.is_empty() && self.held.iter().any(|h| h.ctx == ctx) {
            return self.hold(ctx, w, tag, len, payload);
        }
        self.deliver_now(ctx, w, tag, len, payload)
    }

    /// Keeps a message behind the ones held for its context (or for a context not open
    /// yet), in arrival order.
    fn hold(&mut self, ctx: u32, w: u32, tag: u32, len: usize, payload: Payload) -> Delivery {
        self.held.push_back(Held {
            ctx,
            world_source: w,
            tag,
            len,
            payload,
        });
        Delivery::Kept
    }

    fn deliver_now(
        &mut self,
        ctx: u32,
        w: u32,
        tag: u32,
        len: usize,
        payload: Payload,
    ) -> Delivery {
        let Some(r) = self.comm_rank(ctx, w) else {
            if self.ctxs.contains_key(&ctx) {
                // Not a member of that communicator: a peer's bug.
                log::warn!("matching: message on context {ctx} from non-member world rank {w}");
                return Delivery::Dropped(payload);
            }
            return self.hold(ctx, w, tag, len, payload);
        };
        let env = Envelope {
            context: ContextId(ctx),
            source: Rank(r),
            tag: Tag(tag),
            len,
            payload,
        };
        match self.matcher.deliver(env) {
            Ok(Delivered::Matched(m)) => Delivery::Matched(m),
            Ok(Delivered::Queued) => Delivery::Kept,
            Err(Rejected {
                error: MatchError::QueueFull { .. },
                item,
            }) => {
                self.held.push_back(Held {
                    ctx,
                    world_source: w,
                    tag,
                    len,
                    payload: item.payload,
                });
                Delivery::Kept
            }
            Err(Rejected { error, item }) => {
                log::debug!("matching: message on context {ctx} dropped: {error}");
                Delivery::Dropped(item.payload)
            }
        }
    }

    /// Whether a receive on `ctx` may wait without being posted (`Engine::drain_direct`):
    /// nothing posted or waiting on it, and no message held (held messages go first).
    #[inline]
    pub(crate) fn is_quiet(&self, ctx: u64) -> bool {
        self.held.is_empty() && self.matcher.is_quiet(ContextId(ctx as u32))
    }

    /// Whether the held queue is full (the transports stop draining).
    pub(crate) fn held_full(&self) -> bool {
        self.held.len() >= HELD_MAX
    }

    /// Retries the held messages in order (after a context opened, or a queue
    /// drained); returns the deliveries that completed receives or were dropped.
    pub(crate) fn retry_held(&mut self, out: &mut Vec<Delivery>) {
        if self.held.is_empty() {
            return;
        }
        let mut blocked: HashSet<u32> = HashSet::new();
        let mut kept = VecDeque::new();
        for h in std::mem::take(&mut self.held) {
            if blocked.contains(&h.ctx) || !self.ctxs.contains_key(&h.ctx) {
                blocked.insert(h.ctx);
                kept.push_back(h);
                continue;
            }
            // `held` is empty while retrying, so `deliver_now` may hold it again.
            match self.deliver_now(h.ctx, h.world_source, h.tag, h.len, h.payload) {
                Delivery::Kept if !self.held.is_empty() => {
                    blocked.insert(h.ctx);
                    kept.extend(self.held.drain(..));
                }
                Delivery::Kept => {}
                d => out.push(d),
            }
        }
        kept.extend(self.held.drain(..));
        self.held = kept;
    }

    /// Failure of world rank `w`: every open context holding it is notified.
    pub(crate) fn notify_failure(&mut self, w: u32) {
        for (c, r) in self.contexts_holding(w) {
            let _ = self.matcher.notify_failure(ContextId(c), Rank(r));
        }
        self.handle_events();
        self.end_withdrawn(|_, sw, source| (sw == w).then_some(RecvFailure::ProcFailed(source)));
    }

    /// World rank `w` was restarted and its new incarnation admitted: every open context
    /// holding it forgets the failure and drops what the old incarnation left waiting.
    pub(crate) fn readmit(&mut self, w: u32) {
        for (c, r) in self.contexts_holding(w) {
            if let Ok(n) = self.matcher.readmit(ContextId(c), Rank(r)) {
                if n > 0 {
                    log::debug!("matching: dropped {n} messages of rank {w}'s old incarnation");
                }
            }
        }
        self.handle_events();
    }

    /// (context, comm rank) of world rank `w` in every open context holding it.
    fn contexts_holding(&self, w: u32) -> Vec<(u32, u32)> {
        self.ctxs
            .iter()
            .filter_map(|(&c, info)| {
                let r = *info.to_comm.get(w as usize)?;
                (r != u32::MAX).then_some((c, r))
            })
            .collect()
    }

    /// `MPIX_Comm_ack_failed` of the first `count` failures of `ctx`, in the order
    /// they were notified.
    pub(crate) fn ack_first(&mut self, ctx: u64, count: usize) {
        let _ = self
            .matcher
            .ack_first_failures(ContextId(ctx as u32), count);
    }

    /// The communicator of `ctx` was revoked.
    pub(crate) fn revoke(&mut self, ctx: u64) {
        if self.matcher.revoke(ContextId(ctx as u32)).is_ok() {
            self.handle_events();
            self.end_withdrawn(|c, _, _| (c == ctx as u32).then_some(RecvFailure::Revoked));
        }
    }

    fn handle_events(&mut self) {
        while let Some(ev) = self.matcher.poll_event() {
            match ev {
                Event::RecvFailed { recv, error } => {
                    self.finish(recv, Err(failure_of(error)));
                }
                // Reported when the receive is tested (`failure_pending`).
                Event::FailurePending { .. } => {}
                Event::MessageDropped { message, .. } => self.dropped.push(message.payload),
            }
        }
    }

    /// Payloads of messages that can never be received (the engine releases them).
    pub(crate) fn take_dropped(&mut self) -> Vec<Payload> {
        std::mem::take(&mut self.dropped)
    }

    /// `MPI_Iprobe` on `ctx`: (source, tag, len) of the earliest fitting message.
    pub(crate) fn probe(
        &self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Got>, MatchError> {
        let spec = RecvSpec::new(source.map(Rank), tag.map(Tag));
        Ok(self
            .matcher
            .probe(ContextId(ctx as u32), spec)?
            .map(|e| Got {
                source: e.source.0,
                tag: e.tag.0,
                len: e.len,
            }))
    }

    /// `MPI_Improbe` on `ctx`: the earliest fitting message, taken out of the queue.
    pub(crate) fn mprobe(
        &mut self,
        ctx: u64,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Envelope<Payload>>, MatchError> {
        let spec = RecvSpec::new(source.map(Rank), tag.map(Tag));
        self.matcher.mprobe(ContextId(ctx as u32), spec)
    }
}

fn failure_of(e: MatchError) -> RecvFailure {
    match e {
        MatchError::ProcFailed { rank, .. } => RecvFailure::ProcFailed(rank.0),
        MatchError::Revoked(_) => RecvFailure::Revoked,
        MatchError::UnknownContext(_) => RecvFailure::Freed,
        // A wildcard receive is never refused for a pending failure (it is posted),
        // and ranks are checked before posting; a full posted queue is reported as is.
        other => RecvFailure::Refused(other),
    }
}

#[path = "matching_withdrawn.rs"]
pub(crate) mod withdrawn;

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
