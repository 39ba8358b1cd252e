//! Whether a medium message to a peer goes through the ring or by single copy, from
//! what the ring has cost lately.
//!
//! Through the ring every cache line of a message crosses between the two cores twice
//! (the sender takes the lines the receiver last read, the receiver reads them back);
//! single copy reads the sender's buffer in the kernel. Between cores that share a
//! cache the ring wins far up (one-way 16 KiB 0.95 µs against 3.8 by single copy,
//! window bandwidth 21-24 against 6.5-12 GB/s at 16-64 KiB on the 2-core machine in its
//! fast state); where a line takes ~190 ns to cross (the machine's slow state, or two
//! cores without a shared cache) the ring streams 16-64 KiB at ~4.5 GB/s, below single
//! copy's 6-12. The sender times how long it takes to write a message of more than
//! [`ALWAYS_EAGER`] bytes into the ring (the lines' crossings are most of it) and,
//! while the cheapest of its last four such writes cost more than [`SLOW_NS_PER_KIB`],
//! sends such messages by single copy,
//! still writing one in [`PROBE_EVERY`] through the ring to notice when it gets cheap.

/// Messages up to this size always go through the ring (when within `eager_max`).
pub(crate) const ALWAYS_EAGER: usize = 8 << 10;
/// Writing cost (ns per KiB, averaged) above which larger messages take single copy.
pub(crate) const SLOW_NS_PER_KIB: u32 = 90;
/// While slow, one larger message in this many still goes through the ring.
pub(crate) const PROBE_EVERY: u32 = 32;

/// Samples kept: the cost is the cheapest of the last [`SAMPLES`] writes, so a write
/// that was descheduled (only ever slower) does not flip the choice, while one cheap
/// probe flips it back.
const SAMPLES: usize = 4;

/// The recent cost of writing large eager messages to one peer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EagerCost {
    /// The last writes' ns per KiB (0: not measured yet).
    samples: [u32; SAMPLES],
    /// Where the next sample goes.
    next: usize,
    /// The cheapest of `samples` once all are measured, else 0.
    ns_per_kib: u32,
    /// Larger messages decided since the last one sent through the ring while slow.
    skipped: u32,
}

impl EagerCost {
    /// Whether a message of `len` bytes (at most the eager limit) goes through the
    /// ring; counts the decision.
    #[inline]
    pub(crate) fn wants_ring(&mut self, len: usize) -> bool {
        if len <= ALWAYS_EAGER || self.ns_per_kib <= SLOW_NS_PER_KIB {
            return true;
        }
        self.skipped += 1;
        if self.skipped >= PROBE_EVERY {
            self.skipped = 0;
            return true;
        }
        false
    }

    /// Whether a message of `len` bytes is worth timing (only larger ones are).
    #[inline]
    pub(crate) fn times(len: usize) -> bool {
        len > ALWAYS_EAGER
    }

    /// Records that writing `len` bytes into the ring took `ns`.
    pub(crate) fn record(&mut self, len: usize, ns: u64) {
        let per_kib = (ns.saturating_mul(1024) / len.max(1) as u64).clamp(1, u32::MAX as u64);
        self.samples[self.next] = per_kib as u32;
        self.next = (self.next + 1) % SAMPLES;
        self.ns_per_kib = if self.samples.contains(&0) {
            0
        } else {
            self.samples.iter().copied().min().unwrap_or(0)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
