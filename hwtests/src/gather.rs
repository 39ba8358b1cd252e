//! Bringing every rank's results to rank 0 over a communicator (JSON, length first).

use serde::{Deserialize, Serialize};
use steadfast::Comm;

use crate::report::{Probe, TestResult};

const TAG_LEN: u32 = 900;
const TAG_BODY: u32 = 901;
/// Largest results document accepted from a rank.
const MAX_BYTES: u64 = 16 << 20;

/// One rank's own results.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankResults {
    /// World rank.
    pub rank: u32,
    /// Its tests.
    pub tests: Vec<TestResult>,
    /// Its probes (only rank 0's are reported).
    pub probes: Vec<Probe>,
}

/// Sends `mine` to rank 0 of `comm`; on rank 0 returns everyone's, in rank order
/// (its own first). A rank that cannot be heard from becomes a failed `gather` test.
pub fn to_root(comm: &Comm, mine: RankResults) -> Vec<RankResults> {
    let me = comm.rank();
    if me != 0 {
        let body = serde_json::to_vec(&mine).unwrap_or_default();
        let sent = comm
            .send(0, TAG_LEN, &(body.len() as u64).to_le_bytes())
            .and_then(|()| comm.send(0, TAG_BODY, &body));
        if let Err(e) = sent {
            log::warn!("rank {}: cannot send results to rank 0: {e}", mine.rank);
        }
        return vec![mine];
    }
    let mut all = vec![mine];
    for r in 1..comm.size() {
        match receive(comm, r) {
            Ok(results) => all.push(results),
            Err(e) => all.push(RankResults {
                rank: comm.world_rank(r).unwrap_or(r),
                tests: vec![TestResult::failed("gather", e)],
                probes: Vec::new(),
            }),
        }
    }
    all
}

fn receive(comm: &Comm, r: u32) -> Result<RankResults, String> {
    let mut len = [0u8; 8];
    comm.recv(Some(r), Some(TAG_LEN), &mut len)
        .map_err(|e| format!("results of rank {r}: {e}"))?;
    let len = u64::from_le_bytes(len);
    if len > MAX_BYTES {
        return Err(format!(
            "rank {r} announced {len} bytes of results (limit {MAX_BYTES})"
        ));
    }
    let mut body = vec![0u8; len as usize];
    comm.recv(Some(r), Some(TAG_BODY), &mut body)
        .map_err(|e| format!("results of rank {r}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("results of rank {r} do not parse: {e}"))
}
