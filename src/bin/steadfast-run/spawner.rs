//! The spawner: restarts a failed rank in place when a survivor asks the bootstrap
//! service (`Restart`), as a new incarnation of the same rank: the same program,
//! arguments and environment as the first start (for a spare slot whose spawn named a
//! command, that command: `docs/spawn.md`), `STEADFAST_GENERATION` one more, and
//! the job's bootstrap address and secret, so it joins the surviving job. The service
//! calls [`Spawner::spawn`] on its thread; the main loop adopts the new child
//! ([`Spawner::adopt`]) and waits for it like the others. A start wakes the main loop
//! ([`Spawner::wake_fd`]): an incarnation that dies within the loop's 50 ms wait is
//! then reported at once, not up to 50 ms late.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::thread::JoinHandle;

use steadfast::bootstrap::SpawnCommand;

/// A new incarnation of a rank, started and not yet adopted by the main loop.
pub struct Incarnation {
    /// World rank.
    pub rank: u32,
    /// Its generation (1 for the first restart).
    pub generation: u32,
    /// The process.
    pub child: Child,
}

/// Builds the command of a rank, running the spawn's command when given (the same
/// function starts the first incarnations, with none).
pub type CommandOf = Box<dyn Fn(u32, Option<&SpawnCommand>) -> Command + Send + Sync>;

/// Starts new incarnations and hands them to the main loop.
pub struct Spawner {
    command_of: CommandOf,
    tag_output: bool,
    started: Mutex<Vec<Incarnation>>,
    taggers: Mutex<Vec<JoinHandle<()>>>,
    /// A non-blocking pipe (read end, write end): a byte per start (None: no pipe
    /// could be made; the main loop then finds the child within its 50 ms wait).
    wake: Option<(OwnedFd, OwnedFd)>,
}

/// A close-on-exec, non-blocking pipe.
fn pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is an array of two ints for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if rc != 0 {
        return None;
    }
    // SAFETY: pipe2 succeeded: both are open descriptors owned by nobody else.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Spawner {
    /// A spawner building each rank's command with `command_of`; `tag_output` relays
    /// the new processes' output with rank prefixes, as for the first ones.
    pub fn new(command_of: CommandOf, tag_output: bool) -> Spawner {
        Spawner {
            command_of,
            tag_output,
            started: Mutex::new(Vec::new()),
            taggers: Mutex::new(Vec::new()),
            wake: pipe(),
        }
    }

    /// The descriptor that turns readable when an incarnation was started (for the
    /// main loop's poll; [`Spawner::adopt`] empties it).
    pub fn wake_fd(&self) -> Option<RawFd> {
        self.wake.as_ref().map(|(r, _)| r.as_raw_fd())
    }

    /// Starts incarnation `generation` of `rank` (running `command` when given, else
    /// the job's program); its pid, or why it could not start.
    pub fn spawn(
        &self,
        rank: u32,
        generation: u32,
        command: Option<&SpawnCommand>,
    ) -> Result<Child, String> {
        let mut cmd = (self.command_of)(rank, command);
        cmd.env("STEADFAST_GENERATION", generation.to_string());
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start the program {:?}: {e}",
                cmd.get_program().to_string_lossy()
            )
        })?;
        if self.tag_output {
            let mut taggers = self.taggers.lock().unwrap_or_else(|p| p.into_inner());
            taggers.extend(super::relay::tag(child.stdout.take(), rank, false));
            taggers.extend(super::relay::tag(child.stderr.take(), rank, true));
        }
        Ok(child)
    }

    /// Keeps a started incarnation for the main loop.
    pub fn started(&self, rank: u32, generation: u32, child: Child) {
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Incarnation {
                rank,
                generation,
                child,
            });
        if let Some((_, w)) = &self.wake {
            // SAFETY: writing one byte from a live buffer to our pipe; a full pipe
            // (EAGAIN) already wakes the loop.
            unsafe { libc::write(w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        }
    }

    /// The incarnations started since the last call.
    pub fn adopt(&self) -> Vec<Incarnation> {
        if let Some((r, _)) = &self.wake {
            let mut sink = [0u8; 64];
            // SAFETY: reading into a live buffer of its length from our non-blocking
            // pipe, until it is empty (or fails).
            while unsafe { libc::read(r.as_raw_fd(), sink.as_mut_ptr().cast(), sink.len()) } > 0 {}
        }
        std::mem::take(&mut *self.started.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The output relays of restarted processes (joined before the launcher exits).
    pub fn take_taggers(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut *self.taggers.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
