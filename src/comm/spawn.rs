//! Spawning processes into a running job (`MPI_Comm_spawn`, `MPI_Comm_get_parent`):
//! [`Comm::spawn`] in the parents, [`World::parent`] in the children. The model is
//! `docs/spawn.md`; in short:
//!
//! - The job's world has spare slots (`steadfast-run --universe U -n N`: world ranks
//!   N..U, dead at the start, `crate::world::spares`). A spawn starts free slots (never
//!   started) through the launcher's restart service: a child is the first incarnation
//!   (generation 1) of its slot and joins the job as a restarted process does
//!   (`docs/restart.md`), so every transport, the failure detector and the control
//!   plane already know how to admit it.
//! - The root puts the command the children run (`SPAWN_COMMAND_KEY`, empty for the
//!   job's program; the launcher keeps it for the slot), picks free slots and starts
//!   them one after the other (each start returns
//!   once the child has joined; the launcher records the root in the slot, under
//!   `SPAWNED_BY_KEY`, and refuses a slot another spawn took: the root takes the next),
//!   then puts `sf.spawn.<child>.group` (the parents' world ranks, the root's place
//!   among them, the children started) and tells the other parents which children
//!   started and why the others did not.
//! - A child reads its root from its slot, waits for the groups, creates its own world
//!   over the children (`create_group` over the world communicator) and the
//!   inter-communicator with the parents; the parents create it over the spawning
//!   communicator. Both sides use the world communicator as the
//!   bridge between the two leaders (the root and the first child).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Comm, CommError, InterComm};
use crate::bootstrap::{SpawnCommand, SLOT_TAKEN, SPAWNED_BY_KEY, SPAWN_COMMAND_KEY};
use crate::world::shared::Shared;
use crate::world::{spares, World};

/// Tag of the spawn's own messages and of its creations (that of `create_group` and
/// `split`, whose exchanges name their source and run in program order, as a spawn's).
const TAG: u32 = crate::world::tags::MAX_TAG - 1;
/// The world rank written for a child that did not start.
const NOT_STARTED: u32 = u32::MAX;
/// Longest reason for a child that did not start, as carried to the other parents.
const MAX_REASON: usize = 512;
/// How long a child waits for its root to publish the spawn's groups (the root starts
/// the children one after the other, each within the launcher's restart timeout).
const GROUP_WAIT: Duration = Duration::from_secs(300);
/// How long a process waits to admit a child another parent started (it joined
/// already: only the launcher's event to this process is awaited).
const ADMIT_WAIT: Duration = Duration::from_secs(60);

/// What [`Comm::spawn`] gives every parent.
#[derive(Debug, Clone)]
pub struct Spawned {
    /// The inter-communicator with the children started (remote group: the children,
    /// in the order asked).
    pub inter: InterComm,
    /// Per child asked for, in order: its world rank, or why it did not start.
    pub children: Vec<Result<u32, String>>,
}

/// What [`World::parent`] gives a spawned process.
#[derive(Debug, Clone)]
pub struct Parent {
    /// The communicator of the children spawned together (their `MPI_COMM_WORLD`).
    pub world: Comm,
    /// The inter-communicator with the parents (remote group: the spawning
    /// communicator's members, in its order).
    pub inter: InterComm,
    /// The index of this process's command in the spawn (`MPI_APPNUM`: 0 but for the
    /// later commands of [`Comm::spawn_multiple_or_refuse`]).
    pub appnum: u32,
}

/// What the root of a spawn asks for: per command, in order, the number of children
/// and the command they run (`None`: the job's program and arguments).
pub type SpawnApps = Vec<(u32, Option<SpawnCommand>)>;

fn key_group(child: u32) -> String {
    format!("sf.spawn.{child}.group")
}

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    out.extend_from_slice(&super::words::to_bytes(v));
}

/// Reads `n` words after a count from `b`; the rest.
fn take_u32s(b: &[u8]) -> Option<(Vec<u32>, &[u8])> {
    let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let v = super::words::from_bytes(b.get(4..4 + 4 * n)?)?;
    Some((v, &b[4 + 4 * n..]))
}

/// A spawn's record, which each child reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    /// The parents (world ranks, in the spawning communicator's order).
    parents: Vec<u32>,
    /// The root's index among them.
    root: u32,
    /// The children started (world ranks, in the order asked).
    children: Vec<u32>,
    /// Per child started, the index of its command (`MPI_APPNUM`).
    appnums: Vec<u32>,
}

fn encode_group(r: &Record) -> Vec<u8> {
    let mut b = Vec::new();
    put_u32s(&mut b, &r.parents);
    put_u32s(&mut b, &[r.root]);
    put_u32s(&mut b, &r.children);
    put_u32s(&mut b, &r.appnums);
    b
}

fn decode_group(b: &[u8]) -> Option<Record> {
    let (parents, rest) = take_u32s(b)?;
    let (root, rest) = take_u32s(rest)?;
    let (children, rest) = take_u32s(rest)?;
    let (appnums, rest) = take_u32s(rest)?;
    let root = *root.first()?;
    let ok = rest.is_empty()
        && (root as usize) < parents.len()
        && !children.is_empty()
        && appnums.len() == children.len();
    ok.then_some(Record {
        parents,
        root,
        children,
        appnums,
    })
}

/// The outcome the root sends the other parents: per child, its world rank or the
/// reason it did not start.
fn encode_outcome(children: &[Result<u32, String>]) -> Vec<u8> {
    let mut b = (children.len() as u32).to_le_bytes().to_vec();
    for c in children {
        match c {
            Ok(w) => {
                b.extend_from_slice(&w.to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
            }
            Err(why) => {
                let mut end = why.len().min(MAX_REASON);
                while !why.is_char_boundary(end) {
                    end -= 1;
                }
                b.extend_from_slice(&NOT_STARTED.to_le_bytes());
                b.extend_from_slice(&(end as u32).to_le_bytes());
                b.extend_from_slice(&why.as_bytes()[..end]);
            }
        }
    }
    b
}

fn decode_outcome(b: &[u8]) -> Option<Vec<Result<u32, String>>> {
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let n = word(b, 0)? as usize;
    let mut at = 4;
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let (w, len) = (word(b, at)?, word(b, at + 4)? as usize);
        at += 8;
        if w == NOT_STARTED {
            let why = b.get(at..at + len)?;
            at += len;
            out.push(Err(String::from_utf8_lossy(why).into_owned()));
        } else {
            out.push(Ok(w));
        }
    }
    (at == b.len()).then_some(out)
}

/// The children started, or the spawn's error when none did.
fn started(children: &[Result<u32, String>]) -> Result<Vec<u32>, CommError> {
    let s: Vec<u32> = children
        .iter()
        .filter_map(|c| c.as_ref().ok().copied())
        .collect();
    if s.is_empty() {
        let why: Vec<&str> = children
            .iter()
            .filter_map(|c| c.as_ref().err().map(String::as_str))
            .collect();
        let why = if why.is_empty() {
            "no process was asked for".to_string()
        } else {
            why.join("; ")
        };
        return Err(CommError::Spawn(why));
    }
    Ok(s)
}

/// Waits until this process has admitted the new incarnation of each of `ranks`
/// (spawned processes: incarnation 1 of their slots). The root of a spawn admits each
/// child when its start is answered; the others learn of it from the launcher's
/// `Rejoined` event, read by progress: a creation over a child not admitted yet here
/// would find it failed. A child that died meanwhile counts (its death moves the known
/// incarnation on): the creation then reports it failed.
fn wait_admitted(engine: &Arc<Shared>, ranks: &[u32]) -> Result<(), CommError> {
    let deadline = Instant::now() + ADMIT_WAIT;
    loop {
        {
            let mut e = engine.lock();
            if ranks.iter().all(|&w| e.generation_of(w) >= 1) {
                return Ok(());
            }
            e.progress();
        }
        if Instant::now() >= deadline {
            return Err(CommError::Spawn(format!(
                "the spawned processes {ranks:?} were not admitted here within {ADMIT_WAIT:?}"
            )));
        }
        std::thread::yield_now();
    }
}

impl Comm {
    /// Starts `count` new processes of the job's program (`MPI_Comm_spawn`),
    /// collectively over this communicator: `count` counts at `root` only. Each child is
    /// a free spare slot of the job's universe (`steadfast-run --universe`), started by
    /// the launcher with the job's program, arguments and environment; it finds its
    /// parents with [`World::parent`]. Returns, at every parent, the inter-communicator
    /// with the children that started and, per child asked for, its world rank or why
    /// it did not start (no free slot, the launcher cannot start processes, it ended
    /// before it joined). Returns once every child started has joined the job and
    /// reached [`World::parent`]'s creation of the inter-communicator.
    /// [`spawn_command`](Self::spawn_command) starts another program.
    ///
    /// # Errors
    /// [`CommError::Spawn`] when no child started (every reason, at every parent);
    /// [`CommError::InvalidArgument`] for a root outside the communicator;
    /// [`CommError::ProcFailed`] when the root or a child failed during it; what
    /// [`Comm::intercomm_create_uniform`] returns.
    pub fn spawn(&self, root: u32, count: u32) -> Result<Spawned, CommError> {
        self.spawn_or_refuse(root, Ok((count, None)))
    }

    /// As [`spawn`](Self::spawn), the children running `command` (significant at
    /// `root` only) instead of the job's program and arguments, with the job's
    /// environment; a later restart in place of such a child runs `command` again.
    /// A program the launcher cannot start is a per-child error naming why.
    ///
    /// ```no_run
    /// use steadfast::bootstrap::SpawnCommand;
    /// # fn f(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
    /// let worker = SpawnCommand::new("/opt/app/worker").arg0("worker").args(["--fast"]);
    /// let s = comm.spawn_command(0, 2, &worker)?;
    /// s.inter.send(0, 1, b"hello")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_command(
        &self,
        root: u32,
        count: u32,
        command: &SpawnCommand,
    ) -> Result<Spawned, CommError> {
        self.spawn_or_refuse(root, Ok((count, Some(command.clone()))))
    }

    /// As [`spawn`](Self::spawn) (`ask`: the count and the command, `None` for the
    /// job's program), where the root may refuse the spawn (`ask` is `Err(why)` there:
    /// an MPI library that cannot find the command asked for), so that every parent
    /// returns [`CommError::Spawn`] naming why; `ask` counts at the root only.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_or_refuse(
        &self,
        root: u32,
        ask: Result<(u32, Option<SpawnCommand>), String>,
    ) -> Result<Spawned, CommError> {
        self.spawn_multiple_or_refuse(root, ask.map(|a| vec![a]))
    }

    /// As [`spawn_or_refuse`](Self::spawn_or_refuse) with several commands
    /// (`MPI_Comm_spawn_multiple`): per command, in order, the number of children and
    /// what they run. The children of all commands form one world (in command order)
    /// and one inter-communicator with the parents; [`Parent::appnum`] is each
    /// child's command index. [`Spawned::children`] lists every child asked for, the
    /// first command's first.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_multiple_or_refuse(
        &self,
        root: u32,
        ask: Result<SpawnApps, String>,
    ) -> Result<Spawned, CommError> {
        if root >= self.size() {
            return Err(CommError::InvalidArgument(format!(
                "root {root} outside a communicator of {}",
                self.size()
            )));
        }
        let world = Comm::new(
            Arc::clone(&self.engine),
            Arc::clone(self.engine.world_facts()),
        );
        let children = if self.rank() == root {
            let children = match ask {
                Ok(apps) => self.start_children(&world, root, &apps),
                Err(why) => vec![Err(why)],
            };
            let bytes = encode_outcome(&children);
            for r in (0..self.size()).filter(|&r| r != root) {
                // A parent that cannot be told fails the creation below.
                if let Err(e) = self.send(r, TAG, &bytes) {
                    log::debug!("spawn: parent {r} not told of the children: {e}");
                }
            }
            children
        } else {
            let mut buf = vec![0u8; 8 + 8 * 65536 + 65536];
            let st = self.recv(Some(root), Some(TAG), &mut buf)?;
            decode_outcome(&buf[..st.len]).ok_or(CommError::Protocol {
                rank: root,
                problem: "a spawn outcome that does not decode",
            })?
        };
        let s = started(&children)?;
        wait_admitted(&self.engine, &s)?;
        let leader = s[0];
        let inter = self.intercomm_create_uniform(root, &world, leader, TAG)?;
        Ok(Spawned { inter, children })
    }

    /// The root's part: per command, puts it and starts its children in free slots;
    /// then publishes the groups.
    fn start_children(
        &self,
        world: &Comm,
        root: u32,
        apps: &[(u32, Option<SpawnCommand>)],
    ) -> Vec<Result<u32, String>> {
        let size = world.size();
        let first = spares::started_ranks(size);
        let mut free = {
            let e = self.engine.lock();
            (first..size)
                .filter(|&w| e.is_failed(w) && e.generation_of(w) == 0)
                .collect::<Vec<u32>>()
                .into_iter()
        };
        let asked: usize = apps.iter().map(|&(n, _)| n as usize).sum();
        let mut children: Vec<Result<u32, String>> = Vec::with_capacity(asked);
        let mut appnums: Vec<u32> = Vec::with_capacity(asked);
        for (app, (count, command)) in (0u32..).zip(apps) {
            if *count > 0 && free.len() > 0 {
                // Read by the launcher's store when this process's start of a slot
                // arrives (the same connection, so after the put); empty: the job's
                // program. Put again before each command's first start, so each slot
                // keeps its own command.
                let value = command
                    .as_ref()
                    .map(SpawnCommand::encode)
                    .unwrap_or_default();
                let put = self.engine.lock().boot_mut().put(SPAWN_COMMAND_KEY, &value);
                if let Err(e) = put {
                    let why = format!("the launcher refused the spawn's command: {e}");
                    log::warn!("spawn: {why}");
                    children.extend(std::iter::repeat_n(Err(why), *count as usize));
                    appnums.extend(std::iter::repeat_n(app, *count as usize));
                    continue;
                }
            }
            for _ in 0..*count {
                children.push(Self::start_one(world, &mut free, size, first));
                appnums.push(app);
            }
        }
        let Ok(s) = started(&children) else {
            return children;
        };
        let record = encode_group(&Record {
            parents: self.group().to_vec(),
            root,
            children: s.clone(),
            appnums: children
                .iter()
                .zip(&appnums)
                .filter(|(c, _)| c.is_ok())
                .map(|(_, &a)| a)
                .collect(),
        });
        for (i, &w) in s.iter().enumerate() {
            let put = self.engine.lock().boot_mut().put(&key_group(w), &record);
            if let Err(e) = put {
                // The child waits for the record until its root is known dead: this
                // spawn cannot complete.
                log::warn!("spawn: the record of child {w} was refused: {e}");
                if let Some(c) = children.iter_mut().find(|c| c.as_ref() == Ok(&s[i])) {
                    *c = Err(format!("the launcher refused the spawn's record: {e}"));
                }
            }
        }
        children
    }
}

impl Comm {
    /// Starts the next free slot of `free` (taking the following one when another
    /// spawn took it): its world rank, or why no child started.
    fn start_one(
        world: &Comm,
        free: &mut std::vec::IntoIter<u32>,
        size: u32,
        first: u32,
    ) -> Result<u32, String> {
        loop {
            let Some(w) = free.next() else {
                return Err(format!(
                    "no free slot: the job's universe has {size} ranks, {} of them spare \
                     slots, all started (run steadfast-run with a larger --universe)",
                    size - first
                ));
            };
            match world.start_spare_slot(w) {
                Ok(_) => return Ok(w),
                // Another spawn took it since this process last heard (refused by the
                // launcher, or already admitted here): the next.
                Err(CommError::Restart(why))
                    if why.contains(SLOT_TAKEN) || why.contains("is alive") =>
                {
                    log::debug!("spawn: {why}");
                }
                Err(e) => {
                    let why = match e {
                        CommError::Restart(why) => why,
                        other => other.to_string(),
                    };
                    log::warn!("spawn: slot {w} did not start: {why}");
                    return Err(why);
                }
            }
        }
    }
}

impl World {
    /// The parents of a spawned process (`MPI_Comm_get_parent`): its world over the
    /// children spawned together and the inter-communicator with the parents, created
    /// collectively with the parents' [`Comm::spawn`] (call it once, early, as
    /// `MPI_Init` does). `None` in a process that was not spawned.
    ///
    /// # Errors
    /// [`CommError::Spawn`] when the spawn's record cannot be found or read (its root
    /// died before it published the groups); what [`Comm::create_group`] and
    /// [`Comm::intercomm_create_uniform`] return.
    pub fn parent(&self) -> Result<Option<Parent>, CommError> {
        if !self.is_spawned() {
            return Ok(None);
        }
        let me = self.rank();
        let size = self.size();
        let world = self.comm();
        let shared = self.shared();
        let lookup = |owner: u32, key: &str| -> Result<Option<Vec<u8>>, CommError> {
            shared
                .lock()
                .boot_mut()
                .lookup(owner, key)
                .map_err(|e| CommError::Spawn(format!("reading the spawn's record: {e}")))
        };
        // The launcher recorded whose spawn started this slot.
        let root = lookup(me, SPAWNED_BY_KEY)?
            .and_then(|b| Some(u32::from_le_bytes(b.as_slice().try_into().ok()?)))
            .filter(|&r| r < size && r != me)
            .ok_or_else(|| {
                CommError::Spawn(format!("the launcher did not record who spawned rank {me}"))
            })?;
        let deadline = Instant::now() + GROUP_WAIT;
        let record = loop {
            if let Some(v) = lookup(root, &key_group(me))? {
                break v;
            }
            if shared.lock().is_failed(root) {
                return Err(CommError::Spawn(format!(
                    "the spawning root (rank {root}) failed before it published the children"
                )));
            }
            if Instant::now() >= deadline {
                return Err(CommError::Spawn(format!(
                    "the spawning root (rank {root}) did not publish the children within {GROUP_WAIT:?}"
                )));
            }
            self.progress_for(Duration::from_millis(2));
        };
        let r = decode_group(&record)
            .filter(|r| r.children.contains(&me))
            .ok_or_else(|| CommError::Spawn("a spawn record that does not decode".into()))?;
        let siblings: Vec<u32> = r.children.iter().copied().filter(|&c| c != me).collect();
        wait_admitted(shared, &siblings)?;
        let own = world.create_group(&r.children, TAG)?;
        let inter = own.intercomm_create_uniform(0, &world, r.parents[r.root as usize], TAG)?;
        let appnum = r
            .children
            .iter()
            .position(|&c| c == me)
            .map_or(0, |i| r.appnums[i]);
        Ok(Some(Parent {
            world: own,
            inter,
            appnum,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        let rec = |parents: &[u32], root, children: &[u32], appnums: &[u32]| Record {
            parents: parents.to_vec(),
            root,
            children: children.to_vec(),
            appnums: appnums.to_vec(),
        };
        let r = rec(&[0, 2, 3], 1, &[4, 5], &[0, 1]);
        let b = encode_group(&r);
        assert_eq!(decode_group(&b), Some(r));
        assert_eq!(decode_group(&b[..b.len() - 1]), None);
        assert_eq!(
            decode_group(&encode_group(&rec(&[0], 1, &[4], &[0]))),
            None,
            "root outside"
        );
        assert_eq!(
            decode_group(&encode_group(&rec(&[0], 0, &[], &[]))),
            None,
            "no child"
        );
        assert_eq!(
            decode_group(&encode_group(&rec(&[0], 0, &[4, 5], &[0]))),
            None,
            "an appnum missing"
        );
        let out = vec![Ok(4), Err("no free slot".to_string()), Ok(6)];
        assert_eq!(decode_outcome(&encode_outcome(&out)), Some(out.clone()));
        assert_eq!(decode_outcome(&encode_outcome(&out)[1..]), None);
        let long = vec![Err("é".repeat(MAX_REASON))];
        let back = decode_outcome(&encode_outcome(&long)).expect("decodes");
        assert!(matches!(&back[0], Err(w) if w.len() <= MAX_REASON && !w.is_empty()));
    }

    #[test]
    fn no_child_started_is_the_spawn_error() {
        assert_eq!(started(&[Ok(3), Err("x".into())]), Ok(vec![3]));
        assert_eq!(
            started(&[Err("a".into()), Err("b".into())]),
            Err(CommError::Spawn("a; b".into()))
        );
    }
}
