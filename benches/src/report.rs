//! Statistics over repetitions and the two output formats (OSU-style table, JSON).

/// Median, min and max of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    /// Of `samples` (at least one).
    pub fn of(samples: &mut [f64]) -> Stats {
        assert!(!samples.is_empty(), "statistics of no sample");
        samples.sort_by(f64::total_cmp);
        Stats {
            median: samples[samples.len() / 2],
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }
}

/// One benchmark's output: rows of (label, stats), printed at rank 0.
pub struct Report {
    name: &'static str,
    first: &'static str,
    column: &'static str,
    unit: &'static str,
    header: Vec<(String, String)>,
    rows: Vec<(String, Stats)>,
    json: bool,
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Report {
    /// A report of benchmark `name` whose values are `column` in `unit`.
    pub fn new(name: &'static str, column: &'static str, unit: &'static str, json: bool) -> Self {
        Report {
            name,
            first: "Size",
            column,
            unit,
            header: Vec::new(),
            rows: Vec::new(),
            json,
        }
    }

    /// Names the first column (default `Size`).
    pub fn first_column(mut self, name: &'static str) -> Self {
        self.first = name;
        self
    }

    /// A fact about the run (ranks, route, ...).
    pub fn fact(&mut self, key: &str, value: impl ToString) {
        self.header.push((key.to_string(), value.to_string()));
    }

    /// A row.
    pub fn row(&mut self, label: impl ToString, stats: Stats) {
        let label = label.to_string();
        if !self.json {
            // OSU style: print as we go.
            println!(
                "{label:<20}{:>16.2}{:>12.2}{:>12.2}",
                stats.median, stats.min, stats.max
            );
        }
        self.rows.push((label, stats));
    }

    /// Prints the header (table mode, before the rows).
    pub fn start(&self) {
        if self.json {
            return;
        }
        println!("# steadfast-bench {}", self.name);
        for (k, v) in &self.header {
            println!("# {k}: {v}");
        }
        println!(
            "# {:<18}{:>16}{:>12}{:>12}",
            self.first,
            format!("{} ({})", self.column, self.unit),
            "min",
            "max"
        );
    }

    /// Prints the JSON document (JSON mode).
    pub fn finish(&self) {
        if !self.json {
            return;
        }
        let header: Vec<String> = self
            .header
            .iter()
            .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
            .collect();
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|(l, s)| {
                format!(
                    "{{\"label\": {}, \"median\": {}, \"min\": {}, \"max\": {}}}",
                    json_str(l),
                    s.median,
                    s.min,
                    s.max
                )
            })
            .collect();
        println!(
            "{{\"benchmark\": {}, \"column\": {}, \"unit\": {}, {}, \"rows\": [{}]}}",
            json_str(self.name),
            json_str(self.column),
            json_str(self.unit),
            header.join(", "),
            rows.join(", ")
        );
    }
}

/// Sizes from `min` to `max`: 0 (if asked), then powers of two.
pub fn sizes(min: usize, max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    if min == 0 {
        v.push(0);
    }
    let mut s = min.max(1).next_power_of_two();
    while s <= max {
        v.push(s);
        s *= 2;
    }
    v
}

/// Operations for one repetition at `size`: fewer for large messages.
pub fn iterations_for(size: usize, iterations: usize) -> usize {
    if size >= 1 << 20 {
        (iterations / 100).max(10)
    } else if size >= 64 << 10 {
        (iterations / 10).max(20)
    } else {
        iterations.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_sizes() {
        let s = Stats::of(&mut [3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(sizes(0, 8), vec![0, 1, 2, 4, 8]);
        assert_eq!(sizes(3, 16), vec![4, 8, 16]);
        assert_eq!(json_str("a\"b"), "\"a\\\"b\"");
    }
}
