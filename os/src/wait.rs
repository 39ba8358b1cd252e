//! Bounded spinning, then yielding the core.
//!
//! Latency paths poll: a wake-up costs tens of microseconds on a busy host. A waiter
//! spins for a bounded number of polls, then yields between polls so that the process
//! it waits for can run on a shared core. Checks that cost a system call or a clock
//! read (is the peer alive? has the timeout passed?) run every so many polls.
//!
//! No `PAUSE` instruction between polls: the poll itself is the back-off, and under KVM
//! a `PAUSE` loop triggers pause-loop exits that cost microseconds per message.

/// A spin-then-yield counter for one wait.
///
/// ```
/// use steadfast_os::SpinWait;
///
/// let mut spin = SpinWait::new(2000);
/// let mut checks = 0;
/// for _ in 0..3000 {
///     spin.pause(); // yields the core after the first 2000 polls
///     if spin.every(1024) {
///         checks += 1; // e.g. check the peer's process
///     }
/// }
/// assert_eq!(checks, 2);
/// ```
#[derive(Debug, Clone)]
pub struct SpinWait {
    spins: u32,
    spins_before_yield: u32,
}

impl SpinWait {
    /// Polls before a waiter starts yielding when nothing says otherwise.
    pub const DEFAULT_SPINS_BEFORE_YIELD: u32 = 2000;

    /// A waiter that spins `spins_before_yield` polls, then yields at every pause
    /// (0: yields at once, for nodes with more ranks than cores).
    pub fn new(spins_before_yield: u32) -> Self {
        SpinWait {
            spins: 0,
            spins_before_yield,
        }
    }

    /// Counts one poll and, past the spinning budget, yields the core.
    pub fn pause(&mut self) {
        self.spins = self.spins.saturating_add(1);
        if self.spins > self.spins_before_yield {
            std::thread::yield_now();
        }
    }

    /// Polls counted so far.
    pub fn spins(&self) -> u32 {
        self.spins
    }

    /// Whether this poll is one of every `n`-th (for checks too costly for each poll).
    /// Saturates with the count: past `u32::MAX` polls it stays at its last answer.
    pub fn every(&self, n: u32) -> bool {
        self.spins > 0 && self.spins % n.max(1) == 0
    }
}

impl Default for SpinWait {
    fn default() -> Self {
        SpinWait::new(Self::DEFAULT_SPINS_BEFORE_YIELD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_checks_periodically() {
        let mut s = SpinWait::new(0);
        assert!(!s.every(4));
        for _ in 0..8 {
            s.pause();
        }
        assert_eq!(s.spins(), 8);
        assert!(s.every(4));
        assert!(!s.every(3));
        assert!(s.every(0), "n = 0 is taken as 1");
    }
}
