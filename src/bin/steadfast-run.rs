//! `steadfast-run -n N [--no-kill|--kill-on-bad-exit] [--tag-output] [--listen ADDR] prog args...`
//!
//! Starts N ranks of `prog` on this machine and serves their bootstrap (a key-value
//! service that only accepts the job's secret, on loopback unless `--listen` names
//! another local address, e.g. for ranks placed in other network namespaces). With `--no-kill` (the
//! default) a rank that dies does not take the job down: the survivors are told at
//! once, and the summary names who died and how. Ctrl-C and SIGTERM reach every rank;
//! every rank dies with the launcher (PR_SET_PDEATHSIG), so no orphan is left.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use steadfast::bootstrap::wire::SECRET_LEN;
use steadfast::launcher::{Limits, Service};

fn usage() -> ! {
    eprintln!(
        "usage: steadfast-run -n N [--no-kill|--kill-on-bad-exit] [--tag-output] [--listen ADDR] prog [args...]"
    );
    std::process::exit(2)
}

struct Options {
    n: u32,
    listen: String,
    kill_on_bad_exit: bool,
    tag_output: bool,
    prog: Vec<String>,
}

fn parse() -> Options {
    let mut args = std::env::args().skip(1);
    let mut o = Options {
        n: 0,
        listen: "127.0.0.1".into(),
        kill_on_bad_exit: false,
        tag_output: false,
        prog: Vec::new(),
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "-n" | "-np" => {
                o.n = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage())
            }
            "--listen" => o.listen = args.next().unwrap_or_else(|| usage()),
            "--no-kill" => o.kill_on_bad_exit = false,
            "--kill-on-bad-exit" => o.kill_on_bad_exit = true,
            "--tag-output" => o.tag_output = true,
            "-h" | "--help" => usage(),
            _ => {
                o.prog.push(a);
                o.prog.extend(args.by_ref());
            }
        }
    }
    if o.n == 0 || o.prog.is_empty() {
        usage();
    }
    o
}

fn secret() -> [u8; SECRET_LEN] {
    let mut s = [0u8; SECRET_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut s))
        .unwrap_or_else(|e| {
            eprintln!("steadfast-run: cannot read /dev/urandom: {e}");
            std::process::exit(1)
        });
    s
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (_, Some(s)) => format!("killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// Signal the launcher received (0: none), relayed to the ranks by the main loop.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: i32) {
    // ORDERING: Relaxed; the signal number is the whole message, read by the main loop.
    SIGNALLED.store(sig, Ordering::Relaxed);
}

fn main() {
    let o = parse();
    let listener = TcpListener::bind((o.listen.as_str(), 0)).unwrap_or_else(|e| {
        eprintln!("steadfast-run: cannot listen on {}: {e}", o.listen);
        std::process::exit(1)
    });
    let addr = listener.local_addr().expect("bound address").to_string();
    let secret = secret();
    let secret_hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let service = Service::new(o.n, secret, Limits::default()).unwrap_or_else(|e| {
        eprintln!("steadfast-run: cannot start the bootstrap service: {e}");
        std::process::exit(1)
    });
    {
        let s = service.clone();
        std::thread::spawn(move || {
            if let Err(e) = s.serve(listener) {
                eprintln!("steadfast-run: bootstrap service failed: {e}");
            }
        });
    }
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let job = format!(
        "{:x}",
        std::process::id() as u64 | (u64::from(secret[0]) << 40)
    );
    let mut children: Vec<Option<Child>> = Vec::new();
    let mut taggers: Vec<std::thread::JoinHandle<()>> = Vec::new();
    for rank in 0..o.n {
        let mut cmd = Command::new(&o.prog[0]);
        cmd.args(&o.prog[1..])
            .env("STEADFAST_RUN_ADDR", &addr)
            .env("STEADFAST_RUN_SECRET", &secret_hex)
            .env("STEADFAST_RANK", rank.to_string())
            .env("STEADFAST_SIZE", o.n.to_string())
            .env("STEADFAST_JOB_ID", &job);
        // libfabric's ofi_rxm preallocates deep per-connection buffer queues by default
        // (~80 MB resident per process here, ~25 MB with these), which makes every
        // exit, a SIGKILLed rank's included, slower to complete and so to detect; 32
        // entries keep the same ping-pong speed (measured). The user's settings win.
        for var in ["FI_OFI_RXM_MSG_RX_SIZE", "FI_OFI_RXM_MSG_TX_SIZE"] {
            if std::env::var_os(var).is_none() {
                cmd.env(var, "32");
            }
        }
        if o.tag_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // SAFETY: prctl is async-signal-safe; the rank dies with the launcher.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if o.tag_output {
                    taggers.extend(tag(child.stdout.take(), rank, false));
                    taggers.extend(tag(child.stderr.take(), rank, true));
                }
                children.push(Some(child));
            }
            Err(e) => {
                eprintln!("steadfast-run: cannot start {:?}: {e}", o.prog[0]);
                for c in children.iter_mut().flatten() {
                    let _ = c.kill();
                }
                std::process::exit(1);
            }
        }
    }
    let mut outcomes: Vec<Option<ExitStatus>> = vec![None; o.n as usize];
    let mut killing = false;
    while outcomes.iter().any(Option::is_none) {
        // ORDERING: Relaxed, as in `on_signal`: nothing else is published with it.
        let sig = SIGNALLED.swap(0, Ordering::Relaxed);
        if sig != 0 {
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
                progressed = true;
                outcomes[rank] = Some(status);
                *slot = None;
                if !status.success() {
                    service.rank_died(rank as u32, &describe(status));
                    if o.kill_on_bad_exit && !killing {
                        killing = true;
                        kill_all = true;
                    }
                } else {
                    // A clean exit is not a failure, but nobody can get from it now.
                    service.rank_died(rank as u32, "exited");
                }
            }
        }
        if kill_all {
            for c in children.iter_mut().flatten() {
                let _ = c.kill();
            }
        }
        if !progressed {
            wait_for_exit(&children);
        }
    }
    // Every rank has exited, so their pipes are closed: let the taggers print the rest
    // before we exit (lines would otherwise be lost).
    for t in taggers {
        let _ = t.join();
    }
    let failed: Vec<(usize, ExitStatus)> = outcomes
        .iter()
        .enumerate()
        .filter_map(|(r, s)| s.filter(|s| !s.success()).map(|s| (r, s)))
        .collect();
    if failed.is_empty() {
        return;
    }
    eprintln!("steadfast-run: {} of {} ranks failed:", failed.len(), o.n);
    for (r, s) in &failed {
        eprintln!("  rank {r}: {}", describe(*s));
    }
    std::process::exit(1);
}

fn tag(
    stream: Option<impl Read + Send + 'static>,
    rank: u32,
    err: bool,
) -> Option<std::thread::JoinHandle<()>> {
    let stream = stream?;
    Some(std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if err {
                eprintln!("[{rank}] {line}");
            } else {
                println!("[{rank}] {line}");
            }
        }
    }))
}

/// Waits until some child may have exited: its pidfd turns readable at once (so the
/// survivors hear of a death within microseconds), or 50 ms pass, or a signal arrives.
/// Without pidfds (kernels before 5.3), sleeps 1 ms.
fn wait_for_exit(children: &[Option<Child>]) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let fds: Vec<OwnedFd> = children
        .iter()
        .flatten()
        .filter_map(|c| {
            // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, c.id() as libc::pid_t, 0) };
            // SAFETY: a non-negative return is a fresh fd we now own.
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
        })
        .collect();
    if fds.is_empty() {
        std::thread::sleep(Duration::from_millis(1));
        return;
    }
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `polls` is a valid array of pollfds whose fds live until we return.
    unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 50) };
}
