//! The command a spawn starts in a spare slot (`docs/spawn.md`, "The command"): a
//! program, the `argv[0]` it sees, its arguments and, optionally, the directory it
//! starts in (`MPI_Comm_spawn`'s `wdir` info key). The spawning root puts it under
//! its own [`SPAWN_COMMAND_KEY`] before it asks the launcher to start a slot; the
//! launcher's store keeps it for the slot, so every later incarnation of the slot (a
//! restart in place) runs it again.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The key under which a spawning root puts the command of the slots it starts next
/// (an empty value: the job's own program and arguments). `steadfast-run`'s store
/// reads it when the root's `Restart` of a spare slot arrives.
pub const SPAWN_COMMAND_KEY: &str = "sf.spawn-command";

/// Most words (program, `argv[0]` and arguments) a command may have.
const MAX_WORDS: usize = 4096;
/// Bit 31 of the encoded word count: the last word is the working directory.
const WITH_DIR: u32 = 1 << 31;

/// What a spawn starts instead of the job's own program and arguments.
///
/// ```
/// use steadfast::bootstrap::SpawnCommand;
/// let c = SpawnCommand::new("/usr/local/bin/worker").args(["--level", "3"]);
/// assert_eq!(c.argv0(), "/usr/local/bin/worker");
/// let c = c.arg0("worker");
/// assert_eq!(c.argv0(), "worker");
/// assert_eq!(c.get_args().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    program: OsString,
    argv0: OsString,
    args: Vec<OsString>,
    dir: Option<OsString>,
}

impl SpawnCommand {
    /// Runs `program` (a path, best absolute: the launcher's working directory may not
    /// be the caller's; a name without a slash is searched in the launcher's `PATH`)
    /// with no arguments, `argv[0]` being `program`.
    pub fn new(program: impl Into<OsString>) -> SpawnCommand {
        let program = program.into();
        SpawnCommand {
            argv0: program.clone(),
            program,
            args: Vec::new(),
            dir: None,
        }
    }

    /// Starts the process in directory `dir` (best absolute: a relative one is taken
    /// from the launcher's working directory) instead of the launcher's own.
    pub fn current_dir(mut self, dir: impl Into<OsString>) -> SpawnCommand {
        self.dir = Some(dir.into());
        self
    }

    /// The directory the process starts in, when not the launcher's.
    pub fn get_current_dir(&self) -> Option<&OsStr> {
        self.dir.as_deref()
    }

    /// The `argv[0]` the process sees (`MPI_Comm_spawn`: the command as given). A
    /// launcher that cannot set it (a Slurm step) passes the program instead.
    pub fn arg0(mut self, argv0: impl Into<OsString>) -> SpawnCommand {
        self.argv0 = argv0.into();
        self
    }

    /// Appends arguments (`argv[1..]`).
    pub fn args<I, S>(mut self, args: I) -> SpawnCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The program executed.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The `argv[0]` the process sees.
    pub fn argv0(&self) -> &OsStr {
        &self.argv0
    }

    /// The arguments after `argv[0]`.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The bytes put under [`SPAWN_COMMAND_KEY`]: a count, then each word (program,
    /// `argv[0]`, arguments, then the directory if any, flagged by bit 31 of the
    /// count) as a length and its bytes, little endian.
    pub fn encode(&self) -> Vec<u8> {
        let words = [&self.program, &self.argv0]
            .into_iter()
            .chain(&self.args)
            .chain(&self.dir);
        let flag = if self.dir.is_some() { WITH_DIR } else { 0 };
        let n = (2 + self.args.len() + usize::from(self.dir.is_some())) as u32;
        let mut b = (n | flag).to_le_bytes().to_vec();
        for w in words {
            let w = w.as_bytes();
            b.extend_from_slice(&(w.len() as u32).to_le_bytes());
            b.extend_from_slice(w);
        }
        b
    }

    /// The command [`encode`](Self::encode) wrote, or `None` for bytes it cannot have
    /// written (an empty program included).
    pub fn decode(b: &[u8]) -> Option<SpawnCommand> {
        let word = |at: usize| -> Option<usize> {
            Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
        };
        let count = word(0)? as u32;
        let with_dir = count & WITH_DIR != 0;
        let n = (count & !WITH_DIR) as usize;
        if !(2 + usize::from(with_dir)..=MAX_WORDS).contains(&n) {
            return None;
        }
        let mut at = 4;
        let mut words = Vec::with_capacity(n);
        for _ in 0..n {
            let len = word(at)?;
            let w = b.get(at + 4..(at + 4).checked_add(len)?)?;
            words.push(OsString::from_vec(w.to_vec()));
            at += 4 + len;
        }
        if at != b.len() || words[0].is_empty() {
            return None;
        }
        let dir = if with_dir { words.pop() } else { None };
        if dir.as_ref().is_some_and(|d| d.is_empty()) {
            return None;
        }
        let args = words.split_off(2);
        let argv0 = words.pop()?;
        let program = words.pop()?;
        Some(SpawnCommand {
            program,
            argv0,
            args,
            dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare_bytes(program: &str) -> Vec<u8> {
        SpawnCommand::new(program).encode()
    }

    #[test]
    fn a_command_round_trips_and_bad_bytes_are_refused() {
        let c = SpawnCommand::new("/bin/worker")
            .arg0("worker")
            .args(["a b", "", "é"]);
        let b = c.encode();
        assert_eq!(SpawnCommand::decode(&b), Some(c));
        assert_eq!(SpawnCommand::decode(&b[..b.len() - 1]), None);
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(SpawnCommand::decode(&longer), None);
        assert_eq!(SpawnCommand::decode(&[]), None);
        assert_eq!(SpawnCommand::decode(&SpawnCommand::new("").encode()), None);
        let bare = SpawnCommand::new("w");
        assert_eq!(SpawnCommand::decode(&bare.encode()), Some(bare));
        let placed = SpawnCommand::new("w").args(["x"]).current_dir("/tmp/d");
        assert_eq!(SpawnCommand::decode(&placed.encode()), Some(placed.clone()));
        assert_eq!(placed.get_current_dir(), Some(OsStr::new("/tmp/d")));
        assert_eq!(placed.get_args().len(), 1);
        // The flag with only two words (no room for a directory), and an empty one.
        let mut flagged = bare_bytes("w");
        flagged[3] |= 0x80;
        assert_eq!(SpawnCommand::decode(&flagged), None);
        let empty_dir = SpawnCommand::new("w").current_dir("");
        assert_eq!(SpawnCommand::decode(&empty_dir.encode()), None);
        // A length that runs past the end, and one that would overflow.
        assert_eq!(SpawnCommand::decode(&[2, 0, 0, 0, 9, 0, 0, 0, 1]), None);
        assert_eq!(
            SpawnCommand::decode(&[2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
            None
        );
    }
}
