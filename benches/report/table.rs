//! The Markdown the README shows: facts of the run, a summary line per metric with
//! the worst ratio to each peer and where it occurs, the ratio to each peer at every
//! size (and at every rank count for the ULFM phases), the headline pairs, the plots,
//! the floors and the simulation.

use std::fmt::Write;

use crate::data::Results;
use crate::ratios::{
    behind, phase_table, ratio, size_tables, Metric, PhaseTable, SizeTable, Worst,
};

fn value(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) if v >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A ratio, in bold when it leaves steadfast behind.
fn ratio_cell(r: Option<f64>, lower_is_better: bool) -> String {
    match r {
        None => "–".into(),
        Some(r) if behind(r, lower_is_better) => format!("**{r:.2}**"),
        Some(r) => format!("{r:.2}"),
    }
}

/// `1 B`, `4 KiB`, `2 MiB`.
pub fn size_label(s: u64) -> String {
    match s {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

fn verdict(w: &Worst, points: &str) -> String {
    if w.behind == 0 {
        format!("ahead at all {} {points}", w.compared)
    } else {
        format!("**behind at {} of {} {points}**", w.behind, w.compared)
    }
}

/// The summary: one line per metric, path and peer (and per ULFM phase).
fn summary(md: &mut String, tables: &[SizeTable], phases: Option<&PhaseTable>) {
    md.push_str("| metric | path | peer | worst ratio | at | |\n");
    md.push_str("|---|---|---|---:|---|---|\n");
    for t in tables {
        let lower = t.metric.lower_is_better();
        for (i, peer) in t.peers.iter().enumerate() {
            let Some(w) = t.worst(i) else { continue };
            let _ = writeln!(
                md,
                "| {} | {} | {peer} | {} | {} | {} |",
                t.metric.title(),
                t.path,
                ratio_cell(Some(w.ratio), lower),
                size_label(w.at),
                verdict(&w, "sizes")
            );
        }
    }
    if let Some(p) = phases {
        for (i, (what, peer, lower, _)) in p.rows.iter().enumerate() {
            let Some(w) = p.worst(i) else { continue };
            let at = p.sections[w.at as usize].trim_start_matches("ULFM ");
            let _ = writeln!(
                md,
                "| {what} | ULFM | {peer} | {} | {at} | {} |",
                ratio_cell(Some(w.ratio), *lower),
                verdict(&w, "rank counts")
            );
        }
    }
    md.push('\n');
}

/// One metric over one path at every size: steadfast, then each peer and the ratio.
fn size_table(md: &mut String, t: &SizeTable) {
    let lower = t.metric.lower_is_better();
    let better = if lower { "lower" } else { "higher" };
    let _ = writeln!(
        md,
        "**{} over {}** ({}, {better} is better; ratio = steadfast / peer, **bold** where steadfast is behind)\n",
        t.metric.title(),
        t.path,
        t.metric.unit()
    );
    md.push_str("| size | steadfast |");
    for p in &t.peers {
        let _ = write!(md, " {p} | ratio |");
    }
    md.push_str("\n|---:|---:|");
    md.push_str(&"---:|---:|".repeat(t.peers.len()));
    md.push('\n');
    for (size, ours, theirs) in &t.rows {
        let _ = write!(md, "| {} | {} |", size_label(*size), value(*ours));
        for v in theirs {
            let _ = write!(
                md,
                " {} | {} |",
                value(*v),
                ratio_cell(ratio(*ours, *v), lower)
            );
        }
        md.push('\n');
    }
    md.push('\n');
    match t.metric {
        Metric::Bandwidth => md.push_str(
            "A window of 64 non-blocking sends, received one by one and acknowledged by one \
             byte (osu_bw's shape); fi_pingpong measures no window, so its bandwidth is in \
             the ping-pong table.\n\n",
        ),
        Metric::PingPong => md.push_str(
            "The size over the one-way time (half the round trip) of a ping-pong, one \
             message in flight: fi_pingpong's MB/sec, and for steadfast and Open MPI the \
             same quotient from their latency sweeps.\n\n",
        ),
        _ => {}
    }
}

/// The ULFM phases: per phase, steadfast, the peer and the ratio at each rank count.
fn phase_section(md: &mut String, p: &PhaseTable) {
    md.push_str("**ULFM phases by rank count** (ratio = steadfast / peer, lower is better; **bold** where steadfast is behind)\n\n");
    md.push_str("| measured | peer |");
    for s in &p.sections {
        let n = s.trim_start_matches("ULFM ");
        let _ = write!(md, " steadfast, {n} | peer, {n} | ratio, {n} |");
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---:|---:|---:|".repeat(p.sections.len()));
    md.push('\n');
    for (what, peer, lower, cells) in &p.rows {
        let _ = write!(md, "| {what} | {peer} |");
        for c in cells {
            match c {
                Some(pair) => {
                    let _ = write!(
                        md,
                        " {} | {} | {} |",
                        value(pair.ours),
                        value(pair.theirs),
                        ratio_cell(pair.ratio(), *lower)
                    );
                }
                None => md.push_str(" – | – | – |"),
            }
        }
        md.push('\n');
    }
    md.push('\n');
}

/// The README section (image paths relative to the repository root, where the README
/// is). `plots` are the SVG files written, with their descriptions.
pub fn markdown(r: &Results, plots: &[(&str, &str)]) -> String {
    let mut md = String::new();
    for (k, v) in &r.meta {
        let _ = writeln!(md, "- **{k}**: {v}");
    }
    md.push('\n');
    let tables = size_tables(r);
    let phases = phase_table(r);
    if !tables.is_empty() || phases.is_some() {
        md.push_str(
            "Where steadfast stands: the worst ratio (steadfast / peer) over every size measured, \
             per metric, path and peer; below 1 is better for times, above 1 for bandwidth \
             and rates; **bold** where steadfast is behind.\n\n",
        );
        summary(&mut md, &tables, phases.as_ref());
    }
    for t in &tables {
        size_table(&mut md, t);
    }
    if let Some(p) = &phases {
        phase_section(&mut md, p);
    }
    let headline: Vec<_> = r
        .pairs
        .iter()
        .filter(|p| !p.section.starts_with("ULFM"))
        .collect();
    if !headline.is_empty() {
        md.push_str(
            "**Headline pairs** (medians of interleaved rounds; ratio = steadfast / peer)\n\n",
        );
        md.push_str("| | measured | steadfast | peer | peer's | ratio | |\n");
        md.push_str("|---|---|---:|---|---:|---:|---|\n");
        let mut last = "";
        for p in headline {
            let section = if p.section == last {
                ""
            } else {
                p.section.as_str()
            };
            last = &p.section;
            let mark = match p.ahead() {
                Some(true) => "ahead",
                Some(false) => "**behind**",
                None => "",
            };
            let _ = writeln!(
                md,
                "| {section} | {} | {} | {} | {} | {} | {mark} |",
                p.what,
                value(p.ours),
                p.peer,
                value(p.theirs),
                ratio_cell(p.ratio(), p.lower_is_better)
            );
        }
        md.push('\n');
    }
    for (file, alt) in plots {
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
    fn sizes_read_as_units() {
        assert_eq!(size_label(1), "1 B");
        assert_eq!(size_label(1536), "1536 B");
        assert_eq!(size_label(4096), "4 KiB");
        assert_eq!(size_label(4 << 20), "4 MiB");
    }

    #[test]
    fn summary_per_size_tables_phases_and_headline_pairs() {
        let r = Results {
            meta: vec![("date".into(), "today".into())],
            points: Results::parse_points(
                "steadfast shm\tlat\t1\t0.3\n\
                 steadfast shm\tlat\t4096\t4.4\n\
                 Open MPI sm\tlat\t1\t0.5\n\
                 Open MPI sm\tlat\t4096\t2.2\n\
                 steadfast shm\tppbw\t1\t10\n\
                 libfabric shm (fi_pingpong)\tppbw\t1\t5\n",
            )
            .unwrap(),
            pairs: Results::parse_pairs(
                "libfabric\tshm 8 B (us)\t0.12\tfi_pingpong\t0.30\tlower\n\
                 libfabric\tshm 1 MiB (MB/s)\t9000\tfi_pingpong\t10000\thigher\n\
                 ULFM 2 ranks\tagree (us)\t1\tOpen MPI ULFM\t2\tlower\n\
                 ULFM 4 ranks\tagree (us)\t6\tOpen MPI ULFM\t4\tlower\n",
            )
            .unwrap(),
            ..Default::default()
        };
        let md = markdown(&r, &[("latency.svg", "latency")]);
        assert!(md.contains("- **date**: today"));
        // The summary: worst per metric/path/peer, and per phase.
        assert!(
            md.contains(
                "| latency | shm | Open MPI sm | **2.00** | 4 KiB | **behind at 1 of 2 sizes** |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| bandwidth, ping-pong | shm | libfabric shm (fi_pingpong) | 2.00 | 1 B | ahead at all 1 sizes |"),
            "{md}"
        );
        assert!(
            md.contains("| agree (us) | ULFM | Open MPI ULFM | **1.50** | 4 ranks | **behind at 1 of 2 rank counts** |"),
            "{md}"
        );
        // Every size, with each peer's value and ratio.
        assert!(
            md.contains("| size | steadfast | Open MPI sm | ratio |"),
            "{md}"
        );
        assert!(md.contains("| 1 B | 0.300 | 0.500 | 0.60 |"), "{md}");
        assert!(md.contains("| 4 KiB | 4.40 | 2.20 | **2.00** |"), "{md}");
        // Phases by rank count.
        assert!(
            md.contains(
                "| agree (us) | Open MPI ULFM | 1.00 | 2.00 | 0.50 | 6.00 | 4.00 | **1.50** |"
            ),
            "{md}"
        );
        // Headline pairs without the ULFM rows.
        assert!(
            md.contains(
                "| libfabric | shm 8 B (us) | 0.120 | fi_pingpong | 0.300 | 0.40 | ahead |"
            ),
            "{md}"
        );
        assert!(md.contains(
            "|  | shm 1 MiB (MB/s) | 9000 | fi_pingpong | 10000 | **0.90** | **behind** |"
        ));
        assert!(!md.contains("| ULFM 2 ranks |"), "{md}");
        assert!(md.contains("![latency](benches/results/latency.svg)"));
    }
}
