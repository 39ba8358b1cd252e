//! Starting a peer process and connecting a messenger to it.
#![allow(dead_code)]

#[macro_use]
mod per_provider;
mod shared;

pub use shared::*;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use steadfast_fabric::Messenger;
use steadfast_os::DieWithParent;

/// How long a multi-process test may run before [`HangGuard`] aborts it: far beyond
/// what any takes on a busy 2-core machine.
pub const HANG_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Aborts the whole test process (with `what` on stderr) unless dropped within `limit`:
/// a hang inside the provider cannot be interrupted any other way, and a test that hangs
/// would stall the whole run instead of failing.
pub struct HangGuard {
    done: Option<std::sync::mpsc::Sender<()>>,
}

impl HangGuard {
    pub fn new(what: String, limit: std::time::Duration) -> Self {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                eprintln!("{what}: still running after {limit:?}; aborting");
                std::process::abort();
            }
        });
        HangGuard { done: Some(done) }
    }
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

/// A peer process (id 1) that dies with the test: killed on drop, and by the kernel
/// when the thread that started it ends (PR_SET_PDEATHSIG).
pub struct PeerProcess {
    pub child: Child,
}

impl PeerProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Waits for the peer to exit and asserts that it succeeded.
    pub fn expect_success(mut self) {
        let status = self.child.wait().expect("wait for peer");
        assert!(status.success(), "peer failed: {status}");
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove_shm_regions_of(self.child.id());
    }
}

/// Removes the shared-memory regions libfabric's shm provider made for `pid`
/// (`/dev/shm/<pid>:...`): a SIGKILLed process cannot unlink its own.
pub fn remove_shm_regions_of(pid: u32) {
    let prefix = format!("{pid}:");
    if let Ok(entries) = std::fs::read_dir("/dev/shm") {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Opens our messenger (id 0), starts the peer with `scenario`, exchanges addresses.
pub fn connect(provider: &str, scenario: &str) -> (Messenger, PeerProcess) {
    connect_with(messenger_config(provider, 0), provider, scenario)
}

/// [`connect`] with our messenger opened from `config` (id 0).
pub fn connect_with(
    config: steadfast_fabric::MessengerConfig,
    provider: &str,
    scenario: &str,
) -> (Messenger, PeerProcess) {
    let mut messenger = Messenger::open(config).expect("open messenger");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fabric-test-peer"));
    cmd.arg(provider)
        .arg(scenario)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // The child dies with this process (and never outlives a parent that died first).
    cmd.die_with_parent();
    let mut child = cmd.spawn().expect("start fabric-test-peer");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("peer address");
    assert!(!line.trim().is_empty(), "peer printed no address");
    messenger
        .add_peer(1, &unhex(line.trim()))
        .expect("add peer");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", hex(&messenger.address().to_bytes())).expect("send our address");
    (messenger, PeerProcess { child })
}
