//! The launcher's bootstrap service under a flood of idle connections from another
//! process: the job's ranks still get in with a descriptor limit of 64, and a thousand
//! idle connections add no thread.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

/// A port free a moment ago on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts steadfast-run with `args`; it dies with this process, and with descriptor
/// limit `nofile` if given.
fn launcher(args: &[&str], nofile: Option<u64>) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steadfast-run"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.die_with_parent();
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(n) = nofile {
                let r = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn().expect("start steadfast-run")
}

/// Opens up to `count` idle connections to `port` within `limit`, while `go` holds.
fn flood_while(
    port: u16,
    count: usize,
    limit: Duration,
    mut go: impl FnMut() -> bool,
) -> Vec<TcpStream> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let start = Instant::now();
    let mut idle = Vec::new();
    while idle.len() < count && start.elapsed() < limit && go() {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(s) => idle.push(s),
            // Not listening yet.
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    idle
}

fn flood(port: u16, count: usize, limit: Duration) -> Vec<TcpStream> {
    flood_while(port, count, limit, || true)
}

/// Raises this process's soft descriptor limit to its hard limit.
fn raise_own_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a valid struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
    r.rlim_cur
}

#[test]
fn ranks_get_in_past_an_idle_flood_with_64_descriptors() {
    raise_own_nofile();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // The ranks wait two seconds, so the flood is there first.
    let rank = format!(
        "sleep 2; exec {} exchange",
        env!("CARGO_BIN_EXE_bootstrap-test-rank")
    );
    let mut child = launcher(
        &[
            "-n",
            "4",
            "--tag-output",
            "--listen",
            &listen,
            "/bin/sh",
            "-c",
            &rank,
        ],
        Some(64),
    );
    let idle = flood_while(port, 300, Duration::from_secs(20), || {
        matches!(child.try_wait(), Ok(None))
    });
    assert!(idle.len() >= 100, "only {} connections opened", idle.len());
    let out = child.wait_with_output().unwrap();
    drop(idle);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    for r in 0..4 {
        assert!(
            stdout.contains(&format!("[{r}] rank {r} of 4: exchange ok")),
            "{stdout}"
        );
    }
}

fn threads_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_thousand_idle_connections_add_no_thread() {
    assert!(raise_own_nofile() > 1100, "the test needs 1100 descriptors");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = launcher(&["-n", "1", "--listen", &listen, "/bin/sleep", "60"], None);
    // Once it listens, its threads are all started (main and the service).
    let first = flood(port, 1, Duration::from_secs(20));
    assert_eq!(first.len(), 1);
    std::thread::sleep(Duration::from_millis(200));
    let before = threads_of(child.id());
    let idle = flood(port, 1000, Duration::from_secs(30));
    assert_eq!(idle.len(), 1000);
    std::thread::sleep(Duration::from_millis(500));
    let after = threads_of(child.id());
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(after, before, "threads grew from {before} to {after}");
    assert!(before <= 3, "{before} threads");
}
