//! The libfabric tests, per provider: endpoint set-up, tagged messages in every size
//! class (inject, eager, rendezvous) with the data verified and the protocol checked
//! through the messenger's counters, RMA write/read, atomics, memory registration
//! (cache, repeated register/deregister, one large region), many peers, and the
//! latency / bandwidth probes.
//!
//! Every rank runs [`run_provider`] for the same list of provider names in the same
//! order. Each first publishes whether it could open an endpoint (or that the provider
//! is absent), so that all of them take the same branch and nobody waits for an
//! address that will never come. Ranks 0 and 1 run the pair tests; every rank takes
//! part in the many-peer test. Blocking operations time out (the messenger's
//! operation timeout), so a failing peer turns into a failed test, never a hang.

use std::time::{Duration, Instant};

use steadfast::fabric::{
    self, Error as FabricError, FabricConfig, Messenger, MessengerConfig, RemoteRegion,
};

use crate::exchange::Exchange;
use crate::hugepage::HugeBuffer;
use crate::pingpong;
use crate::report::{Probe, TestResult};

/// The providers of the hardware steadfast targets and what they are: always listed,
/// so that their absence is reported as a skip with its reason.
pub const HARDWARE: &[(&str, &str)] = &[
    ("gni", "Cray Aries (XC) through uGNI"),
    ("cxi", "HPE Slingshot"),
    ("verbs", "InfiniBand / RoCE through verbs"),
    ("efa", "AWS Elastic Fabric Adapter"),
];

/// The socket and shared-memory providers tested by default (`tcp` resolves to the
/// best TCP path, see `steadfast_fabric::resolve_provider`).
pub const PORTABLE: &[&str] = &["tcp", "tcp;ofi_rxm", "shm"];

/// Give up a blocking operation after this long: a peer that failed a step turns into
/// a failed test instead of a hang.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(60);

const READY: u8 = 1;
const ABSENT: u8 = 2;
const BROKEN: u8 = 3;

/// Where and how the provider is opened.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The domain named by the user (the `domain` parameter), if any.
    pub domain: Option<String>,
    /// Distinct nodes among the ranks.
    pub nodes: u32,
    /// Run `fi_pingpong` for a reference figure (rank 0, single node).
    pub reference: bool,
    /// Free huge pages of the default size and that size in bytes (from discovery).
    pub hugepages: (u64, usize),
}

/// The byte pattern of message `seed`, length `len`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| {
            ((i as u64)
                .wrapping_mul(131)
                .wrapping_add(seed.wrapping_mul(7919))
                >> 1) as u8
        })
        .collect()
}

fn is_socket_provider(name: &str) -> bool {
    ["tcp", "net", "sockets", "udp"]
        .iter()
        .any(|s| name.split(';').next() == Some(*s))
}

/// The test-name prefix: `fabric.<resolved provider>` where it resolves, else the
/// requested name.
fn prefix(requested: &str) -> String {
    let resolved = fabric::available_providers()
        .ok()
        .and_then(|a| fabric::resolve_provider(requested, &a).ok())
        .map(|r| r.provider)
        .unwrap_or_else(|| requested.to_string());
    format!("fabric.{resolved}")
}

/// Opens this rank's endpoint, or says why not.
fn open(requested: &str, rank: u32, place: &Placement) -> Result<Messenger, (u8, String)> {
    let available = fabric::available_providers().map_err(|e| (BROKEN, e.to_string()))?;
    let resolution = fabric::resolve_provider(requested, &available).map_err(|_| {
        let what = HARDWARE
            .iter()
            .find(|(n, _)| *n == requested)
            .map_or(String::new(), |(_, w)| format!(" ({w})"));
        (
            ABSENT,
            format!(
                "provider {requested}{what} not present (RDM providers here: {})",
                available.join(", ")
            ),
        )
    })?;
    let mut fc = FabricConfig::new(requested);
    // The `domain` parameter names the NIC between nodes; shm has its own one domain.
    match &place.domain {
        Some(d) if resolution.provider != "shm" => fc = fc.domain(d.clone()),
        None if place.nodes == 1 && is_socket_provider(&resolution.provider) => {
            fc = fc.domain("lo")
        }
        _ => {}
    }
    let mut config = MessengerConfig::new(fc, rank);
    config.operation_timeout = Some(OPERATION_TIMEOUT);
    Messenger::open(config).map_err(|e| (BROKEN, format!("opening {}: {e}", resolution.provider)))
}

/// Runs every test of provider `requested` on this rank; returns the results and (on
/// rank 0) the probes.
pub fn run_provider(
    ex: &mut dyn Exchange,
    requested: &str,
    place: &Placement,
) -> (Vec<TestResult>, Vec<Probe>) {
    let name = prefix(requested);
    let mut results = Vec::new();
    let mut probes = Vec::new();
    let (me, n) = (ex.rank(), ex.size());
    let key = format!("hw.fabric.{requested}");
    let intra_node_only = requested == "shm";
    let opened = if intra_node_only && place.nodes > 1 {
        Err((
            ABSENT,
            format!("shm is intra-node and the ranks span {} nodes", place.nodes),
        ))
    } else {
        open(requested, me, place)
    };
    let mine: Vec<u8> = match &opened {
        Ok(m) => [&[READY][..], &m.address().to_bytes()].concat(),
        Err((kind, why)) => [&[*kind][..], why.as_bytes()].concat(),
    };
    // PMI-1 shows values only after a fence.
    if let Err(e) = ex.publish(&key, &mine).and_then(|()| ex.barrier()) {
        results.push(TestResult::failed(format!("{name}.endpoint"), e));
        return (results, probes);
    }
    let mut all = Vec::with_capacity(n as usize);
    for r in 0..n {
        match ex.fetch(r, &key) {
            Ok(v) if !v.is_empty() => all.push(v),
            Ok(_) => all.push(vec![BROKEN]),
            Err(e) => {
                results.push(TestResult::failed(format!("{name}.endpoint"), e));
                return (results, probes);
            }
        }
    }
    if all.iter().all(|v| v[0] == ABSENT) {
        let why = String::from_utf8_lossy(&all[0][1..]).to_string();
        results.push(TestResult::skipped(name, why));
        return (results, probes);
    }
    let mut messenger = match opened {
        Ok(m) => m,
        Err((_, why)) => {
            results.push(TestResult::failed(format!("{name}.endpoint"), why));
            let _ = ex.barrier();
            return (results, probes);
        }
    };
    if let Some(r) = all.iter().position(|v| v[0] != READY) {
        let why = String::from_utf8_lossy(&all[r][1..]).to_string();
        results.push(TestResult::skipped(
            format!("{name}.endpoint"),
            format!("rank {r} has no endpoint: {why}"),
        ));
        let _ = ex.barrier();
        return (results, probes);
    }
    let added = (0..n).filter(|&r| r != me).try_for_each(|r| {
        messenger
            .add_peer(r, &all[r as usize][1..])
            .map_err(|e| format!("adding rank {r}: {e}"))
    });
    let ok = added.is_ok();
    results.push(TestResult::from_result(format!("{name}.endpoint"), added));
    if ok && me < 2 && n >= 2 {
        pair_tests(&mut messenger, me, &name, &mut results, &mut probes);
        results.push(match place.hugepages {
            (0, _) => TestResult::skipped(
                format!("{name}.registration.hugepages"),
                "no free huge pages (HugePages_Free 0; vm.nr_hugepages or craype-hugepages2M)",
            ),
            (_, size) => match registration_hugepage(&mut messenger, size) {
                Ok(None) => TestResult::passed(format!("{name}.registration.hugepages")),
                Ok(Some(why)) => TestResult::skipped(format!("{name}.registration.hugepages"), why),
                Err(e) => TestResult::failed(format!("{name}.registration.hugepages"), e),
            },
        });
    }
    if n > 2 {
        let r = if ok {
            many_peers(&mut messenger, me, n)
        } else {
            Err("endpoint set-up failed".into())
        };
        results.push(TestResult::from_result(format!("{name}.many_peers"), r));
    } else {
        results.push(TestResult::skipped(
            format!("{name}.many_peers"),
            "needs more than 2 ranks",
        ));
    }
    // Nobody closes an endpoint while a peer may still talk to it.
    if let Err(e) = ex.barrier() {
        results.push(TestResult::failed(format!("{name}.teardown"), e));
    }
    if me == 0 && place.reference && place.nodes == 1 {
        let provider = messenger.info().provider_name();
        let domain = messenger.info().domain_name();
        if let Some(p) = probes.iter_mut().find(|p| p.name.ends_with(".latency_8b")) {
            pingpong::compare(p, &provider, &domain);
        }
    }
    (results, probes)
}

/// The tests between ranks 0 and 1.
fn pair_tests(
    m: &mut Messenger,
    me: u32,
    name: &str,
    results: &mut Vec<TestResult>,
    probes: &mut Vec<Probe>,
) {
    let peer = 1 - me;
    let (inject, eager) = (m.inject_limit(), m.eager_limit());
    let inject_sizes: Vec<usize> = [0, 1, 8, inject]
        .into_iter()
        .filter(|&s| s <= inject)
        .collect();
    results.push(TestResult::from_result(
        format!("{name}.tagged.inject"),
        tagged_class(m, me, peer, &inject_sizes, Class::Inject, 10),
    ));
    if eager > inject {
        let sizes = [
            inject + 1,
            (inject + 1 + eager.min(1 << 20)) / 2,
            eager.min(1 << 20),
        ];
        results.push(TestResult::from_result(
            format!("{name}.tagged.eager"),
            tagged_class(m, me, peer, &sizes, Class::Eager, 20),
        ));
    } else {
        results.push(TestResult::skipped(
            format!("{name}.tagged.eager"),
            format!("eager limit = inject size ({inject} B) for this provider (shm < 1.19: ofiwg/libfabric#9143)"),
        ));
    }
    if eager < usize::MAX {
        // Beyond the 8 MiB rendezvous chunk: several reads in flight.
        let sizes = [eager + 1, 1 << 20, 9 << 20];
        results.push(TestResult::from_result(
            format!("{name}.tagged.rendezvous"),
            tagged_class(m, me, peer, &sizes, Class::Rendezvous, 30),
        ));
        results.push(TestResult::from_result(
            format!("{name}.registration.cache"),
            registration_cache(m, me, peer, eager + 1),
        ));
    } else {
        let why = "no rendezvous: the provider lacks remote reads or CQ data (everything is eager)";
        results.push(TestResult::skipped(
            format!("{name}.tagged.rendezvous"),
            why,
        ));
        results.push(TestResult::skipped(
            format!("{name}.registration.cache"),
            why,
        ));
    }
    results.push(TestResult::from_result(
        format!("{name}.registration.churn"),
        registration_churn(m),
    ));
    results.push(TestResult::from_result(
        format!("{name}.rma"),
        rma(m, me, peer),
    ));
    results.push(match atomics(m, me, peer) {
        Ok(None) => TestResult::passed(format!("{name}.atomics")),
        Ok(Some(why)) => TestResult::skipped(format!("{name}.atomics"), why),
        Err(e) => TestResult::failed(format!("{name}.atomics"), e),
    });
    match latency(m, me, peer) {
        Ok(Some(us)) => probes.push(Probe {
            name: format!("{name}.latency_8b"),
            value: us,
            unit: "us".into(),
            reference: None,
            ratio: None,
            note: "8 B one-way (half the round trip), median of 5 x 1000".into(),
        }),
        Ok(None) => {}
        Err(e) => results.push(TestResult::failed(format!("{name}.probe.latency"), e)),
    }
    match bandwidth(m, me, peer) {
        Ok(Some(mbs)) => probes.push(Probe {
            name: format!("{name}.bandwidth_1m"),
            value: mbs,
            unit: "MB/s".into(),
            reference: None,
            ratio: None,
            note: "32 x 1 MiB blocking sends, then an acknowledgement".into(),
        }),
        Ok(None) => {}
        Err(e) => results.push(TestResult::failed(format!("{name}.probe.bandwidth"), e)),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Inject,
    Eager,
    Rendezvous,
}

fn counter(m: &Messenger, class: Class) -> u64 {
    let s = m.stats();
    match class {
        Class::Inject => s.injected,
        Class::Eager => s.eager,
        Class::Rendezvous => s.rendezvous,
    }
}

fn err(what: &str, e: FabricError) -> String {
    format!("{what}: {e}")
}

/// Receives one message of `len` bytes from `peer` with `tag` and checks it.
fn recv_checked(
    m: &mut Messenger,
    peer: u32,
    tag: u64,
    len: usize,
    seed: u64,
) -> Result<(), String> {
    let mut buf = vec![0u8; len];
    let c = m
        .recv(Some(peer), tag, 0, &mut buf)
        .map_err(|e| err(&format!("receive of {len} B"), e))?;
    if c.len != len {
        return Err(format!("received {} B, expected {len} B", c.len));
    }
    if buf != pattern(len, seed) {
        let at = buf
            .iter()
            .zip(pattern(len, seed))
            .position(|(a, b)| *a != b)
            .unwrap_or(0);
        return Err(format!("{len} B message corrupted from byte {at}"));
    }
    Ok(())
}

/// Each size goes 0 -> 1 and back, data checked on both sides; the sender's counter of
/// `class` must grow by one per message (the protocol really used).
fn tagged_class(
    m: &mut Messenger,
    me: u32,
    peer: u32,
    sizes: &[usize],
    class: Class,
    tag0: u64,
) -> Result<(), String> {
    let before = counter(m, class);
    for (k, &len) in sizes.iter().enumerate() {
        let tag = tag0 + k as u64;
        let (mine, theirs) = (
            u64::from(me) << 32 | len as u64,
            u64::from(peer) << 32 | len as u64,
        );
        if me == 0 {
            m.send(peer, tag, &pattern(len, mine))
                .map_err(|e| err(&format!("send of {len} B"), e))?;
            recv_checked(m, peer, tag, len, theirs)?;
        } else {
            recv_checked(m, peer, tag, len, theirs)?;
            m.send(peer, tag, &pattern(len, mine))
                .map_err(|e| err(&format!("send of {len} B"), e))?;
        }
    }
    let sent = counter(m, class) - before;
    if sent != sizes.len() as u64 {
        return Err(format!(
            "{} of {} messages (sizes {sizes:?}) went by {class:?} (inject limit {}, eager limit {})",
            sent,
            sizes.len(),
            m.inject_limit(),
            m.eager_limit()
        ));
    }
    Ok(())
}

/// The same rendezvous buffer sent twice: the second send hits the registration cache.
fn registration_cache(m: &mut Messenger, me: u32, peer: u32, len: usize) -> Result<(), String> {
    let data = pattern(len, 99);
    let before = m.cache_stats();
    for round in 0..2u64 {
        if me == 0 {
            m.send(peer, 40 + round, &data)
                .map_err(|e| err("send", e))?;
        } else {
            recv_checked(m, peer, 40 + round, len, 99)?;
        }
    }
    if me == 0 {
        let after = m.cache_stats();
        if after.hits <= before.hits {
            return Err(format!(
                "no cache hit for a buffer sent twice ({before:?} -> {after:?})"
            ));
        }
    }
    Ok(())
}

/// 256 register/deregister cycles (a leak would exhaust the NIC's tables), then one
/// 64 MiB region (the locked-memory limit: `ulimit -l`).
fn registration_churn(m: &mut Messenger) -> Result<(), String> {
    for i in 0..256 {
        let region = m
            .expose_owned(vec![i as u8; 64 << 10])
            .map_err(|e| err(&format!("registration {i} of 64 KiB"), e))?;
        m.unexpose_owned(region)
            .map_err(|e| err(&format!("deregistration {i}"), e))?;
    }
    let big = m
        .expose_owned(vec![0u8; 64 << 20])
        .map_err(|e| err("registering 64 MiB (check `ulimit -l`)", e))?;
    m.unexpose_owned(big)
        .map(drop)
        .map_err(|e| err("deregistering 64 MiB", e))
}

/// Registers one huge page (filled first, so it is backed), checks that registration
/// kept its content, deregisters, unmaps. `Ok(Some(why))`: the pool had no page left
/// for this rank (other processes hold them), which says nothing about the NIC.
fn registration_hugepage(m: &mut Messenger, size: usize) -> Result<Option<String>, String> {
    let mut buf = match HugeBuffer::map(size) {
        Ok(b) => b,
        Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
            return Ok(Some(format!("the huge page pool is exhausted ({e})")))
        }
        Err(e) => return Err(format!("mmap of a {size} B huge page: {e}")),
    };
    buf.as_mut_slice().fill(0x5a);
    let (base, len) = (buf.as_mut_slice().as_mut_ptr(), buf.as_mut_slice().len());
    // SAFETY: nothing writes the page remotely (no peer has its descriptor), it stays
    // mapped until `buf` drops, and it is unexposed before that.
    let region = unsafe { m.expose(base, len) }
        .map_err(|e| err(&format!("registering a {size} B huge page"), e))?;
    m.unexpose(region)
        .map_err(|e| err("deregistering the huge page", e))?;
    if buf.as_mut_slice().iter().any(|&b| b != 0x5a) {
        return Err("registration changed the huge page's content".into());
    }
    Ok(None)
}

/// Rank 1 exposes a buffer; rank 0 writes a pattern into it (delivery complete), reads
/// it back, then tells rank 1, which checks its memory.
fn rma(m: &mut Messenger, me: u32, peer: u32) -> Result<(), String> {
    const LEN: usize = 256 << 10;
    const AT: usize = 4096;
    const N: usize = 64 << 10;
    if me == 1 {
        let region = m
            .expose_owned(vec![0u8; LEN])
            .map_err(|e| err("expose", e))?;
        m.send(peer, 50, &region.remote().to_bytes())
            .map_err(|e| err("send region", e))?;
        let mut done = [0u8; 1];
        m.recv(Some(peer), 51, 0, &mut done)
            .map_err(|e| err("wait for writer", e))?;
        let buf = m.unexpose_owned(region).map_err(|e| err("unexpose", e))?;
        if buf[AT..AT + N] != pattern(N, 5)[..] {
            return Err("the written bytes are not in the target's memory".into());
        }
        if buf[..AT].iter().any(|&b| b != 0) {
            return Err("bytes before the written range changed".into());
        }
        return Ok(());
    }
    let mut enc = [0u8; RemoteRegion::ENCODED_LEN];
    m.recv(Some(peer), 50, 0, &mut enc)
        .map_err(|e| err("receive region", e))?;
    let remote = RemoteRegion::from_bytes(&enc).map_err(|e| err("decode region", e))?;
    let result = (|| {
        m.rma_write_delivered(peer, &pattern(N, 5), &remote, AT as u64)
            .map_err(|e| err("rma write", e))?;
        let mut back = vec![0u8; N];
        m.rma_read(peer, &mut back, &remote, AT as u64)
            .map_err(|e| err("rma read", e))?;
        if back != pattern(N, 5) {
            return Err("read back differs from what was written".to_string());
        }
        Ok(())
    })();
    m.send(peer, 51, &[1]).map_err(|e| err("send done", e))?;
    result
}

/// Fetch-add then compare-and-swap on rank 1's u64; `Ok(Some(why))` when the provider
/// has no atomics.
fn atomics(m: &mut Messenger, me: u32, peer: u32) -> Result<Option<String>, String> {
    if me == 1 {
        let mut buf = vec![0u8; 72];
        let off = (8 - buf.as_ptr() as usize % 8) % 8;
        buf[off..off + 8].copy_from_slice(&40u64.to_ne_bytes());
        let region = m.expose_owned(buf).map_err(|e| err("expose", e))?;
        let mut msg = region.remote().to_bytes().to_vec();
        msg.push(off as u8);
        m.send(peer, 60, &msg).map_err(|e| err("send region", e))?;
        let mut ran = [0u8; 1];
        m.recv(Some(peer), 61, 0, &mut ran)
            .map_err(|e| err("wait for rank 0", e))?;
        let buf = m.unexpose_owned(region).map_err(|e| err("unexpose", e))?;
        let value = u64::from_ne_bytes(buf[off..off + 8].try_into().unwrap_or([0; 8]));
        return match ran[0] {
            1 if value == 7 => Ok(None),
            1 => Err(format!(
                "target holds {value} after fetch-add 2 and swap 42 -> 7"
            )),
            _ => Ok(Some("atomics unsupported (see rank 0)".into())),
        };
    }
    let mut msg = [0u8; RemoteRegion::ENCODED_LEN + 1];
    m.recv(Some(peer), 60, 0, &mut msg)
        .map_err(|e| err("receive region", e))?;
    let remote = RemoteRegion::from_bytes(&msg[..RemoteRegion::ENCODED_LEN])
        .map_err(|e| err("decode", e))?;
    let off = u64::from(msg[RemoteRegion::ENCODED_LEN]);
    let outcome = (|| -> Result<Option<String>, String> {
        match m.fetch_add_u64(peer, &remote, off, 2) {
            Ok(40) => {}
            Ok(v) => return Err(format!("fetch-add returned {v}, expected 40")),
            Err(FabricError::Unsupported { provider, what }) => {
                return Ok(Some(format!("{provider} has no {what}")))
            }
            Err(e) => return Err(err("fetch-add", e)),
        }
        match m.compare_swap_u64(peer, &remote, off, 42, 7) {
            Ok(42) => Ok(None),
            Ok(v) => Err(format!("compare-and-swap found {v}, expected 42")),
            Err(e) => Err(err("compare-and-swap", e)),
        }
    })();
    let ran = u8::from(matches!(outcome, Ok(None)));
    m.send(peer, 61, &[ran]).map_err(|e| err("send done", e))?;
    outcome
}

/// 8-byte ping-pong; rank 0 returns the median one-way time in µs.
fn latency(m: &mut Messenger, me: u32, peer: u32) -> Result<Option<f64>, String> {
    const ITERS: usize = 1000;
    let mut buf = [0u8; 8];
    let mut rounds = Vec::new();
    for round in 0..6 {
        let t = Instant::now();
        for _ in 0..ITERS {
            if me == 0 {
                m.send(peer, 70, &buf).map_err(|e| err("ping", e))?;
                m.recv(Some(peer), 71, 0, &mut buf)
                    .map_err(|e| err("pong", e))?;
            } else {
                m.recv(Some(peer), 70, 0, &mut buf)
                    .map_err(|e| err("ping", e))?;
                m.send(peer, 71, &buf).map_err(|e| err("pong", e))?;
            }
        }
        if round > 0 {
            rounds.push(t.elapsed().as_secs_f64() * 1e6 / ITERS as f64 / 2.0);
        }
    }
    rounds.sort_by(f64::total_cmp);
    Ok((me == 0).then(|| rounds[rounds.len() / 2]))
}

/// 32 x 1 MiB from rank 0 to rank 1, then an acknowledgement; rank 0 returns MB/s.
fn bandwidth(m: &mut Messenger, me: u32, peer: u32) -> Result<Option<f64>, String> {
    const LEN: usize = 1 << 20;
    const COUNT: usize = 32;
    let mut buf = vec![1u8; LEN];
    let t = Instant::now();
    for _ in 0..COUNT {
        if me == 0 {
            m.send(peer, 80, &buf).map_err(|e| err("send", e))?;
        } else {
            m.recv(Some(peer), 80, 0, &mut buf)
                .map_err(|e| err("receive", e))?;
        }
    }
    let mut ack = [0u8; 1];
    if me == 0 {
        m.recv(Some(peer), 81, 0, &mut ack)
            .map_err(|e| err("ack", e))?;
        Ok(Some((LEN * COUNT) as f64 / t.elapsed().as_secs_f64() / 1e6))
    } else {
        m.send(peer, 81, &ack).map_err(|e| err("ack", e))?;
        Ok(None)
    }
}

/// Every rank sends every other an 8 B and a 4 KiB message, receives posted first.
fn many_peers(m: &mut Messenger, me: u32, n: u32) -> Result<(), String> {
    let peers: Vec<u32> = (0..n).filter(|&r| r != me).collect();
    for (k, len) in [8usize, 4096].into_iter().enumerate() {
        let tag = 90 + k as u64;
        let mut bufs: Vec<Vec<u8>> = peers.iter().map(|_| vec![0u8; len]).collect();
        let mut reqs = Vec::new();
        let mut first_error = None;
        for (buf, &p) in bufs.iter_mut().zip(&peers) {
            // SAFETY: `bufs` outlives every request: each posted one is waited for or
            // cancelled below before `bufs` is read or dropped (both return only once
            // libfabric is done with the buffer).
            match unsafe { m.irecv(Some(p), tag, 0, buf) } {
                Ok(r) => reqs.push(r),
                Err(e) => {
                    first_error = Some(err("post receive", e));
                    break;
                }
            }
        }
        if first_error.is_some() {
            for r in reqs {
                let _ = m.cancel(r);
            }
            return Err(first_error.unwrap_or_default());
        }
        for &p in &peers {
            if let Err(e) = m.send(p, tag, &pattern(len, u64::from(me) << 8 | u64::from(p))) {
                first_error.get_or_insert(err(&format!("send to rank {p}"), e));
            }
        }
        for (r, &p) in reqs.into_iter().zip(&peers) {
            if let Err(e) = m.wait(r) {
                first_error.get_or_insert(err(&format!("receive from rank {p}"), e));
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        for (buf, &p) in bufs.iter().zip(&peers) {
            if *buf != pattern(len, u64::from(p) << 8 | u64::from(me)) {
                return Err(format!("{len} B from rank {p} corrupted"));
            }
        }
    }
    Ok(())
}
