//! Which host (kernel boot) and pid namespace this process runs in.

use std::sync::OnceLock;

/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`, trimmed), read once per
/// process; empty where the file cannot be read (then every boot looks alike, and
/// identities fall back on what else they hash).
///
/// ```
/// let id = steadfast_os::boot_id();
/// assert_eq!(id, steadfast_os::boot_id());
/// assert!(!id.ends_with('\n'));
/// ```
pub fn boot_id() -> &'static str {
    static BOOT_ID: OnceLock<String> = OnceLock::new();
    BOOT_ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// An identity of this host and pid namespace: equal for two processes exactly when
/// their pids name processes of the same kernel and namespace (FNV-1a of the boot id
/// and the pid namespace's link).
///
/// ```
/// assert_eq!(steadfast_os::host_identity(), steadfast_os::host_identity());
/// ```
pub fn host_identity() -> u64 {
    static IDENTITY: OnceLock<u64> = OnceLock::new();
    *IDENTITY.get_or_init(|| {
        let pid_ns = std::fs::read_link("/proc/self/ns/pid")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::hash::fnv1a64_parts(&[boot_id().as_bytes(), pid_ns.as_bytes()])
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn boot_id_is_a_uuid_here() {
        // Linux always has the file; the id is a 36-character UUID.
        assert_eq!(super::boot_id().len(), 36, "{:?}", super::boot_id());
    }
}
