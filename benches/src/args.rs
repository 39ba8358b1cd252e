//! The options every subcommand shares, their bounds, and the buffers they size.
//!
//! Every bound is checked before the world is built: a value out of range is an error
//! naming the flag, the value and the bound, never silently changed.

use std::fmt::Display;

/// The largest message size a benchmark accepts (`--max`): 1 GiB.
pub const MAX_SIZE: usize = 1 << 30;
/// The largest `--iterations` and `--warmup`.
pub const MAX_ITERATIONS: usize = 1_000_000_000;
/// The largest `--repetitions`.
pub const MAX_REPETITIONS: usize = 10_000;

/// Options shared by every subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Smallest message size in bytes (default: the benchmark's own, 0 for latency,
    /// 1 for bandwidth, 8 for allreduce and mbw_mr).
    #[arg(long)]
    pub min: Option<usize>,
    /// Largest message size in bytes, at most 1 GiB (default 4 MiB; 1 MiB for mbw_mr;
    /// 512 KiB, the most one allreduce takes, for allreduce).
    #[arg(long)]
    pub max: Option<usize>,
    /// Operations per repetition, 1 to 10^9 (a tenth from 64 KiB, a hundredth from
    /// 1 MiB).
    #[arg(long, default_value_t = 10_000)]
    pub iterations: usize,
    /// Operations before measuring, 0 to 10^9 (at each size at most that size's
    /// operations per repetition). Windowed sweeps (bw, bibw, mbw_mr) also start
    /// with up to 1000 windows of their first size.
    #[arg(long, default_value_t = 1_000)]
    pub warmup: usize,
    /// Repetitions, 1 to 10 000: the median, min and max over them are reported.
    #[arg(long, default_value_t = 5)]
    pub repetitions: usize,
    /// Path between ranks: auto (shm within a node, fabric across), shm, or fabric.
    #[arg(long, default_value = "auto")]
    pub route: String,
    /// Core binding: auto, core or none.
    #[arg(long, default_value = "auto")]
    pub bind: String,
    /// Print JSON instead of the OSU-style table.
    #[arg(long)]
    pub json: bool,
    /// The sizes to measure, from `--min` and `--max` or the benchmark's defaults
    /// (set by [`Common::resolve`]).
    #[arg(skip)]
    pub range: (usize, usize),
}

/// The sizes a benchmark measures by default and the most it can measure.
#[derive(Clone, Copy, Debug)]
pub struct SizeRange {
    /// The smallest size allowed.
    pub floor: usize,
    /// `--min` when not given.
    pub min: usize,
    /// `--max` when not given (lowered to the ceiling).
    pub default_max: usize,
    /// The largest size allowed, and what bounds it.
    pub ceiling: (usize, &'static str),
}

impl SizeRange {
    /// From `min` (also the smallest allowed) to `default_max`, at most [`MAX_SIZE`].
    pub const fn new(min: usize, default_max: usize) -> Self {
        SizeRange {
            floor: min,
            min,
            default_max,
            ceiling: (MAX_SIZE, "the suite's limit of 1 GiB"),
        }
    }
}

fn bounded(flag: &str, value: usize, lo: usize, hi: usize) -> Result<(), String> {
    if value < lo || value > hi {
        return Err(format!("{flag} {value}: expected {lo} to {hi}"));
    }
    Ok(())
}

impl Common {
    /// Checks the flags that do not depend on the benchmark.
    ///
    /// # Errors
    /// The first flag out of range, with its value and bounds.
    pub fn validate(&self) -> Result<(), String> {
        bounded("--iterations", self.iterations, 1, MAX_ITERATIONS)?;
        bounded("--warmup", self.warmup, 0, MAX_ITERATIONS)?;
        bounded("--repetitions", self.repetitions, 1, MAX_REPETITIONS)?;
        if let Some(max) = self.max {
            bounded("--max", max, 0, MAX_SIZE)?;
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min > max {
                return Err(format!("--min {min} is above --max {max}"));
            }
        }
        Ok(())
    }

    /// Checks every flag, then sets [`Common::range`] to the sizes `bench` measures
    /// (none for benchmarks without sizes).
    ///
    /// # Errors
    /// As [`Common::validate`] and [`Common::sizes`].
    pub fn resolve(&mut self, bench: &str, range: Option<SizeRange>) -> Result<(), String> {
        self.validate()?;
        if let Some(range) = range {
            self.range = self.sizes(bench, range)?;
        }
        Ok(())
    }

    /// The sizes `bench` measures: `--min`/`--max` or `range`'s defaults, checked
    /// against `range`.
    ///
    /// # Errors
    /// A size outside `range`, or a `--min` above the `--max` in effect.
    pub fn sizes(&self, bench: &str, range: SizeRange) -> Result<(usize, usize), String> {
        let min = self.min.unwrap_or(range.min);
        let max = self.max.unwrap_or(range.default_max.min(range.ceiling.0));
        if min < range.floor {
            return Err(format!(
                "--min {min}: {bench} measures from {} B",
                range.floor
            ));
        }
        if max > range.ceiling.0 {
            return Err(format!(
                "--max {max}: {bench} measures at most {} B ({})",
                range.ceiling.0, range.ceiling.1
            ));
        }
        if min > max {
            let which = if self.max.is_some() {
                "--max"
            } else {
                "the default --max"
            };
            return Err(format!("--min {min} is above {which} {max}"));
        }
        Ok((min, max))
    }
}

/// A buffer of `len` bytes set to `fill`, or an error when the memory cannot be had
/// (rather than the abort of a failed allocation).
///
/// # Errors
/// The allocation failed: the message names `what` the buffer is for and its size.
pub fn buffer(len: usize, fill: u8, what: impl Display) -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|e| format!("cannot allocate {len} bytes for {what}: {e}"))?;
    v.resize(len, fill);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(min: Option<usize>, max: Option<usize>) -> Common {
        Common {
            min,
            max,
            iterations: 10,
            warmup: 1,
            repetitions: 1,
            route: "auto".into(),
            bind: "auto".into(),
            json: false,
            range: (0, 0),
        }
    }

    #[test]
    fn flags_out_of_range_name_value_and_bound() {
        let mut c = common(None, None);
        assert_eq!(c.validate(), Ok(()));
        c.iterations = 0;
        assert_eq!(
            c.validate().unwrap_err(),
            "--iterations 0: expected 1 to 1000000000"
        );
        c.iterations = 1;
        c.repetitions = 0;
        assert_eq!(
            c.validate().unwrap_err(),
            "--repetitions 0: expected 1 to 10000"
        );
        c.repetitions = 1;
        c.warmup = MAX_ITERATIONS + 1;
        assert!(c.validate().unwrap_err().starts_with("--warmup 1000000001"));
        let big = common(None, Some(1 << 40));
        assert_eq!(
            big.validate().unwrap_err(),
            "--max 1099511627776: expected 0 to 1073741824"
        );
        let crossed = common(Some(1024), Some(8));
        assert_eq!(
            crossed.validate().unwrap_err(),
            "--min 1024 is above --max 8"
        );
    }

    #[test]
    fn size_ranges_default_and_bound() {
        let r = SizeRange::new(8, 1 << 20);
        assert_eq!(common(None, None).sizes("x", r), Ok((8, 1 << 20)));
        assert_eq!(common(Some(64), Some(64)).sizes("x", r), Ok((64, 64)));
        assert_eq!(
            common(Some(1), None).sizes("x", r).unwrap_err(),
            "--min 1: x measures from 8 B"
        );
        assert_eq!(
            common(Some(4 << 20), None).sizes("x", r).unwrap_err(),
            "--min 4194304 is above the default --max 1048576"
        );
        let capped = SizeRange {
            ceiling: (4096, "a test's bound"),
            ..SizeRange::new(8, 1 << 20)
        };
        assert_eq!(common(None, None).sizes("x", capped), Ok((8, 4096)));
        assert_eq!(
            common(None, Some(8192)).sizes("x", capped).unwrap_err(),
            "--max 8192: x measures at most 4096 B (a test's bound)"
        );
    }

    #[test]
    fn buffers_report_allocation_failure() {
        assert_eq!(buffer(3, 7, "x").unwrap(), vec![7, 7, 7]);
        let e = buffer(usize::MAX, 0, "the window").unwrap_err();
        assert!(
            e.starts_with("cannot allocate 18446744073709551615 bytes for the window"),
            "{e}"
        );
    }
}
