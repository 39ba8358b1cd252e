//! The raw results of one comparison run, as `benches/compare/run.sh` writes them.

use std::path::Path;

/// One point of a curve: a series' value at a message size.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Series name ("steadfast shm", "Open MPI sm", ...).
    pub series: String,
    /// "lat" (µs), "bw" (MB/s, window of 64), "ppbw" (MB/s, ping-pong) or "mr"
    /// (messages/s).
    pub metric: String,
    /// Message size in bytes.
    pub size: u64,
    /// The value.
    pub value: f64,
}

/// One side-by-side measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// Table section ("libfabric", "Open MPI", "ULFM 2 ranks", ...).
    pub section: String,
    /// What was measured, with its unit.
    pub what: String,
    /// steadfast's value (None when it was not measured).
    pub ours: Option<f64>,
    /// Who we are compared with.
    pub peer: String,
    /// Their value.
    pub theirs: Option<f64>,
    /// Whether lower values are better (times) or higher (bandwidth).
    pub lower_is_better: bool,
}

impl Pair {
    /// steadfast / peer.
    pub fn ratio(&self) -> Option<f64> {
        match (self.ours, self.theirs) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }

    /// Whether steadfast is at least as good as the peer.
    pub fn ahead(&self) -> Option<bool> {
        let r = self.ratio()?;
        Some(if self.lower_is_better {
            r <= 1.0
        } else {
            r >= 1.0
        })
    }
}

/// Everything one run produced.
#[derive(Debug, Default)]
pub struct Results {
    /// (key, value) facts: date, machine, commands.
    pub meta: Vec<(String, String)>,
    pub points: Vec<Point>,
    pub pairs: Vec<Pair>,
    /// The floors section, as printed.
    pub floors: String,
    /// The simulation section, as printed.
    pub sim: String,
}

fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    std::fs::read_to_string(dir.join(name))
        .map_err(|e| format!("{}: {e}", dir.join(name).display()))
}

impl Results {
    /// Reads DIR; `meta.tsv` is required, the other files may be missing (a skipped
    /// part of the comparison).
    pub fn load(dir: &Path) -> Result<Results, String> {
        let mut r = Results::default();
        for line in read(dir, "meta.tsv")?.lines() {
            if let Some((k, v)) = line.split_once('\t') {
                r.meta.push((k.to_string(), v.to_string()));
            }
        }
        r.points = Self::parse_points(&read(dir, "curves.tsv").unwrap_or_default())?;
        r.pairs = Self::parse_pairs(&read(dir, "pairs.tsv").unwrap_or_default())?;
        r.floors = read(dir, "floors.txt").unwrap_or_default();
        r.sim = read(dir, "sim.txt").unwrap_or_default();
        Ok(r)
    }

    /// `series<TAB>lat|bw<TAB>size<TAB>value` lines; unparsable values are left out.
    pub fn parse_points(text: &str) -> Result<Vec<Point>, String> {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 4 {
                return Err(format!("curves.tsv line {}: 4 fields expected", n + 1));
            }
            let size = f[2]
                .parse()
                .map_err(|_| format!("curves.tsv line {}: bad size {:?}", n + 1, f[2]))?;
            if let Some(value) = number(f[3]) {
                out.push(Point {
                    series: f[0].into(),
                    metric: f[1].into(),
                    size,
                    value,
                });
            }
        }
        Ok(out)
    }

    /// `section<TAB>what<TAB>ours<TAB>peer<TAB>theirs<TAB>lower|higher` lines.
    pub fn parse_pairs(text: &str) -> Result<Vec<Pair>, String> {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 6 || !matches!(f[5], "lower" | "higher") {
                return Err(format!(
                    "pairs.tsv line {}: 6 fields ending in lower|higher expected",
                    n + 1
                ));
            }
            out.push(Pair {
                section: f[0].into(),
                what: f[1].into(),
                ours: number(f[2]),
                peer: f[3].into(),
                theirs: number(f[4]),
                lower_is_better: f[5] == "lower",
            });
        }
        Ok(out)
    }

    /// The series of `metric`, each sorted by size, in first-seen order.
    pub fn series(&self, metric: &str) -> Vec<(String, Vec<(u64, f64)>)> {
        let mut out: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
        for p in self
            .points
            .iter()
            .filter(|p| p.metric == metric && p.size > 0)
        {
            match out.iter_mut().find(|(s, _)| *s == p.series) {
                Some((_, v)) => v.push((p.size, p.value)),
                None => out.push((p.series.clone(), vec![(p.size, p.value)])),
            }
        }
        for (_, v) in &mut out {
            v.sort_by_key(|&(s, _)| s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_points_and_pairs_and_rejects_malformed_lines() {
        let p = Results::parse_points("steadfast shm\tlat\t8\t0.12\nx\tlat\t16\tnan\n").unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].size, 8);
        assert!(Results::parse_points("a\tlat\t8\n").is_err());
        let q = Results::parse_pairs("s\tlat (us)\t0.1\tOMPI\t0.2\tlower\n").unwrap();
        assert_eq!(q[0].ratio(), Some(0.5));
        assert_eq!(q[0].ahead(), Some(true));
        assert!(Results::parse_pairs("s\tw\t1\tp\t2\tsideways\n").is_err());
        let bw = Results::parse_pairs("s\tbw\t90\tp\t100\thigher\n").unwrap();
        assert_eq!(bw[0].ahead(), Some(false));
        let missing = Results::parse_pairs("s\tw\t\tp\t2\tlower\n").unwrap();
        assert_eq!(missing[0].ratio(), None);
    }

    #[test]
    fn series_group_and_sort_by_size() {
        let r = Results {
            points: Results::parse_points(
                "a\tlat\t64\t2\na\tlat\t8\t1\nb\tlat\t8\t3\na\tbw\t8\t9\n",
            )
            .unwrap(),
            ..Default::default()
        };
        let s = r.series("lat");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], ("a".to_string(), vec![(8, 1.0), (64, 2.0)]));
    }
}
