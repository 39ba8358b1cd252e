//! The node's topology through hwloc (`hwlocality`): cores, NUMA nodes, and placing a
//! segment on its receiver's NUMA node. (Binding to a core is
//! [`steadfast_os::affinity::bind_to_allowed_cpu`], which needs no topology discovery.)
//!
//! `hwlocality` rather than `hwloc2`: the latter panics on the NUMA nodes of hwloc 2.x.

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::object::types::ObjectType;
use hwlocality::Topology as Hwloc;

/// Topology errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// hwloc failed (discovery, placement).
    #[error("hwloc: {0}")]
    Hwloc(String),
}

/// NUMA nodes the kernel reports in sysfs (cheap: no hwloc discovery); 1 if unknown.
pub fn numa_nodes_from_sysfs() -> usize {
    std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("node") && n[4..].parse::<u32>().is_ok()
                })
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

/// What hwloc found on this node.
#[derive(Debug)]
pub struct Topology {
    hw: Hwloc,
}

impl Topology {
    /// Discovers the node.
    ///
    /// # Errors
    /// [`TopologyError::Hwloc`] when discovery fails.
    pub fn detect() -> Result<Self, TopologyError> {
        Hwloc::new()
            .map(|hw| Topology { hw })
            .map_err(|e| TopologyError::Hwloc(e.to_string()))
    }

    /// Physical cores (PUs where the OS has no notion of cores).
    pub fn cores(&self) -> usize {
        match self.hw.objects_with_type(ObjectType::Core).count() {
            0 => self.pus(),
            n => n,
        }
    }

    /// Hardware threads (processing units).
    pub fn pus(&self) -> usize {
        self.hw.objects_with_type(ObjectType::PU).count()
    }

    /// NUMA nodes (at least 1).
    pub fn numa_nodes(&self) -> usize {
        self.hw
            .objects_with_type(ObjectType::NUMANode)
            .count()
            .max(1)
    }

    /// The NUMA node (logical index) of the CPU the calling process last ran on.
    pub fn current_numa_node(&self) -> Option<usize> {
        let here = self.hw.last_cpu_location(CpuBindingFlags::PROCESS).ok()?;
        self.hw
            .objects_with_type(ObjectType::NUMANode)
            .position(|node| node.cpuset().is_some_and(|set| set.intersects(&here)))
    }

    /// Places `area` on NUMA node `node` (logical index), migrating pages already
    /// touched. Returns whether anything was done: on a single-node machine there is
    /// nothing to place and the call returns `Ok(false)` at once.
    ///
    /// # Errors
    /// [`TopologyError::Hwloc`] when the node does not exist or binding is refused.
    pub fn place_on_node<T: ?Sized>(&self, area: &T, node: usize) -> Result<bool, TopologyError> {
        if self.numa_nodes() <= 1 || std::mem::size_of_val(area) == 0 {
            return Ok(false);
        }
        let obj = self
            .hw
            .objects_with_type(ObjectType::NUMANode)
            .nth(node)
            .ok_or_else(|| TopologyError::Hwloc(format!("no NUMA node {node}")))?;
        let nodeset = obj
            .nodeset()
            .ok_or_else(|| TopologyError::Hwloc(format!("NUMA node {node} has no nodeset")))?;
        self.hw
            .bind_memory_area(
                area,
                nodeset,
                MemoryBindingPolicy::Bind,
                MemoryBindingFlags::MIGRATE,
            )
            .map_err(|e| TopologyError::Hwloc(e.to_string()))?;
        Ok(true)
    }
}
