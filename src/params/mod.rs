//! Tunables, typed: every parameter has a name, a default, a bound and a doc line (the
//! table [`PARAMS`]), and a typed accessor on [`Params`].
//!
//! A value is set (first match wins) by the program ([`ParamsBuilder`],
//! [`Params::set`]), by the environment variable `STEADFAST_<NAME>`, by the params file
//! named in `STEADFAST_PARAM_FILE`, by `~/.steadfast/params.conf`, or is the default.
//! Files hold `name = value` lines (`#` starts a comment). One parser checks every
//! value, whatever its source, and its errors name the parameter, the value, the bound
//! and where the value came from (variable, or file and line). Nothing here panics on
//! bad input.
//!
//! Some parameters must be equal on every rank (route, provider, detector timings,
//! shared-memory protocol): `World::init` compares them across the job (see
//! [`consistency`]). A `STEADFAST_*` variable that is neither a parameter nor in
//! [`OTHER_VARIABLES`] is warned about (see [`environment`]).
//!
//! ```
//! use steadfast::params::{Params, RouteMode};
//! let params = Params::builder()
//!     .route(RouteMode::Fabric)
//!     .heartbeat_ms(100)
//!     .set("detect_timeout_ms", "5000")?
//!     .build()?;
//! assert_eq!(params.heartbeat(), std::time::Duration::from_millis(100));
//! // Bounds hold whatever the source.
//! assert!(Params::builder().heartbeat_ms(0).build().is_err());
//! # Ok::<(), steadfast::params::ParamError>(())
//! ```

pub mod consistency;
pub mod environment;
mod error;
mod spec;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use environment::{
    unknown_variables, warn_unknown_variables, UnknownVariable, OTHER_VARIABLES,
};
pub use error::{ParamError, Setting, Source};
pub use spec::{
    Bind, Detectors, Kind, ParamSpec, RouteMode, YieldWhenIdle, DETECT_TIMEOUT_MS_MAX,
    HEARTBEAT_MS_MAX, PARAMS, SHM_EAGER_MAX_MAX,
};

use spec::{canonical, index_of, Rejection};

/// The checked value of every parameter, with its source. Built by [`Params::load`],
/// [`Params::load_from`] or [`Params::builder`]; always within its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Canonical text and source of each parameter, in the order of [`PARAMS`].
    values: Vec<(String, Source)>,
    provider: String,
    domain: String,
    route: RouteMode,
    node_id: String,
    heartbeat_ms: u64,
    detect_timeout_ms: u64,
    detectors: Detectors,
    bind: Bind,
    yield_when_idle: YieldWhenIdle,
    progress_thread: bool,
    provider_environment: bool,
    pmi_failure_signal: bool,
    shm_eager_max: usize,
    shm_split_copy: bool,
}

/// Builds [`Params`]: start from the defaults ([`Params::builder`]), from the
/// environment and files ([`ParamsBuilder::from_env`]) or from existing parameters
/// ([`Params::to_builder`]); set values; [`build`](Self::build) checks them all.
#[derive(Debug, Clone)]
pub struct ParamsBuilder {
    values: Vec<(String, Source)>,
}

impl Default for ParamsBuilder {
    fn default() -> Self {
        ParamsBuilder {
            values: PARAMS
                .iter()
                .map(|p| (p.default.to_string(), Source::Default))
                .collect(),
        }
    }
}

/// Reads a params file into `values`.
fn apply_file(values: &mut [(String, Source)], path: &Path, text: &str) -> Result<(), ParamError> {
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let origin = Source::File {
            path: path.to_path_buf(),
            line: i + 1,
        };
        let Some((k, v)) = content.split_once('=') else {
            return Err(ParamError::BadLine {
                path: path.to_path_buf(),
                line: i + 1,
                text: content.to_string(),
            });
        };
        let name = k.trim().to_ascii_lowercase();
        let Some(at) = index_of(&name) else {
            return Err(unknown(name, origin));
        };
        values[at] = (v.trim().to_string(), origin);
    }
    Ok(())
}

fn unknown(name: String, origin: Source) -> ParamError {
    let suggestion = environment::nearest(&name, PARAMS.iter().map(|p| p.name.to_string()))
        .and_then(|n| index_of(&n))
        .map(|i| PARAMS[i].name);
    ParamError::Unknown {
        name,
        origin,
        suggestion,
    }
}

macro_rules! typed_setters {
    ($($(#[$m:meta])* $fn:ident: $ty:ty => |$v:ident| $text:expr;)+) => {
        $(
            $(#[$m])*
            pub fn $fn(mut self, $v: $ty) -> Self {
                self.put(stringify!($fn), $text);
                self
            }
        )+
    };
}

impl ParamsBuilder {
    /// The defaults, overridden by `~/.steadfast/params.conf`, then the file named by
    /// `STEADFAST_PARAM_FILE`, then the `STEADFAST_<NAME>` variables, with the
    /// environment given by `env` and the home directory by `home`.
    ///
    /// # Errors
    /// An unreadable `STEADFAST_PARAM_FILE`, a bad line or unknown name in a params
    /// file. Values are checked by [`build`](Self::build).
    pub fn from_env(
        env: impl Fn(&str) -> Option<String>,
        home: Option<PathBuf>,
    ) -> Result<Self, ParamError> {
        let mut b = ParamsBuilder::default();
        // Lowest precedence first: each layer overwrites the one before.
        if let Some(home) = home {
            let path = home.join(".steadfast/params.conf");
            if let Ok(text) = std::fs::read_to_string(&path) {
                apply_file(&mut b.values, &path, &text)?;
            }
        }
        if let Some(file) = env("STEADFAST_PARAM_FILE") {
            let path = PathBuf::from(file);
            let text = std::fs::read_to_string(&path).map_err(|error| ParamError::Unreadable {
                path: path.clone(),
                error,
            })?;
            apply_file(&mut b.values, &path, &text)?;
        }
        for (i, p) in PARAMS.iter().enumerate() {
            let var = p.env_var();
            if let Some(v) = env(&var) {
                b.values[i] = (v, Source::Env(var));
            }
        }
        Ok(b)
    }

    fn put(&mut self, name: &'static str, text: String) {
        if let Some(i) = index_of(name) {
            self.values[i] = (text, Source::Program);
        }
    }

    /// Sets parameter `name` from its text, as in a params file.
    ///
    /// # Errors
    /// [`ParamError::Unknown`] for a name not in [`PARAMS`] (with the nearest name);
    /// a bad value is reported by [`build`](Self::build).
    pub fn set(mut self, name: &str, value: impl Into<String>) -> Result<Self, ParamError> {
        let Some(i) = index_of(name) else {
            return Err(unknown(name.to_string(), Source::Program));
        };
        self.values[i] = (value.into(), Source::Program);
        Ok(self)
    }

    typed_setters! {
        /// The libfabric provider between nodes.
        provider: &str => |v| v.to_string();
        /// The libfabric domain between nodes (empty: chosen by the runtime).
        domain: &str => |v| v.to_string();
        /// How peers are reached.
        route: RouteMode => |v| v.word().to_string();
        /// This process's node identity (empty: hostname + boot id).
        node_id: &str => |v| v.to_string();
        /// Heartbeat period (1..=[`HEARTBEAT_MS_MAX`] ms).
        heartbeat_ms: u64 => |v| v.to_string();
        /// Detection timeout (above the heartbeat, at most [`DETECT_TIMEOUT_MS_MAX`] ms).
        detect_timeout_ms: u64 => |v| v.to_string();
        /// Which failure reports the rank consults.
        detectors: Detectors => |v| v.word().to_string();
        /// Core binding.
        bind: Bind => |v| v.word().to_string();
        /// Whether a waiting rank yields its core.
        yield_when_idle: YieldWhenIdle => |v| v.word().to_string();
        /// Whether a progress thread runs the engine.
        progress_thread: bool => |v| u8::from(v).to_string();
        /// Whether to set the provider workarounds' environment (see the parameter).
        provider_environment: bool => |v| u8::from(v).to_string();
        /// Whether to note Hydra's SIGUSR1 failure signal (see the parameter).
        pmi_failure_signal: bool => |v| u8::from(v).to_string();
        /// Largest message sent eagerly through the shared-memory ring (bytes).
        shm_eager_max: usize => |v| v.to_string();
        /// Whether senders share the copy of large shared-memory messages.
        shm_split_copy: bool => |v| u8::from(v).to_string();
    }

    /// Checks every value against its kind and bound, and the timeout against the
    /// heartbeat.
    ///
    /// # Errors
    /// The first bad value: [`ParamError::Malformed`], [`ParamError::OutOfBounds`] or
    /// [`ParamError::MustExceed`], naming the parameter, value, bound and source.
    pub fn build(self) -> Result<Params, ParamError> {
        let mut values = Vec::with_capacity(PARAMS.len());
        for (p, (text, origin)) in PARAMS.iter().zip(self.values) {
            match canonical(p, &text) {
                Ok(c) => values.push((c, origin)),
                Err(Rejection::Malformed(expected)) => {
                    return Err(ParamError::Malformed {
                        name: p.name,
                        value: text,
                        origin,
                        expected,
                    })
                }
                Err(Rejection::Bound(bound)) => {
                    return Err(ParamError::OutOfBounds {
                        name: p.name,
                        value: text.trim().to_string(),
                        origin,
                        bound,
                    })
                }
            }
        }
        Params::from_checked(values)
    }
}

impl Params {
    /// Builder from the defaults alone (the environment and files are not read).
    pub fn builder() -> ParamsBuilder {
        ParamsBuilder::default()
    }

    /// A builder holding these values and sources.
    pub fn to_builder(&self) -> ParamsBuilder {
        ParamsBuilder {
            values: self.values.clone(),
        }
    }

    /// Reads the environment and the params files (see the module doc), and warns
    /// through `log` about unknown `STEADFAST_*` variables.
    ///
    /// # Errors
    /// An unreadable STEADFAST_PARAM_FILE, a bad line in a params file, or a bad value
    /// (naming the parameter, value, bound and source).
    pub fn load() -> Result<Self, ParamError> {
        warn_unknown_variables();
        let env = |name: &str| std::env::var(name).ok();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::load_from(env, home)
    }

    /// As [`load`](Self::load), with the environment given by `env` and the home
    /// directory by `home` (for tests), without the unknown-variable warning.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_from(
        env: impl Fn(&str) -> Option<String>,
        home: Option<PathBuf>,
    ) -> Result<Self, ParamError> {
        ParamsBuilder::from_env(env, home)?.build()
    }

    /// Sets parameter `name` from the program (overrides every other source); on error
    /// the parameters are unchanged.
    ///
    /// # Errors
    /// An unknown name or a bad value, as [`ParamsBuilder::build`].
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        *self = self.to_builder().set(name, value)?.build()?;
        Ok(())
    }

    /// `values` hold canonical texts (checked by [`canonical`]): typed fields from them.
    fn from_checked(values: Vec<(String, Source)>) -> Result<Self, ParamError> {
        let at = |name: &str| -> &(String, Source) {
            // The table and this function name the same parameters (unit-tested).
            &values[index_of(name).unwrap_or(0)]
        };
        let text = |name: &str| at(name).0.clone();
        let number = |name: &str| at(name).0.parse::<u64>().unwrap_or_default();
        let on = |name: &str| at(name).0 == "1";
        let heartbeat_ms = number("heartbeat_ms");
        let detect_timeout_ms = number("detect_timeout_ms");
        if detect_timeout_ms <= heartbeat_ms {
            let setting = |name: &'static str| {
                let (value, origin) = at(name).clone();
                Box::new(Setting {
                    name,
                    value,
                    origin,
                })
            };
            return Err(ParamError::MustExceed {
                setting: setting("detect_timeout_ms"),
                other: setting("heartbeat_ms"),
            });
        }
        Ok(Params {
            provider: text("provider"),
            domain: text("domain"),
            route: RouteMode::from_word(&at("route").0).unwrap_or(RouteMode::Auto),
            node_id: text("node_id"),
            heartbeat_ms,
            detect_timeout_ms,
            detectors: Detectors::from_word(&at("detectors").0).unwrap_or(Detectors::All),
            bind: Bind::from_word(&at("bind").0).unwrap_or(Bind::Auto),
            yield_when_idle: YieldWhenIdle::from_word(&at("yield_when_idle").0)
                .unwrap_or(YieldWhenIdle::Auto),
            progress_thread: on("progress_thread"),
            provider_environment: on("provider_environment"),
            pmi_failure_signal: on("pmi_failure_signal"),
            // Bounded by SHM_EAGER_MAX_MAX (1 MiB): fits any usize.
            shm_eager_max: usize::try_from(number("shm_eager_max")).unwrap_or(usize::MAX),
            shm_split_copy: on("shm_split_copy"),
            values,
        })
    }

    /// The libfabric provider between nodes (`tcp`: the fastest TCP path).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The libfabric domain between nodes, if one is set.
    pub fn domain(&self) -> Option<&str> {
        Some(self.domain.as_str()).filter(|d| !d.is_empty())
    }

    /// How peers are reached.
    pub fn route(&self) -> RouteMode {
        self.route
    }

    /// This process's node identity, if one is set.
    pub fn node_id(&self) -> Option<&str> {
        Some(self.node_id.as_str()).filter(|d| !d.is_empty())
    }

    /// The failure detector's heartbeat period.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms)
    }

    /// The failure detector's heartbeat period in milliseconds.
    pub fn heartbeat_ms(&self) -> u64 {
        self.heartbeat_ms
    }

    /// Silence after which the watched rank is suspected (above the heartbeat).
    pub fn detect_timeout(&self) -> Duration {
        Duration::from_millis(self.detect_timeout_ms)
    }

    /// The detection timeout in milliseconds.
    pub fn detect_timeout_ms(&self) -> u64 {
        self.detect_timeout_ms
    }

    /// Which failure reports the rank consults.
    pub fn detectors(&self) -> Detectors {
        self.detectors
    }

    /// Core binding.
    pub fn bind(&self) -> Bind {
        self.bind
    }

    /// Whether a waiting rank yields its core.
    pub fn yield_when_idle(&self) -> YieldWhenIdle {
        self.yield_when_idle
    }

    /// Whether a progress thread runs the engine.
    pub fn progress_thread(&self) -> bool {
        self.progress_thread
    }

    /// Whether the library may set the provider workarounds' environment variables
    /// (`provider_environment`, default on).
    pub fn provider_environment(&self) -> bool {
        self.provider_environment
    }

    /// Whether, under PMI-1, the library notes Hydra's SIGUSR1 failure signal
    /// (`pmi_failure_signal`, default on).
    pub fn pmi_failure_signal(&self) -> bool {
        self.pmi_failure_signal
    }

    /// Largest message sent eagerly through the shared-memory ring, in bytes.
    pub fn shm_eager_max(&self) -> usize {
        self.shm_eager_max
    }

    /// Whether senders share the copy of large shared-memory messages.
    pub fn shm_split_copy(&self) -> bool {
        self.shm_split_copy
    }

    /// The canonical text of parameter `name` and its source, if it exists.
    pub fn get(&self, name: &str) -> Option<(&str, &Source)> {
        index_of(name).map(|i| (self.values[i].0.as_str(), &self.values[i].1))
    }

    /// Every parameter with its value, source and spec, in declaration order.
    pub fn listing(&self) -> Vec<(ParamSpec, String, Source)> {
        PARAMS
            .iter()
            .zip(&self.values)
            .map(|(p, (v, s))| (*p, v.clone(), s.clone()))
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

    fn scratch(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("steadfast-params-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".steadfast")).unwrap();
        dir
    }

    #[test]
    fn defaults_then_home_file_then_param_file_then_env() {
        let dir = scratch("layers");
        std::fs::write(
            dir.join(".steadfast/params.conf"),
            "# home\nprovider = net\nheartbeat_ms = 7\nbind = none\n",
        )
        .unwrap();
        let file = dir.join("job.conf");
        std::fs::write(&file, "bind = core # pinned\n").unwrap();
        let file_text: &'static str =
            Box::leak(file.to_string_lossy().to_string().into_boxed_str());
        let pairs: &'static [(&str, &str)] = Box::leak(Box::new([
            ("STEADFAST_HEARTBEAT_MS", "9"),
            ("STEADFAST_PARAM_FILE", file_text),
        ]));
        let p = Params::load_from(env_of(pairs), Some(dir.clone())).unwrap();
        assert_eq!(p.provider(), "net");
        assert_eq!(
            p.get("provider").unwrap().1,
            &Source::File {
                path: dir.join(".steadfast/params.conf"),
                line: 2
            }
        );
        assert_eq!(p.heartbeat_ms(), 9);
        assert_eq!(p.bind(), Bind::Core);
        assert_eq!(
            p.get("bind").unwrap().1,
            &Source::File {
                path: file,
                line: 1
            }
        );
        assert_eq!(p.get("route"), Some(("auto", &Source::Default)));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn typed_values_of_the_defaults() {
        let p = Params::builder().build().unwrap();
        assert_eq!(p.provider(), "tcp");
        assert_eq!(p.domain(), None);
        assert_eq!(p.route(), RouteMode::Auto);
        assert_eq!(p.node_id(), None);
        assert_eq!(p.heartbeat(), Duration::from_millis(50));
        assert_eq!(p.detect_timeout(), Duration::from_secs(2));
        assert_eq!(p.detectors(), Detectors::All);
        assert_eq!(p.bind(), Bind::Auto);
        assert_eq!(p.yield_when_idle(), YieldWhenIdle::Auto);
        assert!(!p.progress_thread());
        assert_eq!(p.shm_eager_max(), 65536);
        assert!(p.shm_split_copy());
    }

    #[test]
    fn typed_setters_reach_their_own_parameter() {
        let p = Params::builder()
            .provider("verbs")
            .domain("mlx5_0")
            .route(RouteMode::Fabric)
            .node_id("n1")
            .heartbeat_ms(10)
            .detect_timeout_ms(100)
            .detectors(Detectors::Heartbeat)
            .bind(Bind::Off)
            .yield_when_idle(YieldWhenIdle::Yield)
            .progress_thread(true)
            .provider_environment(false)
            .pmi_failure_signal(false)
            .shm_eager_max(8192)
            .shm_split_copy(false)
            .build()
            .unwrap();
        assert_eq!(
            (p.provider(), p.domain(), p.route(), p.node_id()),
            ("verbs", Some("mlx5_0"), RouteMode::Fabric, Some("n1"))
        );
        assert_eq!((p.heartbeat_ms(), p.detect_timeout_ms()), (10, 100));
        assert_eq!(
            (p.detectors(), p.bind(), p.yield_when_idle()),
            (Detectors::Heartbeat, Bind::Off, YieldWhenIdle::Yield)
        );
        assert!(p.progress_thread() && !p.shm_split_copy());
        assert!(!p.provider_environment() && !p.pmi_failure_signal());
        assert_eq!(p.shm_eager_max(), 8192);
        for (_, _, s) in p.listing() {
            assert_eq!(s, Source::Program);
        }
    }

    #[test]
    fn errors_name_the_parameter_value_bound_and_source() {
        let e = Params::load_from(env_of(&[("STEADFAST_DETECT_TIMEOUT_MS", "soon")]), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("detect_timeout_ms")
                && e.contains("STEADFAST_DETECT_TIMEOUT_MS")
                && e.contains("\"soon\""),
            "{e}"
        );
        let e = Params::load_from(env_of(&[("STEADFAST_ROUTE", "carrier-pigeon")]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("route") && e.contains("auto, fabric"), "{e}");
        // Issue 21: the values that made the detector panic.
        let e = Params::load_from(
            env_of(&[
                ("STEADFAST_HEARTBEAT_MS", "18446744073709"),
                ("STEADFAST_DETECT_TIMEOUT_MS", "18446744073710"),
            ]),
            None,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                ParamError::OutOfBounds {
                    name: "heartbeat_ms",
                    ..
                }
            ),
            "{e}"
        );
        let e = e.to_string();
        assert!(
            e.contains("18446744073709")
                && e.contains("1..=3600000 ms")
                && e.contains("STEADFAST_HEARTBEAT_MS"),
            "{e}"
        );
        // Values that used to wrap are errors too.
        let e = Params::load_from(
            env_of(&[("STEADFAST_SHM_EAGER_MAX", "18446744073709551616")]),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("out of bounds") && e.contains("shm_eager_max"),
            "{e}"
        );
    }

    #[test]
    fn the_timeout_must_exceed_the_heartbeat() {
        let e = Params::load_from(
            env_of(&[
                ("STEADFAST_HEARTBEAT_MS", "500"),
                ("STEADFAST_DETECT_TIMEOUT_MS", "500"),
            ]),
            None,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "parameter detect_timeout_ms = 500 (from environment STEADFAST_DETECT_TIMEOUT_MS) \
             must exceed heartbeat_ms = 500 (from environment STEADFAST_HEARTBEAT_MS)"
        );
    }

    #[test]
    fn set_never_panics_and_leaves_the_params_unchanged_on_error() {
        let mut p = Params::builder().build().unwrap();
        let before = p.clone();
        let e = p.set("heartbeet_ms", "10").unwrap_err();
        assert!(e.to_string().contains("did you mean heartbeat_ms?"), "{e}");
        assert!(p.set("heartbeat_ms", "-3").is_err());
        // Not above the heartbeat (50 ms).
        assert!(matches!(
            p.set("detect_timeout_ms", "10"),
            Err(ParamError::MustExceed { .. })
        ));
        assert_eq!(p, before);
        p.set("route", "fabric").unwrap();
        assert_eq!(p.route(), RouteMode::Fabric);
        assert_eq!(p.get("route").unwrap().1, &Source::Program);
    }

    #[test]
    fn bad_file_lines_are_errors_with_file_and_line() {
        let dir = scratch("badfile");
        let path = dir.join("pf.conf");
        std::fs::write(&path, "provider = tcp\nwarp_speed = 9\n").unwrap();
        let p = path.to_string_lossy().to_string();
        let env = move |k: &str| (k == "STEADFAST_PARAM_FILE").then(|| p.clone());
        let e = Params::load_from(env.clone(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pf.conf:2") && e.contains("warp_speed"), "{e}");
        std::fs::write(&path, "\n\nheartbeat_ms = 0\n").unwrap();
        let e = Params::load_from(env.clone(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pf.conf:3") && e.contains("1..=3600000"), "{e}");
        std::fs::write(&path, "just words\n").unwrap();
        let e = Params::load_from(env, None).unwrap_err().to_string();
        assert!(e.contains("pf.conf:1") && e.contains("name = value"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unreadable_param_file_is_named() {
        let env =
            |k: &str| (k == "STEADFAST_PARAM_FILE").then(|| "/nonexistent/x.conf".to_string());
        let e = Params::load_from(env, None).unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/x.conf") && e.contains("STEADFAST_PARAM_FILE"),
            "{e}"
        );
    }
}
