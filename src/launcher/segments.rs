//! The shared-memory segments of one job, as `steadfast-run` finds them to remove them
//! when the job ends, however it ends.
//!
//! A rank's segment is `/dev/shm/steadfast-<id>-<rank>` (built under
//! `steadfast-<id>-<rank>.tmp-<pid>` first), where `<id>` hashes the job id and the
//! rank's node string ([`segment_job`]). The launcher chooses the job id
//! (`STEADFAST_JOB_ID`) and sees each rank's node string when it is put, before any
//! segment exists, so it knows every `<id>` of its job in time.

use std::path::PathBuf;
use steadfast_shm::segment::SHM_DIR;

/// Key under which each rank puts its node string during start-up (`World::init`).
pub const NODE_KEY: &str = "node";

/// The segment id of the ranks of `job` whose node string is `node`.
pub fn segment_job(job: u64, node: &[u8]) -> u64 {
    crate::world::shm_segment_job(job, node)
}

/// The files in `/dev/shm` of segment id `seg_job`, finished or being built.
pub fn segment_files(seg_job: u64) -> Vec<PathBuf> {
    let prefix = format!("steadfast-{seg_job:016x}-");
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .map(|e| e.path())
        .collect()
}

/// Removes every file of the segment ids `seg_jobs`; returns how many it removed.
pub fn remove_segments(seg_jobs: &[u64]) -> usize {
    let mut removed = 0;
    for &s in seg_jobs {
        for path in segment_files(s) {
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                // Its owner removed it meanwhile.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => log::warn!("cannot remove {}: {e}", path.display()),
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_files_of_the_given_ids_are_removed() {
        let mine = segment_job(0x5eed_0000 ^ u64::from(std::process::id()), b"node-a");
        let other = mine ^ 1;
        let dir = std::path::Path::new(SHM_DIR);
        let made = [
            dir.join(format!("steadfast-{mine:016x}-0")),
            dir.join(format!("steadfast-{mine:016x}-1.tmp-42")),
            dir.join(format!("steadfast-{other:016x}-0")),
        ];
        for p in &made {
            std::fs::write(p, b"x").unwrap();
        }
        assert_eq!(segment_files(mine).len(), 2);
        assert_eq!(remove_segments(&[mine]), 2);
        assert!(!made[0].exists() && !made[1].exists() && made[2].exists());
        std::fs::remove_file(&made[2]).unwrap();
    }
}
