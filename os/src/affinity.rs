//! Binding the calling thread to one CPU of those it may run on.
//!
//! Only CPUs in the thread's current affinity mask count (a batch system or `taskset`
//! may have narrowed it), so a binding never leaves the CPUs the job was given. No
//! topology discovery: one system call to read the mask, one to set it.

/// The CPUs the calling thread may run on, ascending; empty if the kernel refuses.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `size` bytes for the kernel to fill; pid 0
    // is the calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads the set within its bounds (c < CPU_SETSIZE).
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Binds the calling thread (and the threads it starts afterwards) to the
/// `index`-th CPU it may run on, modulo their number, so that ranks of one host spread
/// over its CPUs and stop migrating. Returns the CPU, or `None` when the mask cannot be
/// read or set (binding is best effort).
///
/// The embedding program decides whether to bind: this changes the thread's affinity,
/// a process-wide matter, and only runs when called.
///
/// ```
/// // In a thread of its own, so as not to pin the test harness.
/// std::thread::spawn(|| {
///     let allowed = steadfast_os::affinity::allowed_cpus();
///     let cpu = steadfast_os::affinity::bind_to_allowed_cpu(1).unwrap();
///     assert_eq!(cpu, allowed[1 % allowed.len()]);
///     assert_eq!(steadfast_os::affinity::allowed_cpus(), vec![cpu]);
/// })
/// .join()
/// .unwrap();
/// ```
pub fn bind_to_allowed_cpu(index: usize) -> Option<usize> {
    let cpus = allowed_cpus();
    if cpus.is_empty() {
        return None;
    }
    let cpu = cpus[index % cpus.len()];
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` comes from the allowed set, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `one` is a valid cpu_set_t of `size` bytes; pid 0 is the calling thread.
    (unsafe { libc::sched_setaffinity(0, size, &one) } == 0).then_some(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_restricts_the_thread_to_one_allowed_cpu() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            assert!(!before.is_empty());
            let cpu = bind_to_allowed_cpu(before.len() + 1).unwrap();
            assert_eq!(cpu, before[1 % before.len()], "index wraps modulo the CPUs");
            assert_eq!(allowed_cpus(), vec![cpu]);
        })
        .join()
        .unwrap();
        // The test harness's thread was not touched.
        assert!(!allowed_cpus().is_empty());
    }
}
