//! The universe's spare slots (`docs/spawn.md`): `steadfast-run --universe U -n N`
//! gives the job U world ranks, of which it starts the first N (`STEADFAST_JOB_RANKS`,
//! N; unset: every rank is started). Ranks N..U are *spare slots*: dead at the start,
//! with no values, until `Comm::spawn` starts one of them as a new process (the first
//! incarnation of the slot is generation 1, as a restart in place; generation 0 never
//! ran). Every rank places a spare slot on rank 0's node (the launcher starts spawned
//! processes on its own node, where rank 0 runs).

/// The environment variable holding the number of ranks started with the job.
pub(crate) const JOB_RANKS_VAR: &str = "STEADFAST_JOB_RANKS";

/// The number of ranks started with the job (the rest of `size` are spare slots):
/// `STEADFAST_JOB_RANKS` when set to a number from 1 to `size`, else `size`.
pub(crate) fn started_ranks(size: u32) -> u32 {
    parse(std::env::var(JOB_RANKS_VAR).ok().as_deref(), size)
}

fn parse(value: Option<&str>, size: u32) -> u32 {
    match value.map(str::parse::<u32>) {
        Some(Ok(n)) if (1..=size).contains(&n) => n,
        Some(_) => {
            log::warn!(
                "{JOB_RANKS_VAR}={value:?} is not a number from 1 to {size}; no spare slots"
            );
            size
        }
        None => size,
    }
}

/// The spare slots of a world of `size` whose first `started` ranks started with the
/// job, as (rank, incarnation 0) pairs, the form of the dead ranks at init.
pub(crate) fn slots(started: u32, size: u32) -> Vec<(u32, u32)> {
    (started..size).map(|r| (r, 0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_started_count_is_checked() {
        assert_eq!(parse(None, 4), 4);
        assert_eq!(parse(Some("2"), 4), 2);
        assert_eq!(parse(Some("4"), 4), 4);
        assert_eq!(parse(Some("0"), 4), 4, "no ranks started is not a job");
        assert_eq!(parse(Some("5"), 4), 4, "more than the universe");
        assert_eq!(parse(Some("x"), 4), 4);
        assert_eq!(slots(2, 4), [(2, 0), (3, 0)]);
        assert!(slots(4, 4).is_empty());
    }
}
