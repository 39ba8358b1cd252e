//! What this node has: libfabric providers and their domains, topology (hwloc), CMA,
//! XPMEM, hugepages, and the launcher that started the process.

use serde::{Deserialize, Serialize};

use steadfast::fabric;

use crate::report::TestResult;

/// One RDM provider and its domains (NICs; interfaces for socket providers).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFound {
    /// libfabric's name (`net`, `tcp;ofi_rxm`, `verbs;ofi_rxm`, `cxi`, ...).
    pub name: String,
    /// Its domains.
    pub domains: Vec<String>,
}

/// hwloc's view of the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologyFound {
    /// Physical cores.
    pub cores: usize,
    /// Hardware threads.
    pub pus: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
}

/// A facility that is there or not, and what showed it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facility {
    /// Usable here.
    pub available: bool,
    /// What was checked and what it said.
    pub detail: String,
}

/// Hugepages from `/proc/meminfo` and `/sys/kernel/mm/hugepages`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hugepages {
    /// `HugePages_Total` (pages of the default size).
    pub total: u64,
    /// `HugePages_Free`.
    pub free: u64,
    /// `Hugepagesize` in KiB.
    pub default_size_kib: u64,
    /// Page sizes the kernel offers (KiB), from sysfs.
    pub sizes_kib: Vec<u64>,
}

/// The launcher, as the environment shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launcher {
    /// `steadfast-run`, `srun (pmi2)`, `srun (pmix)`, `mpiexec.hydra`, `mpirun (pmix)`,
    /// or `none` when run alone.
    pub name: String,
    /// Whether the launcher keeps the job alive when a rank dies (needed by the
    /// fault-tolerance tests), and why we think so.
    pub survives_death: bool,
    /// What the environment said.
    pub detail: String,
}

/// Everything discovered on one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Discovery {
    /// libfabric version loaded at run time (`major.minor`).
    pub libfabric: String,
    /// RDM providers found.
    pub providers: Vec<ProviderFound>,
    /// Topology, when hwloc could read it.
    pub topology: Option<TopologyFound>,
    /// CMA (`process_vm_readv`).
    pub cma: Facility,
    /// XPMEM (`/dev/xpmem`).
    pub xpmem: Facility,
    /// Hugepages.
    pub hugepages: Hugepages,
    /// The launcher.
    pub launcher: Launcher,
}

impl Discovery {
    /// Human-readable lines for the report's header.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!("libfabric {}", self.libfabric)];
        let provs: Vec<String> = self
            .providers
            .iter()
            .map(|p| format!("{} [{}]", p.name, p.domains.join(" ")))
            .collect();
        v.push(format!("providers: {}", provs.join(", ")));
        v.push(match self.topology {
            Some(t) => format!(
                "topology: {} cores, {} hardware threads, {} NUMA nodes",
                t.cores, t.pus, t.numa_nodes
            ),
            None => "topology: unavailable".into(),
        });
        v.push(format!("cma: {}", self.cma.detail));
        v.push(format!("xpmem: {}", self.xpmem.detail));
        let h = &self.hugepages;
        v.push(format!(
            "hugepages: {} of {} free ({} KiB pages; sizes {:?} KiB)",
            h.free, h.total, h.default_size_kib, h.sizes_kib
        ));
        v.push(format!(
            "launcher: {} ({})",
            self.launcher.name, self.launcher.detail
        ));
        v
    }
}

/// Runs every discovery step; each gives a test result (a step that cannot read what
/// it must fails; an absent facility is not a failure).
pub fn discover() -> (Discovery, Vec<TestResult>) {
    let mut d = Discovery::default();
    let mut results = Vec::new();
    // Not loadable: the providers step fails with the reason.
    d.libfabric = match fabric::libfabric_version() {
        Ok((major, minor)) => format!("{major}.{minor}"),
        Err(_) => "not loaded".into(),
    };
    results.push(TestResult::from_result(
        "discover.providers",
        providers(&mut d),
    ));
    match steadfast_shm::topology::Topology::detect() {
        Ok(t) => {
            d.topology = Some(TopologyFound {
                cores: t.cores(),
                pus: t.pus(),
                numa_nodes: t.numa_nodes(),
            });
            results.push(TestResult::passed("discover.topology"));
        }
        Err(e) => results.push(TestResult::failed(
            "discover.topology",
            format!("hwloc: {e}"),
        )),
    }
    d.cma = cma();
    results.push(TestResult::passed("discover.cma"));
    d.xpmem = xpmem();
    results.push(TestResult::passed("discover.xpmem"));
    match hugepages() {
        Ok(h) => {
            d.hugepages = h;
            results.push(TestResult::passed("discover.hugepages"));
        }
        Err(e) => results.push(TestResult::failed("discover.hugepages", e)),
    }
    d.launcher = launcher(|k| std::env::var(k).ok());
    results.push(TestResult::passed("discover.launcher"));
    (d, results)
}

fn providers(d: &mut Discovery) -> Result<(), String> {
    let names = fabric::available_providers().map_err(|e| format!("fi_getinfo: {e}"))?;
    if names.is_empty() {
        return Err("fi_getinfo lists no tagged RDM provider".into());
    }
    for name in names {
        let domains = fabric::Info::domains_of(&name).map_err(|e| format!("{name}: {e}"))?;
        d.providers.push(ProviderFound { name, domains });
    }
    Ok(())
}

/// CMA: a `process_vm_readv` of our own memory (the syscall exists and is allowed for
/// ourselves), and the yama policy that decides whether peers may read each other.
/// Whether ranks really can is tested across processes by `shm.cma`.
fn cma() -> Facility {
    let src = [0x5au8; 64];
    let mut dst = [0u8; 64];
    let pid = std::process::id();
    let own = steadfast_shm::cma::read_from(pid, src.as_ptr() as u64, &mut dst);
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| s.trim().to_string())
        .ok();
    let policy = match yama.as_deref() {
        None => "no yama (peers may read each other)".to_string(),
        Some("0") => "yama ptrace_scope 0 (peers may read each other)".to_string(),
        Some(v) => format!(
            "yama ptrace_scope {v} (peers may not: shm falls back to copies through the ring)"
        ),
    };
    match own {
        Ok(()) if dst == src => Facility {
            available: matches!(yama.as_deref(), None | Some("0")),
            detail: format!("process_vm_readv works; {policy}"),
        },
        Ok(()) => Facility {
            available: false,
            detail: "process_vm_readv returned wrong bytes".into(),
        },
        Err(e) => Facility {
            available: false,
            detail: format!("process_vm_readv: {e}"),
        },
    }
}

fn xpmem() -> Facility {
    if !std::path::Path::new("/dev/xpmem").exists() {
        return Facility {
            available: false,
            detail: "/dev/xpmem absent (the XPMEM kernel module is not loaded)".into(),
        };
    }
    match steadfast_shm::xpmem::Xpmem::open() {
        Some(x) => Facility {
            available: true,
            detail: format!("/dev/xpmem usable (segment {})", x.segid()),
        },
        None => Facility {
            available: false,
            detail: "/dev/xpmem present but unusable (open or make failed, or not version 2)"
                .into(),
        },
    }
}

/// Parses the hugepage lines of `/proc/meminfo` text.
pub fn parse_meminfo(text: &str) -> Result<Hugepages, String> {
    let mut h = Hugepages::default();
    let mut seen = 0;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        let slot = match key {
            "HugePages_Total:" => &mut h.total,
            "HugePages_Free:" => &mut h.free,
            "Hugepagesize:" => &mut h.default_size_kib,
            _ => continue,
        };
        *slot = value
            .parse()
            .map_err(|_| format!("/proc/meminfo: {key} {value:?} is not a number"))?;
        seen += 1;
    }
    if seen < 3 {
        return Err("/proc/meminfo has no HugePages_Total / HugePages_Free / Hugepagesize".into());
    }
    Ok(h)
}

fn hugepages() -> Result<Hugepages, String> {
    let text =
        std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("/proc/meminfo: {e}"))?;
    let mut h = parse_meminfo(&text)?;
    if let Ok(dir) = std::fs::read_dir("/sys/kernel/mm/hugepages") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(kib) = name
                .strip_prefix("hugepages-")
                .and_then(|s| s.strip_suffix("kB"))
                .and_then(|s| s.parse().ok())
            {
                h.sizes_kib.push(kib);
            }
        }
    }
    h.sizes_kib.sort_unstable();
    Ok(h)
}

/// Which launcher started us, from the environment (`env` looks a variable up).
pub fn launcher(env: impl Fn(&str) -> Option<String>) -> Launcher {
    let has = |k: &str| env(k).is_some();
    let slurm = has("SLURM_JOB_ID") || has("SLURM_JOBID");
    // srun does not tell its tasks about --no-kill; a user who exports SLURM_NO_KILL
    // (any value but "off") tells both srun and us.
    let no_kill = env("SLURM_NO_KILL").is_some_and(|v| v != "off");
    let (name, survives, detail) = if has("STEADFAST_RUN_ADDR") {
        (
            "steadfast-run",
            true,
            "STEADFAST_RUN_ADDR set; steadfast-run keeps survivors unless --kill-on-bad-exit"
                .to_string(),
        )
    } else if (has("PMI_FD") || has("PMI_PORT")) && slurm {
        (
            "srun (pmi2)",
            no_kill,
            format!(
                "PMI-1 wire and SLURM_JOB_ID; SLURM_NO_KILL {}",
                if no_kill {
                    "set"
                } else {
                    "unset (srun does not tell its tasks about --no-kill: pass --ft on when srun runs with it)"
                }
            ),
        )
    } else if has("PMI_FD") || has("PMI_PORT") {
        (
            "mpiexec.hydra",
            false,
            "PMI_FD/PMI_PORT without Slurm; Hydra kills the job when a rank dies by a signal"
                .to_string(),
        )
    } else if (has("PMIX_RANK") || has("PMIX_NAMESPACE")) && slurm {
        (
            "srun (pmix)",
            no_kill,
            format!(
                "PMIx and SLURM_JOB_ID; SLURM_NO_KILL {}",
                if no_kill {
                    "set"
                } else {
                    "unset (pass --ft on when srun runs with --no-kill)"
                }
            ),
        )
    } else if has("PMIX_RANK") || has("PMIX_NAMESPACE") {
        (
            "mpirun (pmix)",
            false,
            "PMIx without Slurm; mpirun aborts the job when a rank dies".to_string(),
        )
    } else {
        (
            "none",
            false,
            "no launcher variables: run alone".to_string(),
        )
    };
    Launcher {
        name: name.to_string(),
        survives_death: survives,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_hugepage_lines_parse_and_bad_ones_are_named() {
        let h = parse_meminfo(
            "MemTotal: 100 kB\nHugePages_Total:       4\nHugePages_Free:        3\nHugepagesize:       2048 kB\n",
        )
        .unwrap();
        assert_eq!((h.total, h.free, h.default_size_kib), (4, 3, 2048));
        let e = parse_meminfo("HugePages_Total: x\n").unwrap_err();
        assert!(e.contains("HugePages_Total"), "{e}");
        assert!(parse_meminfo("MemTotal: 1 kB\n").is_err());
    }

    #[test]
    fn launchers_are_told_apart_by_their_variables() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(launcher(env(&[])).name, "none");
        let l = launcher(env(&[("STEADFAST_RUN_ADDR", "127.0.0.1:1")]));
        assert_eq!((l.name.as_str(), l.survives_death), ("steadfast-run", true));
        let l = launcher(env(&[("PMI_FD", "3"), ("SLURM_JOB_ID", "7")]));
        assert_eq!((l.name.as_str(), l.survives_death), ("srun (pmi2)", false));
        let l = launcher(env(&[
            ("PMI_FD", "3"),
            ("SLURM_JOB_ID", "7"),
            ("SLURM_NO_KILL", ""),
        ]));
        assert!(l.survives_death);
        let l = launcher(env(&[
            ("PMI_FD", "3"),
            ("SLURM_JOB_ID", "7"),
            ("SLURM_NO_KILL", "off"),
        ]));
        assert!(!l.survives_death);
        assert_eq!(launcher(env(&[("PMI_PORT", "h:1")])).name, "mpiexec.hydra");
        let l = launcher(env(&[
            ("PMIX_RANK", "0"),
            ("SLURM_JOBID", "7"),
            ("SLURM_NO_KILL", "1"),
        ]));
        assert_eq!((l.name.as_str(), l.survives_death), ("srun (pmix)", true));
        assert_eq!(launcher(env(&[("PMIX_RANK", "0")])).name, "mpirun (pmix)");
    }
}
