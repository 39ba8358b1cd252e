//! The runtime's own paths through `World` and `Comm`: routes from the node map,
//! point-to-point in every shm protocol (inline, eager, single copy, split copy) and
//! across nodes through the fabric, checked through the route counters; one-sided
//! access by CMA within a node; XPMEM where the device exists; agreement time.

use std::time::Instant;

use steadfast::world::Route;
use steadfast::World;

use crate::fabric_suite::pattern;
use crate::report::{Probe, TestResult};

/// Sizes sent between every pair: empty, inline (<= 232 B), eager (<= 4 KiB), single
/// copy, split copy (>= 256 KiB).
const SIZES: &[usize] = &[0, 8, 232, 233, 4096, 4097, 65536, 300 << 10, 1 << 20];

/// What the suite needs to know about the job.
pub struct Job<'a> {
    /// Node identity of every world rank.
    pub node_of: &'a [String],
    /// `route = fabric`: every peer through the fabric.
    pub route_fabric: bool,
    /// CMA usable on this node (from discovery), and what showed it.
    pub cma: (bool, &'a str),
}

/// Runs the suite on every rank (collective).
pub fn run(world: &World, job: &Job<'_>) -> (Vec<TestResult>, Vec<Probe>) {
    let mut results = Vec::new();
    let mut probes = Vec::new();
    let me = world.rank();
    if me == 0 && world.size() > 32 {
        log::warn!(
            "world.p2p exchanges between every pair of the {} ranks: keep hwtests jobs small (2 nodes x 2 ranks)",
            world.size()
        );
    }
    let same_node = |r: u32| job.node_of[r as usize] == job.node_of[me as usize];
    let peers: Vec<u32> = (0..world.size()).filter(|&r| r != me).collect();
    let local = if job.route_fabric {
        0
    } else {
        peers.iter().filter(|&&r| same_node(r)).count() as u64
    };
    let remote = peers.len() as u64 - local;
    results.push(TestResult::from_result("world.routes", routes(world, job)));

    let before = world.stats();
    results.push(TestResult::from_result("world.p2p", p2p(world)));
    let after = world.stats();
    let per_peer = SIZES.len() as u64;
    let shm_sent = after.shm_sent - before.shm_sent;
    let fabric_sent = after.fabric_sent - before.fabric_sent;
    results.push(if local == 0 {
        TestResult::skipped(
            "shm.messages",
            "no other rank on this node reached through shm",
        )
    } else if shm_sent == local * per_peer {
        TestResult::passed("shm.messages")
    } else {
        TestResult::failed(
            "shm.messages",
            format!(
                "{shm_sent} messages through shm, expected {} ({local} local peers)",
                local * per_peer
            ),
        )
    });
    results.push(if remote == 0 {
        TestResult::skipped("world.fabric_messages", "every peer is on this node, reached through shm (STEADFAST_ROUTE=fabric tests this path on one node)")
    } else if fabric_sent == remote * per_peer {
        TestResult::passed("world.fabric_messages")
    } else {
        TestResult::failed(
            "world.fabric_messages",
            format!("{fabric_sent} messages through the fabric, expected {}", remote * per_peer),
        )
    });

    let cma = window_test(world);
    let successor = (me + 1) % world.size();
    results.push(match cma {
        Ok(shm_ops) if local > 0 && same_node(successor) && !job.route_fabric => {
            if shm_ops > 0 {
                TestResult::passed("shm.cma")
            } else {
                TestResult::failed(
                    "shm.cma",
                    "window put/get to a same-node rank did not go by single copy",
                )
            }
        }
        Ok(_) => TestResult::skipped("shm.cma", "the next rank is not reached through shm"),
        Err(e) if !job.cma.0 => {
            TestResult::skipped("shm.cma", format!("CMA unavailable ({}): {e}", job.cma.1))
        }
        Err(e) => TestResult::failed("shm.cma", e),
    });
    results.push(xpmem());
    match agree_time(world) {
        Ok(us) => probes.push(Probe {
            name: "world.agree".into(),
            value: us,
            unit: "us".into(),
            reference: None,
            ratio: None,
            note: format!("{} ranks, median of 5 x 100 agreements", world.size()),
        }),
        Err(e) => results.push(TestResult::failed("world.probe.agree", e)),
    }
    (results, probes)
}

fn routes(world: &World, job: &Job<'_>) -> Result<(), String> {
    let me = world.rank();
    for r in 0..world.size() {
        let got = world.route(r).ok_or(format!("no route to rank {r}"))?;
        let ok = match got {
            Route::Local => r == me,
            Route::Shm(_) => {
                r != me && !job.route_fabric && job.node_of[r as usize] == job.node_of[me as usize]
            }
            Route::Fabric => {
                r != me && (job.route_fabric || job.node_of[r as usize] != job.node_of[me as usize])
            }
        };
        if !ok {
            return Err(format!(
                "rank {r} (node {}) reached by {got:?} from node {}",
                job.node_of[r as usize], job.node_of[me as usize]
            ));
        }
    }
    Ok(())
}

/// Every pair exchanges every size, the lower rank sending first; data checked.
fn p2p(world: &World) -> Result<(), String> {
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    for peer in (0..n).filter(|&p| p != me) {
        for (k, &len) in SIZES.iter().enumerate() {
            let tag = 200 + k as u32;
            let out = pattern(len, u64::from(me) * 1000 + u64::from(peer));
            let mut buf = vec![0u8; len];
            let recv = |buf: &mut [u8]| {
                comm.recv(Some(peer), Some(tag), buf)
                    .map_err(|e| format!("receive of {len} B from rank {peer}: {e}"))
                    .and_then(|st| {
                        (st.len == len)
                            .then_some(())
                            .ok_or(format!("{} B from rank {peer}, expected {len}", st.len))
                    })
            };
            let send = || {
                comm.send(peer, tag, &out)
                    .map_err(|e| format!("send of {len} B to rank {peer}: {e}"))
            };
            if me < peer {
                send()?;
                recv(&mut buf)?;
            } else {
                recv(&mut buf)?;
                send()?;
            }
            if buf != pattern(len, u64::from(peer) * 1000 + u64::from(me)) {
                return Err(format!("{len} B from rank {peer} corrupted"));
            }
        }
    }
    Ok(())
}

/// A window per rank: each puts into the next and gets from the previous; returns
/// how many one-sided operations went by single copy.
fn window_test(world: &World) -> Result<u64, String> {
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    const LEN: usize = 64 << 10;
    let before = world.stats().one_sided_shm;
    let win = comm
        .window_allocate(LEN)
        .map_err(|e| format!("window: {e}"))?;
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    let result = (|| {
        win.put(next, 0, &pattern(LEN, u64::from(me)))
            .map_err(|e| format!("put into rank {next}: {e}"))?;
        win.fence().map_err(|e| format!("fence: {e}"))?;
        let mut local = vec![0u8; LEN];
        win.read_local(0, &mut local)
            .map_err(|e| format!("read_local: {e}"))?;
        if local != pattern(LEN, u64::from(prev)) {
            return Err(format!("the put of rank {prev} is not in this window"));
        }
        let mut back = vec![0u8; LEN];
        win.get(next, 0, &mut back)
            .map_err(|e| format!("get from rank {next}: {e}"))?;
        if back != pattern(LEN, u64::from(me)) {
            return Err(format!("get from rank {next} differs from what was put"));
        }
        Ok(())
    })();
    let freed = win.free().map_err(|e| format!("window free: {e}"));
    result.and(freed)?;
    Ok(world.stats().one_sided_shm - before)
}

/// XPMEM: expose this process, attach our own segment, read through it.
/// (Runs alone too: it needs only this process.)
pub fn xpmem() -> TestResult {
    const NAME: &str = "shm.xpmem";
    if !std::path::Path::new("/dev/xpmem").exists() {
        return TestResult::skipped(
            NAME,
            "/dev/xpmem absent (XPMEM kernel module not loaded; Cray/HPE nodes have it)",
        );
    }
    let Some(x) = steadfast_shm::xpmem::Xpmem::open() else {
        return TestResult::failed(
            NAME,
            "/dev/xpmem exists but cannot be opened or is not version 2",
        );
    };
    let Some(apid) = x.get(x.segid()) else {
        return TestResult::failed(NAME, "xpmem_get of our own segment failed");
    };
    let src = pattern(1 << 20, 3);
    let mut dst = vec![0u8; src.len()];
    let r = x.read(apid, src.as_ptr() as u64, &mut dst);
    x.release(apid);
    match r {
        Ok(()) if dst == src => TestResult::passed(NAME),
        Ok(()) => TestResult::failed(NAME, "bytes read through XPMEM differ"),
        Err(e) => TestResult::failed(NAME, format!("xpmem attach/copy: {e}")),
    }
}

/// µs per agreement on the world communicator.
fn agree_time(world: &World) -> Result<f64, String> {
    let comm = world.comm();
    let mut v = Vec::new();
    for round in 0..6 {
        let t = Instant::now();
        for _ in 0..100 {
            comm.agree(1).map_err(|e| format!("agree: {e}"))?;
        }
        if round > 0 {
            v.push(t.elapsed().as_secs_f64() * 1e4);
        }
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}
