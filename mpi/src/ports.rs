//! Ports between processes of one launch: `MPI_Open_port`, `MPI_Close_port`,
//! `MPI_Comm_accept`, `MPI_Comm_connect` (`docs/spawn.md`, "Ports").
//!
//! A port name is `steadfast-port:<job>:<world rank>:<seq>`: the launch's job id
//! (`STEADFAST_JOB_ID`), the opener's world rank and a number the opener never gives
//! twice. The roots of the two sides meet through the launcher's store, never through
//! messages, so nothing is left queued when one side gives up:
//!
//! - the opener keeps its open ports in one record (`ports`: per port its number and
//!   the connection its last accept took), rewritten at each change;
//! - a connecting root puts `dial` (port and a dial number it never gives twice), then
//!   reads the opener's record until the port names its dial (taken), the port is gone
//!   (closed: `MPI_ERR_PORT`) or the opener is known failed (`MPIX_ERR_PROC_FAILED`);
//! - an accepting root reads the `dial` of every live process of the world until one
//!   names its port with a dial it has not taken, and records it in `ports`.
//!
//! Then each root tells its group the other root's world rank, and both groups create
//! the inter-communicator with the world communicator as the bridge, as a spawn does
//! (`Comm::intercomm_create_uniform`, accept's side the local group at the acceptor).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use sf::Comm;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::state::{call, Guard, NO_OBJECT};
use crate::util::{out, rank_arg, read_cstr, write_str};

/// `MPI_MAX_PORT_NAME`.
pub(crate) const MAX_PORT_NAME: usize = 256;
/// What every port name starts with.
const PREFIX: &str = "steadfast-port";
/// The opener's record of its open ports.
const PORTS_KEY: &str = "ports";
/// A connecting root's request.
const DIAL_KEY: &str = "dial";
/// The tag of the creation's messages (the spawn's: private to the runtime's own
/// exchanges, which name their source and run in program order).
pub(crate) const TAG: u32 = sf::world::tags::MAX_TAG - 1;
/// Longest pause between two reads of the store while waiting.
const MAX_PAUSE: Duration = Duration::from_millis(10);

/// A port, as its name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Port {
    pub job: u64,
    pub opener: u32,
    pub seq: u32,
}

impl Port {
    pub fn name(&self) -> String {
        format!("{PREFIX}:{:016x}:{}:{}", self.job, self.opener, self.seq)
    }

    /// The port a name names, if it is one of this library's names.
    pub fn parse(name: &str) -> Option<Port> {
        let mut parts = name.split(':');
        let ok = parts.next() == Some(PREFIX);
        let job = parts.next().filter(|j| j.len() == 16)?;
        let job = u64::from_str_radix(job, 16).ok()?;
        let opener = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        (ok && parts.next().is_none()).then_some(Port { job, opener, seq })
    }
}

/// This launch's job id (0 outside `steadfast-run`).
pub(crate) fn job_id() -> u64 {
    std::env::var("STEADFAST_JOB_ID")
        .ok()
        .and_then(|j| u64::from_str_radix(&j, 16).ok())
        .unwrap_or(0)
}

/// An open port: the connection its last accept took (connector's world rank, dial)
/// and the last dial taken from each connector.
#[derive(Debug, Default)]
struct Open {
    taken: Option<(u32, u32)>,
    last_dial: HashMap<u32, u32>,
}

/// This process's ports and dials.
#[derive(Debug, Default)]
struct Table {
    next_seq: u32,
    next_dial: u32,
    open: BTreeMap<u32, Open>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    next_seq: 0,
    next_dial: 0,
    open: BTreeMap::new(),
});

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

const NONE: u32 = u32::MAX;

/// The `ports` record: per open port, its number and the connection taken.
fn encode_ports(t: &Table) -> Vec<u8> {
    let mut b = Vec::new();
    for (&seq, o) in &t.open {
        let (c, d) = o.taken.unwrap_or((NONE, NONE));
        for w in [seq, c, d] {
            b.extend_from_slice(&w.to_le_bytes());
        }
    }
    b
}

fn words(b: &[u8]) -> Option<Vec<u32>> {
    (b.len() % 4 == 0).then(|| {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// In a `ports` record: `None` when `seq` is not open, else the connection taken.
fn find_port(b: &[u8], seq: u32) -> Option<Option<(u32, u32)>> {
    let w = words(b)?;
    w.chunks_exact(3)
        .find(|p| p[0] == seq)
        .map(|p| (p[1] != NONE).then_some((p[1], p[2])))
}

/// Writes this process's `ports` record (under the table's lock, so records are
/// written in the table's order).
fn publish(world: &Comm, t: &Table) -> R<()> {
    Ok(world.put_app_value(PORTS_KEY, &encode_ports(t))?)
}

/// Closes every port of this process and withdraws its names (`MPI_Finalize`); a
/// store that refuses is only logged (the process is ending).
pub(crate) fn withdraw_all(world: &Comm) {
    let mut t = table();
    if !t.open.is_empty() {
        t.open.clear();
        if let Err(e) = world.put_app_value(PORTS_KEY, &[]) {
            log::debug!("ports: closing at finalize: {e}");
        }
    }
    crate::names::withdraw_all(world);
}

/// A port name argument that names a port of this launch, else `MPI_ERR_PORT`.
///
/// # Safety
/// `name` is null or a C string.
unsafe fn port_arg(name: *const c_char, world_size: u32) -> R<Port> {
    // SAFETY: the caller's contract.
    let s = unsafe { read_cstr(name) }.map_err(|f| Fail::new(MPI_ERR_PORT, f.message))?;
    let p = Port::parse(&s)
        .ok_or_else(|| Fail::new(MPI_ERR_PORT, format!("{s:?} is not a port name")))?;
    if p.job != job_id() || p.opener >= world_size {
        return Err(Fail::new(
            MPI_ERR_PORT,
            format!("{s:?} is a port of another launch"),
        ));
    }
    Ok(p)
}

/// Waits between two reads of the store: `pause` doubles up to [`MAX_PAUSE`].
fn pause(pause: &mut Duration) {
    std::thread::sleep(*pause);
    *pause = (*pause * 2).min(MAX_PAUSE);
}

fn failed(world: &Comm, w: u32) -> bool {
    world.failed_ranks().contains(&w)
}

/// The accepting root's wait: the world rank of the connector it takes.
fn take_dial(world: &Comm, seq: u32) -> R<u32> {
    let me = world.rank();
    let mut wait = Duration::from_micros(100);
    loop {
        let dead = world.failed_ranks();
        for w in (0..world.size()).filter(|w| *w != me && !dead.contains(w)) {
            let Some(b) = world.lookup_app_value(w, DIAL_KEY)? else {
                continue;
            };
            let Some(&[opener, s, dial]) = words(&b).as_deref() else {
                continue;
            };
            if opener != me || s != seq {
                continue;
            }
            let mut t = table();
            let Some(o) = t.open.get_mut(&seq) else {
                return Err(Fail::new(MPI_ERR_PORT, "the port was closed"));
            };
            if o.last_dial.get(&w).is_some_and(|&d| d >= dial) {
                continue;
            }
            o.last_dial.insert(w, dial);
            o.taken = Some((w, dial));
            publish(world, &t)?;
            return Ok(w);
        }
        pause(&mut wait);
    }
}

/// The connecting root's wait: the opener's world rank once it took this dial.
fn dial(world: &Comm, port: Port) -> R<u32> {
    let dial = {
        let mut t = table();
        t.next_dial += 1;
        t.next_dial
    };
    let gone = || Fail::new(MPI_ERR_PORT, format!("{} is not open", port.name()));
    let read = || -> R<Option<Option<(u32, u32)>>> {
        let b = world.lookup_app_value(port.opener, PORTS_KEY)?;
        Ok(b.and_then(|b| find_port(&b, port.seq)))
    };
    // Closed first: an opener that closed its ports in MPI_Finalize and ended since
    // is known failed too.
    if read()?.is_none() {
        return Err(gone());
    }
    if failed(world, port.opener) {
        return Err(opener_failed(port));
    }
    let mut request = Vec::new();
    for w in [port.opener, port.seq, dial] {
        request.extend_from_slice(&w.to_le_bytes());
    }
    world.put_app_value(DIAL_KEY, &request)?;
    let mut wait = Duration::from_micros(100);
    let outcome = loop {
        match read() {
            Ok(Some(Some(taken))) if taken == (world.rank(), dial) => break Ok(port.opener),
            Ok(None) => break Err(gone()),
            Err(e) => break Err(e),
            Ok(Some(_)) if failed(world, port.opener) => break Err(opener_failed(port)),
            Ok(Some(_)) => pause(&mut wait),
        }
    };
    // Withdrawn either way: taken already, or never to be.
    world.put_app_value(DIAL_KEY, &[])?;
    outcome
}

fn opener_failed(port: Port) -> Fail {
    Fail::new(
        MPI_ERR_PROC_FAILED,
        format!("the process that opened {} failed", port.name()),
    )
}

/// Accept's or connect's collective part over `comm`: at `root`, `meet` finds the
/// other root (its world rank); every member learns it (or the root's error) and the
/// groups create the inter-communicator.
fn join_at(
    g: &mut Guard,
    comm: Handle,
    root: c_int,
    newcomm: *mut Handle,
    meet: impl FnOnce(&Comm, u32) -> R<u32>,
) -> R<()> {
    // SAFETY: MPI's contract: `newcomm` is valid for a write.
    let slot = unsafe { out(newcomm) }?;
    *slot = MPI_COMM_NULL;
    let lib = g.lib()?;
    let (_, coll) = lib.intra(comm)?;
    let errh = lib.comm(comm)?.errhandler;
    let world = lib.world.comm();
    let root = rank_arg(root, coll.size())?;
    let pair = g.unlocked(|| -> R<_> {
        let other = if coll.rank() == root {
            let found = meet(&world, world.size());
            let word = match &found {
                Ok(w) => [1, *w],
                Err(f) => [0, f.class as u32],
            };
            let bytes: Vec<u8> = word.iter().flat_map(|w| w.to_le_bytes()).collect();
            for r in (0..coll.size()).filter(|&r| r != root) {
                // A member that cannot be told fails the creation below.
                if let Err(e) = coll.send(r, TAG, &bytes) {
                    log::debug!("ports: member {r} not told of the other side: {e}");
                }
            }
            found?
        } else {
            let mut b = [0u8; 8];
            let st = coll.recv(Some(root), Some(TAG), &mut b)?;
            match words(&b[..st.len]).as_deref() {
                Some(&[1, w]) => w,
                Some(&[0, class]) => {
                    return Err(Fail::new(
                        class as c_int,
                        "the root's accept or connect failed",
                    ))
                }
                _ => {
                    return Err(Fail::new(
                        MPI_ERR_OTHER,
                        "a root's word that does not decode",
                    ))
                }
            }
        };
        crate::comm::inter_half(coll.intercomm_create_uniform(root, &world, other, TAG)?)
    })?;
    *slot = crate::comm::insert_inter(g.lib()?, pair, errh);
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Open_port`: a new port of this process (`info` not read), named
    /// `steadfast-port:<job>:<world rank>:<n>` (at most `MPI_MAX_PORT_NAME` bytes).
    /// Ports need `steadfast-run`'s store (or a singleton's, `singleton.rs`): under PMI
    /// launchers a connect is `MPI_ERR_OTHER`.
    fn MPI_Open_port / PMPI_Open_port(_info: Handle, port_name: *mut c_char) {
        call(NO_OBJECT, |g| {
            let world = g.lib()?.world.comm();
            let port = {
                let mut t = table();
                let seq = t.next_seq;
                t.next_seq += 1;
                t.open.insert(seq, Open::default());
                if let Err(f) = publish(&world, &t) {
                    t.open.remove(&seq);
                    return Err(f);
                }
                Port { job: job_id(), opener: world.rank(), seq }
            };
            // SAFETY: MPI's contract: `port_name` holds MPI_MAX_PORT_NAME chars.
            unsafe { write_str(&port.name(), port_name, MAX_PORT_NAME, std::ptr::null_mut()) }
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Close_port`: closes a port this process opened; a connect waiting on it
    /// then fails with `MPI_ERR_PORT`. Another name is `MPI_ERR_PORT`.
    fn MPI_Close_port / PMPI_Close_port(port_name: *const c_char) {
        call(NO_OBJECT, |g| {
            let world = g.lib()?.world.comm();
            // SAFETY: MPI's contract: `port_name` is a C string.
            let p = unsafe { port_arg(port_name, world.size()) }?;
            let mut t = table();
            if p.opener != world.rank() || t.open.remove(&p.seq).is_none() {
                return Err(Fail::new(MPI_ERR_PORT, format!("{} is no open port of this process", p.name())));
            }
            publish(&world, &t)
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_accept`: collective over `comm`; at `root`, waits for a connect to
    /// `port_name` (an open port of the root's; `info` not read) from any process of
    /// the launch, then every member gets the inter-communicator with the connecting
    /// group (this group local). A connector that fails meanwhile makes it fail
    /// (`MPIX_ERR_PROC_FAILED`) at every member.
    fn MPI_Comm_accept / PMPI_Comm_accept(
        port_name: *const c_char,
        _info: Handle,
        root: c_int,
        comm: Handle,
        newcomm: *mut Handle
    ) {
        call(comm, |g| {
            join_at(g, comm, root, newcomm, |world, size| {
                // SAFETY: MPI's contract: at the root, `port_name` is a C string.
                let p = unsafe { port_arg(port_name, size) }?;
                if p.opener != world.rank() || !table().open.contains_key(&p.seq) {
                    return Err(Fail::new(MPI_ERR_PORT, format!("{} is no open port of this process", p.name())));
                }
                take_dial(world, p.seq)
            })
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_connect`: collective over `comm`; the root connects to `port_name`
    /// and waits until its opener accepts (MPI lets it wait). Every member gets the
    /// inter-communicator with the accepting group. A name that is no port of this
    /// launch, or a port closed (before or while waiting), is `MPI_ERR_PORT`; the
    /// opener's failure `MPIX_ERR_PROC_FAILED`; at every member.
    fn MPI_Comm_connect / PMPI_Comm_connect(
        port_name: *const c_char,
        _info: Handle,
        root: c_int,
        comm: Handle,
        newcomm: *mut Handle
    ) {
        call(comm, |g| {
            join_at(g, comm, root, newcomm, |world, size| {
                // SAFETY: MPI's contract: at the root, `port_name` is a C string.
                let p = unsafe { port_arg(port_name, size) }?;
                dial(world, p)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        let p = Port {
            job: 0xabc,
            opener: 3,
            seq: 17,
        };
        assert_eq!(p.name(), "steadfast-port:0000000000000abc:3:17");
        assert_eq!(Port::parse(&p.name()), Some(p));
        for bad in [
            "",
            "steadfast-port",
            "steadfast-port:0000000000000abc:3",
            "steadfast-port:abc:3:17",
            "steadfast-port:0000000000000abc:3:17:1",
            "other-port:0000000000000abc:3:17",
            "steadfast-port:0000000000000abc:-1:17",
        ] {
            assert_eq!(Port::parse(bad), None, "{bad:?}");
        }
        assert!(p.name().len() < MAX_PORT_NAME);
    }

    #[test]
    fn the_ports_record_says_which_port_is_open_and_taken() {
        let mut t = Table::default();
        t.open.insert(2, Open::default());
        t.open.insert(
            5,
            Open {
                taken: Some((7, 9)),
                ..Open::default()
            },
        );
        let b = encode_ports(&t);
        assert_eq!(find_port(&b, 2), Some(None));
        assert_eq!(find_port(&b, 5), Some(Some((7, 9))));
        assert_eq!(find_port(&b, 3), None);
        assert_eq!(find_port(&[], 0), None);
        assert_eq!(find_port(&b[1..], 2), None);
    }
}
