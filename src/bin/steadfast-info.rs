//! `steadfast-info [--params]`: what steadfast finds on this machine: the libfabric
//! version, the RDM providers and what `tcp` (and the configured provider) resolve to,
//! the topology, XPMEM and single-copy availability, and every parameter with its value
//! and where the value came from. `--params` prints only the parameters.

use clap::Parser;
use std::io::Write;
use steadfast::fabric;
use steadfast::params::{self, Params};

/// What steadfast finds on this machine, and every parameter with its value and where
/// the value came from.
#[derive(Debug, Parser)]
#[command(name = "steadfast-info", version)]
struct Options {
    /// Print only the parameters.
    #[arg(long)]
    params: bool,
}

fn main() {
    // Usage errors exit 2 before anything is printed.
    let options = Options::parse();
    let mut out = std::io::stdout().lock();
    // A closed pipe (`steadfast-info | head`) ends the listing quietly.
    if let Err(e) = run(&mut out, &options) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("steadfast-info: {e}");
            std::process::exit(1);
        }
    }
}

fn run(out: &mut impl Write, options: &Options) -> std::io::Result<()> {
    let only_params = options.params;
    // No logger here: the unknown-variable warnings are printed by this binary.
    for unknown in
        params::unknown_variables(std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()))
    {
        eprintln!("steadfast-info: warning: {unknown}");
    }
    let params = match Params::load_from(
        |name| std::env::var(name).ok(),
        std::env::var_os("HOME").map(Into::into),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("steadfast-info: {e}");
            std::process::exit(1);
        }
    };
    // What a job would see: the provider environment World::init sets.
    if params.provider_environment() {
        fabric::apply_quirk_environment();
    }
    if !only_params {
        match (fabric::libfabric_version(), fabric::library()) {
            (Ok((major, minor)), Ok(origin)) => {
                writeln!(out, "libfabric {major}.{minor} ({origin})")?
            }
            (Err(e), _) | (_, Err(e)) => writeln!(out, "libfabric: {e}")?,
        }
        match fabric::available_providers() {
            Ok(providers) => {
                writeln!(out, "RDM providers: {}", providers.join(", "))?;
                let mut asked_for = vec!["tcp"];
                if params.provider() != "tcp" {
                    asked_for.push(params.provider());
                }
                for asked in asked_for {
                    match fabric::resolve_provider(asked, &providers) {
                        Ok(r) => writeln!(out, "  {r}")?,
                        Err(e) => writeln!(out, "  {asked}: {e}")?,
                    }
                }
            }
            Err(e) => writeln!(out, "RDM providers: cannot list ({e})")?,
        }
        match steadfast_shm::topology::Topology::detect() {
            Ok(t) => writeln!(
                out,
                "topology: {} cores, {} hardware threads, {} NUMA nodes",
                t.cores(),
                t.pus(),
                t.numa_nodes()
            )?,
            Err(e) => writeln!(out, "topology: unavailable ({e})")?,
        }
        let xpmem = std::path::Path::new("/dev/xpmem").exists();
        writeln!(
            out,
            "shared memory: single copy through {}",
            if xpmem {
                "XPMEM (/dev/xpmem)"
            } else {
                "process_vm_readv (no /dev/xpmem)"
            }
        )?;
    }
    writeln!(
        out,
        "parameters (STEADFAST_<NAME>, STEADFAST_PARAM_FILE, ~/.steadfast/params.conf):"
    )?;
    let listing = params.listing();
    let width = listing
        .iter()
        .map(|(p, _, _)| p.name.len())
        .max()
        .unwrap_or(0);
    for (spec, value, source) in listing {
        let shown = if value.is_empty() {
            "(empty)"
        } else {
            value.as_str()
        };
        writeln!(
            out,
            "  {:width$}  {shown:<10} [{source}]  {} ({}{})",
            spec.name,
            spec.doc,
            spec.kind,
            if spec.must_agree {
                "; equal on every rank"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}
