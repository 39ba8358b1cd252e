//! Bounded waiting for the messenger's blocking calls: spin, then yield (see
//! [`SpinWait`]); read the clock only every so many spins, for the liveness checks of
//! the peer and the operation timeout.

use std::time::{Duration, Instant};

use steadfast_os::SpinWait;

use super::MessengerConfig;

/// Bounded waiting: spin, then yield; tracks the liveness interval and the timeout.
pub(super) struct Waiter {
    /// When waiting began; read from the clock at the first check, not at creation, so
    /// a wait that completes within a few spins never reads the clock.
    start: Option<Instant>,
    next_liveness: Option<Instant>,
    next_local: Option<Instant>,
    interval: Duration,
    timeout: Option<Duration>,
    spin: SpinWait,
}

impl Waiter {
    /// Spins between clock reads (liveness and timeout checks).
    const SPINS_PER_CHECK: u32 = 64;

    pub(super) fn new(config: &MessengerConfig) -> Self {
        Waiter {
            start: None,
            next_liveness: None,
            next_local: None,
            interval: config.liveness_interval,
            timeout: config.operation_timeout,
            spin: SpinWait::default(),
        }
    }

    /// As [`new`](Self::new), giving up after `bound` at most (or the configured
    /// timeout when shorter).
    pub(super) fn bounded(config: &MessengerConfig, bound: Duration) -> Self {
        let mut w = Self::new(config);
        w.timeout = Some(w.timeout.map_or(bound, |t| t.min(bound)));
        w
    }

    /// The wait after a cancel: long enough for any provider to flush.
    pub(super) fn grace() -> Self {
        Waiter {
            start: None,
            next_liveness: None,
            next_local: None,
            interval: Duration::from_secs(3600),
            timeout: Some(Duration::from_secs(30)),
            spin: SpinWait::default(),
        }
    }

    /// One poll's pause: spins first (a wake-up costs ~85 µs on a busy host, so
    /// latency paths poll), then yields (see [`SpinWait`]; no PAUSE instruction: under
    /// KVM it doubled the median one-way 8 B shm latency).
    pub(super) fn pause(&mut self) {
        self.spin.pause();
    }

    /// Whether this spin is one that reads the clock.
    pub(super) fn checking(&self) -> bool {
        self.spin.every(Self::SPINS_PER_CHECK)
    }

    /// Between two checks of a same-host peer's process while blocked: a pidfd poll
    /// costs well under a microsecond, and an operation stuck on a dead peer (net keeps
    /// a send to it in back-pressure) should not hold up the caller for a whole
    /// liveness interval.
    const LOCAL_INTERVAL: Duration = Duration::from_millis(1);

    /// Which liveness check is due at this spin: `Some(true)` every liveness interval
    /// (process check, else a probe), `Some(false)` every [`Self::LOCAL_INTERVAL`]
    /// (process check only), `None` otherwise.
    pub(super) fn liveness_due(&mut self) -> Option<bool> {
        if !self.checking() {
            return None;
        }
        let now = Instant::now();
        let start = *self.start.get_or_insert(now);
        let next = *self.next_liveness.get_or_insert(start + self.interval);
        if now >= next {
            self.next_liveness = Some(now + self.interval);
            return Some(true);
        }
        let next_local = *self.next_local.get_or_insert(start + Self::LOCAL_INTERVAL);
        if now >= next_local {
            self.next_local = Some(now + Self::LOCAL_INTERVAL);
            return Some(false);
        }
        None
    }

    pub(super) fn timed_out(&mut self) -> Option<Duration> {
        let timeout = self.timeout?;
        if !self.checking() {
            return None;
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        (start.elapsed() >= timeout).then_some(timeout)
    }
}
