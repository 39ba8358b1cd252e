//! The ratio of steadfast to each peer at every size (and at every rank count for the
//! ULFM phases), and the worst of them per metric: what the report's tables show.
//!
//! A curve's series name says whose it is and which path it measures:
//! `steadfast PATH` is ours; `libfabric PATH (fi_pingpong...)` and `Open MPI sm` (PATH
//! `shm`) are peers. Each of our series is compared with every peer series of the same
//! metric and path.

use crate::data::{Pair, Results};

/// What a curve measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// One-way latency, µs (`lat`).
    Latency,
    /// Streaming bandwidth, MB/s (`bw`): a window of 64 messages in flight.
    Bandwidth,
    /// Ping-pong bandwidth, MB/s (`ppbw`): the size over the one-way time of a
    /// ping-pong, one message in flight (what `fi_pingpong` reports as MB/sec).
    PingPong,
    /// Message rate, messages/s (`mr`).
    Rate,
}

impl Metric {
    /// Every metric, in the report's order.
    pub const ALL: [Metric; 4] = [
        Metric::Latency,
        Metric::Bandwidth,
        Metric::PingPong,
        Metric::Rate,
    ];

    /// Its name in `curves.tsv`.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Latency => "lat",
            Metric::Bandwidth => "bw",
            Metric::PingPong => "ppbw",
            Metric::Rate => "mr",
        }
    }

    /// Its name in the report.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Latency => "latency",
            Metric::Bandwidth => "bandwidth, window of 64",
            Metric::PingPong => "bandwidth, ping-pong",
            Metric::Rate => "message rate",
        }
    }

    /// The unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Latency => "µs",
            Metric::Bandwidth | Metric::PingPong => "MB/s",
            Metric::Rate => "messages/s",
        }
    }

    /// Whether lower values are better (times) or higher (bandwidth, rates).
    pub fn lower_is_better(self) -> bool {
        self == Metric::Latency
    }
}

/// Whose series `name` is and the path it measures: `(true, "shm")` for
/// `steadfast shm`, `(false, "tcp;ofi_rxm")` for `libfabric tcp;ofi_rxm (fi_pingpong)`,
/// `(false, "shm")` for `Open MPI sm`; None for a name that follows no convention.
pub fn path_of(series: &str) -> Option<(bool, &str)> {
    if let Some(path) = series.strip_prefix("steadfast ") {
        return Some((true, path.trim()));
    }
    if let Some(rest) = series.strip_prefix("libfabric ") {
        let path = rest.split(" (").next().unwrap_or(rest);
        return Some((false, path.trim()));
    }
    if series.starts_with("Open MPI sm") {
        return Some((false, "shm"));
    }
    None
}

/// steadfast / peer, when both are known and the peer's is positive.
pub fn ratio(ours: Option<f64>, theirs: Option<f64>) -> Option<f64> {
    match (ours, theirs) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Whether `ratio` leaves steadfast behind (a tie is not behind).
pub fn behind(ratio: f64, lower_is_better: bool) -> bool {
    if lower_is_better {
        ratio > 1.0
    } else {
        ratio < 1.0
    }
}

/// The worst ratio to one peer over a table's sizes (or rank counts).
#[derive(Clone, Debug, PartialEq)]
pub struct Worst {
    /// steadfast / peer where steadfast does worst.
    pub ratio: f64,
    /// Where: the size in bytes, or the index of the rank count.
    pub at: u64,
    /// At how many of the compared points steadfast is behind.
    pub behind: usize,
    /// How many points have both values.
    pub compared: usize,
}

/// The worst of `(at, ratio)` points (the largest ratio when lower is better, the
/// smallest otherwise; the first of equals).
pub fn worst(points: impl Iterator<Item = (u64, f64)>, lower_is_better: bool) -> Option<Worst> {
    let mut out: Option<Worst> = None;
    for (at, r) in points {
        let w = out.get_or_insert(Worst {
            ratio: r,
            at,
            behind: 0,
            compared: 0,
        });
        w.compared += 1;
        w.behind += usize::from(behind(r, lower_is_better));
        let worse = if lower_is_better {
            r > w.ratio
        } else {
            r < w.ratio
        };
        if worse {
            w.ratio = r;
            w.at = at;
        }
    }
    out
}

/// One metric over one path: our values and every peer's, at every size any of them
/// has.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeTable {
    /// What is measured.
    pub metric: Metric,
    /// The path (`shm`, `tcp;ofi_rxm`, `net`).
    pub path: String,
    /// The peers' series names, in first-seen order.
    pub peers: Vec<String>,
    /// Per size: (size, ours, each peer's value in `peers` order).
    pub rows: Vec<(u64, Option<f64>, Vec<Option<f64>>)>,
}

impl SizeTable {
    /// The ratio to peer `i` at each size both have.
    pub fn ratios(&self, i: usize) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.rows
            .iter()
            .filter_map(move |(size, ours, theirs)| Some((*size, ratio(*ours, theirs[i])?)))
    }

    /// The worst ratio to peer `i`.
    pub fn worst(&self, i: usize) -> Option<Worst> {
        worst(self.ratios(i), self.metric.lower_is_better())
    }
}

/// A table per metric and path that has a steadfast series, in the order of
/// [`Metric::ALL`] and then of first appearance.
pub fn size_tables(r: &Results) -> Vec<SizeTable> {
    let mut out = Vec::new();
    for metric in Metric::ALL {
        let series = r.series(metric.key());
        for (name, ours) in &series {
            let Some((true, path)) = path_of(name) else {
                continue;
            };
            let peers: Vec<&(String, Vec<(u64, f64)>)> = series
                .iter()
                .filter(|(n, _)| path_of(n) == Some((false, path)))
                .collect();
            let mut sizes: Vec<u64> = ours
                .iter()
                .chain(peers.iter().flat_map(|(_, v)| v.iter()))
                .map(|&(s, _)| s)
                .collect();
            sizes.sort_unstable();
            sizes.dedup();
            let at = |v: &[(u64, f64)], s: u64| v.iter().find(|p| p.0 == s).map(|p| p.1);
            out.push(SizeTable {
                metric,
                path: path.to_string(),
                peers: peers.iter().map(|(n, _)| n.clone()).collect(),
                rows: sizes
                    .into_iter()
                    .map(|s| {
                        (
                            s,
                            at(ours, s),
                            peers.iter().map(|(_, v)| at(v, s)).collect(),
                        )
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The ULFM phases (and allreduce rows) of `pairs.tsv` by rank count: each row one
/// measurement against one peer, each column one `ULFM N ranks` section.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTable {
    /// The sections, in order (`ULFM 2 ranks`, `ULFM 4 ranks`, ...).
    pub sections: Vec<String>,
    /// (what, peer, lower is better, the pair of each section if measured there).
    pub rows: Vec<(String, String, bool, Vec<Option<Pair>>)>,
}

impl PhaseTable {
    /// The worst ratio of row `i`, `at` being the section's index.
    pub fn worst(&self, i: usize) -> Option<Worst> {
        let (_, _, lower, cells) = &self.rows[i];
        worst(
            cells
                .iter()
                .enumerate()
                .filter_map(|(s, p)| Some((s as u64, p.as_ref()?.ratio()?))),
            *lower,
        )
    }
}

/// The phase table of `r`'s pairs whose section starts with `ULFM` (None without any).
pub fn phase_table(r: &Results) -> Option<PhaseTable> {
    let ulfm: Vec<&Pair> = r
        .pairs
        .iter()
        .filter(|p| p.section.starts_with("ULFM"))
        .collect();
    if ulfm.is_empty() {
        return None;
    }
    let mut sections: Vec<String> = Vec::new();
    let mut keys: Vec<(String, String, bool)> = Vec::new();
    for p in &ulfm {
        if !sections.contains(&p.section) {
            sections.push(p.section.clone());
        }
        let key = (p.what.clone(), p.peer.clone(), p.lower_is_better);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let rows = keys
        .into_iter()
        .map(|(what, peer, lower)| {
            let cells = sections
                .iter()
                .map(|s| {
                    ulfm.iter()
                        .find(|p| p.section == *s && p.what == what && p.peer == peer)
                        .map(|p| (*p).clone())
                })
                .collect();
            (what, peer, lower, cells)
        })
        .collect();
    Some(PhaseTable { sections, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(curves: &str, pairs: &str) -> Results {
        Results {
            points: Results::parse_points(curves).unwrap(),
            pairs: Results::parse_pairs(pairs).unwrap(),
            ..Default::default()
        }
    }

    #[test]
    fn series_names_give_owner_and_path() {
        assert_eq!(path_of("steadfast shm"), Some((true, "shm")));
        assert_eq!(
            path_of("steadfast tcp;ofi_rxm"),
            Some((true, "tcp;ofi_rxm"))
        );
        assert_eq!(
            path_of("libfabric tcp;ofi_rxm (fi_pingpong, ping-pong)"),
            Some((false, "tcp;ofi_rxm"))
        );
        assert_eq!(path_of("libfabric net (fi_pingpong)"), Some((false, "net")));
        assert_eq!(path_of("Open MPI sm"), Some((false, "shm")));
        assert_eq!(path_of("someone else"), None);
    }

    #[test]
    fn worst_is_the_largest_time_ratio_or_the_smallest_rate_ratio() {
        let pts = [(1, 0.5), (2, 1.5), (4, 1.2), (8, 1.5)];
        assert_eq!(
            worst(pts.into_iter(), true),
            Some(Worst {
                ratio: 1.5,
                at: 2,
                behind: 3,
                compared: 4
            })
        );
        assert_eq!(
            worst(pts.into_iter(), false),
            Some(Worst {
                ratio: 0.5,
                at: 1,
                behind: 1,
                compared: 4
            })
        );
        assert_eq!(worst(std::iter::empty(), true), None);
        // A tie is not behind.
        assert!(!behind(1.0, true) && !behind(1.0, false));
    }

    #[test]
    fn tables_cover_every_size_of_every_peer_on_the_same_path() {
        let r = results(
            "steadfast shm\tlat\t1\t0.3\n\
             steadfast shm\tlat\t4\t0.4\n\
             steadfast shm\tlat\t8\t0.6\n\
             Open MPI sm\tlat\t1\t0.5\n\
             Open MPI sm\tlat\t4\t0.2\n\
             libfabric shm (fi_pingpong)\tlat\t8\t0.3\n\
             libfabric shm (fi_pingpong)\tlat\t16\t0.4\n\
             libfabric tcp;ofi_rxm (fi_pingpong)\tlat\t8\t9\n\
             steadfast tcp;ofi_rxm\tbw\t8\t300\n\
             steadfast tcp;ofi_rxm\tppbw\t8\t100\n\
             libfabric tcp;ofi_rxm (fi_pingpong)\tppbw\t8\t200\n\
             steadfast shm\tmr\t8\t1000000\n",
            "",
        );
        let t = size_tables(&r);
        assert_eq!(t.len(), 4);
        let shm = &t[0];
        assert_eq!((shm.metric, shm.path.as_str()), (Metric::Latency, "shm"));
        assert_eq!(shm.peers, ["Open MPI sm", "libfabric shm (fi_pingpong)"]);
        let sizes: Vec<u64> = shm.rows.iter().map(|r| r.0).collect();
        assert_eq!(sizes, [1, 4, 8, 16]);
        assert_eq!(shm.rows[3], (16, None, vec![None, Some(0.4)]));
        let vs_ompi: Vec<(u64, f64)> = shm.ratios(0).collect();
        assert_eq!(vs_ompi, [(1, 0.6), (4, 2.0)]);
        assert_eq!(
            shm.worst(0).map(|w| (w.ratio, w.at, w.behind)),
            Some((2.0, 4, 1))
        );
        assert_eq!(shm.worst(1).map(|w| (w.ratio, w.at)), Some((2.0, 8)));
        // The window's bandwidth is not compared with a ping-pong's.
        let bw = &t[1];
        assert_eq!(
            (bw.metric, bw.path.as_str()),
            (Metric::Bandwidth, "tcp;ofi_rxm")
        );
        assert!(bw.peers.is_empty());
        let pp = &t[2];
        assert_eq!(
            (pp.metric, pp.path.as_str()),
            (Metric::PingPong, "tcp;ofi_rxm")
        );
        assert_eq!(pp.worst(0).map(|w| w.ratio), Some(0.5));
        // Our rate without a peer: a table, no ratio.
        assert_eq!(t[3].metric, Metric::Rate);
        assert!(t[3].peers.is_empty());
    }

    #[test]
    fn phases_line_up_by_rank_count() {
        let r = results(
            "",
            "libfabric\tshm 8 B (us)\t0.1\tfi_pingpong\t0.3\tlower\n\
             ULFM 2 ranks\tagree (us)\t1\tOpen MPI ULFM\t2\tlower\n\
             ULFM 2 ranks\tshrink (us)\t3\tOpen MPI ULFM\t1\tlower\n\
             ULFM 4 ranks\tagree (us)\t6\tOpen MPI ULFM\t4\tlower\n\
             ULFM 8 ranks\tagree (us)\t\tOpen MPI ULFM\t9\tlower\n",
        );
        let t = phase_table(&r).unwrap();
        assert_eq!(t.sections, ["ULFM 2 ranks", "ULFM 4 ranks", "ULFM 8 ranks"]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].0, "agree (us)");
        assert!(t.rows[1].3[1].is_none(), "shrink not measured at 4 ranks");
        let w = t.worst(0).unwrap();
        assert_eq!((w.ratio, w.at, w.behind, w.compared), (1.5, 1, 1, 2));
        assert_eq!(t.worst(1).map(|w| (w.ratio, w.at)), Some((3.0, 0)));
        assert!(phase_table(&results("", "libfabric\tx\t1\tp\t2\tlower\n")).is_none());
    }
}
