//! The spawner: restarts a failed rank in place when a survivor asks the bootstrap
//! service (`Restart`), as a new incarnation of the same rank: the same program,
//! arguments and environment as the first start, `STEADFAST_GENERATION` one more, and
//! the job's bootstrap address and secret, so it joins the surviving job. The service
//! calls [`Spawner::spawn`] on its thread; the main loop adopts the new child
//! ([`Spawner::adopt`]) and waits for it like the others.

use std::process::{Child, Command};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// A new incarnation of a rank, started and not yet adopted by the main loop.
pub struct Incarnation {
    /// World rank.
    pub rank: u32,
    /// Its generation (1 for the first restart).
    pub generation: u32,
    /// The process.
    pub child: Child,
}

/// Builds the command of a rank (the same function starts the first incarnations).
pub type CommandOf = Box<dyn Fn(u32) -> Command + Send + Sync>;

/// Starts new incarnations and hands them to the main loop.
pub struct Spawner {
    command_of: CommandOf,
    tag_output: bool,
    started: Mutex<Vec<Incarnation>>,
    taggers: Mutex<Vec<JoinHandle<()>>>,
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
        }
    }

    /// Starts incarnation `generation` of `rank`; its pid, or why it could not start.
    pub fn spawn(&self, rank: u32, generation: u32) -> Result<Child, String> {
        let mut cmd = (self.command_of)(rank);
        cmd.env("STEADFAST_GENERATION", generation.to_string());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the program: {e}"))?;
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
    }

    /// The incarnations started since the last call.
    pub fn adopt(&self) -> Vec<Incarnation> {
        std::mem::take(&mut *self.started.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The output relays of restarted processes (joined before the launcher exits).
    pub fn take_taggers(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut *self.taggers.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
