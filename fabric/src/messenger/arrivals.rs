//! Software matching: the messenger hands every user message to its caller, who
//! matches it (an MPI runtime's own matching engine), instead of matching receives in
//! the provider.
//!
//! [`Messenger::enable_software_matching`] posts a pool of receives into the messenger's
//! own staging buffers, each taking any user message whose tag fits a (tag, ignore)
//! pair (a runtime keeps its control messages out with it), of any source and
//! incarnation. A completed pool receive becomes an arrival, queued in completion
//! order; [`Messenger::take_arrival`] hands the earliest to a callback: the source, the
//! user tag and either the eager bytes (borrowed from the staging buffer for the
//! callback only; the receive is posted again as soon as it returns) or a
//! [`RemoteMessage`], a rendezvous header whose payload is still in the sender's memory.
//! [`Messenger::pull`] reads it into the caller's buffer (a request completed by
//! [`Messenger::test`]) and sends the FIN; [`Messenger::decline`] sends the FIN without
//! reading, so the sender's send completes either way.
//!
//! Fencing holds as for provider-matched receives (`incarnation.rs`): a message whose
//! incarnation bit is not its sender's current one is dropped and the pool receive
//! posted again; a pull from a peer replaced (or dead) since its header arrived fails.
//!
//! The pool never leaves unexpected messages in the provider for long (they are taken
//! as fast as the caller drains them), which is what net's unexpected-message limits
//! need.

use std::collections::VecDeque;

use steadfast_fabric_sys as sys;

use crate::error::{Error, Result};
use crate::objects::CqEntry;
use crate::quirks::{self, Quirk};
use crate::PeerId;

use super::slots::{Completion, Op, Staging, BOUNCE_LEN};
use super::tags;
use super::wire::{FinStatus, Rts, RTS_LEN};
use super::{Messenger, Request};

/// A rendezvous message whose payload is still in its sender's memory: pull it with
/// [`Messenger::pull`] or let its sender go with [`Messenger::decline`] (a handle
/// merely dropped leaves the sender's send waiting until the sender gives up).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a rendezvous message must be pulled or declined, or its sender waits"]
pub struct RemoteMessage {
    source: PeerId,
    /// The incarnation of `source` that sent it.
    generation: u32,
    tag: u64,
    /// The sender's word, if any ([`Messenger::isend_with`]).
    extra: Option<u32>,
    rts: Rts,
    /// The messenger that received it.
    messenger: u64,
}

impl RemoteMessage {
    /// The sender.
    pub fn source(&self) -> PeerId {
        self.source
    }

    /// The user tag.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// The sender's word, if any ([`Messenger::isend_with`]).
    pub fn extra(&self) -> Option<u32> {
        self.extra
    }

    /// The payload's length.
    pub fn len(&self) -> usize {
        self.rts.message_len as usize
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.rts.message_len == 0
    }
}

/// What arrived: the eager bytes, or a rendezvous header.
#[derive(Debug)]
pub enum ArrivalData<'a> {
    /// The whole message, in the messenger's staging buffer (valid during the callback).
    Eager(&'a [u8]),
    /// A rendezvous message (see [`RemoteMessage`]).
    Remote(RemoteMessage),
}

/// A user message taken by the pool (see the module doc).
#[derive(Debug)]
pub struct Arrival<'a> {
    /// The sender.
    pub source: PeerId,
    /// The user tag (40 bits).
    pub tag: u64,
    /// The message's length.
    pub len: usize,
    /// The sender's word, if any ([`Messenger::isend_with`]).
    pub extra: Option<u32>,
    /// Its bytes, or where they are.
    pub data: ArrivalData<'a>,
}

/// A completed pool receive, waiting for the caller.
#[derive(Debug)]
enum Queued {
    /// Eager bytes in the staging buffer of pool slot `slot` (not posted meanwhile).
    Eager {
        slot: u32,
        source: PeerId,
        tag: u64,
        len: usize,
        extra: Option<u32>,
        /// The sender's incarnation it came from.
        generation: u32,
    },
    /// A rendezvous header (its pool receive is posted again already).
    Remote(RemoteMessage),
}

/// The pool's state.
pub(super) struct Pool {
    /// The (tag, ignore) pair of the user tags the pool takes.
    user_tag: u64,
    user_ignore: u64,
    /// Pool receives (slot indices); each owns one staging buffer.
    slots: Vec<u32>,
    /// Completed receives in completion order.
    queue: VecDeque<Queued>,
}

/// Pool receives posted by default.
pub const DEFAULT_ARRIVAL_POOL: usize = 32;

impl Messenger {
    /// Switches user receiving to software matching (see the module doc): `buffers`
    /// receives of [`eager_limit`](Self::eager_limit) bytes each stay posted for every
    /// user message whose tag equals `tag` on the bits not set in `ignore`. Receives
    /// posted with [`irecv`](Self::irecv) compete with the pool afterwards: use it for
    /// tags outside the pool's only.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when software matching is on already or `buffers` is
    /// 0; [`Error::Unsupported`] when the provider cannot do rendezvous (every message
    /// would be eager, of any size: no staging buffer fits) or does not apply an ignore
    /// mask to unexpected messages ([`Quirk::UnexpectedIgnoresMask`]: libfabric's shm);
    /// [`Error::Fabric`] when a receive cannot be posted or a buffer registered.
    ///
    /// [`Quirk::UnexpectedIgnoresMask`]: crate::quirks::Quirk::UnexpectedIgnoresMask
    pub fn enable_software_matching(
        &mut self,
        tag: u64,
        ignore: u64,
        buffers: usize,
    ) -> Result<()> {
        Self::check_tag(tag)?;
        if self.pool.is_some() || buffers == 0 {
            return Err(Error::InvalidArgument(
                "software matching is on already, or no buffers".into(),
            ));
        }
        let provider = self.info.provider_name();
        let version = crate::libfabric_version()?;
        if self.eager_limit > (1 << 20)
            || quirks::applies(Quirk::UnexpectedIgnoresMask, &provider, version)
        {
            return Err(Error::Unsupported {
                provider,
                what: format!(
                    "software matching (needs rendezvous, eager limit {}, and masked receives that match unexpected messages in order)",
                    self.eager_limit
                ),
            });
        }
        let len = self.eager_limit.max(BOUNCE_LEN).max(RTS_LEN);
        let mut pool = Pool {
            user_tag: tag & !ignore,
            user_ignore: ignore & tags::MAX_USER_TAG,
            slots: Vec::with_capacity(buffers),
            queue: VecDeque::with_capacity(buffers),
        };
        let result = (|| {
            for _ in 0..buffers {
                let n = self.add_staging_buffer(len)?;
                let index = self.slots.take(Op::Pool, None)?;
                let slot = self.slots.get_mut(index);
                slot.detached = true;
                slot.staging = Staging::Pool(n);
                pool.slots.push(index);
                let (wire_tag, wire_ignore) =
                    tags::user_match(None, pool.user_tag, pool.user_ignore);
                // SAFETY: the staging buffer belongs to the messenger and outlives its
                // endpoint (field order).
                unsafe { self.post_user_recv(index, wire_tag, wire_ignore) }?;
            }
            Ok(())
        })();
        self.pool = Some(pool);
        result
    }

    /// Whether software matching is on.
    pub fn software_matching(&self) -> bool {
        self.pool.is_some()
    }

    /// Arrivals queued (taken from the provider, not yet handed out).
    pub fn arrivals_queued(&self) -> usize {
        self.pool.as_ref().map_or(0, |p| p.queue.len())
    }

    /// Hands the earliest queued arrival to `f` and returns what it returns; `None`
    /// when nothing is queued (call [`progress`](Self::progress) to take completions
    /// from the provider first). Eager bytes are valid during `f` only.
    pub fn take_arrival<R>(&mut self, f: impl FnOnce(Arrival<'_>) -> R) -> Option<R> {
        // A message whose sender was replaced since it arrived is the dead
        // incarnation's: dropped (fencing, `incarnation.rs`); the queue is bounded by the
        // pool, so is this loop.
        let queued = loop {
            let queued = self.pool.as_mut()?.queue.pop_front()?;
            let (source, generation) = match &queued {
                Queued::Remote(m) => (m.source, m.generation),
                Queued::Eager {
                    source, generation, ..
                } => (*source, *generation),
            };
            if self.peer_generation(source) == Some(generation) {
                break queued;
            }
            self.stats.fenced += 1;
            if let Queued::Eager { slot, .. } = queued {
                self.repost_pool(slot);
            }
        };
        match queued {
            Queued::Remote(m) => Some(f(Arrival {
                source: m.source,
                tag: m.tag,
                len: m.len(),
                extra: m.extra,
                data: ArrivalData::Remote(m),
            })),
            Queued::Eager {
                slot,
                source,
                tag,
                len,
                extra,
                ..
            } => {
                let r = match self.slots.get(slot).staging {
                    Staging::Pool(n) => {
                        let bytes = &self.staging[n as usize][..len];
                        f(Arrival {
                            source,
                            tag,
                            len,
                            extra,
                            data: ArrivalData::Eager(bytes),
                        })
                    }
                    _ => unreachable!("a pool receive owns a staging buffer"),
                };
                self.repost_pool(slot);
                Some(r)
            }
        }
    }

    /// Starts reading a rendezvous message into `buf` (of `cap` bytes); the request
    /// completes (through [`test`](Self::test) or [`wait`](Self::wait)) once the payload
    /// is there and the sender was told.
    ///
    /// # Safety
    /// `buf` must stay valid and otherwise unused until the request completes or the
    /// messenger is dropped.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the message is longer than `cap` (the sender is told:
    /// its send completes); [`Error::PeerUnreachable`] when the sender died or was
    /// replaced; [`Error::InvalidArgument`] for another messenger's message;
    /// [`Error::TooManyRequests`].
    pub unsafe fn pull(
        &mut self,
        message: RemoteMessage,
        buf: *mut u8,
        cap: usize,
    ) -> Result<Request> {
        if message.messenger != self.id {
            return Err(Error::InvalidArgument(
                "a rendezvous message of another messenger".into(),
            ));
        }
        let source = message.source;
        self.peer_addr(source)?;
        if self.peer_generation(source) != Some(message.generation) {
            return Err(Error::PeerUnreachable {
                peer: source,
                reason: "replaced by a newer incarnation".into(),
            });
        }
        let len = message.len();
        if len > cap {
            let fin = self.fin(FinStatus::Truncated, message.rts.token);
            let _ = self.send_control(source, fin);
            return Err(Error::Truncated {
                message_len: Some(len),
                buffer_len: cap,
            });
        }
        let index = match self.slots.take(Op::Recv, Some(source)) {
            Ok(i) => i,
            Err(e) => {
                let fin = self.fin(FinStatus::Failed, message.rts.token);
                let _ = self.send_control(source, fin);
                return Err(e);
            }
        };
        let slot = self.slots.get_mut(index);
        slot.buf = buf;
        slot.len = cap;
        slot.matched = Completion {
            source,
            tag: message.tag,
            len,
            value: 0,
        };
        self.start_rendezvous_read(index, source, message.rts);
        Ok(self.request(index))
    }

    /// Lets a rendezvous message go unread: its sender is told, and its send completes.
    pub fn decline(&mut self, message: RemoteMessage) {
        if message.messenger != self.id
            || self.peer_generation(message.source) != Some(message.generation)
        {
            return;
        }
        if self.peer_failure(message.source).is_none() {
            let fin = self.fin(FinStatus::Truncated, message.rts.token);
            if let Err(e) = self.send_control(message.source, fin) {
                log::debug!(
                    "steadfast-fabric: declining a message of {}: {e}",
                    message.source
                );
            }
        }
    }

    /// A pool receive completed.
    pub(super) fn on_pool(&mut self, index: u32, entry: &CqEntry) {
        self.slots.get_mut(index).posted = false;
        let (source, tag) = tags::decode(entry.tag);
        if self.is_stale(source, entry.tag) {
            self.stats.fenced += 1;
            return self.repost_pool(index);
        }
        let (is_rts, extra) = tags::classify(Self::remote_data(entry));
        if !is_rts {
            let queued = Queued::Eager {
                slot: index,
                source,
                tag,
                len: entry.len,
                extra,
                generation: self.peer_generation(source).unwrap_or(0),
            };
            if let Some(pool) = self.pool.as_mut() {
                pool.queue.push_back(queued);
            }
            return;
        }
        let Staging::Pool(n) = self.slots.get(index).staging else {
            unreachable!("a pool receive owns a staging buffer")
        };
        let header = &self.staging[n as usize][..entry.len.min(RTS_LEN)];
        let rts = (entry.len == RTS_LEN)
            .then(|| Rts::decode(header))
            .flatten();
        self.repost_pool(index);
        let Some(rts) = rts else {
            self.stats.malformed += 1;
            log::warn!("steadfast-fabric: a malformed rendezvous header from {source} dropped");
            return;
        };
        let message = RemoteMessage {
            source,
            generation: self.peer_generation(source).unwrap_or(0),
            tag,
            extra,
            rts,
            messenger: self.id,
        };
        if let Some(pool) = self.pool.as_mut() {
            pool.queue.push_back(Queued::Remote(message));
        }
    }

    /// A pool receive failed: a message that did not fit (a peer with a larger eager
    /// limit) is consumed and lost, which is logged; a cancelled one (shutdown) stops.
    pub(super) fn on_pool_error(&mut self, index: u32, code: u32) {
        self.slots.get_mut(index).posted = false;
        if code == sys::FI_ECANCELED {
            self.slots.get_mut(index).staging = Staging::Direct;
            self.slots.release(index);
            return;
        }
        self.stats.malformed += 1;
        log::warn!(
            "steadfast-fabric: a message taken by software matching failed: {}",
            crate::error::fi_error_text(code as i64)
        );
        self.repost_pool(index);
    }

    /// Posts pool receive `index` again; a refusal (the endpoint shutting down) retires
    /// it.
    fn repost_pool(&mut self, index: u32) {
        let Some(pool) = self.pool.as_ref() else {
            return;
        };
        let (wire_tag, wire_ignore) = tags::user_match(None, pool.user_tag, pool.user_ignore);
        // SAFETY: the staging buffer belongs to the messenger and outlives its endpoint.
        if let Err(e) = unsafe { self.post_user_recv(index, wire_tag, wire_ignore) } {
            log::debug!("steadfast-fabric: a software-matching receive retired: {e}");
            self.slots.get_mut(index).staging = Staging::Direct;
            self.slots.release(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::{Arrival, ArrivalData, Error, FabricConfig, Messenger, MessengerConfig, ANY_TAG};

    /// Two messengers on loopback; the first, the sender, runs `send` on its own thread
    /// (a blocking call progresses only its own messenger).
    fn pair(
        send: impl FnOnce(&mut Messenger) -> crate::Result<()> + Send + 'static,
        buffers: usize,
    ) -> (Messenger, std::thread::JoinHandle<crate::Result<()>>, usize) {
        pair_on("tcp", send, buffers)
    }

    fn pair_on(
        provider: &str,
        send: impl FnOnce(&mut Messenger) -> crate::Result<()> + Send + 'static,
        buffers: usize,
    ) -> (Messenger, std::thread::JoinHandle<crate::Result<()>>, usize) {
        crate::apply_quirk_environment();
        let config = |id| {
            let fabric = match provider {
                "shm" => FabricConfig::new(provider),
                _ => FabricConfig::new(provider).domain("lo"),
            };
            let mut c = MessengerConfig::new(fabric, id);
            c.operation_timeout = Some(Duration::from_secs(60));
            c
        };
        let mut a = Messenger::open(config(0)).unwrap();
        let mut b = Messenger::open(config(1)).unwrap();
        a.add_peer(1, &b.address().to_bytes()).unwrap();
        b.add_peer(0, &a.address().to_bytes()).unwrap();
        b.enable_software_matching(0, ANY_TAG, buffers).unwrap();
        assert!(b.software_matching());
        let eager = a.eager_limit();
        let sender = std::thread::spawn(move || send(&mut a));
        (b, sender, eager)
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    /// The next arrival, handed to `f` (progressing until one comes).
    fn next<R>(b: &mut Messenger, mut f: impl FnMut(Arrival<'_>) -> R) -> R {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            b.progress().unwrap();
            if let Some(r) = b.take_arrival(&mut f) {
                return r;
            }
            assert!(Instant::now() < end, "no arrival");
        }
    }

    fn eager(x: Arrival<'_>) -> (u32, u64, Vec<u8>) {
        match x.data {
            ArrivalData::Eager(bytes) => (x.source, x.tag, bytes.to_vec()),
            ArrivalData::Remote(_) => panic!("tag {} came as rendezvous", x.tag),
        }
    }

    fn remote(x: Arrival<'_>) -> crate::RemoteMessage {
        match x.data {
            ArrivalData::Remote(m) => m,
            ArrivalData::Eager(_) => panic!("tag {} came eagerly", x.tag),
        }
    }

    #[test]
    fn every_protocol_arrives_in_order_and_rendezvous_is_pulled_or_declined() {
        let limit = 64 << 10;
        let small = pattern(8, 1);
        let medium = pattern(limit, 2);
        let large = pattern(limit * 4 + 3, 3);
        let (s, m, l) = (small.clone(), medium.clone(), large.clone());
        let (mut b, sender, eager_limit) = pair(
            move |a| {
                assert_eq!(a.eager_limit(), m.len(), "tcp's default eager limit");
                a.send(1, 5, &s)?;
                a.send(1, 6, &m)?;
                // Pulled, declined, refused as too long: each send completes.
                for _ in 0..3 {
                    a.send(1, 7, &l)?;
                }
                Ok(())
            },
            8,
        );
        assert_eq!(eager_limit, limit);
        assert_eq!(next(&mut b, eager), (0, 5, small));
        assert_eq!(next(&mut b, eager), (0, 6, medium));
        let message = next(&mut b, remote);
        assert_eq!(
            (message.source(), message.tag(), message.len()),
            (0, 7, large.len())
        );
        let mut into = vec![0u8; large.len() + 10];
        // SAFETY: `into` outlives the pull, waited for here.
        let pull = unsafe { b.pull(message, into.as_mut_ptr(), into.len()) }.unwrap();
        let c = b.wait(pull).unwrap();
        assert_eq!((c.source, c.tag, c.len), (0, 7, large.len()));
        assert!(into[..large.len()] == large[..]);
        let message = next(&mut b, remote);
        b.decline(message);
        let message = next(&mut b, remote);
        let mut short = vec![0u8; 16];
        // SAFETY: refused at once: nothing is posted.
        let r = unsafe { b.pull(message, short.as_mut_ptr(), short.len()) };
        assert!(matches!(r, Err(Error::Truncated { .. })), "{r:?}");
        // The sender's sends all completed.
        let end = Instant::now() + Duration::from_secs(60);
        while !sender.is_finished() {
            b.progress().unwrap();
            assert!(Instant::now() < end, "the sender still waits");
        }
        sender.join().unwrap().unwrap();
        assert!(b.take_arrival(|_| ()).is_none());
    }

    fn more_messages_than_buffers(provider: &str) {
        let (mut b, sender, _) = pair_on(
            provider,
            |a| {
                for i in 0..40u8 {
                    a.send(1, u64::from(i % 3), &pattern(100 + usize::from(i), i))?;
                }
                Ok(())
            },
            2,
        );
        for i in 0..40u8 {
            let expected = (0, u64::from(i % 3), pattern(100 + usize::from(i), i));
            assert_eq!(next(&mut b, eager), expected, "{provider}: message {i}");
        }
        sender.join().unwrap().unwrap();
    }

    #[test]
    fn more_messages_than_buffers_wait_in_the_provider_and_keep_their_order() {
        for provider in ["tcp", "net", "tcp;ofi_rxm"] {
            more_messages_than_buffers(provider);
        }
    }

    #[test]
    fn providers_that_misorder_masked_receives_are_refused() {
        let mut m = Messenger::open(MessengerConfig::new(FabricConfig::new("shm"), 0)).unwrap();
        let version = crate::libfabric_version().unwrap();
        let refused = m.enable_software_matching(0, ANY_TAG, 4);
        if crate::quirks::applies(crate::quirks::Quirk::UnexpectedIgnoresMask, "shm", version) {
            assert!(
                matches!(refused, Err(Error::Unsupported { .. })),
                "{refused:?}"
            );
            assert!(!m.software_matching());
        } else {
            refused.unwrap();
        }
    }

    #[test]
    fn a_word_travels_with_every_protocol() {
        let sizes = [8usize, 64 << 10, 1 << 20];
        let (mut b, sender, _) = pair(
            move |a| {
                for (i, len) in sizes.into_iter().enumerate() {
                    let data = pattern(len, i as u8);
                    // SAFETY: `data` outlives the request, waited for here.
                    if let Some(r) = unsafe { a.isend_with(1, 3, &data, 100 + i as u32) }? {
                        a.wait(r)?;
                    }
                }
                // SAFETY: refused before anything is posted.
                let refused = unsafe { a.isend_with(1, 3, &[], crate::MAX_EXTRA + 1) };
                assert!(matches!(refused, Err(Error::InvalidArgument(_))));
                a.send(1, 4, &[1])
            },
            4,
        );
        for (i, len) in sizes.into_iter().enumerate() {
            let (extra, remote) = next(&mut b, |x| {
                let extra = x.extra;
                match x.data {
                    ArrivalData::Eager(bytes) => {
                        assert_eq!(bytes, &pattern(len, i as u8)[..]);
                        (extra, None)
                    }
                    ArrivalData::Remote(m) => {
                        assert_eq!(m.extra(), extra);
                        (extra, Some(m))
                    }
                }
            });
            assert_eq!(extra, Some(100 + i as u32), "size {len}");
            if let Some(m) = remote {
                b.decline(m);
            }
        }
        assert_eq!(next(&mut b, |x| x.extra), None, "a plain send has no word");
        sender.join().unwrap().unwrap();
    }

    #[test]
    fn arrivals_of_a_replaced_incarnation_are_dropped_when_taken() {
        let (mut b, sender, _) = pair(|a| a.send(1, 9, &[1, 2, 3]), 4);
        let end = Instant::now() + Duration::from_secs(60);
        while b.arrivals_queued() == 0 {
            b.progress().unwrap();
            assert!(Instant::now() < end, "no arrival");
        }
        sender.join().unwrap().unwrap();
        // Rank 0 restarts in place: what its old incarnation sent is never handed out.
        let mut config = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), 0);
        config.generation = 1;
        let mut successor = Messenger::open(config).unwrap();
        let address = successor.address().to_bytes();
        // The successor progresses (its connection, the admission) until told to stop.
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let driver = std::thread::spawn(move || {
            while stopped.try_recv().is_err() {
                successor.progress().unwrap();
            }
        });
        let fenced = b.stats().fenced;
        b.replace_peer(0, &address).unwrap();
        assert!(b.take_arrival(|_| ()).is_none());
        assert_eq!(b.stats().fenced, fenced + 1);
        stop.send(()).unwrap();
        driver.join().unwrap();
    }
}
