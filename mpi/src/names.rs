//! The name service (`MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`)
//! and `MPI_Comm_join` (`docs/spawn.md`, "Ports").
//!
//! Each process keeps the names it published in one record of the launcher's store
//! (`names`: service and port, each a length and its bytes); a lookup reads the
//! records of the world's live processes in rank order and takes the first that holds
//! the service. The store is the launch's, so a name is seen by every process of the
//! launch (first ranks and spawned ones) and by no other launch; a process's names go
//! with its failure.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::sync::{Mutex, MutexGuard};

use sf::Comm;

use crate::consts::*;
use crate::error::{Fail, R};
use crate::ports::{job_id, MAX_PORT_NAME, TAG};
use crate::state::{call, NO_OBJECT};
use crate::util::{out, read_cstr, write_str};

/// Each process's record of the names it published.
const NAMES_KEY: &str = "names";
/// Longest service name (the record must fit the store's values).
const MAX_SERVICE: usize = 1024;

/// The names this process published: service -> port name.
static NAMES: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn names() -> MutexGuard<'static, BTreeMap<String, String>> {
    NAMES.lock().unwrap_or_else(|p| p.into_inner())
}

fn encode(names: &BTreeMap<String, String>) -> Vec<u8> {
    let mut b = Vec::new();
    for (s, p) in names {
        for w in [s, p] {
            b.extend_from_slice(&(w.len() as u32).to_le_bytes());
            b.extend_from_slice(w.as_bytes());
        }
    }
    b
}

/// The port `service` names in a `names` record, if it does.
fn find(mut b: &[u8], service: &str) -> Option<String> {
    let take = |b: &mut &[u8]| -> Option<String> {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let w = std::str::from_utf8(b.get(4..4 + n)?).ok()?.to_string();
        *b = &b[4 + n..];
        Some(w)
    };
    while !b.is_empty() {
        let (s, p) = (take(&mut b)?, take(&mut b)?);
        if s == service {
            return Some(p);
        }
    }
    None
}

/// Withdraws every name this process published (`MPI_Finalize`); a store that
/// refuses is only logged.
pub(crate) fn withdraw_all(world: &Comm) {
    let mut n = names();
    if !n.is_empty() {
        n.clear();
        if let Err(e) = world.put_app_value(NAMES_KEY, &[]) {
            log::debug!("names: withdrawing at finalize: {e}");
        }
    }
}

/// The port some live process of the world published `service` under, the lowest
/// rank's.
fn lookup(world: &Comm, service: &str) -> R<Option<(u32, String)>> {
    let dead = world.failed_ranks();
    for w in (0..world.size()).filter(|w| !dead.contains(w)) {
        if let Some(p) = world
            .lookup_app_value(w, NAMES_KEY)?
            .and_then(|b| find(&b, service))
        {
            return Ok(Some((w, p)));
        }
    }
    Ok(None)
}

/// A service name argument.
///
/// # Safety
/// `p` is null or a C string.
unsafe fn service_arg(p: *const c_char, class: c_int) -> R<String> {
    // SAFETY: the caller's contract.
    let s = unsafe { read_cstr(p) }.map_err(|f| Fail::new(class, f.message))?;
    if s.is_empty() || s.len() > MAX_SERVICE {
        return Err(Fail::new(
            class,
            format!("a service name of {} bytes", s.len()),
        ));
    }
    Ok(s)
}

crate::mpi_fn! {
    /// `MPI_Publish_name`: publishes `port_name` under `service_name` for every
    /// process of the launch (`info` not read). A service another live process
    /// publishes already is `MPI_ERR_SERVICE`; this process's own is replaced.
    fn MPI_Publish_name / PMPI_Publish_name(
        service_name: *const c_char,
        _info: Handle,
        port_name: *const c_char
    ) {
        call(NO_OBJECT, |g| {
            let world = g.lib()?.world.comm();
            // SAFETY: MPI's contract: C strings.
            let (service, port) = unsafe { (service_arg(service_name, MPI_ERR_SERVICE)?, read_cstr(port_name)?) };
            if port.len() >= MAX_PORT_NAME {
                return Err(Fail::new(MPI_ERR_PORT, "a port name longer than MPI_MAX_PORT_NAME"));
            }
            let found = g.unlocked(|| lookup(&world, &service))?;
            if let Some((w, _)) = found.filter(|(w, _)| *w != world.rank()) {
                return Err(Fail::new(MPI_ERR_SERVICE, format!("{service:?} is published by rank {w} already")));
            }
            let mut n = names();
            let old = n.insert(service.clone(), port);
            if let Err(e) = world.put_app_value(NAMES_KEY, &encode(&n)) {
                match old {
                    Some(p) => n.insert(service, p),
                    None => n.remove(&service),
                };
                return Err(e.into());
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Unpublish_name`: withdraws a name this process published; any other is
    /// `MPI_ERR_SERVICE`.
    fn MPI_Unpublish_name / PMPI_Unpublish_name(
        service_name: *const c_char,
        _info: Handle,
        _port_name: *const c_char
    ) {
        call(NO_OBJECT, |g| {
            let world = g.lib()?.world.comm();
            // SAFETY: MPI's contract: a C string.
            let service = unsafe { service_arg(service_name, MPI_ERR_SERVICE) }?;
            let mut n = names();
            let Some(old) = n.remove(&service) else {
                return Err(Fail::new(MPI_ERR_SERVICE, format!("{service:?} is not published here")));
            };
            if let Err(e) = world.put_app_value(NAMES_KEY, &encode(&n)) {
                n.insert(service, old);
                return Err(e.into());
            }
            Ok(())
        })
    }
}

crate::mpi_fn! {
    /// `MPI_Lookup_name`: the port a live process of the launch published under
    /// `service_name` (the lowest world rank's; `info` not read); none is
    /// `MPI_ERR_NAME`.
    fn MPI_Lookup_name / PMPI_Lookup_name(
        service_name: *const c_char,
        _info: Handle,
        port_name: *mut c_char
    ) {
        call(NO_OBJECT, |g| {
            let world = g.lib()?.world.comm();
            // SAFETY: MPI's contract: a C string.
            let service = unsafe { service_arg(service_name, MPI_ERR_NAME) }?;
            let Some((_, port)) = g.unlocked(|| lookup(&world, &service))? else {
                return Err(Fail::new(MPI_ERR_NAME, format!("no process publishes {service:?}")));
            };
            // SAFETY: MPI's contract: `port_name` holds MPI_MAX_PORT_NAME chars.
            unsafe { write_str(&port, port_name, MAX_PORT_NAME, std::ptr::null_mut()) }
        })
    }
}

/// What each side of `MPI_Comm_join` writes to the socket: the job and its world rank.
const JOIN_LEN: usize = 16;

fn join_peer(fd: c_int, world: &Comm) -> R<u32> {
    if fd < 0 {
        return Err(Fail::new(MPI_ERR_ARG, format!("file descriptor {fd}")));
    }
    // SAFETY: MPI's contract: `fd` is an open socket, which stays the program's:
    // ManuallyDrop never closes it.
    let mut sock = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut mine = job_id().to_le_bytes().to_vec();
    mine.extend_from_slice(&u64::from(world.rank()).to_le_bytes());
    let io = |e: std::io::Error| Fail::new(MPI_ERR_OTHER, format!("MPI_Comm_join's socket: {e}"));
    sock.write_all(&mine).map_err(io)?;
    let mut theirs = [0u8; JOIN_LEN];
    sock.read_exact(&mut theirs).map_err(io)?;
    let job = u64::from_le_bytes(theirs[..8].try_into().expect("8 bytes"));
    let rank = u64::from_le_bytes(theirs[8..].try_into().expect("8 bytes"));
    match u32::try_from(rank) {
        Ok(r) if job == job_id() && r < world.size() && r != world.rank() => Ok(r),
        _ => Err(Fail::new(
            MPI_ERR_ARG,
            "the process at the socket's other end is of another launch (MPI_Comm_join joins processes of one launch)",
        )),
    }
}

crate::mpi_fn! {
    /// `MPI_Comm_join`: the inter-communicator between this process and the one at
    /// the other end of the socket `fd` (each side writes its job and world rank, 16
    /// bytes, and reads the other's); both must be processes of this launch, else
    /// `MPI_ERR_ARG`. The socket is left open.
    fn MPI_Comm_join / PMPI_Comm_join(fd: c_int, intercomm: *mut Handle) {
        call(MPI_COMM_SELF, |g| {
            // SAFETY: MPI's contract: `intercomm` is valid for a write.
            let slot = unsafe { out(intercomm) }?;
            *slot = MPI_COMM_NULL;
            let lib = g.lib()?;
            let world = lib.world.comm();
            let (_, me) = lib.intra(MPI_COMM_SELF)?;
            let errh = lib.comm(MPI_COMM_SELF)?.errhandler;
            let pair = g.unlocked(|| -> R<_> {
                let peer = join_peer(fd, &world)?;
                crate::comm::inter_half(me.intercomm_create_uniform(0, &world, peer, TAG)?)
            })?;
            *slot = crate::comm::insert_inter(g.lib()?, pair, errh);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_record_finds_each_service() {
        let mut n = BTreeMap::new();
        n.insert("alpha".to_string(), "port-a".to_string());
        n.insert("beta".to_string(), "port:b".to_string());
        let b = encode(&n);
        assert_eq!(find(&b, "beta").as_deref(), Some("port:b"));
        assert_eq!(find(&b, "alpha").as_deref(), Some("port-a"));
        assert_eq!(find(&b, "gamma"), None);
        assert_eq!(find(&b[..b.len() - 1], "beta"), None);
        assert_eq!(find(&[], "alpha"), None);
    }
}
