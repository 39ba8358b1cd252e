//! Whether a medium message to a peer goes through the ring or by single copy, from
//! what each has cost lately.
//!
//! Through the ring every cache line of a message crosses between the two cores twice
//! (the sender takes the lines the receiver last read, the receiver reads them back);
//! single copy reads the sender's buffer in the kernel. Between cores that share a
//! cache the ring wins far up (one-way 16 KiB 0.95 µs against 3.8 by single copy,
//! window bandwidth 21-24 against 6.5-12 GB/s at 16-64 KiB on the 2-core machine in its
//! fast state); where a line takes ~190 ns to cross (the machine's slow state, or two
//! cores without a shared cache) the ring streams 16-64 KiB at ~4.5 GB/s, below single
//! copy's 6-12 there; and in a third state of the same machine (`process_vm_readv` at
//! 2 GB/s) single copy costs more than the ring again at 16 KiB.
//!
//! So both are measured. The sender times how long it takes to write a message of more
//! than [`ALWAYS_EAGER`] bytes into the ring (the lines' crossings are most of it); the
//! receiver times its single-copy read and returns the figure in the FIN. Per size
//! class (powers of two above [`ALWAYS_EAGER`]: the read's fixed cost weighs more on
//! small messages) the cheapest of the last [`SAMPLES`] of each, in ns per KiB, are
//! compared; before single copy was measured in a class, [`SLOW_NS_PER_KIB`] stands
//! for it. The path not taken is still tried now and then to notice a change: the ring
//! one message in [`PROBE_EVERY`], single copy one in [`PROBE_SINGLE_EVERY`] and only
//! while the ring costs more than [`SLOW_NS_PER_KIB`] (where the ring is fast single
//! copy never wins, and a probe would only add its cost).

/// Messages up to this size always go through the ring (when within `eager_max`).
pub(crate) const ALWAYS_EAGER: usize = 8 << 10;
/// Single copy's cost (ns per KiB) assumed in a size class not measured yet.
pub(crate) const SLOW_NS_PER_KIB: u32 = 90;
/// While single copy is chosen, one larger message in this many still goes through
/// the ring.
pub(crate) const PROBE_EVERY: u32 = 32;
/// While the ring is chosen but slow, one larger message in this many goes by single
/// copy.
pub(crate) const PROBE_SINGLE_EVERY: u32 = 256;

/// Samples kept: a cost is the cheapest of the last [`SAMPLES`], so one that was
/// descheduled (only ever slower) does not flip the choice, while one cheap probe
/// flips it back.
const SAMPLES: usize = 4;

/// Size classes of the single-copy samples: (8, 16] KiB, (16, 32], ... (512 KiB, 1 MiB]
/// (the largest eager limit) and above.
const CLASSES: usize = 8;

/// The last few costs of one path, in ns per KiB.
#[derive(Debug, Clone, Copy, Default)]
struct Samples {
    /// The last ones (0: not measured yet).
    last: [u32; SAMPLES],
    /// Where the next one goes.
    next: usize,
    /// The cheapest of `last` once all are measured, else 0.
    cheapest: u32,
}

impl Samples {
    fn record(&mut self, len: usize, ns: u64) {
        let per_kib = (ns.saturating_mul(1024) / len.max(1) as u64).clamp(1, u32::MAX as u64);
        self.last[self.next] = per_kib as u32;
        self.next = (self.next + 1) % SAMPLES;
        self.cheapest = if self.last.contains(&0) {
            0
        } else {
            self.last.iter().copied().min().unwrap_or(0)
        };
    }

    /// The recent cost, `None` until [`SAMPLES`] were measured.
    fn cost(&self) -> Option<u32> {
        (self.cheapest != 0).then_some(self.cheapest)
    }
}

/// The recent costs of the ring and of single copy towards one peer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EagerCost {
    ring: Samples,
    single: [Samples; CLASSES],
    /// Larger messages decided since the path not chosen was last tried.
    skipped: u32,
}

/// The single-copy size class of a message of `len > ALWAYS_EAGER` bytes.
fn class(len: usize) -> usize {
    let eighths = (len - 1) / ALWAYS_EAGER; // 1 for (8, 16] KiB, 2-3 for (16, 32], ...
    (eighths.max(1).ilog2() as usize).min(CLASSES - 1)
}

impl EagerCost {
    /// Whether a message of `len` bytes (at most the eager limit) goes through the
    /// ring; counts the decision.
    #[inline]
    pub(crate) fn wants_ring(&mut self, len: usize) -> bool {
        if len <= ALWAYS_EAGER {
            return true;
        }
        let Some(ring) = self.ring.cost() else {
            return true;
        };
        let single = self.single[class(len)].cost().unwrap_or(SLOW_NS_PER_KIB);
        let ring_wins = ring <= single;
        let probe_every = match (ring_wins, ring > SLOW_NS_PER_KIB) {
            (false, _) => PROBE_EVERY,
            (true, true) => PROBE_SINGLE_EVERY,
            (true, false) => return true,
        };
        self.skipped += 1;
        if self.skipped >= probe_every {
            self.skipped = 0;
            return !ring_wins;
        }
        ring_wins
    }

    /// Whether a message of `len` bytes is worth timing (only larger ones are).
    #[inline]
    pub(crate) fn times(len: usize) -> bool {
        len > ALWAYS_EAGER
    }

    /// Records that writing `len` bytes into the ring took `ns`.
    pub(crate) fn record(&mut self, len: usize, ns: u64) {
        self.ring.record(len, ns);
    }

    /// Records that the receiver read `len` bytes by single copy in `ns` (its FIN).
    pub(crate) fn record_single_copy(&mut self, len: usize, ns: u32) {
        if Self::times(len) {
            self.single[class(len)].record(len, ns as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_powers_of_two_above_the_always_eager_size() {
        assert_eq!(class(ALWAYS_EAGER + 1), 0);
        assert_eq!(class(16 << 10), 0);
        assert_eq!(class((16 << 10) + 1), 1);
        assert_eq!(class(32 << 10), 1);
        assert_eq!(class(64 << 10), 2);
        assert_eq!(class(1 << 20), 6);
        assert_eq!(class(64 << 20), CLASSES - 1);
    }

    #[test]
    fn slow_writes_send_larger_messages_by_single_copy_with_probes() {
        let mut c = EagerCost::default();
        assert!(c.wants_ring(64 << 10), "unmeasured: the ring");
        c.record(64 << 10, 64 * 400); // 400 ns/KiB
        assert!(c.wants_ring(64 << 10), "too few samples yet");
        for _ in 0..SAMPLES {
            c.record(64 << 10, 64 * 400);
        }
        assert!(c.wants_ring(ALWAYS_EAGER), "small ones always");
        let through: usize = (0..PROBE_EVERY * 3)
            .filter(|_| c.wants_ring(16 << 10))
            .count();
        assert_eq!(through, 3, "one probe in {PROBE_EVERY}");
        c.record(16 << 10, 16 * 20);
        assert!(c.wants_ring(16 << 10), "one cheap probe: the ring again");
    }

    #[test]
    fn slow_samples_flip_a_cheap_peer_only_when_all_recent_ones_are() {
        let mut c = EagerCost::default();
        for _ in 0..SAMPLES {
            c.record(32 << 10, 32 * 30);
        }
        for _ in 0..SAMPLES - 1 {
            c.record(32 << 10, 32 * 100_000); // descheduled writes
            assert!(c.wants_ring(32 << 10));
        }
        c.record(32 << 10, 32 * 200);
        assert!(!c.wants_ring(32 << 10), "every recent write slow");
    }

    #[test]
    fn a_measured_single_copy_dearer_than_the_ring_keeps_that_size_in_the_ring() {
        let mut c = EagerCost::default();
        for _ in 0..SAMPLES {
            c.record(32 << 10, 32 * 200); // a slow ring: 200 ns/KiB
        }
        assert!(!c.wants_ring(16 << 10), "single copy assumed cheaper");
        for _ in 0..SAMPLES {
            c.record_single_copy(16 << 10, 16 * 300); // reads at 16 KiB: 300 ns/KiB
            c.record_single_copy(64 << 10, 64 * 100); // at 64 KiB: 100 ns/KiB
        }
        let ring_16k = (0..PROBE_SINGLE_EVERY * 2)
            .filter(|_| c.wants_ring(16 << 10))
            .count();
        assert_eq!(
            ring_16k as u32,
            PROBE_SINGLE_EVERY * 2 - 2,
            "16 KiB through the ring, single copy tried once in {PROBE_SINGLE_EVERY}"
        );
        c.skipped = 0;
        assert!(!c.wants_ring(64 << 10), "64 KiB by single copy still");
        c.record_single_copy(16 << 10, 16 * 150);
        c.skipped = 0;
        assert!(
            !c.wants_ring(16 << 10),
            "one read cheaper than the ring: 16 KiB by single copy again"
        );
    }

    #[test]
    fn a_fast_ring_is_never_probed_against_single_copy() {
        let mut c = EagerCost::default();
        for _ in 0..SAMPLES {
            c.record(32 << 10, 32 * 40);
            c.record_single_copy(32 << 10, 32 * 60);
        }
        assert!(
            (0..PROBE_SINGLE_EVERY * 4).all(|_| c.wants_ring(32 << 10)),
            "a ring under {SLOW_NS_PER_KIB} ns/KiB keeps every message"
        );
    }
}
