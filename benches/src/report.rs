//! Statistics over repetitions and the two output formats: the OSU-style table, printed
//! row by row as the benchmark runs, and one JSON document ([`Document`]) at the end.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// Median, min and max of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// The median (the upper one of an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Stats {
    /// Of `samples` (at least one: every caller measures at least one repetition, as
    /// the command line is checked to ask for one).
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

/// A column of values: its name and unit (`Latency`, `us`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Column {
    /// What the values are.
    pub name: &'static str,
    /// Their unit.
    pub unit: &'static str,
}

/// One row of a report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The first column: the message size in bytes, or the phase's name.
    pub label: String,
    /// Median, min and max over the repetitions, in the document's `column` unit.
    #[serde(flatten)]
    pub stats: Stats,
    /// The value of the document's `second_column` (derived from the median), when
    /// the benchmark has one; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second: Option<f64>,
}

/// The JSON document `--json` prints, one per run (at rank 0):
///
/// ```json
/// {"benchmark": "mbw_mr", "first_column": "Size",
///  "column": {"name": "Bandwidth", "unit": "MB/s"},
///  "second_column": {"name": "Messages/s", "unit": "1/s"},
///  "facts": {"ranks": "2", "pairs": "1", "window": "64"},
///  "rows": [{"label": "8", "median": 40.1, "min": 38.0, "max": 41.2, "second": 5012500.0}]}
/// ```
///
/// `second_column` and each row's `second` appear only for benchmarks with a second
/// column (`mbw_mr`); `facts` keeps the order the table's header shows, and every fact
/// is a string.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Document {
    /// The subcommand (`latency`, `bw`, `agree`, ...).
    pub benchmark: &'static str,
    /// The name of the label column (`Size` or `Phase`).
    pub first_column: &'static str,
    /// What the statistics of each row measure.
    pub column: Column,
    /// A second value per row, derived from the median (`mbw_mr`'s messages per second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_column: Option<Column>,
    /// Facts about the run (ranks, route, provider, ...), in the order they were noted.
    #[serde(serialize_with = "ordered_map")]
    pub facts: Vec<(String, String)>,
    /// The rows, in the order the benchmark measured them.
    pub rows: Vec<Row>,
}

/// `(key, value)` pairs as a JSON object, in their order.
fn ordered_map<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

/// One benchmark's output: rows of (label, stats), printed at rank 0.
pub struct Report {
    doc: Document,
    json: bool,
}

impl Report {
    /// A report of benchmark `name` whose values are `column` in `unit`.
    pub fn new(name: &'static str, column: &'static str, unit: &'static str, json: bool) -> Self {
        Report {
            doc: Document {
                benchmark: name,
                first_column: "Size",
                column: Column { name: column, unit },
                second_column: None,
                facts: Vec::new(),
                rows: Vec::new(),
            },
            json,
        }
    }

    /// Names the first column (default `Size`).
    pub fn first_column(mut self, name: &'static str) -> Self {
        self.doc.first_column = name;
        self
    }

    /// Adds a second value column (rows then come through [`Report::row_with`]).
    pub fn second_column(mut self, name: &'static str, unit: &'static str) -> Self {
        self.doc.second_column = Some(Column { name, unit });
        self
    }

    /// A fact about the run (ranks, route, ...).
    pub fn fact(&mut self, key: &str, value: impl ToString) {
        self.doc.facts.push((key.to_string(), value.to_string()));
    }

    /// A row.
    pub fn row(&mut self, label: impl ToString, stats: Stats) {
        self.push(Row {
            label: label.to_string(),
            stats,
            second: None,
        });
    }

    /// A row with the second column's value.
    pub fn row_with(&mut self, label: impl ToString, stats: Stats, second: f64) {
        self.push(Row {
            label: label.to_string(),
            stats,
            second: Some(second),
        });
    }

    fn push(&mut self, row: Row) {
        if !self.json {
            // OSU style: print as we go.
            print_line(&table_line(&row));
        }
        self.doc.rows.push(row);
    }

    /// Prints the header (table mode, before the rows).
    pub fn start(&self) {
        if self.json {
            return;
        }
        print_line(&format!("# steadfast-bench {}", self.doc.benchmark));
        for (k, v) in &self.doc.facts {
            print_line(&format!("# {k}: {v}"));
        }
        let c = &self.doc.column;
        let mut head = format!(
            "# {:<18}{:>16}{:>12}{:>12}",
            self.doc.first_column,
            format!("{} ({})", c.name, c.unit),
            "min",
            "max"
        );
        if let Some(s) = &self.doc.second_column {
            head.push_str(&format!("{:>16}", s.name));
        }
        print_line(&head);
    }

    /// Prints the JSON document (JSON mode).
    pub fn finish(&self) {
        if self.json {
            print_line(&self.to_json());
        }
    }

    /// The JSON document, on one line.
    pub fn to_json(&self) -> String {
        // Serializing plain strings and finite or non-finite floats cannot fail
        // (serde_json writes a non-finite float as null).
        serde_json::to_string(&self.doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// Prints `line` to stdout, flushed (a table is read as it grows); a closed or
/// failing stdout (`steadfast-bench ... | head`) is an error line and exit 1, not a
/// panic.
fn print_line(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        crate::fail_output(e);
    }
}

/// A table value right-aligned in `width`: 3 decimals below 10 (sub-µs latencies
/// differ in the third), 2 from there.
fn cell(v: f64, width: usize) -> String {
    if v.abs() < 10.0 {
        format!("{v:>width$.3}")
    } else {
        format!("{v:>width$.2}")
    }
}

/// One table row: label, median, min, max (and the second column, without decimals).
fn table_line(row: &Row) -> String {
    let s = &row.stats;
    let mut line = format!(
        "{:<20}{}{}{}",
        row.label,
        cell(s.median, 16),
        cell(s.min, 12),
        cell(s.max, 12)
    );
    if let Some(v) = row.second {
        line.push_str(&format!("{v:>16.0}"));
    }
    line
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

/// Operations for one repetition at `size`: `iterations` (at least 1) up to 64 KiB,
/// a tenth (at least 20) from 64 KiB, a hundredth (at least 10) from 1 MiB.
pub fn iterations_for(size: usize, iterations: usize) -> usize {
    if size >= 1 << 20 {
        (iterations / 100).max(10)
    } else if size >= 64 << 10 {
        (iterations / 10).max(20)
    } else {
        iterations
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
        assert_eq!(iterations_for(8, 7), 7);
        assert_eq!(iterations_for(1 << 20, 100), 10);
    }

    #[test]
    fn json_document_has_the_documented_shape() {
        let mut r =
            Report::new("mbw_mr", "Bandwidth", "MB/s", true).second_column("Messages/s", "1/s");
        r.fact("ranks", 2);
        r.fact("a \"quoted\" key", "line\nbreak");
        let stats = Stats {
            median: 2.0,
            min: 1.0,
            max: 3.0,
        };
        r.row_with(8, stats, 250000.0);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["benchmark"], "mbw_mr");
        assert_eq!(v["first_column"], "Size");
        assert_eq!(v["column"]["unit"], "MB/s");
        assert_eq!(v["second_column"]["name"], "Messages/s");
        assert_eq!(v["facts"]["ranks"], "2");
        assert_eq!(v["facts"]["a \"quoted\" key"], "line\nbreak");
        assert_eq!(v["rows"][0]["label"], "8");
        assert_eq!(v["rows"][0]["median"], 2.0);
        assert_eq!(v["rows"][0]["second"], 250000.0);
        // Facts keep their order.
        let text = r.to_json();
        assert!(text.find("\"ranks\"").unwrap() < text.find("quoted").unwrap());
        // Without a second column neither key appears.
        let mut plain = Report::new("latency", "Latency", "us", true);
        plain.row(0, stats);
        let v: serde_json::Value = serde_json::from_str(&plain.to_json()).unwrap();
        assert!(v.get("second_column").is_none());
        assert!(v["rows"][0].get("second").is_none());
    }

    #[test]
    fn table_lines_keep_the_osu_layout() {
        let row = Row {
            label: "1024".into(),
            stats: Stats {
                median: 1.5,
                min: 1.25,
                max: 2.0,
            },
            second: None,
        };
        assert_eq!(
            table_line(&row),
            "1024                           1.500       1.250       2.000"
        );
        let wide = Row {
            stats: Stats {
                median: 1234.5,
                min: 10.0,
                max: 0.1015,
            },
            ..row.clone()
        };
        assert_eq!(
            table_line(&wide),
            "1024                         1234.50       10.00       0.102"
        );
        let with = Row {
            second: Some(1234.4),
            ..row
        };
        assert!(table_line(&with).ends_with("            1234"));
    }
}
