//! The table of parameters: name, default, kinds and bounds, doc line, and whether every
//! rank of a job must hold the same value. One table: the parser, `steadfast-info`, the
//! start-up consistency check and the unknown-variable warning all read it.

/// One tunable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Lower-case name (`provider`); the variable is `STEADFAST_PROVIDER`.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// One line of documentation.
    pub doc: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Whether every rank must hold the same value (compared by `World::init`).
    pub must_agree: bool,
}

impl ParamSpec {
    /// The environment variable that sets it: `STEADFAST_<NAME>`.
    pub fn env_var(&self) -> String {
        format!("STEADFAST_{}", self.name.to_ascii_uppercase())
    }
}

/// The values a parameter takes, with their bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// Text of at most `max_len` bytes without control characters.
    Text {
        /// Longest accepted value in bytes.
        max_len: usize,
    },
    /// An unsigned integer in `min..=max`.
    Number {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
        /// The unit, for messages (`ms`, `bytes`).
        unit: &'static str,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Text { max_len } => write!(f, "text of at most {max_len} bytes"),
            Kind::Number { min, max, unit } => write!(f, "{min}..={max} {unit}"),
            Kind::Choice(words) => write!(f, "one of {}", words.join(", ")),
        }
    }
}

/// Defines a closed set of words for a choice parameter.
macro_rules! choice_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $word:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vm])* $var,)+
        }

        impl $name {
            /// Every accepted word, in declaration order.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The parameter's word for this value.
            pub fn word(self) -> &'static str {
                match self {
                    $(Self::$var => $word,)+
                }
            }

            /// The value `word` names, if any.
            pub fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some(Self::$var),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.word())
            }
        }
    };
}

choice_enum! {
    /// How peers are reached (parameter `route`).
    RouteMode {
        /// Shared memory within a node, the fabric between nodes.
        Auto = "auto",
        /// The fabric for every peer.
        Fabric = "fabric",
    }
}

choice_enum! {
    /// Which failure reports a rank consults (parameter `detectors`).
    Detectors {
        /// Local pids, the launcher's reports, transport errors and heartbeats.
        All = "all",
        /// The launcher's reports and heartbeats.
        Launcher = "launcher",
        /// Heartbeats alone (to measure each path).
        Heartbeat = "heartbeat",
    }
}

choice_enum! {
    /// Whether a rank pins itself to a core (parameter `bind`).
    Bind {
        /// `Core` unless the host runs more ranks than it has cores.
        Auto = "auto",
        /// No pinning.
        Off = "none",
        /// Pin to one of the CPUs the rank may use, spread over the host's ranks.
        Core = "core",
    }
}

choice_enum! {
    /// Whether a waiting rank yields its core (parameter `yield_when_idle`).
    YieldWhenIdle {
        /// Yield when the node runs more ranks than it has cores.
        Auto = "auto",
        /// Spin first.
        Spin = "0",
        /// Yield at every poll.
        Yield = "1",
    }
}

/// `0` or `1`.
pub(crate) const SWITCH: &[&str] = &["0", "1"];

/// Longest heartbeat period: one hour (a period beyond it detects nothing useful).
pub const HEARTBEAT_MS_MAX: u64 = 3_600_000;
/// Longest detection timeout: one day.
pub const DETECT_TIMEOUT_MS_MAX: u64 = 86_400_000;
/// Largest eager size through the shared-memory ring: 1 MiB (the ring holds 16 KiB;
/// beyond a few ring sizes eager only stalls the sender).
pub const SHM_EAGER_MAX_MAX: u64 = 1 << 20;

/// Every parameter the runtime reads.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "provider",
        default: "tcp",
        doc: "libfabric provider between nodes (tcp resolves to the fastest TCP path)",
        kind: Kind::Text { max_len: 64 },
        must_agree: true,
    },
    ParamSpec {
        name: "domain",
        default: "",
        doc: "libfabric domain (interface) between nodes; empty: lo for socket providers on one host, else the provider's first",
        kind: Kind::Text { max_len: 64 },
        // Interfaces may be named differently on different nodes.
        must_agree: false,
    },
    ParamSpec {
        name: "route",
        default: "auto",
        doc: "auto: shm within a node, fabric between nodes; fabric: fabric for every peer",
        kind: Kind::Choice(RouteMode::WORDS),
        must_agree: true,
    },
    ParamSpec {
        name: "node_id",
        default: "",
        doc: "this process's node identity (default: hostname + boot id); ranks with equal ids share memory",
        kind: Kind::Text { max_len: 255 },
        must_agree: false,
    },
    ParamSpec {
        name: "heartbeat_ms",
        default: "50",
        doc: "failure detector: heartbeat period in milliseconds",
        kind: Kind::Number {
            min: 1,
            max: HEARTBEAT_MS_MAX,
            unit: "ms",
        },
        must_agree: true,
    },
    ParamSpec {
        name: "detect_timeout_ms",
        default: "2000",
        doc: "failure detector: silence after which the watched rank is suspected (ms, above heartbeat_ms)",
        kind: Kind::Number {
            min: 2,
            max: DETECT_TIMEOUT_MS_MAX,
            unit: "ms",
        },
        must_agree: true,
    },
    ParamSpec {
        name: "detectors",
        default: "all",
        doc: "all: pidfd, launcher reports, transport errors and heartbeats; launcher: the launcher's reports and heartbeats; heartbeat: heartbeats alone (to measure each path)",
        kind: Kind::Choice(Detectors::WORDS),
        // Only which reports this rank reads; the heartbeat ring runs on every rank.
        must_agree: false,
    },
    ParamSpec {
        name: "bind",
        default: "auto",
        doc: "core: pin each rank to one of the CPUs it may use (spread over the host's ranks); none; auto: core unless the host runs more ranks than cores",
        kind: Kind::Choice(Bind::WORDS),
        must_agree: false,
    },
    ParamSpec {
        name: "yield_when_idle",
        default: "auto",
        doc: "1: a waiting rank yields its core at every poll; 0: spins first; auto: 1 when this node runs more ranks than it has cores",
        kind: Kind::Choice(YieldWhenIdle::WORDS),
        must_agree: false,
    },
    ParamSpec {
        name: "progress_thread",
        default: "0",
        doc: "1: a thread runs the engine (heartbeats, failure reports) while the application computes outside the library",
        kind: Kind::Choice(SWITCH),
        must_agree: false,
    },
    ParamSpec {
        name: "provider_environment",
        default: "1",
        doc: "1: before libfabric first loads its providers, set the variables the provider workarounds need (FI_NET_MAX_SAVED for net) unless already set; 0: leave the environment alone",
        kind: Kind::Choice(SWITCH),
        must_agree: false,
    },
    ParamSpec {
        name: "pmi_failure_signal",
        default: "1",
        doc: "1: under PMI-1 (Hydra), note Hydra's SIGUSR1 failure signal instead of dying of it, unless the program set its own disposition; 0: leave SIGUSR1 alone",
        kind: Kind::Choice(SWITCH),
        must_agree: false,
    },
    ParamSpec {
        name: "shm_eager_max",
        default: "65536",
        doc: "largest message copied through the shared-memory ring (larger: single copy); at most what a ring holds whole (about 124 KiB up to 33 local ranks, less beyond)",
        kind: Kind::Number {
            min: 0,
            max: SHM_EAGER_MAX_MAX,
            unit: "bytes",
        },
        must_agree: true,
    },
    ParamSpec {
        name: "shm_split_copy",
        default: "1",
        doc: "1: a sender waiting on a large shared-memory send copies part of it (two cores copy); 0: the receiver copies alone",
        kind: Kind::Choice(SWITCH),
        // The sender offers the split and the receiver takes it up: one protocol.
        must_agree: true,
    },
];

/// The index of parameter `name` in [`PARAMS`].
pub(crate) fn index_of(name: &str) -> Option<usize> {
    PARAMS.iter().position(|p| p.name == name)
}

/// Checks `text` against `spec` and returns its canonical form (numbers without
/// leading zeros or blanks), or what was expected and whether it was a bound that failed.
pub(crate) fn canonical(spec: &ParamSpec, text: &str) -> Result<String, Rejection> {
    let text = text.trim();
    match spec.kind {
        Kind::Text { max_len } => {
            if text.len() > max_len {
                Err(Rejection::Bound(format!("at most {max_len} bytes")))
            } else if text.chars().any(char::is_control) {
                Err(Rejection::Malformed(
                    "text without control characters".into(),
                ))
            } else {
                Ok(text.to_string())
            }
        }
        Kind::Number { min, max, unit } => {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Rejection::Malformed(format!(
                    "an unsigned integer in {min}..={max} {unit}"
                )));
            }
            match text.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n.to_string()),
                _ => Err(Rejection::Bound(format!("{min}..={max} {unit}"))),
            }
        }
        Kind::Choice(words) => {
            if words.contains(&text) {
                Ok(text.to_string())
            } else {
                Err(Rejection::Malformed(format!("one of {}", words.join(", "))))
            }
        }
    }
}

/// Why [`canonical`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not of the parameter's kind; what was expected.
    Malformed(String),
    /// Of the right kind but outside its bound; the bound.
    Bound(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_names_unique() {
        for (i, p) in PARAMS.iter().enumerate() {
            assert_eq!(
                canonical(p, p.default).as_deref(),
                Ok(p.default),
                "{}",
                p.name
            );
            assert_eq!(index_of(p.name), Some(i), "{} twice", p.name);
            assert_eq!(p.name, p.name.to_ascii_lowercase());
        }
    }

    #[test]
    fn numbers_are_bounded_and_canonical() {
        let hb = &PARAMS[index_of("heartbeat_ms").unwrap()];
        assert_eq!(canonical(hb, " 007 ").as_deref(), Ok("7"));
        assert_eq!(
            canonical(hb, "0"),
            Err(Rejection::Bound("1..=3600000 ms".into()))
        );
        assert_eq!(
            canonical(hb, "18446744073709"),
            Err(Rejection::Bound("1..=3600000 ms".into()))
        );
        // Beyond u64: still a bound, not a wrap.
        assert_eq!(
            canonical(hb, "99999999999999999999999"),
            Err(Rejection::Bound("1..=3600000 ms".into()))
        );
        assert!(matches!(canonical(hb, "-1"), Err(Rejection::Malformed(_))));
        assert!(matches!(canonical(hb, "5ms"), Err(Rejection::Malformed(_))));
    }

    #[test]
    fn text_is_bounded_and_single_line() {
        let p = &PARAMS[index_of("provider").unwrap()];
        assert!(matches!(
            canonical(p, &"x".repeat(65)),
            Err(Rejection::Bound(_))
        ));
        assert!(matches!(
            canonical(p, "tcp\nverbs"),
            Err(Rejection::Malformed(_))
        ));
    }

    #[test]
    fn choice_words_round_trip() {
        for w in RouteMode::WORDS {
            assert_eq!(RouteMode::from_word(w).unwrap().word(), *w);
        }
        assert_eq!(YieldWhenIdle::from_word("1"), Some(YieldWhenIdle::Yield));
        assert_eq!(Bind::from_word("none"), Some(Bind::Off));
        assert_eq!(Detectors::from_word("pigeon"), None);
    }
}
