//! The provider's own figure: `fi_pingpong` (fabtests) run as server and client on
//! this node, for the same provider and domain, when it is installed. Its `usec/xfer`
//! is set beside our 8-byte one-way latency as a ratio; nothing is asserted.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::report::Probe;

const ITERS: &str = "2000";
/// Time both sides get before they are killed.
const LIMIT: Duration = Duration::from_secs(20);

/// A child that is killed and reaped when dropped, and dies with us
/// (`PR_SET_PDEATHSIG`).
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> std::io::Result<Guard> {
    let mut cmd = Command::new("fi_pingpong");
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches only the child being started.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn().map(Guard)
}

/// Waits for `g` to exit within `until`; returns its stdout.
fn output(mut g: Guard, until: Instant) -> Option<String> {
    loop {
        match g.0.try_wait() {
            Ok(Some(status)) if status.success() => {
                let mut s = String::new();
                g.0.stdout.take()?.read_to_string(&mut s).ok()?;
                return Some(s);
            }
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if Instant::now() > until => return None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The `usec/xfer` column of fi_pingpong's last result line ("bytes #sent #ack total
/// time MB/sec usec/xfer Mxfers/sec").
pub fn parse_usec_per_xfer(out: &str) -> Option<f64> {
    out.lines()
        .rfind(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))?
        .split_whitespace()
        .nth(6)?
        .parse()
        .ok()
}

/// Runs fi_pingpong for `provider` / `domain` (8 B, tagged, RDM) and, when it gives a
/// figure, fills `probe.reference` and `probe.ratio`; otherwise says why in the note.
pub fn compare(probe: &mut Probe, provider: &str, domain: &str) {
    match run(provider, domain) {
        Ok(us) => {
            probe.reference = Some(us);
            probe.ratio = Some(probe.value / us);
            probe
                .note
                .push_str("; reference: fi_pingpong 8 B tagged usec/xfer");
        }
        Err(why) => {
            log::info!("fi_pingpong for {provider}: {why}");
            probe.note.push_str(&format!("; no reference: {why}"));
        }
    }
}

fn run(provider: &str, domain: &str) -> Result<f64, String> {
    if Command::new("fi_pingpong")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err("fi_pingpong not installed (fabtests / libfabric-bin)".into());
    }
    let port = (20000 + std::process::id() % 20000).to_string();
    let mut common = vec![
        "-p", provider, "-e", "rdm", "-m", "tagged", "-I", ITERS, "-S", "8",
    ];
    if provider != "shm" && !domain.is_empty() {
        common.extend(["-d", domain]);
    }
    let server =
        spawn(&[&common[..], &["-B", &port]].concat()).map_err(|e| format!("fi_pingpong: {e}"))?;
    std::thread::sleep(Duration::from_millis(500));
    let client = spawn(&[&common[..], &["-P", &port, "127.0.0.1"]].concat())
        .map_err(|e| format!("fi_pingpong: {e}"))?;
    let until = Instant::now() + LIMIT;
    let out = output(client, until).ok_or("fi_pingpong client failed or timed out")?;
    drop(server);
    parse_usec_per_xfer(&out).ok_or_else(|| "no result line in fi_pingpong's output".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_result_line_gives_usec_per_xfer() {
        let out = "name: x\nbytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n\
                   8       2k      =2k      31k         0.06s      0.52      15.44       0.06\n";
        assert_eq!(parse_usec_per_xfer(out), Some(15.44));
        assert_eq!(parse_usec_per_xfer("no numbers\n"), None);
    }
}
