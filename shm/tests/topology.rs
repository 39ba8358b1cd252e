//! Topology through hwloc, in its own test process: binding affects every thread of the
//! process, so it must not share one with other tests.

use steadfast_shm::topology::{numa_nodes_from_sysfs, Topology};

#[test]
fn discovers_this_machine_and_places() {
    let t = Topology::detect().unwrap();
    let online = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert!(t.pus() >= online, "{} PUs, {online} online", t.pus());
    assert!(t.cores() >= 1 && t.cores() <= t.pus());
    assert_eq!(t.numa_nodes(), numa_nodes_from_sysfs());
    assert!(t.current_numa_node().is_some());
    let area = vec![0u8; 1 << 16];
    assert_eq!(t.place_on_node(&area[..], 0).unwrap(), t.numa_nodes() > 1);
}
