//! `steadfast-run -n N [options] prog [args...]`: starts N ranks of `prog` on this
//! machine and serves their bootstrap; `steadfast-run --help` lists the options (the
//! `mpiexec` ones MPI programs and scripts pass included) and the exit-status policy.
//!
//! The bootstrap service only accepts the job's secret, on loopback unless `--listen`
//! names another local address (e.g. for ranks placed in other network namespaces).
//! By default a rank that dies does not take the job down: the survivors are told at
//! once, and the summary names who died and how. Ctrl-C and SIGTERM reach every rank;
//! every rank dies with the launcher (PR_SET_PDEATHSIG), so no orphan is left; and the
//! job's shared-memory segments are removed when it ends, by the launcher or, if the
//! launcher is killed, by its reaper process. Inside a Slurm allocation the ranks are
//! job steps instead of children (`slurm`, `--spawner`).

mod cli;
mod reaper;
mod relay;
mod slurm;
mod spawner;

use cli::{ExitStatusPolicy, Options, SpawnerKind, WithFt};
use reaper::Reaper;
use slurm::Slurm;
use spawner::Spawner;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use steadfast::bootstrap::wire::SECRET_LEN;
use steadfast::bootstrap::SpawnCommand;
use steadfast::launcher::segments;
use steadfast::launcher::{Limits, Service};
use steadfast_os::spawn::DieWithParent;

/// Prints one line on stderr; a closed stderr is not worth a panic.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn fail(code: i32, why: &str) -> ! {
    say(&format!("steadfast-run: {why}"));
    std::process::exit(code)
}

/// The job's secret and id, from /dev/urandom.
fn secret_and_job() -> ([u8; SECRET_LEN], u64) {
    let mut s = [0u8; SECRET_LEN + 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut s))
        .unwrap_or_else(|e| fail(1, &format!("cannot read /dev/urandom: {e}")));
    let mut secret = [0u8; SECRET_LEN];
    secret.copy_from_slice(&s[..SECRET_LEN]);
    let job = u64::from_le_bytes(s[SECRET_LEN..].try_into().expect("8 bytes"));
    (secret, job)
}

/// The name of a signal the launcher or a rank may die of.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => "a signal",
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (_, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        _ => "ended".into(),
    }
}

/// The launcher's logger: the library's warnings and errors (the bootstrap service's
/// included) on stderr, prefixed like the launcher's own lines; `--verbose` adds the
/// debug messages.
struct StderrLogger {
    level: log::LevelFilter,
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= self.level
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            say(&format!(
                "steadfast-run: {}: {}",
                record.level().as_str().to_lowercase(),
                record.args()
            ));
        }
    }
    fn flush(&self) {}
}

fn init_logging(verbose: bool) {
    let level = if verbose {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Warn
    };
    let logger: &'static StderrLogger = Box::leak(Box::new(StderrLogger { level }));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
}

/// Signal the launcher received (0: none), relayed to the ranks by the main loop.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: i32) {
    // ORDERING: Relaxed; the signal number is the whole message, read by the main loop.
    SIGNALLED.store(sig, Ordering::Relaxed);
}

fn listen(spec: &str) -> TcpListener {
    let bound = match spec.parse::<SocketAddr>() {
        Ok(addr) => TcpListener::bind(addr),
        Err(_) => TcpListener::bind((spec, 0)),
    };
    bound.unwrap_or_else(|e| fail(1, &format!("cannot listen on {spec}: {e}")))
}

/// Segment ids of the job, as the ranks' node strings reveal them, shared by the
/// service's put hook, the reaper and the final clean-up.
struct JobSegments {
    job: u64,
    seen: Mutex<BTreeSet<u64>>,
    reaper: Mutex<Option<Reaper>>,
}

impl JobSegments {
    fn node_put(&self, node: &[u8]) {
        let seg = segments::segment_job(self.job, node);
        if self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(seg)
        {
            if let Some(r) = self
                .reaper
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                r.segment_job(seg);
            }
        }
    }

    /// Tells the reaper the Slurm steps to cancel if the launcher dies.
    fn slurm_steps(&self, slurm: &Slurm) {
        if let Some(r) = self
            .reaper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            r.slurm_steps(&slurm.job_id, &slurm.prefix);
        }
    }

    fn rank_started(&self, pid: u32) {
        if let Some(r) = self
            .reaper
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            r.rank(pid);
        }
    }

    /// Removes the job's segments and dismisses the reaper.
    fn clean_up(&self) {
        let seen: Vec<u64> = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        segments::remove_segments(&seen);
        if let Some(r) = self.reaper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            r.done();
        }
    }
}

fn main() {
    let o = <Options as clap::Parser>::try_parse_from(cli::normalise(std::env::args()))
        .unwrap_or_else(|e| e.exit());
    // For the whole run: the spawner builds restarted ranks' commands from it.
    let o: &'static Options = Box::leak(Box::new(o));
    if let Err(why) = o.check() {
        fail(2, why.as_str());
    }
    init_logging(o.verbose);
    for key in o.ignored_mca() {
        say(&format!(
            "steadfast-run: --mca {key} ignored (an Open MPI parameter; only mpi_ft_enable has a meaning here)"
        ));
    }
    // The ranks inherit this environment: a misspelt parameter is named here, where the
    // user sees it (the ranks' own warnings go to a logger they may not have).
    for unknown in steadfast::params::unknown_variables(
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
    ) {
        say(&format!("steadfast-run: warning: {unknown}"));
    }
    let nofile = cli::ensure_descriptors(o.universe()).unwrap_or_else(|why: String| fail(2, &why));
    // SAFETY: no thread has been started yet.
    let reaper = unsafe { Reaper::start() }
        .map_err(|e| {
            say(&format!(
                "steadfast-run: warning: no reaper ({e}); if the launcher is killed, the job's /dev/shm segments stay until the next job sweeps them"
            ))
        })
        .ok();
    let listener = listen(&o.listen);
    let addr = listener.local_addr().expect("bound address").to_string();
    let (secret, job) = secret_and_job();
    let secret_hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let job_segments = Arc::new(JobSegments {
        job,
        seen: Mutex::new(BTreeSet::new()),
        reaper: Mutex::new(reaper),
    });
    let slurm: Option<&'static Slurm> = match o.spawner {
        SpawnerKind::Fork => None,
        kind => Slurm::detect(job, kind == SpawnerKind::Slurm)
            .unwrap_or_else(|why| {
                job_segments.clean_up();
                fail(2, &why)
            })
            .map(|s| &*Box::leak(Box::new(s))),
    };
    if let Some(s) = slurm {
        log::debug!(
            "ranks are job steps of Slurm job {} on node {} (named {}<rank>)",
            s.job_id,
            s.node,
            s.prefix
        );
        job_segments.slurm_steps(s);
    }
    let mut limits = Limits::default();
    if let Some(nofile) = nofile {
        let spare = nofile.saturating_sub(cli::descriptors_needed(o.universe()));
        limits.max_strangers = (spare as usize).clamp(4, limits.max_strangers);
    }
    let service = Service::new(o.universe(), secret, limits)
        .unwrap_or_else(|e| fail(1, &format!("cannot start the bootstrap service: {e}")));
    // The universe's spare slots: dead (never started) until a spawn starts them.
    service.spare_slots_from(o.n);
    let spawner = {
        let (addr, secret_hex) = (addr.clone(), secret_hex.clone());
        Arc::new(Spawner::new(
            Box::new(move |rank, command| {
                rank_command(o, slurm, rank, command, &addr, &secret_hex, job)
            }),
            o.tag_output,
        ))
    };
    {
        let (sp, segs) = (Arc::clone(&spawner), Arc::clone(&job_segments));
        service.on_restart(move |rank, generation, command| {
            let child = sp.spawn(rank, generation, command)?;
            let pid = child.id();
            segs.rank_started(pid);
            sp.started(rank, generation, child);
            Ok(pid)
        });
    }
    {
        let segs = Arc::clone(&job_segments);
        service.on_put(move |_rank, key, value| {
            if key == segments::NODE_KEY {
                segs.node_put(value);
            }
        });
        let s = service.clone();
        std::thread::spawn(move || {
            if let Err(e) = s.serve(listener) {
                say(&format!("steadfast-run: bootstrap service failed: {e}"));
            }
        });
    }
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut children: Vec<Option<Child>> = Vec::new();
    let mut taggers: Vec<std::thread::JoinHandle<()>> = Vec::new();
    for rank in 0..o.n {
        let mut cmd = rank_command(o, slurm, rank, None, &addr, &secret_hex, job);
        match cmd.spawn() {
            Ok(mut child) => {
                job_segments.rank_started(child.id());
                if o.tag_output {
                    taggers.extend(relay::tag(child.stdout.take(), rank, false));
                    taggers.extend(relay::tag(child.stderr.take(), rank, true));
                }
                children.push(Some(child));
            }
            Err(e) => {
                for c in children.iter_mut().flatten() {
                    stop(c, slurm.is_some());
                    let _ = c.wait();
                }
                end_steps(slurm);
                job_segments.clean_up();
                fail(
                    1,
                    &format!("cannot start rank {rank} ({:?}): {e}", o.prog[0]),
                );
            }
        }
    }
    let ended = supervise(o, slurm.is_some(), &service, &spawner, children);
    end_steps(slurm);
    // Every rank has exited, so their pipes are closed: let the taggers print the rest
    // before we exit (lines would otherwise be lost).
    for t in taggers.into_iter().chain(spawner.take_taggers()) {
        let _ = t.join();
    }
    job_segments.clean_up();
    std::process::exit(summarise(o, &ended));
}

/// Stops a rank's process: SIGKILL for a forked rank; SIGTERM for a job step's srun,
/// on which srun cancels the step (after SIGKILL the step would run on).
fn stop(child: &mut Child, step: bool) {
    if step {
        // SAFETY: signalling our own child, not yet waited for.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    } else {
        let _ = child.kill();
    }
}

/// Cancels the job steps of this launcher that are still listed (none when every srun
/// ended normally; a backstop for the others).
fn end_steps(slurm: Option<&Slurm>) {
    if let Some(s) = slurm {
        let n = slurm::cancel_steps(&s.job_id, &s.prefix);
        if n > 0 {
            log::warn!("cancelled {n} job steps left running by their srun");
        }
    }
}

/// The command of one rank: the program (through srun for a job step; the spawn's
/// `command` in a spare slot that a spawn started with one, else the job's program and
/// arguments), its environment, death with the launcher.
fn rank_command(
    o: &Options,
    slurm: Option<&Slurm>,
    rank: u32,
    command: Option<&SpawnCommand>,
    addr: &str,
    secret_hex: &str,
    job: u64,
) -> Command {
    let mut cmd = match (slurm, command) {
        (Some(s), None) => s.command(rank, &o.prog),
        // srun execs the program itself: argv[0] is the program, not the spawn's.
        (Some(s), Some(c)) => {
            let prog: Vec<&OsStr> = std::iter::once(c.program())
                .chain(c.get_args().iter().map(OsString::as_os_str))
                .collect();
            let mut cmd = s.command(rank, &prog);
            // srun starts its tasks in its own working directory.
            if let Some(dir) = c.get_current_dir() {
                cmd.current_dir(dir);
            }
            cmd
        }
        (None, None) => {
            let mut cmd = Command::new(&o.prog[0]);
            cmd.args(&o.prog[1..]);
            cmd
        }
        (None, Some(c)) => {
            let mut cmd = Command::new(c.program());
            cmd.arg0(c.argv0()).args(c.get_args());
            if let Some(dir) = c.get_current_dir() {
                cmd.current_dir(dir);
            }
            cmd
        }
    };
    cmd.env("STEADFAST_RUN_ADDR", addr)
        .env("STEADFAST_RUN_SECRET", secret_hex)
        .env("STEADFAST_RANK", rank.to_string())
        .env("STEADFAST_SIZE", o.universe().to_string())
        .env("STEADFAST_JOB_RANKS", o.n.to_string())
        .env("STEADFAST_JOB_ID", format!("{job:016x}"));
    if let Some(name) = &o.initial_errhandler {
        cmd.env("STEADFAST_INITIAL_ERRHANDLER", name);
    }
    // The MPI library reads it: with `no`, a failure is fatal whatever the handler.
    cmd.env(
        "STEADFAST_WITH_FT",
        match o.with_ft() {
            WithFt::Ulfm => "ulfm",
            WithFt::Mpi => "mpi",
            WithFt::No => "no",
        },
    );
    // libfabric's ofi_rxm preallocates deep per-connection buffer queues by default
    // (~80 MB resident per process here, ~25 MB with these), which makes every
    // exit, a SIGKILLed rank's included, slower to complete and so to detect; 32
    // entries keep the same ping-pong speed (measured). The PSM/OPA provider libraries
    // install signal handlers that turn a SIGINT or SIGTERM into "exited with status
    // 1" unless told not to. The user's settings win.
    for (var, value) in [
        ("FI_OFI_RXM_MSG_RX_SIZE", "32"),
        ("FI_OFI_RXM_MSG_TX_SIZE", "32"),
        ("IPATH_NO_BACKTRACE", "1"),
        ("HFI_NO_BACKTRACE", "1"),
    ] {
        if std::env::var_os(var).is_none() {
            cmd.env(var, value);
        }
    }
    if o.tag_output {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    // The rank dies with the launcher; a step's srun gets SIGTERM, to cancel its step.
    if slurm.is_some() {
        cmd.die_with_parent_by(libc::SIGTERM);
    } else {
        cmd.die_with_parent();
    }
    cmd
}

/// How the job ended.
struct Ended {
    /// Each started rank's last incarnation's status (spare slots never started are
    /// left out).
    outcomes: Vec<(usize, ExitStatus)>,
    /// Incarnations that ended and were replaced by a restart: rank, generation, status.
    replaced: Vec<(u32, u32, ExitStatus)>,
    /// The signal that interrupted the launcher (0: none).
    interrupted: i32,
}

/// Waits for every rank (restarted ones included), relaying signals and deaths;
/// `steps`: the children are the ranks' srun clients.
fn supervise(
    o: &Options,
    steps: bool,
    service: &Service,
    spawner: &Spawner,
    mut children: Vec<Option<Child>>,
) -> Ended {
    let universe = o.universe() as usize;
    let mut outcomes: Vec<Option<ExitStatus>> = vec![None; universe];
    let mut generations: Vec<u32> = vec![0; universe];
    // Spare slots count once a spawn starts them.
    let mut started: Vec<bool> = (0..universe).map(|r| r < o.n as usize).collect();
    children.resize_with(universe, || None);
    let mut replaced = Vec::new();
    let mut killing = false;
    let mut interrupted = 0;
    loop {
        for new in spawner.adopt() {
            let r = new.rank as usize;
            if killing || interrupted != 0 {
                let mut child = new.child;
                stop(&mut child, steps);
                let _ = child.wait();
                continue;
            }
            if let Some(status) = outcomes[r].take() {
                replaced.push((new.rank, generations[r], status));
            }
            generations[r] = new.generation;
            started[r] = true;
            children[r] = Some(new.child);
        }
        if outcomes
            .iter()
            .zip(&started)
            .all(|(o, &s)| o.is_some() || !s)
        {
            break;
        }
        // ORDERING: Relaxed, as in `on_signal`: nothing else is published with it.
        let sig = SIGNALLED.swap(0, Ordering::Relaxed);
        if sig != 0 {
            interrupted = sig;
            for c in children.iter().flatten() {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(c.id() as libc::pid_t, sig) };
            }
        }
        let mut progressed = false;
        let mut kill_all = false;
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            if let Ok(Some(status)) = child.try_wait() {
                let status = if steps {
                    slurm::rank_status(status)
                } else {
                    status
                };
                progressed = true;
                outcomes[rank] = Some(status);
                *slot = None;
                let generation = generations[rank];
                if !status.success() {
                    service.incarnation_died(rank as u32, generation, &describe(status));
                    if o.kill_on_bad_exit() && !killing {
                        killing = true;
                        kill_all = true;
                    }
                } else {
                    // A clean exit is not a failure, but nobody can get from it now.
                    service.incarnation_died(rank as u32, generation, "exited");
                }
            }
        }
        if kill_all {
            for c in children.iter_mut().flatten() {
                stop(c, steps);
            }
        }
        if !progressed {
            wait_for_exit(&children, spawner.wake_fd());
        }
    }
    Ended {
        outcomes: outcomes
            .into_iter()
            .enumerate()
            .filter_map(|(r, s)| Some((r, s?)))
            .collect(),
        replaced,
        interrupted,
    }
}

/// Prints who failed and how; returns the job's exit status (see `--help`): it
/// depends on each rank's last incarnation only (a failed rank restarted counts by
/// how its restart ended), and the summary lists the replaced incarnations too.
fn summarise(o: &Options, ended: &Ended) -> i32 {
    let (outcomes, interrupted) = (&ended.outcomes, ended.interrupted);
    for (r, g, s) in &ended.replaced {
        say(&format!(
            "steadfast-run: rank {r} incarnation {g} {}; restarted as incarnation {}",
            describe(*s),
            g + 1
        ));
    }
    if interrupted != 0 {
        say(&format!(
            "steadfast-run: interrupted by signal {interrupted} ({}), relayed to every rank",
            signal_name(interrupted)
        ));
    }
    let failed: Vec<(usize, ExitStatus)> = outcomes
        .iter()
        .filter(|(_, s)| !s.success())
        .copied()
        .collect();
    if !failed.is_empty() {
        say(&format!(
            "steadfast-run: {} of {} ranks failed:",
            failed.len(),
            outcomes.len()
        ));
        for (r, s) in &failed {
            say(&format!("  rank {r}: {}", describe(*s)));
        }
    }
    match o.exit_status() {
        ExitStatusPolicy::AnyFailure => i32::from(!failed.is_empty()),
        ExitStatusPolicy::Survivors => {
            let survivors: Vec<i32> = outcomes.iter().filter_map(|(_, s)| s.code()).collect();
            if survivors.is_empty() {
                1
            } else {
                survivors.into_iter().find(|&c| c != 0).unwrap_or(0)
            }
        }
    }
}

/// Waits until some child may have exited: its pidfd turns readable at once (so the
/// survivors hear of a death within microseconds), or a restarted incarnation was
/// started (`wake`: it is adopted and watched at once), or 50 ms pass, or a signal
/// arrives. Without pidfds (kernels before 5.3, or out of descriptors), sleeps 1 ms.
fn wait_for_exit(children: &[Option<Child>], wake: Option<std::os::fd::RawFd>) {
    use std::os::fd::{AsRawFd, OwnedFd};
    let fds: Vec<OwnedFd> = children
        .iter()
        .flatten()
        .filter_map(|c| steadfast_os::process::pidfd_open(c.id()))
        .collect();
    if fds.is_empty() {
        std::thread::sleep(Duration::from_millis(1));
        return;
    }
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| f.as_raw_fd())
        .chain(wake)
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `polls` is a valid array of pollfds whose fds live until we return.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 50) };
}
