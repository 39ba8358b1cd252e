//! Tunables: every parameter has a name, a default and a doc line, and is set (first
//! match wins) by the environment variable `STEADFAST_<NAME>`, by the params file named
//! in `STEADFAST_PARAM_FILE`, or by `~/.steadfast/params.conf`. Files hold `name = value`
//! lines (`#` starts a comment). A value that does not parse is an error naming the
//! parameter and where the value came from.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One tunable.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// Lower-case name (`provider`); the variable is `STEADFAST_PROVIDER`.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// One line of documentation.
    pub doc: &'static str,
    /// What values it takes.
    pub kind: Kind,
}

/// The values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any text.
    Text,
    /// An unsigned integer.
    Number,
    /// One of these words.
    Choice(&'static [&'static str]),
}

/// Every parameter the runtime reads.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "provider",
        default: "tcp",
        doc: "libfabric provider between nodes (tcp resolves to the fastest TCP path)",
        kind: Kind::Text,
    },
    ParamSpec {
        name: "domain",
        default: "",
        doc: "libfabric domain (interface) between nodes; empty: lo for socket providers on one host, else the provider's first",
        kind: Kind::Text,
    },
    ParamSpec {
        name: "route",
        default: "auto",
        doc: "auto: shm within a node, fabric between nodes; fabric: fabric for every peer",
        kind: Kind::Choice(&["auto", "fabric"]),
    },
    ParamSpec {
        name: "node_id",
        default: "",
        doc: "this process's node identity (default: hostname + boot id); ranks with equal ids share memory",
        kind: Kind::Text,
    },
    ParamSpec {
        name: "heartbeat_ms",
        default: "50",
        doc: "failure detector: heartbeat period in milliseconds",
        kind: Kind::Number,
    },
    ParamSpec {
        name: "detect_timeout_ms",
        default: "2000",
        doc: "failure detector: silence after which the watched rank is suspected (ms)",
        kind: Kind::Number,
    },
    ParamSpec {
        name: "detectors",
        default: "all",
        doc: "all: pidfd, launcher reports, transport errors and heartbeats; launcher: the launcher's reports and heartbeats; heartbeat: heartbeats alone (to measure each path)",
        kind: Kind::Choice(&["all", "launcher", "heartbeat"]),
    },
    ParamSpec {
        name: "bind",
        default: "auto",
        doc: "core: pin each rank to one of the CPUs it may use (spread over the host's ranks); none; auto: core unless the host runs more ranks than cores",
        kind: Kind::Choice(&["auto", "none", "core"]),
    },
    ParamSpec {
        name: "yield_when_idle",
        default: "auto",
        doc: "1: a waiting rank yields its core at every poll; 0: spins first; auto: 1 when this node runs more ranks than it has cores",
        kind: Kind::Choice(&["auto", "0", "1"]),
    },
    ParamSpec {
        name: "progress_thread",
        default: "0",
        doc: "1: a thread runs the engine (heartbeats, failure reports) while the application computes outside the library",
        kind: Kind::Choice(&["0", "1"]),
    },
    ParamSpec {
        name: "shm_eager_max",
        default: "4096",
        doc: "largest message copied through the shared-memory ring (larger: single copy)",
        kind: Kind::Number,
    },
    ParamSpec {
        name: "shm_split_copy",
        default: "1",
        doc: "1: a sender waiting on a large shared-memory send copies part of it (two cores copy); 0: the receiver copies alone",
        kind: Kind::Choice(&["0", "1"]),
    },
];

/// Where a parameter's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The environment variable.
    Env(String),
    /// A params file.
    File(PathBuf),
    /// Set by the program itself ([`Params::set`]).
    Program,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Env(v) => write!(f, "environment {v}"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Program => f.write_str("set by the program"),
        }
    }
}

/// A bad parameter value or params file.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    /// The value does not parse.
    #[error("parameter {name} = {value:?} (from {origin}): {why}")]
    BadValue {
        /// Parameter name.
        name: &'static str,
        /// The text given.
        value: String,
        /// Where it came from.
        origin: Source,
        /// What was expected.
        why: String,
    },
    /// A params file names a parameter that does not exist, or has a bad line.
    #[error("params file {path}, line {line}: {why}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A params file named by STEADFAST_PARAM_FILE cannot be read.
    #[error("params file {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The resolved value of every parameter, with its source.
#[derive(Debug, Clone)]
pub struct Params {
    values: HashMap<&'static str, (String, Source)>,
}

fn parse_file(path: &Path, text: &str) -> Result<Vec<(&'static str, String)>, ParamError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| ParamError::BadFile {
            path: path.to_path_buf(),
            line: i + 1,
            why,
        };
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| bad(format!("expected name = value, got {line:?}")))?;
        let k = k.trim().to_ascii_lowercase();
        let spec = PARAMS
            .iter()
            .find(|p| p.name == k)
            .ok_or_else(|| bad(format!("unknown parameter {k:?}")))?;
        out.push((spec.name, v.trim().to_string()));
    }
    Ok(out)
}

impl Params {
    /// Reads the environment and the params files.
    ///
    /// # Errors
    /// An unreadable STEADFAST_PARAM_FILE, or a bad line in a params file.
    pub fn load() -> Result<Self, ParamError> {
        let env = |name: &str| std::env::var(name).ok();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::load_from(env, home)
    }

    /// As [`load`](Self::load), with the environment given by `env` and the home
    /// directory by `home` (for tests).
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_from(
        env: impl Fn(&str) -> Option<String>,
        home: Option<PathBuf>,
    ) -> Result<Self, ParamError> {
        let mut values: HashMap<&'static str, (String, Source)> = PARAMS
            .iter()
            .map(|p| (p.name, (p.default.to_string(), Source::Default)))
            .collect();
        // Lowest precedence first: each layer overwrites the one before.
        if let Some(home) = home {
            let path = home.join(".steadfast/params.conf");
            if let Ok(text) = std::fs::read_to_string(&path) {
                for (k, v) in parse_file(&path, &text)? {
                    values.insert(k, (v, Source::File(path.clone())));
                }
            }
        }
        if let Some(file) = env("STEADFAST_PARAM_FILE") {
            let path = PathBuf::from(file);
            let text = std::fs::read_to_string(&path).map_err(|source| ParamError::Unreadable {
                path: path.clone(),
                source,
            })?;
            for (k, v) in parse_file(&path, &text)? {
                values.insert(k, (v, Source::File(path.clone())));
            }
        }
        for p in PARAMS {
            let var = format!("STEADFAST_{}", p.name.to_ascii_uppercase());
            if let Some(v) = env(&var) {
                values.insert(p.name, (v, Source::Env(var)));
            }
        }
        Ok(Params { values })
    }

    /// Sets parameter `name` from the program (overrides every other source).
    ///
    /// # Panics
    /// If `name` is not in [`PARAMS`] (a programming error).
    pub fn set(&mut self, name: &str, value: &str) {
        let spec = PARAMS
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("unknown parameter {name}"));
        self.values
            .insert(spec.name, (value.to_string(), Source::Program));
    }

    /// The text of parameter `name` and its source.
    ///
    /// # Panics
    /// If `name` is not in [`PARAMS`] (a programming error).
    pub fn raw(&self, name: &str) -> (&str, &Source) {
        let (v, s) = self
            .values
            .get(name)
            .unwrap_or_else(|| panic!("unknown parameter {name}"));
        (v, s)
    }

    /// Parameter `name` as text.
    pub fn text(&self, name: &str) -> &str {
        self.raw(name).0
    }

    /// Parameter `name` parsed as an unsigned number.
    ///
    /// # Errors
    /// [`ParamError::BadValue`] naming the parameter.
    pub fn number(&self, name: &'static str) -> Result<u64, ParamError> {
        let (v, s) = self.raw(name);
        v.trim().parse().map_err(|_| ParamError::BadValue {
            name,
            value: v.to_string(),
            origin: s.clone(),
            why: "expected an unsigned integer".into(),
        })
    }

    /// Parameter `name` as one of `choices`.
    ///
    /// # Errors
    /// [`ParamError::BadValue`] naming the parameter and the choices.
    pub fn choice(&self, name: &'static str, choices: &[&str]) -> Result<&str, ParamError> {
        let (v, s) = self.raw(name);
        if choices.contains(&v) {
            Ok(v)
        } else {
            Err(ParamError::BadValue {
                name,
                value: v.to_string(),
                origin: s.clone(),
                why: format!("expected one of {}", choices.join(", ")),
            })
        }
    }

    /// Checks every parameter's value against its kind.
    ///
    /// # Errors
    /// The first [`ParamError::BadValue`], naming the parameter and its source.
    pub fn validate(&self) -> Result<(), ParamError> {
        for p in PARAMS {
            match p.kind {
                Kind::Text => {}
                Kind::Number => {
                    self.number(p.name)?;
                }
                Kind::Choice(choices) => {
                    self.choice(p.name, choices)?;
                }
            }
        }
        Ok(())
    }

    /// Every parameter with its value, source and doc line, in declaration order.
    pub fn listing(&self) -> Vec<(ParamSpec, String, Source)> {
        PARAMS
            .iter()
            .map(|p| {
                let (v, s) = self.raw(p.name);
                (*p, v.to_string(), s.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn defaults_then_file_then_env() {
        let dir = std::env::temp_dir().join(format!("steadfast-params-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".steadfast")).unwrap();
        std::fs::write(
            dir.join(".steadfast/params.conf"),
            "# home\nprovider = net\nheartbeat_ms = 7\n",
        )
        .unwrap();
        let p = Params::load_from(
            env_of(&[("STEADFAST_HEARTBEAT_MS", "9")]),
            Some(dir.clone()),
        )
        .unwrap();
        assert_eq!(p.text("provider"), "net");
        assert!(matches!(p.raw("provider").1, Source::File(_)));
        assert_eq!(p.number("heartbeat_ms").unwrap(), 9);
        assert_eq!(p.raw("route"), ("auto", &Source::Default));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_value_names_the_parameter_and_source() {
        let p =
            Params::load_from(env_of(&[("STEADFAST_DETECT_TIMEOUT_MS", "soon")]), None).unwrap();
        let e = p.number("detect_timeout_ms").unwrap_err().to_string();
        assert!(
            e.contains("detect_timeout_ms") && e.contains("STEADFAST_DETECT_TIMEOUT_MS"),
            "{e}"
        );
        let p = Params::load_from(env_of(&[("STEADFAST_ROUTE", "carrier-pigeon")]), None).unwrap();
        let e = p
            .choice("route", &["auto", "fabric"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("route") && e.contains("auto, fabric"), "{e}");
    }

    #[test]
    fn bad_file_line_is_an_error_with_its_line() {
        let path = std::env::temp_dir().join(format!("steadfast-pf-{}", std::process::id()));
        std::fs::write(&path, "provider = tcp\nwarp_speed = 9\n").unwrap();
        let p = path.to_string_lossy().to_string();
        let env = move |k: &str| (k == "STEADFAST_PARAM_FILE").then(|| p.clone());
        let e = Params::load_from(env, None).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("warp_speed"), "{e}");
        std::fs::remove_file(path).unwrap();
    }
}
