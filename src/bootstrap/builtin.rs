//! The rank side of `steadfast-run`'s key-value service.

use super::wire::{Frame, MAX_VALUE, PROTOCOL_VERSION, SECRET_LEN};
use super::{Bootstrap, BootstrapError, FailureEvent, Rejoin};
use std::net::TcpStream;
use std::time::Duration;

/// Connections attempted before [`Builtin::connect`] gives up.
pub const CONNECT_ATTEMPTS: u32 = 5;

/// A connection to the launcher of this job.
#[derive(Debug)]
pub struct Builtin {
    rank: u32,
    size: u32,
    generation: u32,
    stream: TcpStream,
    events: Vec<FailureEvent>,
    rejoins: Vec<Rejoin>,
    /// The rank of a restart asked for and not answered yet: the next answer frame is
    /// its answer (the launcher answers a connection's requests in order).
    restart_outstanding: Option<u32>,
    restart_answer: Option<Result<Rejoin, BootstrapError>>,
}

fn env(name: &'static str) -> Result<String, BootstrapError> {
    std::env::var(name).map_err(|_| BootstrapError::BadEnv {
        name,
        why: "missing or not UTF-8".into(),
    })
}

fn parse<T: std::str::FromStr>(name: &'static str) -> Result<T, BootstrapError> {
    let v = env(name)?;
    v.parse().map_err(|_| BootstrapError::BadEnv {
        name,
        why: format!("{v:?} is not a number"),
    })
}

/// Decodes the hex secret handed down by the launcher.
pub fn parse_secret(hex: &str) -> Option<[u8; SECRET_LEN]> {
    if hex.len() != 2 * SECRET_LEN {
        return None;
    }
    let mut s = [0u8; SECRET_LEN];
    for (i, b) in s.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(s)
}

/// Whether `stream` has bytes to read within `wait`.
fn readable(stream: &TcpStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

impl Builtin {
    /// Connects using STEADFAST_RUN_ADDR, STEADFAST_RUN_SECRET, STEADFAST_RANK,
    /// STEADFAST_SIZE and STEADFAST_GENERATION (0 when unset: a first start).
    ///
    /// # Errors
    /// [`BootstrapError::BadEnv`] naming the variable; connection errors; a refusal.
    pub fn from_env() -> Result<Self, BootstrapError> {
        let addr = env("STEADFAST_RUN_ADDR")?;
        let secret = parse_secret(&env("STEADFAST_RUN_SECRET")?).ok_or(BootstrapError::BadEnv {
            name: "STEADFAST_RUN_SECRET",
            why: format!("not {} hex digits", 2 * SECRET_LEN),
        })?;
        let rank: u32 = parse("STEADFAST_RANK")?;
        let size: u32 = parse("STEADFAST_SIZE")?;
        if rank >= size {
            return Err(BootstrapError::BadEnv {
                name: "STEADFAST_RANK",
                why: format!("{rank} not below STEADFAST_SIZE {size}"),
            });
        }
        let generation: u32 = match std::env::var_os("STEADFAST_GENERATION") {
            None => 0,
            Some(_) => parse("STEADFAST_GENERATION")?,
        };
        Self::connect_as(&addr, rank, size, generation, secret)
    }

    /// Connects to the launcher at `addr` as `rank` of `size`, authenticated by
    /// `secret`. A connection that fails or is cut before the launcher answers (it
    /// sheds unauthenticated connections under a flood) is retried, up to
    /// [`CONNECT_ATTEMPTS`] times in all.
    ///
    /// # Errors
    /// [`BootstrapError::BadEnv`] for an address that cannot be reached; the
    /// launcher's refusal; the last connection error.
    pub fn connect(
        addr: &str,
        rank: u32,
        size: u32,
        secret: [u8; SECRET_LEN],
    ) -> Result<Self, BootstrapError> {
        Self::connect_as(addr, rank, size, 0, secret)
    }

    /// As [`connect`](Self::connect), as incarnation `generation` of `rank`.
    ///
    /// # Errors
    /// As [`connect`](Self::connect); the launcher refuses a generation that is not the
    /// rank's current one.
    pub fn connect_as(
        addr: &str,
        rank: u32,
        size: u32,
        generation: u32,
        secret: [u8; SECRET_LEN],
    ) -> Result<Self, BootstrapError> {
        let mut attempt = 1;
        loop {
            let stream = TcpStream::connect(addr).map_err(|e| BootstrapError::BadEnv {
                name: "STEADFAST_RUN_ADDR",
                why: format!("cannot connect to {addr}: {e}"),
            })?;
            stream.set_nodelay(true).ok();
            let mut b = Builtin {
                rank,
                size,
                generation,
                stream,
                events: Vec::new(),
                rejoins: Vec::new(),
                restart_outstanding: None,
                restart_answer: None,
            };
            let hello = Frame::Hello {
                version: PROTOCOL_VERSION,
                rank,
                generation,
                secret,
            };
            match b.request(&hello) {
                Ok(Frame::Ok) => return Ok(b),
                Ok(other) => {
                    return Err(BootstrapError::Refused(format!(
                        "unexpected answer to hello: {other:?}"
                    )))
                }
                Err(BootstrapError::Frame(e)) if attempt < CONNECT_ATTEMPTS => {
                    log::debug!("bootstrap: connection to {addr} lost before hello was answered ({e}); retrying");
                    std::thread::sleep(Duration::from_millis(20 << attempt));
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends a request and returns its answer, keeping events (and the answer of an
    /// outstanding restart, which comes first) aside.
    fn request(&mut self, f: &Frame) -> Result<Frame, BootstrapError> {
        f.write_to(&mut self.stream)
            .map_err(super::wire::FrameError::from)?;
        loop {
            let frame = Frame::read_from(&mut self.stream)?;
            if let Some(answer) = self.keep_aside(frame) {
                return match answer {
                    Frame::Error(m) => Err(BootstrapError::Refused(m)),
                    other => Ok(other),
                };
            }
        }
    }

    /// Keeps an event or a restart's answer aside; returns any other frame.
    fn keep_aside(&mut self, frame: Frame) -> Option<Frame> {
        match frame {
            Frame::Failed {
                rank,
                generation,
                how,
            } => self.events.push(FailureEvent {
                rank,
                generation,
                how,
            }),
            Frame::Rejoined { rank, generation } => self.rejoins.push(Rejoin {
                rank,
                generation,
                pid: 0,
            }),
            answer if self.restart_outstanding.is_some() => {
                let rank = self.restart_outstanding.take().unwrap_or_default();
                self.restart_answer = Some(match answer {
                    Frame::Restarted {
                        rank,
                        generation,
                        pid,
                    } => Ok(Rejoin {
                        rank,
                        generation,
                        pid,
                    }),
                    Frame::Error(why) => Err(BootstrapError::RestartFailed { rank, why }),
                    other => Err(BootstrapError::Refused(format!(
                        "unexpected answer to restart: {other:?}"
                    ))),
                });
            }
            other => return Some(other),
        }
        None
    }

    /// Reads every frame readable within `wait` (then without waiting), keeping them
    /// aside; an answer nothing asked for is an error.
    fn read_events(&mut self, wait: Duration) -> Result<(), BootstrapError> {
        // A whole frame is read once its first byte is there (frames are written in
        // one piece), so this never leaves the stream mid-frame.
        let mut first_wait = wait;
        while readable(&self.stream, first_wait) {
            first_wait = Duration::ZERO;
            let frame = Frame::read_from(&mut self.stream)?;
            if let Some(other) = self.keep_aside(frame) {
                return Err(BootstrapError::Refused(format!("unsolicited {other:?}")));
            }
        }
        Ok(())
    }
}

impl Bootstrap for Builtin {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        if value.len() > MAX_VALUE {
            return Err(BootstrapError::Refused(format!(
                "value of {} bytes for key {key:?} exceeds the launcher's limit of {MAX_VALUE} bytes",
                value.len()
            )));
        }
        if key.len() > super::wire::MAX_KEY {
            return Err(BootstrapError::Refused(format!(
                "key of {} bytes exceeds the launcher's limit of {} bytes",
                key.len(),
                super::wire::MAX_KEY
            )));
        }
        match self.request(&Frame::Put {
            key: key.into(),
            value: value.into(),
        })? {
            Frame::Ok => Ok(()),
            other => Err(BootstrapError::Refused(format!(
                "unexpected answer {other:?}"
            ))),
        }
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        match self.request(&Frame::Get {
            rank,
            key: key.into(),
        }) {
            Ok(Frame::Value(v)) => Ok(v),
            Ok(other) => Err(BootstrapError::Refused(format!(
                "unexpected answer {other:?}"
            ))),
            Err(BootstrapError::Refused(m)) if m.starts_with("dead:") => {
                Err(BootstrapError::RankDied {
                    rank,
                    how: m.trim_start_matches("dead:").trim().into(),
                })
            }
            Err(e) => Err(e),
        }
    }

    fn lookup(&mut self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, BootstrapError> {
        match self.request(&Frame::Lookup {
            rank,
            key: key.into(),
        }) {
            Ok(Frame::Value(v)) => Ok(Some(v)),
            Ok(other) => Err(BootstrapError::Refused(format!(
                "unexpected answer {other:?}"
            ))),
            Err(BootstrapError::Refused(m)) if m.starts_with("absent") => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        match self.request(&Frame::Fence)? {
            Frame::Ok => Ok(()),
            other => Err(BootstrapError::Refused(format!(
                "unexpected answer {other:?}"
            ))),
        }
    }

    fn failures(&mut self, wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        // Wait (up to `wait`) only when nothing is queued; then take every frame that
        // is there.
        let wait = if self.events.is_empty() {
            wait
        } else {
            Duration::ZERO
        };
        self.read_events(wait)?;
        Ok(std::mem::take(&mut self.events))
    }

    fn generation(&self) -> u32 {
        self.generation
    }

    fn restart_begin(&mut self, rank: u32, generation: u32) -> Result<(), BootstrapError> {
        if self.restart_outstanding.is_some() || self.restart_answer.is_some() {
            return Err(BootstrapError::Refused(
                "a restart is already in progress from this process; poll it first".into(),
            ));
        }
        if rank >= self.size || rank == self.rank {
            return Err(BootstrapError::Refused(format!(
                "cannot restart rank {rank}: not another rank of a job of {}",
                self.size
            )));
        }
        Frame::Restart { rank, generation }
            .write_to(&mut self.stream)
            .map_err(super::wire::FrameError::from)?;
        self.restart_outstanding = Some(rank);
        Ok(())
    }

    fn restart_poll(
        &mut self,
        wait: Duration,
    ) -> Result<Option<Result<Rejoin, BootstrapError>>, BootstrapError> {
        if self.restart_answer.is_none() && self.restart_outstanding.is_some() {
            self.read_events(wait)?;
        }
        Ok(self.restart_answer.take())
    }

    fn joined(&mut self) -> Result<(), BootstrapError> {
        match self.request(&Frame::Joined)? {
            Frame::Ok => Ok(()),
            other => Err(BootstrapError::Refused(format!(
                "unexpected answer {other:?}"
            ))),
        }
    }

    fn rejoins(&mut self) -> Vec<Rejoin> {
        std::mem::take(&mut self.rejoins)
    }
}
