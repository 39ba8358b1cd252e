//! The names of the job's shared-memory segments, which a rank prints so that its test
//! can check that none is left after the job.

/// The prefix of the names of this job's shared-memory segments on this node
/// (`steadfast-<id>-`, from `STEADFAST_JOB_ID` and the node string as `World::init`
/// makes it); `None` when the launcher gave the job no id.
pub fn segment_prefix() -> Option<String> {
    let job = u64::from_str_radix(&std::env::var("STEADFAST_JOB_ID").ok()?, 16).ok()?;
    let node = format!(
        "{}/{}",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim(),
        steadfast_os::boot_id()
    );
    let id = steadfast::launcher::segments::segment_job(job, node.as_bytes());
    Some(format!("steadfast-{id:016x}-"))
}
