//! Where a value came from, and what can be wrong with one.

use std::path::PathBuf;

use super::consistency::Mismatch;

/// Where a parameter's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The built-in default.
    Default,
    /// The environment variable of that name.
    Env(String),
    /// A line of a params file.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// Set by the program itself ([`ParamsBuilder`](super::ParamsBuilder) or
    /// [`Params::set`](super::Params::set)).
    Program,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Env(v) => write!(f, "environment {v}"),
            Source::File { path, line } => write!(f, "file {}:{line}", path.display()),
            Source::Program => f.write_str("set by the program"),
        }
    }
}

/// One parameter's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Parameter name.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// Where it came from.
    pub origin: Source,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} (from {})", self.name, self.value, self.origin)
    }
}

/// A bad parameter, params file, or parameters that differ between ranks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// The value is not of the parameter's kind.
    #[error("parameter {name} = {value:?} (from {origin}): expected {expected}")]
    Malformed {
        /// Parameter name.
        name: &'static str,
        /// The text given.
        value: String,
        /// Where it came from.
        origin: Source,
        /// What was expected.
        expected: String,
    },
    /// The value is of the right kind but outside the parameter's bound.
    #[error("parameter {name} = {value} (from {origin}) is out of bounds: {bound}")]
    OutOfBounds {
        /// Parameter name.
        name: &'static str,
        /// The text given.
        value: String,
        /// Where it came from.
        origin: Source,
        /// The bound (`1..=3600000 ms`).
        bound: String,
    },
    /// Two parameters' values contradict each other.
    #[error("parameter {setting} must exceed {other}")]
    MustExceed {
        /// The parameter.
        setting: Box<Setting>,
        /// The parameter it must exceed.
        other: Box<Setting>,
    },
    /// No parameter has this name.
    #[error("unknown parameter {name:?} (from {origin}){}", suggestion.map(|s| format!("; did you mean {s}?")).unwrap_or_default())]
    Unknown {
        /// The name given.
        name: String,
        /// Where it came from.
        origin: Source,
        /// The nearest known name, if one is close.
        suggestion: Option<&'static str>,
    },
    /// A params file line that is not `name = value`.
    #[error("params file {}:{line}: expected name = value, got {text:?}", path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// A params file named by STEADFAST_PARAM_FILE cannot be read.
    #[error("params file {} (from STEADFAST_PARAM_FILE): {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        error: std::io::Error,
    },
    /// Parameters that must agree across the job differ between ranks.
    #[error("parameters differ between ranks (every rank must use the same): {}", list(.0))]
    Inconsistent(Vec<Mismatch>),
}

fn list(m: &[Mismatch]) -> String {
    m.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
