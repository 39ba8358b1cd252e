//! The `STEADFAST_*` environment variables that are not parameters, and the warning for
//! the ones nobody reads (a misspelt parameter would otherwise be ignored silently).
//!
//! Policy: a `STEADFAST_*` variable is either a parameter (`STEADFAST_<NAME>` of
//! [`PARAMS`]) or listed in [`OTHER_VARIABLES`] with its reader; anything else draws one
//! warning through the `log` facade, naming the variable and the nearest known name. It
//! is a warning, not an error: a newer or older steadfast, a test harness or a wrapper
//! script may legitimately leave variables this version does not know.

use super::spec::PARAMS;

/// `STEADFAST_*` variables that are not parameters, each with who reads it.
pub const OTHER_VARIABLES: &[(&str, &str)] = &[
    (
        "STEADFAST_PARAM_FILE",
        "the params file to read (see the module doc)",
    ),
    (
        "STEADFAST_RUN_ADDR",
        "steadfast-run -> rank: the launcher's bootstrap address",
    ),
    (
        "STEADFAST_RUN_SECRET",
        "steadfast-run -> rank: the job's bootstrap secret",
    ),
    (
        "STEADFAST_RANK",
        "steadfast-run -> rank: this process's rank",
    ),
    (
        "STEADFAST_SIZE",
        "steadfast-run -> rank: the job's number of ranks",
    ),
    ("STEADFAST_JOB_ID", "steadfast-run -> rank: the job's id"),
    (
        "STEADFAST_JOB_RANKS",
        "steadfast-run -> rank: ranks started with the job (the rest of the universe are spare slots for spawn)",
    ),
    (
        "STEADFAST_GENERATION",
        "steadfast-run -> restarted rank: its incarnation (0 or unset on first start)",
    ),
    (
        "STEADFAST_PMIX_JOB",
        "PMIx restarter -> restarted rank: the namespace of the job it rejoins",
    ),
    (
        "STEADFAST_PMIX_RANK",
        "PMIx restarter -> restarted rank: its rank in that job",
    ),
    (
        "STEADFAST_INITIAL_ERRHANDLER",
        "steadfast-run -> rank: the error handler the job starts with",
    ),
    (
        "STEADFAST_WITH_FT",
        "steadfast-run -> rank: --with-ft (ulfm, mpi or no), read by libsteadfast-mpi",
    ),
    (
        "STEADFAST_TEST_CUT",
        "tests/netns.rs: the command that cuts a test network",
    ),
    (
        "STEADFAST_SIM_SEED",
        "agreement simulator tests: replay one seed",
    ),
    (
        "STEADFAST_SIM_SEEDS",
        "agreement simulator tests: number of seeds",
    ),
    (
        "STEADFAST_FUZZ_CASES",
        "decoder fuzz tests: number of cases",
    ),
    (
        "STEADFAST_OMPI_VENV",
        "benches/compare/run.sh: where Open MPI's venv lives",
    ),
    (
        "STEADFAST_LIBFABRIC_BUILD_VERSION",
        "fabric/sys build script: the libfabric version built against",
    ),
];

/// A `STEADFAST_*` variable that is neither a parameter nor in [`OTHER_VARIABLES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVariable {
    /// The variable.
    pub name: String,
    /// The closest known variable, when it is close enough to be a misspelling.
    pub nearest: Option<String>,
}

impl std::fmt::Display for UnknownVariable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown environment variable {} ignored", self.name)?;
        match &self.nearest {
            Some(n) => write!(f, " (did you mean {n}?)"),
            None => write!(
                f,
                " (not a steadfast parameter; see steadfast-info --params)"
            ),
        }
    }
}

/// Every variable steadfast knows: the parameters' and [`OTHER_VARIABLES`].
fn known() -> impl Iterator<Item = String> {
    PARAMS
        .iter()
        .map(|p| p.env_var())
        .chain(OTHER_VARIABLES.iter().map(|(n, _)| n.to_string()))
}

/// The `STEADFAST_*` names among `names` that steadfast does not know, each with its
/// nearest known name.
///
/// ```
/// use steadfast::params::unknown_variables;
/// let names = ["STEADFAST_HEARTBEET_MS", "STEADFAST_RANK", "PATH"].map(String::from);
/// let unknown = unknown_variables(names);
/// assert_eq!(unknown.len(), 1);
/// assert_eq!(unknown[0].nearest.as_deref(), Some("STEADFAST_HEARTBEAT_MS"));
/// ```
pub fn unknown_variables(names: impl IntoIterator<Item = String>) -> Vec<UnknownVariable> {
    names
        .into_iter()
        .filter(|n| n.starts_with("STEADFAST_") && !known().any(|k| k == *n))
        .map(|name| {
            let nearest = nearest(&name, known());
            UnknownVariable { name, nearest }
        })
        .collect()
}

/// Warns (through `log`) about every unknown `STEADFAST_*` variable of this process's
/// environment; returns them.
pub fn warn_unknown_variables() -> Vec<UnknownVariable> {
    let names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    let unknown = unknown_variables(names);
    for u in &unknown {
        log::warn!("{u}");
    }
    unknown
}

/// The candidate closest to `name` by edit distance, if within a third of its length
/// (at least 2 edits): close enough to be a typo rather than another word.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl Iterator<Item = String> + 'a,
) -> Option<String> {
    let limit = (name.len() / 3).max(2);
    candidates
        .map(|c| (edit_distance(name, &c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (the names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn misspellings_get_the_nearest_name_and_known_names_pass() {
        let names = [
            "STEADFAST_ROUTE",
            "STEADFAST_RUN_SECRET",
            "STEADFAST_PARAM_FILE",
            "STEADFAST_DETECT_TIMOUT_MS",
            "STEADFAST_PROVIDR",
            "STEADFAST_COFFEE_MACHINE",
            "HOME",
        ]
        .map(String::from);
        let u = unknown_variables(names);
        assert_eq!(
            u,
            vec![
                UnknownVariable {
                    name: "STEADFAST_DETECT_TIMOUT_MS".into(),
                    nearest: Some("STEADFAST_DETECT_TIMEOUT_MS".into()),
                },
                UnknownVariable {
                    name: "STEADFAST_PROVIDR".into(),
                    nearest: Some("STEADFAST_PROVIDER".into()),
                },
                UnknownVariable {
                    name: "STEADFAST_COFFEE_MACHINE".into(),
                    nearest: None,
                },
            ]
        );
        assert!(u[0]
            .to_string()
            .contains("did you mean STEADFAST_DETECT_TIMEOUT_MS"));
    }

    #[test]
    fn every_variable_read_in_the_runtime_is_known() {
        // The launcher's exports (src/bin/steadfast-run.rs) and the bootstrap's reads.
        for v in [
            "STEADFAST_RUN_ADDR",
            "STEADFAST_RUN_SECRET",
            "STEADFAST_RANK",
            "STEADFAST_SIZE",
            "STEADFAST_JOB_ID",
            "STEADFAST_JOB_RANKS",
            "STEADFAST_GENERATION",
        ] {
            assert!(unknown_variables([v.to_string()]).is_empty(), "{v}");
        }
    }
}
