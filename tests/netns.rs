//! Two "hosts" as network namespaces joined by a veth pair (root only; skipped with a
//! message otherwise). Ranks 0-1 live in one, 2-3 in the other, with distinct node ids:
//! traffic inside a host must go through shared memory and across through the fabric
//! (checked through the route counters); cutting the link must make each side's
//! heartbeat detector suspect the far side, while the near side still agrees.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use steadfast_os::DieWithParent;

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Two namespaces and the veth (named `sfv` on both sides) between them; removed on
/// drop (deleting a namespace deletes its end of the pair).
struct Hosts {
    a: String,
    b: String,
    subnet: u32,
}

impl Hosts {
    fn create() -> Option<Hosts> {
        let id = std::process::id();
        let h = Hosts {
            a: format!("sfa{id}"),
            b: format!("sfb{id}"),
            subnet: id % 250 + 1,
        };
        let (va, vb) = (format!("sfva{id}"), format!("sfvb{id}"));
        let (addr_a, addr_b) = (
            format!("10.77.{}.1/24", h.subnet),
            format!("10.77.{}.2/24", h.subnet),
        );
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", &h.a],
            vec!["netns", "add", &h.b],
            vec!["link", "add", &va, "type", "veth", "peer", "name", &vb],
            vec!["link", "set", &va, "netns", &h.a],
            vec!["link", "set", &vb, "netns", &h.b],
            vec!["-n", &h.a, "link", "set", &va, "name", "sfv"],
            vec!["-n", &h.b, "link", "set", &vb, "name", "sfv"],
            vec!["-n", &h.a, "addr", "add", &addr_a, "dev", "sfv"],
            vec!["-n", &h.b, "addr", "add", &addr_b, "dev", "sfv"],
            vec!["-n", &h.a, "link", "set", "sfv", "up"],
            vec!["-n", &h.b, "link", "set", "sfv", "up"],
            vec!["-n", &h.a, "link", "set", "lo", "up"],
            vec!["-n", &h.b, "link", "set", "lo", "up"],
        ];
        for s in &steps {
            if !ip(s) {
                eprintln!("namespace setup failed at: ip {}", s.join(" "));
                return None;
            }
        }
        Some(h)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
        ip(&["link", "del", &format!("sfva{}", std::process::id())]);
    }
}

#[test]
fn two_hosts_route_through_fabric_across_and_shm_within_and_a_cut_link_is_suspected() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: network namespaces need root");
        return;
    }
    if !ip(&["-V"]) {
        eprintln!("SKIPPED: ip (iproute2) not installed");
        return;
    }
    let hosts = Hosts::create().expect("create the namespaces (root, iproute2)");
    let dir = std::env::temp_dir().join(format!("steadfast-netns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("place.sh");
    // Each rank enters its host's namespace with that host's node id.
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$STEADFAST_RANK\" -lt 2 ]; then ns={a}; node=A; else ns={b}; node=B; fi\n\
             exec ip netns exec $ns env STEADFAST_NODE_ID=$node STEADFAST_DOMAIN=sfv \
             STEADFAST_DETECT_TIMEOUT_MS=500 STEADFAST_HEARTBEAT_MS=50 \
             STEADFAST_TEST_CUT='ip link set sfv down' \"$@\"\n",
            a = hosts.a,
            b = hosts.b
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let listen = format!("10.77.{}.1", hosts.subnet);
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        &hosts.a,
        env!("CARGO_BIN_EXE_steadfast-run"),
    ])
    .args(["--listen", &listen, "-n", "4", "--tag-output"])
    .arg(&wrapper)
    .args([env!("CARGO_BIN_EXE_ft-test-rank"), "netsplit"])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    {
        // The child dies with this process (and never outlives a parent that died first).
        cmd.die_with_parent();
    }
    let child = cmd
        .spawn()
        .expect("start steadfast-run in the first namespace");
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: probing our own child.
            if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
                return;
            }
        }
        // SAFETY: SIGINT to our child: the launcher relays it to every rank.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!(
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{ctx}");
    for r in 0..4 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("[{r}] COUNTERS")))
            .unwrap_or_else(|| panic!("no counters from rank {r}: {ctx}"));
        // One message to the same-host peer, two to the far host.
        assert!(line.contains("shm_sent=1 fabric_sent=2"), "{line}\n{ctx}");
        let far = if r < 2 { "[2, 3]" } else { "[0, 1]" };
        assert!(
            stdout.contains(&format!("[{r}] SPLIT far side {far} failed")),
            "rank {r}: {ctx}"
        );
    }
    assert!(stdout.contains("heartbeat timeout"), "{ctx}");
}
