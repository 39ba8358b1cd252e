//! The properties every simulated run must satisfy.

use super::{contribution_value, SimRun};
use crate::era::{Decision, Outcome};
use crate::types::{Rank, RankSet};
use std::fmt;

/// A property a run broke, with what is needed to replay it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Seed of the scenario.
    pub seed: u64,
    /// Number of ranks.
    pub ranks: u32,
    /// Which property, and how.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} ({} ranks): {} -- replay with the same scenario and seed",
            self.seed, self.ranks, self.what
        )
    }
}

impl std::error::Error for Violation {}

/// Checks agreement, validity, termination and the result code on every agreement of
/// `run`. Uniformity is not a property of MPI_Comm_agree; see [`nonuniform_deciders`].
///
/// # Errors
/// The first violated property.
pub fn check(run: &SimRun) -> Result<(), Violation> {
    let fail = |what: String| Violation {
        seed: run.scenario.seed,
        ranks: run.scenario.ranks,
        what,
    };
    if run.hit_event_bound {
        return Err(fail(format!("no quiescence after {} events", run.events)));
    }
    if run.malformed != 0 {
        return Err(fail(format!("{} malformed messages", run.malformed)));
    }
    let crashed: RankSet = run
        .procs
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.alive)
        .map(|(r, _)| Rank(r as u32))
        .collect();
    if crashed.len() == run.procs.len() {
        return Ok(());
    }
    for seq in 0..run.scenario.agreements {
        let s = seq as usize;
        // Termination and agreement.
        let mut decision: Option<&Decision> = None;
        for (r, p) in run.procs.iter().enumerate().filter(|(_, p)| p.alive) {
            let Some(d) = &p.decided[s] else {
                return Err(fail(format!("rank {r} never decided agreement {seq}")));
            };
            match decision {
                None => decision = Some(d),
                Some(first) if first != d => {
                    return Err(fail(format!(
                        "agreement {seq}: rank {r} decided {d:?}, another survivor {first:?}"
                    )))
                }
                Some(_) => {}
            }
        }
        let d = decision.expect("at least one survivor");
        // Validity of the failed set.
        if !d.failed.is_subset(&crashed) {
            return Err(fail(format!(
                "agreement {seq}: failed set {:?} names live ranks (crashed {crashed:?})",
                d.failed
            )));
        }
        // Validity of the value: survivors' contributions all in, plus only real ones.
        let value_of = |r: usize| contribution_value(run.scenario.seed, Rank(r as u32), seq);
        let started = |r: usize| run.procs[r].acked[s].is_some();
        let mut expected = u64::MAX;
        for (r, p) in run.procs.iter().enumerate() {
            if p.alive || (started(r) && value_of(r) & d.value == d.value) {
                expected &= value_of(r);
            }
        }
        if expected != d.value {
            return Err(fail(format!(
                "agreement {seq}: value {:#x} is not the AND of survivors and some crashed \
                 contributors (closest {expected:#x})",
                d.value
            )));
        }
        // Result code.
        let unacked = |r: usize| {
            run.procs[r].acked[s]
                .as_ref()
                .is_some_and(|a| !d.failed.is_subset(a))
        };
        let survivor_unacked = (0..run.procs.len()).any(|r| run.procs[r].alive && unacked(r));
        let anyone_unacked = (0..run.procs.len()).any(unacked);
        match d.outcome {
            Outcome::Success if survivor_unacked => {
                return Err(fail(format!(
                    "agreement {seq}: Success although a survivor did not acknowledge {:?}",
                    d.failed
                )))
            }
            Outcome::ProcFailed if !anyone_unacked => {
                return Err(fail(format!(
                    "agreement {seq}: ProcFailed although every contributor acknowledged {:?}",
                    d.failed
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Number of crashed processes that decided some agreement differently from the
/// survivors (allowed by MPI_Comm_agree; reported, not failed).
pub fn nonuniform_deciders(run: &SimRun) -> usize {
    let survivor = run.procs.iter().find(|p| p.alive);
    let Some(survivor) = survivor else { return 0 };
    run.procs
        .iter()
        .filter(|p| !p.alive)
        .filter(|p| {
            p.decided
                .iter()
                .zip(&survivor.decided)
                .any(|(mine, theirs)| mine.is_some() && mine != theirs)
        })
        .count()
}
