//! When a collective that waits for a live rank's message gives up because another
//! member failed ([`GiveUpClock`]).
//!
//! A collective built of point-to-point rounds cannot tell a live partner that will
//! still send from one that met the failure first and gave up: waiting for it could
//! be forever, so a failure must end the call. But giving up at the first sight of a
//! failure fails calls that would have completed: in a barrier, the victim may leave
//! (and die) while a survivor still waits for a message a live rank is about to send,
//! and that survivor's barrier fails although every message it needs is on its way.
//! ULFM allows that outcome; programs written against other implementations often do
//! not expect it. So a call that started before it knew of the failure keeps waiting a
//! short grace after it first sees one: the messages still coming arrive and the call
//! completes, while one that can never complete still ends, [`GRACE`] later. A call
//! that starts with a failure already known gives up at once, as before.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::Comm;

/// How long a collective call that began before a failure was known keeps waiting for
/// its messages once it sees one. Long enough for a live rank that lost the processor
/// on a busy node to send what it owes; short beside the detection of the failure
/// itself.
pub const GRACE: Duration = Duration::from_millis(50);

/// One collective call's view of failures: whether one was known when the call began,
/// and when the call first saw one (see the module doc).
///
/// # Examples
/// ```no_run
/// # fn demo(comm: &steadfast::Comm) {
/// use steadfast::comm::GiveUpClock;
/// let clock = GiveUpClock::start(comm.any_failed());
/// // ... while the call waits for a message:
/// if comm.any_failed() && clock.expired() {
///     // give up with ProcFailed
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct GiveUpClock {
    known_at_start: bool,
    seen: Cell<Option<Instant>>,
}

impl GiveUpClock {
    /// The clock of a call beginning now; `failed` says whether a failure that counts
    /// for it is known already.
    pub fn start(failed: bool) -> Self {
        GiveUpClock {
            known_at_start: failed,
            seen: Cell::new(None),
        }
    }

    /// Called when the call, still waiting, sees a failure that counts for it: `true`
    /// when it must give up now (the failure was known when it began, or [`GRACE`]
    /// has passed since it first saw one).
    pub fn expired(&self) -> bool {
        if self.known_at_start {
            return true;
        }
        match self.seen.get() {
            Some(t) => t.elapsed() >= GRACE,
            None => {
                self.seen.set(Some(Instant::now()));
                false
            }
        }
    }
}

impl Comm {
    /// The [`GiveUpClock`] of a collective call on this communicator beginning now.
    pub(super) fn give_up_clock(&self) -> GiveUpClock {
        GiveUpClock::start(self.any_failed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_known_at_the_start_ends_the_wait_at_once() {
        assert!(GiveUpClock::start(true).expired());
    }

    #[test]
    fn a_failure_seen_while_waiting_ends_it_after_the_grace() {
        let clock = GiveUpClock::start(false);
        let t = Instant::now();
        assert!(!clock.expired(), "the first sight starts the grace");
        while !clock.expired() {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(t.elapsed() >= GRACE);
    }
}
