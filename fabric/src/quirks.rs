//! The one table of provider quirks: every behaviour of a particular libfabric
//! provider (or version of it) that this layer works around, with the workaround and
//! where it was reported, and which provider stands for `tcp` ([`TCP_CHOICES`]). Code
//! that needs to know asks [`applies`]; nothing else in the crate compares provider
//! names or library versions.
//!
//! ```
//! use steadfast_fabric::quirks::{applies, Quirk};
//!
//! // shm before libfabric 1.19 hangs on several unexpected messages above the inject
//! // size, so the messenger sends everything above it by rendezvous there.
//! assert!(applies(Quirk::UnexpectedSarHangs, "shm", (1, 17)));
//! assert!(!applies(Quirk::UnexpectedSarHangs, "shm", (1, 19)));
//! assert!(!applies(Quirk::UnexpectedSarHangs, "net", (1, 17)));
//! ```

/// A provider behaviour that this layer works around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Quirk {
    /// Several messages above the inject size that arrive before their receives are
    /// posted hang the provider's SAR protocol. Workaround: the eager limit is the
    /// inject size, everything above goes by our rendezvous (whose headers are
    /// injected).
    UnexpectedSarHangs,
    /// Each region is guarded by a spin lock that peers take too; a peer killed inside
    /// that section leaves every later `fi_cq_read` spinning for ever. Workaround:
    /// the lock-rescue thread (`shm_lock_rescue.rs`) releases a lock held by a dead
    /// process.
    DeadPeerHoldsRegionLock,
    /// The provider stops reading a connection once it holds a few messages without
    /// a posted receive (default 4), so a rendezvous read's response queued behind them
    /// never arrives. Workaround: the environment variable of [`environment`] raises
    /// the limit before libfabric loads its providers.
    StopsReadingOnSavedMessages,
    /// A message that arrives before a receive posted with an ignore mask is matched
    /// out of order, or not at all, by such a receive (the mask is not applied to
    /// unexpected messages). Workaround: none; software matching, whose pool receives
    /// all carry a mask, is refused ([`crate::Messenger::enable_software_matching`]).
    UnexpectedIgnoresMask,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct QuirkEntry {
    /// The behaviour.
    pub quirk: Quirk,
    /// The provider name as libfabric reports it (`shm`, `net`, `tcp;ofi_rxm`, ...).
    pub provider: &'static str,
    /// First libfabric version `(major, minor)` that has it (inclusive).
    pub since: (u32, u32),
    /// First version that no longer has it (exclusive); `None`: not fixed yet.
    pub fixed_in: Option<(u32, u32)>,
    /// An environment variable the workaround sets (a user's value is kept).
    pub environment: Option<(&'static str, &'static str)>,
    /// Where the behaviour is described (upstream issue, or our test that shows it).
    pub reference: &'static str,
}

/// Every known quirk.
pub const QUIRKS: &[QuirkEntry] = &[
    QuirkEntry {
        quirk: Quirk::UnexpectedSarHangs,
        provider: "shm",
        since: (1, 0),
        fixed_in: Some((1, 19)),
        environment: None,
        reference: "ofiwg/libfabric#9143",
    },
    QuirkEntry {
        quirk: Quirk::DeadPeerHoldsRegionLock,
        provider: "shm",
        since: (1, 15),
        fixed_in: Some((1, 18)),
        environment: None,
        reference: "fabric/tests/failures.rs killed_receiver (about 1 run in 10 hung)",
    },
    QuirkEntry {
        quirk: Quirk::StopsReadingOnSavedMessages,
        provider: "net",
        since: (1, 17),
        fixed_in: None,
        environment: Some(("FI_NET_MAX_SAVED", "1048576")),
        reference: "fabric/tests/messaging.rs interleaved_tags",
    },
    QuirkEntry {
        quirk: Quirk::UnexpectedIgnoresMask,
        provider: "shm",
        since: (1, 0),
        fixed_in: None,
        environment: None,
        reference: "fabric/src/messenger/arrivals.rs more_messages_than_buffers (message 4 of 40 out of order on 1.17)",
    },
];

/// Which provider serves a request for `tcp`, best first, with the reason reported in
/// [`ProviderResolution::reason`](crate::ProviderResolution::reason): which one exists
/// depends on the libfabric version.
pub const TCP_CHOICES: &[(&str, &str)] = &[
    ("tcp", "native tcp RDM"),
    // One layer less than rxm over tcp MSG endpoints; needs
    // `Quirk::StopsReadingOnSavedMessages`'s environment.
    (
        "net",
        "native RDM over TCP (libfabric 1.17); no native tcp RDM",
    ),
    (
        "tcp;ofi_rxm",
        "tcp MSG endpoints under ofi_rxm; no native tcp RDM or net here",
    ),
];

impl QuirkEntry {
    /// Whether this row applies to `provider` at libfabric `version`.
    pub fn matches(&self, provider: &str, version: (u32, u32)) -> bool {
        self.provider == provider
            && version >= self.since
            && self.fixed_in.is_none_or(|fixed| version < fixed)
    }
}

/// Whether `quirk` applies to `provider` at libfabric `version` (`(major, minor)`, see
/// [`crate::libfabric_version`]).
pub fn applies(quirk: Quirk, provider: &str, version: (u32, u32)) -> bool {
    QUIRKS
        .iter()
        .any(|q| q.quirk == quirk && q.matches(provider, version))
}

/// The environment variables the workarounds need, for every provider (libfabric reads
/// them once, when it first loads its providers, before any provider is chosen).
pub fn environment() -> impl Iterator<Item = (&'static str, &'static str)> {
    QUIRKS.iter().filter_map(|q| q.environment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_rescue_is_for_shm_from_1_15_to_1_17() {
        let rescue = |v| applies(Quirk::DeadPeerHoldsRegionLock, "shm", v);
        assert!(rescue((1, 15)));
        assert!(rescue((1, 17)));
        assert!(!rescue((1, 14)));
        assert!(!rescue((1, 18)));
        assert!(!rescue((2, 0)));
        assert!(!applies(Quirk::DeadPeerHoldsRegionLock, "net", (1, 17)));
    }

    #[test]
    fn unfixed_quirks_apply_to_later_versions() {
        assert!(applies(Quirk::StopsReadingOnSavedMessages, "net", (1, 17)));
        assert!(applies(Quirk::StopsReadingOnSavedMessages, "net", (2, 3)));
        assert!(!applies(Quirk::StopsReadingOnSavedMessages, "net", (1, 16)));
        assert_eq!(
            environment().collect::<Vec<_>>(),
            [("FI_NET_MAX_SAVED", "1048576")]
        );
    }
}
