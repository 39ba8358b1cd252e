//! Heartbeat failure detector on a ring, as a plain struct driven by `now`.
//!
//! Each process is watched by its live ring successor: it sends it a heartbeat every
//! `period_ns`, and the successor suspects it when `timeout_ns` pass without one. The
//! watcher then asks the next live predecessor to send it heartbeats instead (ring
//! repair). Suspicions are final: the caller broadcasts them (see [`crate::bcast`]) and
//! feeds every delivered suspicion back through [`Detector::on_failure`]. A process that
//! learns it is suspected gets [`DetectorAction::Excluded`] and must stop.
//!
//! Jitter guard: when two ticks are further apart than `late_tick_ns` the local process
//! was descheduled, and heartbeats may be sitting unread; such a tick re-arms the
//! timeout instead of accusing anyone.
//!
//! # Call order
//! [`Detector::start`] once, then [`Detector::tick`] at (or after)
//! [`Detector::next_deadline`], [`Detector::on_heartbeat`] / [`Detector::on_observe`] for
//! incoming messages (before the tick when both are pending), and
//! [`Detector::on_failure`] for every failure learnt elsewhere.

use crate::types::{Rank, RankSet};

/// Timing parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetectorConfig {
    /// Interval between heartbeats.
    pub period_ns: u64,
    /// Silence after which the watched process is suspected.
    pub timeout_ns: u64,
    /// A gap between ticks longer than this means we were descheduled.
    pub late_tick_ns: u64,
}

impl DetectorConfig {
    /// `period_ns` with a timeout of `timeout_ns`; late ticks at half the timeout.
    /// [`Detector::new`] checks that the timeout exceeds the period.
    pub fn new(period_ns: u64, timeout_ns: u64) -> Self {
        DetectorConfig {
            period_ns,
            timeout_ns,
            late_tick_ns: timeout_ns / 2,
        }
    }

    /// As [`new`](Self::new), from milliseconds, with the conversion checked.
    ///
    /// ```
    /// use steadfast_agreement::detector::DetectorConfig;
    /// let c = DetectorConfig::from_millis(50, 2000).unwrap();
    /// assert_eq!(c.period_ns, 50_000_000);
    /// assert!(DetectorConfig::from_millis(18_446_744_073_709, 18_446_744_073_710).is_err());
    /// ```
    ///
    /// # Errors
    /// [`DetectorError::TooLarge`] when a value in nanoseconds does not fit in a `u64`.
    pub fn from_millis(period_ms: u64, timeout_ms: u64) -> Result<Self, DetectorError> {
        let ns = |what: &'static str, ms: u64| {
            ms.checked_mul(1_000_000)
                .ok_or(DetectorError::TooLarge { what, ms })
        };
        Ok(Self::new(
            ns("period", period_ms)?,
            ns("timeout", timeout_ms)?,
        ))
    }
}

/// A detector configuration that cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DetectorError {
    /// A duration in milliseconds overflows a `u64` of nanoseconds.
    #[error("detector {what} of {ms} ms does not fit in 64 bits of nanoseconds (at most {max} ms)", max = u64::MAX / 1_000_000)]
    TooLarge {
        /// `period` or `timeout`.
        what: &'static str,
        /// The value given.
        ms: u64,
    },
    /// The timeout does not exceed the heartbeat period: every process would be
    /// suspected between two heartbeats.
    #[error(
        "detector timeout ({timeout_ns} ns) must exceed the heartbeat period ({period_ns} ns)"
    )]
    TimeoutNotAbovePeriod {
        /// The heartbeat period.
        period_ns: u64,
        /// The timeout.
        timeout_ns: u64,
    },
    /// The rank is outside its group.
    #[error("rank {me} outside a group of {n}")]
    RankOutsideGroup {
        /// The rank.
        me: Rank,
        /// The group's size.
        n: u32,
    },
}

/// What the caller must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectorAction {
    /// Send a heartbeat to `to`.
    Heartbeat {
        /// The watcher.
        to: Rank,
    },
    /// Ask `to` to send its heartbeats here (ring repair).
    Observe {
        /// The new watched process.
        to: Rank,
    },
    /// `rank` is suspected: broadcast the suspicion and treat the rank as failed.
    Suspect(Rank),
    /// This process was suspected by the others: it must stop.
    Excluded,
}

/// The detector of one process.
#[derive(Debug)]
pub struct Detector {
    me: Rank,
    n: u32,
    config: DetectorConfig,
    dead: RankSet,
    watched: Option<Rank>,
    heard_at: u64,
    watcher: Option<Rank>,
    next_beat_at: u64,
    last_tick: Option<u64>,
    excluded: bool,
    /// When the watched process's silence began, once [`Detector::vouch`] counted other
    /// evidence of life as its heartbeat (cleared by a real heartbeat or a new watched).
    vouched_since: Option<u64>,
}

impl Detector {
    /// The detector of rank `me` in a group of `n`.
    ///
    /// # Errors
    /// [`DetectorError`] if `me` is not below `n`, or the timeout is not longer than
    /// the period.
    pub fn new(me: Rank, n: u32, config: DetectorConfig) -> Result<Self, DetectorError> {
        if me.0 >= n {
            return Err(DetectorError::RankOutsideGroup { me, n });
        }
        if config.timeout_ns <= config.period_ns {
            return Err(DetectorError::TimeoutNotAbovePeriod {
                period_ns: config.period_ns,
                timeout_ns: config.timeout_ns,
            });
        }
        Ok(Detector {
            me,
            n,
            config,
            dead: RankSet::new(),
            watched: None,
            heard_at: 0,
            watcher: None,
            next_beat_at: 0,
            last_tick: None,
            excluded: false,
            vouched_since: None,
        })
    }

    /// Starts watching at `now`.
    pub fn start(&mut self, now: u64, out: &mut Vec<DetectorAction>) {
        self.watched = self.live_pred();
        self.watcher = self.live_succ();
        self.heard_at = now;
        self.vouched_since = None;
        self.next_beat_at = now;
        self.tick(now, out);
    }

    /// The process this one watches.
    pub fn watched(&self) -> Option<Rank> {
        self.watched
    }

    /// Ranks known failed (suspected here or learnt).
    pub fn failed(&self) -> &RankSet {
        &self.dead
    }

    /// When [`Detector::tick`] must next be called.
    pub fn next_deadline(&self) -> u64 {
        match self.watched {
            Some(_) => self.next_beat_at.min(
                self.heard_at
                    .saturating_add(self.config.timeout_ns)
                    .saturating_add(1),
            ),
            None => self.next_beat_at,
        }
    }

    /// Time passes: send due heartbeats, suspect a silent watched process.
    pub fn tick(&mut self, now: u64, out: &mut Vec<DetectorAction>) {
        if self.excluded {
            return;
        }
        let late = self
            .last_tick
            .is_some_and(|t| now.saturating_sub(t) > self.config.late_tick_ns);
        self.last_tick = Some(now);
        if late {
            // We did not run for a while: what looks like silence may be our own delay.
            self.heard_at = self.heard_at.max(now);
        }
        if now >= self.next_beat_at {
            if let Some(w) = self.watcher {
                out.push(DetectorAction::Heartbeat { to: w });
            }
            self.next_beat_at = now.saturating_add(self.config.period_ns);
        }
        if let Some(w) = self.watched {
            if now.saturating_sub(self.heard_at) > self.config.timeout_ns {
                out.push(DetectorAction::Suspect(w));
                self.mark_dead(w, now, out);
            }
        }
    }

    /// A heartbeat from `from` arrived at `now`.
    pub fn on_heartbeat(&mut self, from: Rank, now: u64) {
        if Some(from) == self.watched {
            self.heard_at = self.heard_at.max(now);
            self.vouched_since = None;
        }
    }

    /// The silence after which the watched process is suspected (ns).
    pub fn timeout_ns(&self) -> u64 {
        self.config.timeout_ns
    }

    /// The watched process and how long it has been silent at `now` (ns).
    pub fn silence(&self, now: u64) -> Option<(Rank, u64)> {
        self.watched.map(|w| (w, now.saturating_sub(self.heard_at)))
    }

    /// Counts other evidence that the watched `rank` is alive though silent (a process
    /// busy in the kernel: a single copy of a large message keeps its heartbeats in)
    /// as a heartbeat at `now`, for at most `max_ns` of silence in a row, so a process
    /// that never speaks again is still suspected. Returns whether it counted.
    ///
    /// ```
    /// use steadfast_agreement::detector::{Detector, DetectorConfig};
    /// use steadfast_agreement::Rank;
    /// let mut d = Detector::new(Rank(1), 2, DetectorConfig::new(10, 100)).unwrap();
    /// d.start(0, &mut Vec::new());
    /// assert!(d.vouch(Rank(0), 150, 1000));
    /// assert!(!d.vouch(Rank(0), 1200, 1000)); // silent since 0: past the bound
    /// ```
    pub fn vouch(&mut self, rank: Rank, now: u64, max_ns: u64) -> bool {
        if Some(rank) != self.watched || self.excluded {
            return false;
        }
        let since = *self.vouched_since.get_or_insert(self.heard_at);
        if now.saturating_sub(since) > max_ns {
            return false;
        }
        self.heard_at = self.heard_at.max(now);
        true
    }

    /// `from` asks to receive our heartbeats (its predecessor died).
    pub fn on_observe(&mut self, from: Rank, now: u64, out: &mut Vec<DetectorAction>) {
        if from.0 < self.n && from != self.me && !self.dead.contains(from) {
            self.watcher = Some(from);
            out.push(DetectorAction::Heartbeat { to: from });
            self.next_beat_at = now.saturating_add(self.config.period_ns);
        }
    }

    /// `rank` is known failed (a delivered suspicion, a launcher notice, a dead pid).
    pub fn on_failure(&mut self, rank: Rank, now: u64, out: &mut Vec<DetectorAction>) {
        if rank == self.me {
            if !self.excluded {
                self.excluded = true;
                out.push(DetectorAction::Excluded);
            }
            return;
        }
        if rank.0 < self.n {
            self.mark_dead(rank, now, out);
        }
    }

    /// A new incarnation of the failed `rank` joined (a restart in place, see
    /// `docs/restart.md`): it is in the ring again. If it is now our watched process,
    /// its silence counts from `now`; if it is our watcher, it gets a heartbeat now.
    pub fn on_rejoin(&mut self, rank: Rank, now: u64, out: &mut Vec<DetectorAction>) {
        if rank == self.me || rank.0 >= self.n || !self.dead.remove(rank) {
            return;
        }
        let watched = self.live_pred();
        if watched != self.watched {
            self.watched = watched;
            self.heard_at = now;
            self.vouched_since = None;
        }
        let watcher = self.live_succ();
        if watcher != self.watcher {
            self.watcher = watcher;
            if let Some(w) = watcher {
                out.push(DetectorAction::Heartbeat { to: w });
                self.next_beat_at = now.saturating_add(self.config.period_ns);
            }
        }
    }

    fn mark_dead(&mut self, rank: Rank, now: u64, out: &mut Vec<DetectorAction>) {
        if !self.dead.insert(rank) {
            return;
        }
        if self.watched == Some(rank) {
            self.watched = self.live_pred();
            self.heard_at = now;
            self.vouched_since = None;
            if let Some(p) = self.watched {
                out.push(DetectorAction::Observe { to: p });
            }
        }
        if self.watcher == Some(rank) {
            self.watcher = self.live_succ();
        }
    }

    fn live_pred(&self) -> Option<Rank> {
        let n = self.n;
        (1..n)
            .map(|k| Rank((self.me.0 + n - k) % n))
            .find(|r| !self.dead.contains(*r))
    }

    fn live_succ(&self) -> Option<Rank> {
        let n = self.n;
        (1..n)
            .map(|k| Rank((self.me.0 + k) % n))
            .find(|r| !self.dead.contains(*r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: DetectorConfig = DetectorConfig {
        period_ns: 100,
        timeout_ns: 350,
        late_tick_ns: 175,
    };

    #[test]
    fn a_rejoined_rank_is_watched_and_heartbeaten_again() {
        let mut d = Detector::new(Rank(2), 5, CFG).unwrap();
        let mut out = Vec::new();
        d.start(0, &mut out);
        d.on_failure(Rank(1), 10, &mut out);
        d.on_failure(Rank(3), 10, &mut out);
        assert_eq!(d.watched(), Some(Rank(0)));
        out.clear();
        d.on_rejoin(Rank(3), 20, &mut out);
        assert_eq!(out, vec![DetectorAction::Heartbeat { to: Rank(3) }]);
        out.clear();
        d.on_rejoin(Rank(1), 30, &mut out);
        assert!(out.is_empty());
        assert_eq!(d.watched(), Some(Rank(1)));
        assert!(!d.failed().contains(Rank(1)));
        // Its silence counts from the rejoin (ticks often enough not to look late).
        let mut t = 30;
        while t < 30 + CFG.timeout_ns {
            d.tick(t, &mut out);
            t += 50;
        }
        d.tick(30 + CFG.timeout_ns, &mut out);
        assert!(!out.contains(&DetectorAction::Suspect(Rank(1))));
        d.tick(31 + CFG.timeout_ns, &mut out);
        assert!(out.contains(&DetectorAction::Suspect(Rank(1))));
        // A rank that never failed, oneself, out of range: nothing.
        out.clear();
        d.on_rejoin(Rank(0), 40, &mut out);
        d.on_rejoin(Rank(2), 40, &mut out);
        d.on_rejoin(Rank(9), 40, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn silence_is_suspected_and_the_ring_repaired() {
        let mut d = Detector::new(Rank(2), 5, CFG).unwrap();
        let mut out = Vec::new();
        d.start(0, &mut out);
        assert_eq!(out, vec![DetectorAction::Heartbeat { to: Rank(3) }]);
        assert_eq!(d.watched(), Some(Rank(1)));
        let mut t = 0;
        while t < 1000 {
            out.clear();
            t = d.next_deadline();
            d.tick(t, &mut out);
            if out.contains(&DetectorAction::Suspect(Rank(1))) {
                break;
            }
        }
        assert!(t > 350 && t <= 451, "suspected at {t}");
        assert!(out.contains(&DetectorAction::Observe { to: Rank(0) }));
        assert_eq!(d.watched(), Some(Rank(0)));
    }

    #[test]
    fn heartbeats_keep_the_watched_process_alive() {
        let mut d = Detector::new(Rank(0), 3, CFG).unwrap();
        let mut out = Vec::new();
        d.start(0, &mut out);
        for t in (50..5000).step_by(50) {
            if t % 100 == 0 {
                d.on_heartbeat(Rank(2), t);
            }
            d.tick(t, &mut out);
        }
        assert!(!out.iter().any(|a| matches!(a, DetectorAction::Suspect(_))));
    }

    #[test]
    fn a_late_tick_accuses_nobody() {
        let mut d = Detector::new(Rank(0), 3, CFG).unwrap();
        let mut out = Vec::new();
        d.start(0, &mut out);
        d.tick(90, &mut out);
        // Descheduled for 10 timeouts: heartbeats wait unread; this tick only re-arms.
        d.tick(3590, &mut out);
        assert!(!out.iter().any(|a| matches!(a, DetectorAction::Suspect(_))));
        d.on_heartbeat(Rank(2), 3591);
        d.tick(3600, &mut out);
        assert!(!out.iter().any(|a| matches!(a, DetectorAction::Suspect(_))));
    }

    #[test]
    fn being_suspected_excludes() {
        let mut d = Detector::new(Rank(1), 3, CFG).unwrap();
        let mut out = Vec::new();
        d.on_failure(Rank(1), 10, &mut out);
        assert_eq!(out, vec![DetectorAction::Excluded]);
        out.clear();
        d.tick(10_000, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn impossible_configurations_are_errors_not_panics() {
        let equal = DetectorConfig::new(100, 100);
        assert_eq!(
            Detector::new(Rank(0), 3, equal).unwrap_err(),
            DetectorError::TimeoutNotAbovePeriod {
                period_ns: 100,
                timeout_ns: 100
            }
        );
        assert!(matches!(
            Detector::new(Rank(3), 3, CFG),
            Err(DetectorError::RankOutsideGroup { n: 3, .. })
        ));
        // The values of issue 21: the timeout wrapped below the period.
        let e = DetectorConfig::from_millis(18_446_744_073_709, 18_446_744_073_710).unwrap_err();
        assert!(
            e.to_string().contains("18446744073710") && e.to_string().contains("18446744073709 ms"),
            "{e}"
        );
        assert_eq!(
            DetectorConfig::from_millis(u64::MAX / 1_000_000, u64::MAX / 1_000_000)
                .map(|c| c.period_ns),
            Ok(u64::MAX / 1_000_000 * 1_000_000)
        );
    }

    #[test]
    fn huge_periods_saturate_instead_of_wrapping() {
        let cfg = DetectorConfig::new(u64::MAX - 1, u64::MAX);
        let mut d = Detector::new(Rank(0), 3, cfg).unwrap();
        let mut out = Vec::new();
        d.start(5, &mut out);
        assert_eq!(d.next_deadline(), u64::MAX);
        out.clear();
        d.tick(1_000, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
