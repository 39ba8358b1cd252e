//! The PMI-1 wire protocol, as spoken by MPICH Hydra (`mpiexec.hydra`) and by Slurm's
//! `srun --mpi=pmi2` (whose server also answers PMI-1 commands).
//!
//! Requests and answers are single lines of `key=value` words separated by spaces
//! (`cmd=put kvsname=K key=K value=V`). The connection is the inherited descriptor
//! `PMI_FD`, or a TCP connection to `PMI_PORT` introduced by `cmd=initack pmiid=PMI_ID`.
//! Values are hex-encoded here (binary addresses; no spaces), and each answer is
//! decoded defensively: bounded line length, every field checked.

use super::{Bootstrap, BootstrapError, FailureEvent};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::time::Duration;

/// Longest answer line accepted.
const MAX_LINE: usize = 64 << 10;

/// The connection to the PMI server.
#[derive(Debug)]
enum Stream {
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    fn set_read_timeout(&self, t: Option<Duration>) {
        let _ = match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        };
    }
}

impl std::io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// A PMI-1 connection.
pub struct Pmi1 {
    rank: u32,
    size: u32,
    kvsname: String,
    reader: BufReader<Stream>,
    writer: Stream,
    vallen_max: usize,
    keylen_max: usize,
}

impl std::fmt::Debug for Pmi1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmi1")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("kvsname", &self.kvsname)
            .finish_non_exhaustive()
    }
}

fn bad_env(name: &'static str, why: impl Into<String>) -> BootstrapError {
    BootstrapError::BadEnv {
        name,
        why: why.into(),
    }
}

fn env_number(name: &'static str) -> Result<Option<u32>, BootstrapError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| bad_env(name, format!("{v:?} is not a number"))),
    }
}

/// Parses one answer line into its `key=value` words.
pub fn parse_line(line: &str) -> Result<Vec<(&str, &str)>, BootstrapError> {
    line.split_whitespace()
        .map(|w| {
            w.split_once('=').ok_or_else(|| {
                BootstrapError::Refused(format!("PMI: malformed word {w:?} in {line:?}"))
            })
        })
        .collect()
}

fn field<'a>(words: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    words.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string; `None` when malformed.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    // from_str_radix alone would take a sign ("+f"): only hex digits are accepted.
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Set when the launcher signalled a process failure (SIGUSR1).
static FAILURE_SIGNALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_failure_signal(_: libc::c_int) {
    // ORDERING: Relaxed; a hint read later, nothing is published with it.
    FAILURE_SIGNALLED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// As [`tolerate_failure_signal`], when this process was started by a PMI-1 launcher
/// (`PMI_FD` or `PMI_PORT`, and not `steadfast-run`). `World::init` calls it unless the
/// `pmi_failure_signal` parameter is 0; a program that builds its own bootstrap calls it
/// itself if it wants it.
pub fn tolerate_failure_signal_if_launched() {
    let pmi = std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some();
    if pmi && std::env::var_os("STEADFAST_RUN_ADDR").is_none() {
        tolerate_failure_signal();
    }
}

/// Hydra run with `-disable-auto-cleanup` (the way MPICH keeps a job alive through a
/// failure) sends SIGUSR1 to every survivor when a process dies; its default action
/// would kill them. Unless the application chose its own disposition, notes the signal
/// instead (steadfast's own detectors find the failed rank). A process-wide change: the
/// library makes it only when asked (see [`tolerate_failure_signal_if_launched`]).
pub fn tolerate_failure_signal() {
    // SAFETY: sigaction with a null new action only reads the current one.
    let current = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut old);
        old.sa_sigaction
    };
    if current != libc::SIG_DFL {
        return;
    }
    // SAFETY: installs an async-signal-safe handler (one atomic store) with an empty
    // mask; SA_RESTART keeps system calls of other threads from failing with EINTR.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_failure_signal as *const () as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGUSR1, &act, std::ptr::null_mut());
    }
}

/// Whether the launcher has signalled a process failure (SIGUSR1) since start.
pub fn failure_signalled() -> bool {
    // ORDERING: Relaxed, as in the handler.
    FAILURE_SIGNALLED.load(std::sync::atomic::Ordering::Relaxed)
}

impl Pmi1 {
    /// Connects through `PMI_FD` or `PMI_PORT` and initialises.
    ///
    /// # Errors
    /// [`BootstrapError::BadEnv`] naming a bad variable; `Refused` when the server
    /// answers with an error or nonsense.
    pub fn from_env() -> Result<Self, BootstrapError> {
        let (reader, writer) = if let Some(fd) = env_number("PMI_FD")? {
            let fd = fd as i32;
            // SAFETY: F_GETFD on any integer is harmless; it tells whether the fd is open.
            if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
                return Err(bad_env("PMI_FD", format!("{fd} is not an open descriptor")));
            }
            // SAFETY: the launcher handed this open descriptor to us, for our use
            // only; it is owned by this bootstrap from now on.
            let stream = Stream::Unix(unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) });
            let w = stream
                .try_clone()
                .map_err(|e| bad_env("PMI_FD", e.to_string()))?;
            (stream, w)
        } else {
            let port = std::env::var("PMI_PORT").map_err(|_| bad_env("PMI_PORT", "missing"))?;
            let stream = std::net::TcpStream::connect(&port)
                .map_err(|e| bad_env("PMI_PORT", format!("cannot connect to {port}: {e}")))?;
            let stream = Stream::Tcp(stream);
            let w = stream
                .try_clone()
                .map_err(|e| bad_env("PMI_PORT", e.to_string()))?;
            (stream, w)
        };
        let mut p = Pmi1 {
            rank: 0,
            size: 0,
            kvsname: String::new(),
            reader: BufReader::new(reader),
            writer,
            vallen_max: 1024,
            keylen_max: 64,
        };
        let mut rank = env_number("PMI_RANK")?;
        let mut size = env_number("PMI_SIZE")?;
        if std::env::var_os("PMI_FD").is_none() {
            if let Some(id) = env_number("PMI_ID")? {
                p.send(&format!("cmd=initack pmiid={id}"))?;
                // initack, then set size=, set rank=, set debug=.
                for _ in 0..4 {
                    let line = p.read_line()?;
                    let words = parse_line(&line)?;
                    match (field(&words, "cmd"), words.get(1)) {
                        (Some("set"), Some(("size", v))) => size = v.parse().ok(),
                        (Some("set"), Some(("rank", v))) => rank = v.parse().ok(),
                        _ => {}
                    }
                }
            }
        }
        let init = p.request(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        if owned_field(&init, "rc") != Some("0") {
            return Err(BootstrapError::Refused(format!(
                "PMI init refused: {init:?}"
            )));
        }
        let maxes = p.request("cmd=get_maxes", "maxes")?;
        if let Some(v) = owned_field(&maxes, "vallen_max").and_then(|v| v.parse().ok()) {
            p.vallen_max = v;
        }
        if let Some(v) = owned_field(&maxes, "keylen_max").and_then(|v| v.parse().ok()) {
            p.keylen_max = v;
        }
        let kvs = p.request("cmd=get_my_kvsname", "my_kvsname")?;
        p.kvsname = owned_field(&kvs, "kvsname")
            .ok_or_else(|| BootstrapError::Refused("PMI: no kvsname".into()))?
            .to_string();
        p.rank = rank.ok_or_else(|| bad_env("PMI_RANK", "missing"))?;
        p.size = size.ok_or_else(|| bad_env("PMI_SIZE", "missing"))?;
        if p.rank >= p.size {
            return Err(bad_env(
                "PMI_RANK",
                format!("{} not below PMI_SIZE {}", p.rank, p.size),
            ));
        }
        Ok(p)
    }

    fn send(&mut self, line: &str) -> Result<(), BootstrapError> {
        let io = |source| BootstrapError::Connection {
            server: "PMI",
            source,
        };
        // One write: Slurm's server parses whatever one read returns as a request.
        let mut request = String::with_capacity(line.len() + 1);
        request.push_str(line);
        request.push('\n');
        self.writer.write_all(request.as_bytes()).map_err(io)?;
        self.writer.flush().map_err(io)
    }

    fn read_line(&mut self) -> Result<String, BootstrapError> {
        let mut buf = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|source| BootstrapError::Connection {
                server: "PMI",
                source,
            })?;
        if n == 0 {
            return Err(BootstrapError::Refused(
                "PMI server closed the connection".into(),
            ));
        }
        if n > MAX_LINE {
            return Err(BootstrapError::Refused("PMI answer line too long".into()));
        }
        String::from_utf8(buf)
            .map(|s| s.trim_end().to_string())
            .map_err(|_| BootstrapError::Refused("PMI answer is not UTF-8".into()))
    }

    /// Sends `line` and returns the words of the answer whose `cmd` is `expect`.
    fn request(
        &mut self,
        line: &str,
        expect: &str,
    ) -> Result<Vec<(String, String)>, BootstrapError> {
        self.send(line)?;
        let answer = self.read_line()?;
        let words = parse_line(&answer)?;
        if field(&words, "cmd") != Some(expect) {
            return Err(BootstrapError::Refused(format!(
                "PMI: expected cmd={expect}, got {answer:?}"
            )));
        }
        Ok(words
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    fn key(&self, rank: u32, key: &str) -> Result<String, BootstrapError> {
        let k = format!("sf-{rank}-{key}");
        if k.len() > self.keylen_max
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(BootstrapError::Refused(format!("PMI: key {k:?} unusable")));
        }
        Ok(k)
    }
}

fn owned_field<'a>(words: &'a [(String, String)], key: &str) -> Option<&'a str> {
    words
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

impl Bootstrap for Pmi1 {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        let k = self.key(self.rank, key)?;
        let v = hex(value);
        if v.len() > self.vallen_max {
            return Err(BootstrapError::Refused(format!(
                "PMI: value of {key} is {} hex digits, above the server's {}",
                v.len(),
                self.vallen_max
            )));
        }
        let kvs = self.kvsname.clone();
        let r = self.request(
            &format!("cmd=put kvsname={kvs} key={k} value={v}"),
            "put_result",
        )?;
        if owned_field(&r, "rc") != Some("0") {
            return Err(BootstrapError::Refused(format!("PMI put refused: {r:?}")));
        }
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        let k = self.key(rank, key)?;
        let kvs = self.kvsname.clone();
        let r = self.request(&format!("cmd=get kvsname={kvs} key={k}"), "get_result")?;
        if owned_field(&r, "rc") != Some("0") {
            return Err(BootstrapError::Refused(format!(
                "PMI get of {key} from rank {rank} refused (PMI-1 values are visible after a fence): {r:?}"
            )));
        }
        let v = owned_field(&r, "value").unwrap_or("");
        unhex(v).ok_or_else(|| BootstrapError::Refused(format!("PMI: value of {key} is not hex")))
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.request("cmd=barrier_in", "barrier_out").map(|_| ())
    }

    fn failures(&mut self, _wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        // PMI-1 has no failure notification: detection relies on pidfds, transport
        // errors and heartbeats.
        Ok(Vec::new())
    }

    fn restart_begin(&mut self, rank: u32, _generation: u32) -> Result<(), BootstrapError> {
        Err(BootstrapError::NoSpawner {
            rank,
            why: "PMI-1 (mpiexec.hydra, srun --mpi=pmi2) has no way to start a process into a running job; to restart ranks, run the job under steadfast-run (under Slurm: steadfast-run -n N PROGRAM in the batch script or salloc shell, which starts each rank as a job step and restarts it as one)".into(),
        })
    }
}

impl Drop for Pmi1 {
    fn drop(&mut self) {
        // Tell the server we leave on purpose (Hydra otherwise reports an abnormal
        // exit); never wait long for its answer.
        if self.send("cmd=finalize").is_ok() {
            self.reader
                .get_ref()
                .set_read_timeout(Some(Duration::from_secs(2)));
            let _ = self.read_line();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_failure_signal_is_noted_not_fatal() {
        tolerate_failure_signal();
        // SAFETY: raising a signal at ourselves; the handler is installed above.
        unsafe { libc::raise(libc::SIGUSR1) };
        assert!(failure_signalled());
    }

    #[test]
    fn lines_parse_and_malformed_words_are_errors() {
        let w = parse_line("cmd=get_result rc=0 msg=success value=00ff").unwrap();
        assert_eq!(field(&w, "value"), Some("00ff"));
        assert!(parse_line("cmd=get_result garbage").is_err());
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_input() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(unhex(&hex(&b)).unwrap(), b);
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }
}
