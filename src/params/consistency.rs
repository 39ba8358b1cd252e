//! The start-up check that the parameters every rank must share ([`ParamSpec::must_agree`])
//! are equal across the job.
//!
//! Each rank puts its must-agree values (`name=value` lines) under the bootstrap key
//! `params` with its other bootstrap data before the first fence; after it, it fetches
//! every rank's and compares them, listing each [`Mismatch`]. Every
//! rank sees the same values, so every rank finds the same mismatch and fails at once
//! with the same error, instead of stalling on a transport the others never open or
//! accusing a rank whose heartbeats come at another pace.
//!
//! [`ParamSpec::must_agree`]: super::ParamSpec::must_agree

use std::collections::BTreeMap;

use super::spec::PARAMS;
use super::Params;

/// The bootstrap key of each rank's encoding.
pub(crate) const KEY: &str = "params";

/// Most rank ranges listed per value in a message.
const RANGES_SHOWN: usize = 8;

/// One parameter whose value differs between ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The parameter.
    pub name: &'static str,
    /// Each value seen, with the ranks that hold it (ascending), rank 0's value first.
    pub values: Vec<(String, Vec<u32>)>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:", self.name)?;
        for (i, (value, ranks)) in self.values.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let word = if ranks.len() == 1 { "rank" } else { "ranks" };
            write!(f, "{sep}{value:?} on {word} {}", ranges(ranks))?;
        }
        Ok(())
    }
}

/// `0-3,7,9-12`, the first [`RANGES_SHOWN`] ranges of ascending `ranks`.
fn ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        if out.len() == RANGES_SHOWN {
            out.push("...".into());
            break;
        }
        out.push(if i == j {
            ranks[i].to_string()
        } else {
            format!("{}-{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    out.join(",")
}

impl Params {
    /// The parameters every rank must share, as `name=value` lines (values never hold
    /// a newline: text parameters refuse control characters).
    pub(crate) fn agreed_encoding(&self) -> Vec<u8> {
        let mut out = String::new();
        for (i, p) in PARAMS.iter().enumerate() {
            if p.must_agree {
                out.push_str(p.name);
                out.push('=');
                out.push_str(&self.values[i].0);
                out.push('\n');
            }
        }
        out.into_bytes()
    }
}

/// Compares the encodings of every rank (index = rank).
///
/// A rank whose encoding lacks a parameter (another steadfast version) shows
/// `(missing)` for it; bytes that are not UTF-8 are read lossily. Either way the
/// result is a mismatch, never a panic.
///
/// # Errors
/// [`ParamError::Inconsistent`](super::ParamError::Inconsistent) listing every
/// parameter that differs, its values and the ranks holding each.
pub(crate) fn compare(encodings: &[Vec<u8>]) -> Result<(), super::ParamError> {
    let decoded: Vec<BTreeMap<String, String>> = encodings
        .iter()
        .map(|e| {
            String::from_utf8_lossy(e)
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect();
    let mut mismatches = Vec::new();
    for p in PARAMS.iter().filter(|p| p.must_agree) {
        let mut values: Vec<(String, Vec<u32>)> = Vec::new();
        for (rank, map) in decoded.iter().enumerate() {
            let v = map.get(p.name).map_or("(missing)", String::as_str);
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            match values.iter_mut().find(|(seen, _)| seen == v) {
                Some((_, ranks)) => ranks.push(rank),
                None => values.push((v.to_string(), vec![rank])),
            }
        }
        if values.len() > 1 {
            mismatches.push(Mismatch {
                name: p.name,
                values,
            });
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(super::ParamError::Inconsistent(mismatches))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(changes: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Params::builder();
        for (k, v) in changes {
            b = b.set(k, *v).unwrap();
        }
        b.build().unwrap().agreed_encoding()
    }

    #[test]
    fn equal_parameters_pass_and_local_ones_may_differ() {
        let a = with(&[("bind", "core"), ("node_id", "a")]);
        let b = with(&[("bind", "none"), ("node_id", "b"), ("heartbeat_ms", "050")]);
        compare(&[a.clone(), b, a]).unwrap();
    }

    #[test]
    fn a_mismatch_names_the_parameter_values_and_ranks() {
        let fabric = with(&[("route", "fabric")]);
        let slow = with(&[("heartbeat_ms", "200")]);
        let plain = with(&[]);
        let e = compare(&[fabric, plain.clone(), plain.clone(), slow, plain])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(r#"route: "fabric" on rank 0, "auto" on ranks 1-4"#),
            "{e}"
        );
        assert!(
            e.contains(r#"heartbeat_ms: "50" on ranks 0-2,4, "200" on rank 3"#),
            "{e}"
        );
        assert!(!e.contains("bind"), "{e}");
    }

    #[test]
    fn garbage_from_a_peer_is_a_mismatch_not_a_panic() {
        let e = compare(&[with(&[]), vec![0xff, b'=', b'\n', 0]]).unwrap_err();
        assert!(e.to_string().contains(r#""(missing)" on rank 1"#), "{e}");
    }

    #[test]
    fn long_rank_lists_are_cut() {
        let ranks: Vec<u32> = (0..100).step_by(2).collect();
        let r = ranges(&ranks);
        assert!(
            r.ends_with("...") && r.split(',').count() == RANGES_SHOWN + 1,
            "{r}"
        );
        assert_eq!(ranges(&[0, 1, 2, 5]), "0-2,5");
    }
}
