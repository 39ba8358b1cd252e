//! Topology through hwloc, in its own test process: binding affects every thread of the
//! process, so it must not share one with other tests.

use steadfast_shm::topology::{numa_nodes_from_sysfs, Topology, TopologyError};

#[test]
fn discovers_this_machine_binds_and_places() {
    let t = Topology::detect().unwrap();
    let online = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert!(t.pus() >= online, "{} PUs, {online} online", t.pus());
    assert!(t.cores() >= 1 && t.cores() <= t.pus());
    assert_eq!(t.numa_nodes(), numa_nodes_from_sysfs());
    assert!(matches!(
        t.bind_to_core(t.cores()),
        Err(TopologyError::NoSuchCore { .. })
    ));
    // Binding really restricts the process: check through the kernel's view.
    t.bind_to_core(0).unwrap();
    // SAFETY: plain data, filled by the kernel.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid cpu_set_t of its own size.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    // SAFETY: CPU_COUNT reads the set.
    let allowed = unsafe { libc::CPU_COUNT(&set) } as usize;
    let per_core = t.pus() / t.cores();
    assert!(
        allowed >= 1 && allowed <= per_core,
        "{allowed} cpus allowed, {per_core} per core"
    );
    assert!(t.current_numa_node().is_some());
    let area = vec![0u8; 1 << 16];
    assert_eq!(t.place_on_node(&area[..], 0).unwrap(), t.numa_nodes() > 1);
}
