//! The Markdown the README shows: facts of the run, the side-by-side table with
//! ratios, the plots, the floors and the simulation.

use std::fmt::Write;

use crate::data::Results;

fn value(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The README section (image paths relative to the repository root, where the README
/// is).
pub fn markdown(r: &Results) -> String {
    let mut md = String::new();
    for (k, v) in &r.meta {
        let _ = writeln!(md, "- **{k}**: {v}");
    }
    md.push('\n');
    md.push_str(
        "Ratio = steadfast / peer: below 1 is better for times, above 1 for bandwidth.\n\n",
    );
    md.push_str("| | measured | steadfast | peer | peer's | ratio | |\n");
    md.push_str("|---|---|---:|---|---:|---:|---|\n");
    let mut last = "";
    for p in &r.pairs {
        let section = if p.section == last {
            ""
        } else {
            p.section.as_str()
        };
        last = &p.section;
        let ratio = p.ratio().map_or("–".into(), |x| format!("{x:.2}"));
        let mark = match p.ahead() {
            Some(true) => "ahead",
            Some(false) => "behind",
            None => "",
        };
        let _ = writeln!(
            md,
            "| {section} | {} | {} | {} | {} | {ratio} | {mark} |",
            p.what,
            value(p.ours),
            p.peer,
            value(p.theirs)
        );
    }
    md.push('\n');
    for (file, alt) in [
        ("latency.svg", "one-way latency against message size"),
        ("bandwidth.svg", "bandwidth against message size"),
        ("phases.svg", "ULFM phases, steadfast against Open MPI"),
    ] {
        let _ = writeln!(md, "![{alt}](benches/results/{file})\n");
    }
    if !r.floors.trim().is_empty() {
        let _ = writeln!(
            md,
            "Physical floors on this machine:\n\n```\n{}\n```\n",
            r.floors.trim_end()
        );
    }
    if !r.sim.trim().is_empty() {
        let _ = writeln!(
            md,
            "Scale by simulation (critical-path rounds of the agreement simulator):\n\n```\n{}\n```",
            r.sim.trim_end()
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_ratios_verdicts_and_plots() {
        let r = Results {
            meta: vec![("date".into(), "today".into())],
            pairs: Results::parse_pairs(
                "libfabric\tshm 8 B (us)\t0.12\tfi_pingpong\t0.30\tlower\n\
                 libfabric\tshm 1 MiB (MB/s)\t9000\tfi_pingpong\t10000\thigher\n",
            )
            .unwrap(),
            ..Default::default()
        };
        let md = markdown(&r);
        assert!(md.contains("- **date**: today"));
        assert!(
            md.contains("| libfabric | shm 8 B (us) | 0.12 | fi_pingpong | 0.30 | 0.40 | ahead |")
        );
        assert!(md.contains("|  | shm 1 MiB (MB/s) | 9000 | fi_pingpong | 10000 | 0.90 | behind |"));
        assert!(md.contains("](benches/results/phases.svg)"));
    }
}
