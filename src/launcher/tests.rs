//! The service over real loopback sockets: ranks get in past strangers, bounds hold,
//! a get that cannot be answered fails instead of hanging.

use super::{Limits, Service};
use crate::bootstrap::builtin::Builtin;
use crate::bootstrap::wire::{Frame, MAX_VALUE, PROTOCOL_VERSION};
use crate::bootstrap::{Bootstrap, BootstrapError};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECRET: [u8; 32] = [5; 32];

fn start(size: u32, limits: Limits) -> (Arc<Service>, String) {
    start_with(size, limits, |_| {})
}

/// A service set up by `setup` before it serves.
fn start_with(size: u32, limits: Limits, setup: impl FnOnce(&Service)) -> (Arc<Service>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let service = Service::new(size, SECRET, limits).unwrap();
    setup(&service);
    let s = service.clone();
    // The thread ends with the test process.
    std::thread::spawn(move || s.serve(listener));
    (service, addr)
}

#[test]
fn ranks_get_in_past_a_flood_of_idle_strangers() {
    let limits = Limits {
        max_strangers: 8,
        ..Limits::default()
    };
    let (_service, addr) = start(2, limits);
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Let the service accept (and push out) them all.
    std::thread::sleep(Duration::from_millis(200));
    let mut a = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    let mut b = Builtin::connect(&addr, 1, 2, SECRET).unwrap();
    a.put("k", b"v").unwrap();
    assert_eq!(b.get(0, "k").unwrap(), b"v");
    drop(idle);
}

#[test]
fn a_stranger_that_says_nothing_is_closed_after_its_deadline() {
    let limits = Limits {
        hello_timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let (_service, addr) = start(1, limits);
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 1];
    // EOF (or a reset) once the service hangs up.
    let r = std::io::Read::read(&mut idle, &mut buf);
    assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn an_oversize_put_is_refused_by_the_service_and_the_client() {
    let (_service, addr) = start(1, Limits::default());
    let mut a = Builtin::connect(&addr, 0, 1, SECRET).unwrap();
    let err = a.put("big", &vec![0; MAX_VALUE + 1]).unwrap_err();
    assert!(err.to_string().contains("exceeds"), "{err}");
    // Past the client's own check, the service refuses too and the connection lives.
    let mut raw = TcpStream::connect(&addr).unwrap();
    let hello = Frame::Hello {
        version: PROTOCOL_VERSION,
        rank: 0,
        generation: 0,
        secret: SECRET,
    };
    hello.write_to(&mut raw).unwrap();
    assert_eq!(Frame::read_from(&mut raw).unwrap(), Frame::Ok);
    let put = Frame::Put {
        key: "big".into(),
        value: vec![0; MAX_VALUE + 1],
    };
    put.write_to(&mut raw).unwrap();
    assert!(matches!(Frame::read_from(&mut raw).unwrap(), Frame::Error(m) if m.contains("65536")));
    Frame::Fence.write_to(&mut raw).unwrap();
    assert_eq!(Frame::read_from(&mut raw).unwrap(), Frame::Ok);
}

#[test]
fn a_get_of_a_key_never_put_fails_instead_of_hanging() {
    let (_service, addr) = start(2, Limits::default());
    let addr2 = addr.clone();
    let owner = std::thread::spawn(move || {
        let mut b = Builtin::connect(&addr2, 1, 2, SECRET).unwrap();
        b.fence()
    });
    let mut a = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    let start = Instant::now();
    match a.get(1, "never-put") {
        Err(BootstrapError::Refused(m)) => assert!(m.contains("never-put"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(10));
    a.fence().unwrap();
    owner.join().unwrap().unwrap();
}

#[test]
fn a_get_times_out_at_its_deadline() {
    let limits = Limits {
        get_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (_service, addr) = start(2, limits);
    let mut a = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    let err = a.get(1, "late").unwrap_err();
    assert!(err.to_string().contains("within"), "{err}");
}

#[test]
fn a_rank_reconnecting_replaces_its_connection_and_a_dead_rank_is_refused() {
    let (service, addr) = start(2, Limits::default());
    let mut first = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    let mut again = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    again.put("k", b"v").unwrap();
    assert!(
        first.put("k", b"w").is_err(),
        "the old connection still served"
    );
    service.rank_died(1, "killed by signal 9");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut events = Vec::new();
    while events.is_empty() && Instant::now() < deadline {
        events = again.failures(Duration::from_millis(100)).unwrap();
    }
    assert_eq!(events[0].rank, 1);
    let err = Builtin::connect(&addr, 1, 2, SECRET).unwrap_err();
    assert!(err.to_string().contains("already ended"), "{err}");
}

#[test]
fn a_wrong_secret_or_version_is_refused() {
    let (_service, addr) = start(1, Limits::default());
    assert!(Builtin::connect(&addr, 0, 1, [6; 32]).is_err());
    let mut raw = TcpStream::connect(&addr).unwrap();
    let hello = Frame::Hello {
        version: PROTOCOL_VERSION + 1,
        rank: 0,
        generation: 0,
        secret: SECRET,
    };
    hello.write_to(&mut raw).unwrap();
    assert!(
        matches!(Frame::read_from(&mut raw).unwrap(), Frame::Error(m) if m.contains("version"))
    );
}

#[test]
fn a_restart_is_refused_without_a_spawner_and_an_old_incarnation_is_fenced_out() {
    let (service, addr) = start(2, Limits::default());
    let mut a = Builtin::connect(&addr, 0, 2, SECRET).unwrap();
    let _b = Builtin::connect(&addr, 1, 2, SECRET).unwrap();
    service.rank_died(1, "killed by signal 9");
    a.restart_begin(1, 0).unwrap();
    let answer = loop {
        if let Some(x) = a.restart_poll(Duration::from_millis(100)).unwrap() {
            break x;
        }
    };
    let err = answer.unwrap_err();
    assert!(err.to_string().contains("has no spawner"), "{err}");
    // An incarnation that is not the current one never gets in.
    let err = Builtin::connect_as(&addr, 1, 2, 1, SECRET).unwrap_err();
    assert!(err.to_string().contains("not the current one"), "{err}");
}

#[test]
fn a_spawned_incarnation_joins_and_everyone_hears_of_it() {
    let spawned = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&spawned);
    let (service, addr2) = start_with(3, Limits::default(), |s| {
        s.on_restart(move |rank, generation, command| {
            assert_eq!(command, None, "a first rank runs the job's program");
            seen.lock().unwrap().push((rank, generation));
            Ok(4242)
        })
    });
    let mut a = Builtin::connect(&addr2, 0, 3, SECRET).unwrap();
    let mut c = Builtin::connect(&addr2, 2, 3, SECRET).unwrap();
    service.rank_died(1, "killed by signal 9");
    a.restart_begin(1, 0).unwrap();
    // The new incarnation connects as generation 1, learns of the dead, joins.
    let start = Instant::now();
    let mut new = loop {
        match Builtin::connect_as(&addr2, 1, 3, 1, SECRET) {
            Ok(b) => break b,
            Err(_) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("{e}"),
        }
    };
    new.put("addr", b"new").unwrap();
    new.joined().unwrap();
    let answer = loop {
        if let Some(x) = a.restart_poll(Duration::from_millis(100)).unwrap() {
            break x;
        }
    };
    let j = answer.unwrap();
    assert_eq!((j.rank, j.generation, j.pid), (1, 1, 4242));
    assert_eq!(*spawned.lock().unwrap(), vec![(1, 1)]);
    assert_eq!(a.get(1, "addr").unwrap(), b"new");
    // Rank 2 hears of the death (generation 0), then of the rejoin.
    let start = Instant::now();
    while c.rejoins().is_empty() {
        let f = c.failures(Duration::from_millis(50)).unwrap();
        assert!(f.iter().all(|f| f.rank == 1 && f.generation == 0), "{f:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "no rejoin event");
    }
}
