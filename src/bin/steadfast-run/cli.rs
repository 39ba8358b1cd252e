//! The command line of `steadfast-run`, parsed with clap, and its checks against what
//! the system allows.

use clap::{Parser, ValueEnum};

/// The exit-status policy text, shown by `--help`.
const AFTER_HELP: &str = "\
Exit status:
  --exit-status any-failure (default): 0 when every rank exited 0, else 1.
  --exit-status survivors (the default when --with-ft ulfm or mpi is given, as
      Open MPI's mpiexec under --with-ft; ULFM test scripts judge a job by it): for
      jobs in which ranks die on purpose (fault-tolerance tests and demos): ranks
      killed by a signal are the dead and are not counted; the job's status is that
      of its survivors, the ranks that exited: 0 when every survivor exited 0, else
      the first non-zero status (by rank); 1 when no rank survived. Either way the
      summary on stderr names every rank that failed and how.
  2: a usage error (nothing started).

Environment given to every rank: STEADFAST_RUN_ADDR, STEADFAST_RUN_SECRET,
STEADFAST_RANK, STEADFAST_SIZE, STEADFAST_JOB_ID, STEADFAST_WITH_FT (ulfm, mpi or no,
from --with-ft); STEADFAST_INITIAL_ERRHANDLER with --initial-errhandler;
IPATH_NO_BACKTRACE=1 and HFI_NO_BACKTRACE=1 unless set (so a rank killed by a signal
is reported as killed by it); FI_OFI_RXM_MSG_RX_SIZE/TX_SIZE=32 unless set;
STEADFAST_GENERATION in a restarted rank (1 for its first restart).
STEADFAST_SIZE is the universe (--universe, default N) and STEADFAST_JOB_RANKS is N:
world ranks N and up are spare slots, started by MPI_Comm_spawn (docs/spawn.md).

Spawners (how ranks are started, and restarted when a survivor asks: see
docs/restart.md):
  fork: every rank is a child of steadfast-run (it dies with it).
  slurm: inside a Slurm allocation (salloc, sbatch), every rank and every restarted
      incarnation is a job step of one task on this node: srun --jobid=$SLURM_JOB_ID
      --overlap -N1 -n1 --nodelist=<this node> --mpi=none, named
      steadfast-<job>-<rank>; steadfast-run stays the job's bootstrap. A rank's death
      is its srun's exit (status 128+N: killed by signal N). Steps are cancelled when
      steadfast-run ends, however it ends. steadfast-run must run on a node of the
      allocation (a batch script does; so does salloc where it runs its shell there).
  auto (default): slurm when SLURM_JOB_ID is set, SLURM_STEP_ID is not and srun is in
      PATH; fork otherwise.
  Under srun --mpi=pmi2 or mpirun directly (no steadfast-run), a restart is refused:
  those launchers cannot start a process into the running job.";

/// What a rank's failure does to the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WithFt {
    /// Fault tolerance as ULFM defines it: survivors are told and go on (default).
    Ulfm,
    /// The same as `ulfm` (the name Open MPI's launcher also accepts).
    Mpi,
    /// An MPI without fault tolerance: a rank's failure aborts the job.
    No,
}

/// How the ranks (and restarted incarnations) are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpawnerKind {
    /// As Slurm job steps inside a Slurm allocation (SLURM_JOB_ID set, not inside a
    /// step, srun in PATH), else forked (default).
    Auto,
    /// Forked by steadfast-run.
    Fork,
    /// Each rank a job step of the allocation on this node (srun --overlap -n1).
    Slurm,
}

/// How the job's exit status is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExitStatusPolicy {
    /// 1 if any rank failed, else 0.
    AnyFailure,
    /// The status of the ranks that were not killed by a signal.
    Survivors,
}

/// Starts N ranks of a program on this machine and serves their bootstrap.
///
/// The bootstrap service accepts only the job's secret, on loopback unless --listen
/// names another local address. A rank that dies does not take the job down (unless
/// --kill-on-bad-exit or --with-ft no): the survivors are told at once, and the
/// summary names who died and how. Ctrl-C and SIGTERM reach every rank; every rank
/// dies with the launcher, and the job's shared-memory segments are removed however
/// the job ends.
#[derive(Debug, Parser)]
#[command(name = "steadfast-run", version, after_help = AFTER_HELP)]
pub struct Options {
    /// Number of ranks (also -np).
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub n: u32,
    /// Size of the job's universe (MPI_UNIVERSE_SIZE): N ranks start, the other U - N
    /// world ranks are spare slots that MPI_Comm_spawn (Comm::spawn) starts while the
    /// job runs (docs/spawn.md). Default: N (no spawn).
    #[arg(long, value_name = "U", value_parser = clap::value_parser!(u32).range(1..))]
    pub universe: Option<u32>,
    /// Hosts to run on: only this host (its name, localhost or a loopback address)
    /// is accepted; a `:slots` suffix is allowed (also -host, -H).
    #[arg(
        long,
        short = 'H',
        value_name = "HOST[,HOST...]",
        value_delimiter = ','
    )]
    pub host: Vec<String>,
    /// Accepted for mpiexec compatibility: ranks may always outnumber the cores (they
    /// are then not bound to cores).
    #[arg(long)]
    pub oversubscribe: bool,
    /// Fault tolerance: ulfm (default) and mpi keep the survivors running; no aborts
    /// the job when a rank fails (as --kill-on-bad-exit). Naming ulfm or mpi also
    /// makes --exit-status survivors the default, as Open MPI's mpiexec.
    #[arg(long, value_enum, value_name = "MODE")]
    pub with_ft: Option<WithFt>,
    /// Error handler of MPI_COMM_WORLD at start-up (MPI-4 `mpi_initial_errhandler`,
    /// e.g. mpi_errors_return), handed to the ranks as STEADFAST_INITIAL_ERRHANDLER
    /// (also -initial-errhandler).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub initial_errhandler: Option<String>,
    /// Accepted for mpiexec compatibility; no effect.
    #[arg(long)]
    pub allow_run_as_root: bool,
    /// A failed rank does not stop the others (the default).
    #[arg(long, conflicts_with = "kill_on_bad_exit")]
    pub no_kill: bool,
    /// A rank that fails (non-zero exit or a signal) kills the whole job.
    #[arg(long)]
    pub kill_on_bad_exit: bool,
    /// Prefix every line of the ranks' output with `[rank]`.
    #[arg(long)]
    pub tag_output: bool,
    /// Local address (ADDR or ADDR:PORT) of the bootstrap service.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub listen: String,
    /// Also print the bootstrap service's debug messages (connections, refusals).
    #[arg(short, long)]
    pub verbose: bool,
    /// How ranks are started and restarted: auto (job steps inside a Slurm
    /// allocation, else fork), fork, or slurm (see below).
    #[arg(long, value_enum, default_value_t = SpawnerKind::Auto, value_name = "HOW")]
    pub spawner: SpawnerKind,
    /// Open MPI's aggregate parameter file: `ft-enable-mpi` (`-am ft-enable-mpi`, how
    /// Open MPI 4's ULFM and ulfm-testing's benchmarks/Makefile turn fault tolerance
    /// on) is --with-ft mpi; no other file is known (also -am).
    #[arg(long = "am", value_name = "FILE")]
    pub am: Vec<String>,
    /// An Open MPI MCA parameter (also -mca): `mpi_ft_enable` true or false (1, 0,
    /// yes, no...) is --with-ft mpi or no; other keys have no meaning here and are
    /// ignored (said on stderr).
    #[arg(long = "mca", num_args = 2, value_names = ["KEY", "VALUE"])]
    pub mca: Vec<String>,
    /// How the job's exit status is chosen (see below; default any-failure, or
    /// survivors when --with-ft ulfm or mpi is given).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub exit_status: Option<ExitStatusPolicy>,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "PROGRAM [ARGS]"
    )]
    pub prog: Vec<String>,
}

/// The single-dash spellings of long options that mpiexec users type.
const SINGLE_DASH: [(&str, &str); 7] = [
    ("-np", "--np"),
    ("-am", "--am"),
    ("-mca", "--mca"),
    ("-host", "--host"),
    ("-initial-errhandler", "--initial-errhandler"),
    ("-oversubscribe", "--oversubscribe"),
    ("-allow-run-as-root", "--allow-run-as-root"),
];

/// Options that take a value as the next argument.
const TAKES_VALUE: [&str; 11] = [
    "-n",
    "--am",
    "--np",
    "--universe",
    "--host",
    "-H",
    "--with-ft",
    "--initial-errhandler",
    "--listen",
    "--exit-status",
    "--spawner",
];

/// Rewrites the single-dash long options before the program to their `--` form; the
/// program's own arguments are left alone.
pub fn normalise(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.into_iter();
    if let Some(argv0) = it.next() {
        out.push(argv0);
    }
    while let Some(a) = it.next() {
        let a = SINGLE_DASH
            .iter()
            .find(|(one, _)| *one == a)
            .map_or(a, |(_, two)| (*two).to_string());
        if a == "--" || !a.starts_with('-') {
            out.push(a);
            out.extend(it);
            break;
        }
        let values = match a.as_str() {
            "--mca" => 2,
            a if TAKES_VALUE.contains(&a) => 1,
            _ => 0,
        };
        out.push(a);
        out.extend(it.by_ref().take(values));
    }
    out
}

impl Options {
    /// Whether a failed rank kills the job.
    pub fn kill_on_bad_exit(&self) -> bool {
        self.kill_on_bad_exit || self.with_ft() == WithFt::No
    }

    /// The fault-tolerance mode: `--with-ft`, `ulfm` when not given.
    pub fn with_ft(&self) -> WithFt {
        self.ft_named().unwrap_or(WithFt::Ulfm)
    }

    /// The mode the command line names: `--with-ft`, else Open MPI's spellings of it
    /// (`-am ft-enable-mpi`, the last `--mca mpi_ft_enable`); `None` when none does.
    fn ft_named(&self) -> Option<WithFt> {
        let mca = self
            .mca
            .chunks(2)
            .filter(|kv| kv[0] == FT_MCA_KEY)
            .filter_map(|kv| mca_bool(kv.get(1)?))
            .next_back()
            .map(|on| if on { WithFt::Mpi } else { WithFt::No });
        let am = self
            .am
            .iter()
            .any(|f| is_ft_enable_mpi(f))
            .then_some(WithFt::Mpi);
        self.with_ft.or(mca).or(am)
    }

    /// The `--mca` keys that have no meaning here (every one but `mpi_ft_enable`).
    pub fn ignored_mca(&self) -> Vec<&str> {
        self.mca
            .chunks(2)
            .map(|kv| kv[0].as_str())
            .filter(|k| *k != FT_MCA_KEY)
            .collect()
    }

    /// The exit-status policy: `--exit-status`; when not given, `survivors` if
    /// `--with-ft ulfm` or `mpi` was (Open MPI's mpiexec under `--with-ft` does not
    /// fail the job for a rank killed by a signal: ICLDisco/ulfm-testing's
    /// `run_tests.sh` judges `revoke` by the launcher's status alone), else
    /// `any-failure`.
    pub fn exit_status(&self) -> ExitStatusPolicy {
        match (self.exit_status, self.ft_named()) {
            (Some(p), _) => p,
            (None, Some(WithFt::Ulfm | WithFt::Mpi)) => ExitStatusPolicy::Survivors,
            (None, _) => ExitStatusPolicy::AnyFailure,
        }
    }

    /// Checks what clap cannot: the hosts and the number of ranks.
    ///
    /// # Errors
    /// A one-line message naming the value and the bound.
    pub fn check(&self) -> Result<(), String> {
        if let Some(f) = self.am.iter().find(|f| !is_ft_enable_mpi(f)) {
            return Err(format!(
                "-am {f}: the only aggregate parameter file known is ft-enable-mpi \
                 (fault tolerance on, as --with-ft mpi)"
            ));
        }
        if let Some(kv) = self
            .mca
            .chunks(2)
            .find(|kv| kv[0] == FT_MCA_KEY && kv.get(1).and_then(|v| mca_bool(v)).is_none())
        {
            return Err(format!(
                "--mca {FT_MCA_KEY} {}: not a boolean (true, false, 1, 0, yes, no)",
                kv.get(1).map_or("", String::as_str)
            ));
        }
        for h in &self.host {
            check_host(h)?;
        }
        check_rank_count(self.n)?;
        if self.universe() < self.n {
            return Err(format!(
                "--universe {}: smaller than the {} ranks started",
                self.universe(),
                self.n
            ));
        }
        check_rank_count(self.universe())
    }

    /// The world's size: the ranks started and the spare slots (`--universe`; at least
    /// `n` once [`check`](Self::check) passed).
    pub fn universe(&self) -> u32 {
        self.universe.unwrap_or(self.n)
    }
}

/// Open MPI's MCA parameter behind its `--with-ft`.
const FT_MCA_KEY: &str = "mpi_ft_enable";

/// An MCA boolean, as Open MPI reads one.
fn mca_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "enabled" => Some(true),
        "0" | "false" | "no" | "off" | "disabled" => Some(false),
        _ => None,
    }
}

/// Whether an `-am` file names Open MPI's `ft-enable-mpi` (given by name or path, with
/// or without an extension).
fn is_ft_enable_mpi(file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.split('.').next() == Some("ft-enable-mpi")
}

/// Most ranks one launcher starts: far beyond the cores of any node, far below what
/// would exhaust the process table.
pub const MAX_RANKS: u32 = 4096;

fn check_host(spec: &str) -> Result<(), String> {
    let name = spec.split(':').next().unwrap_or(spec);
    let me = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let me = me.trim();
    let short = me.split('.').next().unwrap_or(me);
    let local = ["localhost", "127.0.0.1", "::1", me, short];
    if name.is_empty() || !local.contains(&name) {
        return Err(format!(
            "--host {spec}: steadfast-run starts ranks on this host only ({me}, localhost); \
             use a cluster launcher (mpiexec.hydra, srun) for other hosts"
        ));
    }
    Ok(())
}

/// The soft limit of `resource`, `None` when unlimited or unknown.
fn soft_limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we pass.
    let ok = unsafe { libc::getrlimit(resource, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

fn check_rank_count(n: u32) -> Result<(), String> {
    if n > MAX_RANKS {
        return Err(format!(
            "-n {n}: more than {MAX_RANKS} ranks on one host is refused"
        ));
    }
    // Root is not held to RLIMIT_NPROC by the kernel.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if let Some(nproc) = soft_limit(libc::RLIMIT_NPROC).filter(|_| !root) {
        if u64::from(n) >= nproc {
            return Err(format!(
                "-n {n}: the process limit (RLIMIT_NPROC, ulimit -u) is {nproc}"
            ));
        }
    }
    let pid_max: Option<u64> = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    if let Some(pid_max) = pid_max {
        if u64::from(n) >= pid_max / 2 {
            return Err(format!(
                "-n {n}: the system's pid_max is {pid_max}; at most half of it may be ranks"
            ));
        }
    }
    Ok(())
}

/// Descriptors the launcher needs besides strangers: per rank, its connection, two
/// output pipes and a pidfd; and a few of its own.
pub fn descriptors_needed(n: u32) -> u64 {
    4 * u64::from(n) + 32
}

/// Raises the soft descriptor limit toward the hard one if `n` ranks need more, and
/// returns the soft limit then in force (`None`: unlimited).
///
/// # Errors
/// A message naming the limit when even the hard limit is too low.
pub fn ensure_descriptors(n: u32) -> Result<Option<u64>, String> {
    let need = descriptors_needed(n);
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Ok(None);
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        return Ok(None);
    }
    if r.rlim_cur < need && r.rlim_max > r.rlim_cur {
        let raised = libc::rlimit {
            rlim_cur: need.min(r.rlim_max),
            rlim_max: r.rlim_max,
        };
        // SAFETY: setrlimit reads one valid rlimit; raising the soft limit up to the
        // hard one is always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            r.rlim_cur = raised.rlim_cur;
        }
    }
    if r.rlim_cur < need {
        return Err(format!(
            "-n {n}: needs {need} file descriptors, but the limit (RLIMIT_NOFILE, ulimit -n) is {}",
            r.rlim_cur
        ));
    }
    Ok(Some(r.rlim_cur))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let v = std::iter::once("steadfast-run")
            .chain(args.iter().copied())
            .map(String::from);
        Options::try_parse_from(normalise(v))
    }

    #[test]
    fn mpiexec_spellings_parse_and_the_program_keeps_its_flags() {
        let o = parse(&[
            "-np",
            "4",
            "-initial-errhandler",
            "mpi_errors_return",
            "--with-ft",
            "ulfm",
            "--allow-run-as-root",
            "prog",
            "-np",
            "--x",
        ])
        .unwrap();
        assert_eq!(o.n, 4);
        assert_eq!(o.initial_errhandler.as_deref(), Some("mpi_errors_return"));
        assert_eq!(o.prog, ["prog", "-np", "--x"]);
        assert_eq!(o.spawner, SpawnerKind::Auto);
        let o = parse(&["-n", "2", "--spawner", "slurm", "prog"]).unwrap();
        assert_eq!(o.spawner, SpawnerKind::Slurm);
        let o = parse(&["-n", "2", "--with-ft", "no", "-host", "localhost:2", "a"]).unwrap();
        assert!(o.kill_on_bad_exit());
        o.check().unwrap();
    }

    #[test]
    fn open_mpis_ft_spellings_name_the_mode_and_other_mca_keys_are_ignored() {
        let o = parse(&["-am", "ft-enable-mpi", "-np", "8", "prog", "-am", "x"]).unwrap();
        assert_eq!((o.n, o.with_ft()), (8, WithFt::Mpi));
        assert_eq!(o.exit_status(), ExitStatusPolicy::Survivors);
        assert_eq!(o.prog, ["prog", "-am", "x"]);
        o.check().unwrap();
        let o = parse(&[
            "-mca",
            "btl",
            "self,tcp",
            "--mca",
            "mpi_ft_enable",
            "0",
            "-np",
            "2",
            "p",
        ])
        .unwrap();
        assert_eq!(o.with_ft(), WithFt::No);
        assert_eq!(o.ignored_mca(), ["btl"]);
        assert_eq!(o.prog, ["p"]);
        // --with-ft wins over the MCA spelling.
        let o = parse(&[
            "--mca",
            "mpi_ft_enable",
            "true",
            "--with-ft",
            "no",
            "-n",
            "2",
            "p",
        ]);
        assert_eq!(o.unwrap().with_ft(), WithFt::No);
        assert!(parse(&["-am", "other-file", "-n", "2", "p"])
            .unwrap()
            .check()
            .is_err());
        let bad = parse(&["--mca", "mpi_ft_enable", "maybe", "-n", "2", "p"]).unwrap();
        assert!(bad.check().is_err());
    }

    #[test]
    fn naming_ulfm_or_mpi_makes_the_survivors_status_the_default() {
        let policy = |args: &[&str]| parse(args).unwrap().exit_status();
        assert_eq!(policy(&["-n", "2", "p"]), ExitStatusPolicy::AnyFailure);
        assert_eq!(
            policy(&["-n", "2", "--with-ft", "no", "p"]),
            ExitStatusPolicy::AnyFailure
        );
        for mode in ["ulfm", "mpi"] {
            assert_eq!(
                policy(&["-n", "2", "--with-ft", mode, "p"]),
                ExitStatusPolicy::Survivors
            );
            assert_eq!(
                policy(&[
                    "-n",
                    "2",
                    "--with-ft",
                    mode,
                    "--exit-status",
                    "any-failure",
                    "p"
                ]),
                ExitStatusPolicy::AnyFailure
            );
        }
        assert_eq!(parse(&["-n", "2", "p"]).unwrap().with_ft(), WithFt::Ulfm);
    }

    #[test]
    fn unknown_flags_and_bad_values_are_errors() {
        assert!(parse(&["-n", "2", "--bogus", "prog"]).is_err());
        assert!(parse(&["-n", "0", "prog"]).is_err());
        assert!(parse(&["-n", "2"]).is_err());
        assert!(parse(&["-n", "2", "--with-ft", "maybe", "prog"]).is_err());
        assert!(parse(&["-n", "2", "--spawner", "ssh", "prog"]).is_err());
        let o = parse(&["-n", "2", "--host", "elsewhere.example", "prog"]).unwrap();
        assert!(o.check().unwrap_err().contains("elsewhere.example"));
        let o = parse(&["-n", "100000", "prog"]).unwrap();
        assert!(o.check().unwrap_err().contains("100000"));
    }

    #[test]
    fn single_dash_spellings_after_the_universe_are_rewritten() {
        // `--universe 8 -np 4` (ulfm-testing's `run_tests.sh -a "--universe 8"` puts
        // the extra options before `-np`): `8` is --universe's value, not the program.
        let o = parse(&["--universe", "8", "-np", "4", "prog"]).unwrap();
        assert_eq!((o.n, o.universe()), (4, 8));
        assert_eq!(o.prog, ["prog"]);
    }

    #[test]
    fn the_universe_holds_at_least_the_ranks_started() {
        assert_eq!(parse(&["-n", "2", "prog"]).unwrap().universe(), 2);
        let o = parse(&["-n", "2", "--universe", "5", "prog"]).unwrap();
        assert_eq!(o.universe(), 5);
        o.check().unwrap();
        let o = parse(&["-n", "4", "--universe", "3", "prog"]).unwrap();
        assert!(o.check().unwrap_err().contains("--universe 3"));
        assert!(parse(&["-n", "2", "--universe", "0", "prog"]).is_err());
        let o = parse(&["-n", "2", "--universe", "100000", "prog"]).unwrap();
        assert!(o.check().unwrap_err().contains("100000"));
    }
}
