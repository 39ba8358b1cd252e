//! Releases a libfabric `shm` region lock that a killed process died holding.
//!
//! Before 1.18, libfabric's shm provider guards each endpoint's shared region with a
//! `pthread_spinlock_t` that other processes take too: a sender takes the receiver's
//! lock to queue a command, a receiver takes the sender's to queue a response. A process
//! SIGKILLed inside that critical section leaves the lock taken for ever, and every later
//! progress call of ours spins on it: no error, a hang (seen here with 1.17 in about one
//! run in ten of the `killed_receiver` test). The provider cannot notice; we can, since
//! we watch our local peers' processes.
//!
//! A [`LockRescue`] thread waits for a watched peer to exit, then samples the lock word
//! of every region of that peer and of this process (`/dev/shm/<pid>:*`) for
//! [`HELD_FOR`]. A lock whose word stays the same and taken all that time is one nobody
//! alive holds (a live holder keeps it for microseconds, and live contention changes the
//! word as the lock passes on), so it is released. A region is touched only if its
//! header has the layout this was written against (version byte 4 and the owner's pid
//! at offset 4, as libfabric 1.15-1.17 write it); anything else is left alone.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::liveness::ProcessWatch;

/// How long a lock word must stay unchanged and taken before it is released.
const HELD_FOR: Duration = Duration::from_secs(1);
/// Pause between two samples of the lock words.
const SAMPLE_EVERY: Duration = Duration::from_millis(2);
/// How often the thread checks whether a watched peer has exited.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// The region header layout this knows: `version` byte, then `pid` at 4, lock at 24.
const REGION_VERSION: u8 = 4;
const PID_OFFSET: usize = 4;
const LOCK_OFFSET: usize = 24;
const HEADER_LEN: usize = 4096;
/// Where POSIX shared memory objects live.
const SHM_DIR: &str = "/dev/shm";

/// The values glibc stores in a free and in a taken spin lock, learnt by doing it.
fn spin_lock_values() -> (i32, i32) {
    let mut lock: libc::pthread_spinlock_t = 0;
    // SAFETY: lock is a valid, private pthread_spinlock_t; init, lock, unlock and
    // destroy are called in order on it from this one thread.
    unsafe {
        libc::pthread_spin_init(&mut lock, libc::PTHREAD_PROCESS_SHARED);
        let free = lock;
        libc::pthread_spin_lock(&mut lock);
        let taken = lock;
        libc::pthread_spin_unlock(&mut lock);
        libc::pthread_spin_destroy(&mut lock);
        (free, taken)
    }
}

/// Shared between the messenger and the rescue thread.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Local peers whose exit starts a check.
    watched: Mutex<Vec<ProcessWatch>>,
    /// Locks released so far.
    released: AtomicU64,
}

/// The rescue thread; stops when dropped.
pub(crate) struct LockRescue {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LockRescue {
    /// Starts the thread. `dir` is where region files are looked for.
    pub(crate) fn start(dir: &str) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let worker = Arc::clone(&shared);
        let dir = dir.to_string();
        let thread = std::thread::Builder::new()
            .name("steadfast-shm-rescue".into())
            .spawn(move || run(&worker, &dir))?;
        Ok(LockRescue {
            shared,
            thread: Some(thread),
        })
    }

    /// Starts the thread over the system's shared memory directory.
    pub(crate) fn start_system() -> std::io::Result<Self> {
        Self::start(SHM_DIR)
    }

    /// Checks the regions of `pid` and of this process once `pid` has exited.
    pub(crate) fn watch(&self, pid: u32) {
        let mut watched = self
            .shared
            .watched
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !watched.iter().any(|w| w.pid() == pid) {
            watched.push(ProcessWatch::new(pid));
        }
    }

    /// Locks released so far.
    pub(crate) fn released(&self) -> u64 {
        // Relaxed: a statistic; nothing else is read through it.
        self.shared.released.load(Ordering::Relaxed)
    }
}

impl Drop for LockRescue {
    fn drop(&mut self) {
        // Relaxed: the thread only needs to see the flag eventually; unpark wakes it.
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The thread: wait for exits, then check the regions they concern.
fn run(shared: &Shared, dir: &str) {
    let (free, taken) = spin_lock_values();
    if free == taken {
        return; // a lock implementation this cannot read
    }
    let own = std::process::id();
    // Relaxed: see Drop.
    while !shared.stop.load(Ordering::Relaxed) {
        let exited: Vec<u32> = {
            let mut watched = shared.watched.lock().unwrap_or_else(|e| e.into_inner());
            // One look per process: one that exits between two looks must not be
            // dropped from the list without its check.
            let mut exited = Vec::new();
            watched.retain(|w| {
                let gone = w.has_exited();
                if gone {
                    exited.push(w.pid());
                }
                !gone
            });
            exited
        };
        if !exited.is_empty() {
            let mut regions = Vec::new();
            for pid in exited.iter().copied().chain([own]) {
                regions.extend(Region::all_of(dir, pid));
            }
            for region in release_stuck(&regions, free, &shared.stop) {
                // Relaxed: a statistic.
                shared.released.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "steadfast-fabric: released the libfabric shm lock of {} (taken by a process that died; peers: {exited:?})",
                    region.path
                );
            }
        }
        std::thread::park_timeout(POLL_EVERY);
    }
}

/// Samples every region's lock for [`HELD_FOR`]; releases and returns those whose word
/// stayed the same and not `free` throughout.
fn release_stuck<'a>(regions: &'a [Region], free: i32, stop: &AtomicBool) -> Vec<&'a Region> {
    let first: Vec<i32> = regions.iter().map(Region::lock_word).collect();
    let mut stuck: Vec<bool> = first.iter().map(|&w| w != free).collect();
    let start = Instant::now();
    while start.elapsed() < HELD_FOR && stuck.contains(&true) {
        // Relaxed: see Drop.
        if stop.load(Ordering::Relaxed) {
            return Vec::new();
        }
        std::thread::sleep(SAMPLE_EVERY);
        for (i, region) in regions.iter().enumerate() {
            stuck[i] &= region.lock_word() == first[i];
        }
    }
    regions
        .iter()
        .zip(stuck)
        .filter(|&(_, s)| s)
        .map(|(region, _)| {
            region.release(free);
            region
        })
        .collect()
}

/// The first page of one shm region, mapped.
struct Region {
    path: String,
    base: *mut u8,
    _fd: OwnedFd,
}

impl Region {
    /// Every region file of `pid` in `dir` whose header has the known layout.
    fn all_of(dir: &str, pid: u32) -> Vec<Region> {
        let prefix = format!("{pid}:");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .filter_map(|e| Region::map(&e.path().to_string_lossy(), pid))
            .collect()
    }

    /// Maps the header of `path`; `None` unless it is a region of `pid` in the known
    /// layout.
    fn map(path: &str, pid: u32) -> Option<Region> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .ok()?;
        if file.metadata().ok()?.len() < HEADER_LEN as u64 {
            return None;
        }
        let fd = OwnedFd::from(file);
        // SAFETY: a fresh shared mapping of the first page of a file at least that
        // long; the kernel picks the address.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                HEADER_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let region = Region {
            path: path.to_string(),
            base: base.cast(),
            _fd: fd,
        };
        (region.version() == REGION_VERSION && region.owner() == pid as i32).then_some(region)
    }

    /// The 32-bit word at `offset` of the mapped page.
    fn word(&self, offset: usize) -> &AtomicI32 {
        // SAFETY: offset + 4 <= HEADER_LEN and both offsets used are 4-aligned in a
        // page-aligned mapping that lives as long as self; other processes write the
        // word concurrently, hence atomic access.
        unsafe { &*self.base.add(offset).cast::<AtomicI32>() }
    }

    fn version(&self) -> u8 {
        // SAFETY: byte 0 of the mapped page, which lives as long as self.
        unsafe { std::ptr::read_volatile(self.base) }
    }

    fn owner(&self) -> i32 {
        // Relaxed: written once when the region was created, before its name existed.
        self.word(PID_OFFSET).load(Ordering::Relaxed)
    }

    fn lock_word(&self) -> i32 {
        // Relaxed: only compared over time; nothing is read under the lock.
        self.word(LOCK_OFFSET).load(Ordering::Relaxed)
    }

    /// Stores the free value, as `pthread_spin_unlock` does.
    fn release(&self, free: i32) {
        // Release: what the dead holder wrote before dying is visible to the next
        // taker, as with a real unlock.
        self.word(LOCK_OFFSET).store(free, Ordering::Release);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: base is the HEADER_LEN mapping made in `map`, unmapped once here.
        unsafe { libc::munmap(self.base.cast(), HEADER_LEN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    /// A region file for `pid` in `dir` with its lock word set to `lock`.
    fn fake_region(dir: &std::path::Path, pid: u32, suffix: &str, lock: i32) -> String {
        let mut page = vec![0u8; HEADER_LEN];
        page[0] = REGION_VERSION;
        page[PID_OFFSET..PID_OFFSET + 4].copy_from_slice(&(pid as i32).to_ne_bytes());
        page[LOCK_OFFSET..LOCK_OFFSET + 4].copy_from_slice(&lock.to_ne_bytes());
        let path = dir.join(format!("{pid}:{suffix}"));
        std::fs::write(&path, page).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn lock_of(path: &str) -> i32 {
        let bytes = std::fs::read(path).unwrap();
        i32::from_ne_bytes(bytes[LOCK_OFFSET..LOCK_OFFSET + 4].try_into().unwrap())
    }

    /// A fresh directory standing in for /dev/shm.
    fn scratch_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("steadfast-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn sleeper() -> Child {
        Command::new("sleep").arg("60").spawn().unwrap()
    }

    #[test]
    fn a_lock_held_by_a_dead_peer_is_released_and_nothing_else() {
        let dir = scratch_dir("rescue");
        let (free, taken) = spin_lock_values();
        let mut victim = sleeper();
        let mut bystander = sleeper();
        let held = fake_region(&dir, victim.id(), "0:0", taken);
        let free_already = fake_region(&dir, victim.id(), "1:0", free);
        let wrong_layout = fake_region(&dir, victim.id(), "2:0", taken);
        let mut page = std::fs::read(&wrong_layout).unwrap();
        page[0] = REGION_VERSION + 1;
        std::fs::write(&wrong_layout, page).unwrap();
        let alive = fake_region(&dir, bystander.id(), "0:0", taken);

        let rescue = LockRescue::start(&dir.to_string_lossy()).unwrap();
        rescue.watch(victim.id());
        rescue.watch(bystander.id());
        std::thread::sleep(POLL_EVERY * 2);
        assert_eq!(lock_of(&held), taken, "released while its holder lived");
        victim.kill().unwrap();
        victim.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while lock_of(&held) != free {
            assert!(
                Instant::now() < deadline,
                "the dead holder's lock stayed taken"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(rescue.released(), 1);
        assert_eq!(lock_of(&free_already), free);
        assert_eq!(
            lock_of(&wrong_layout),
            taken,
            "an unknown layout was touched"
        );
        assert_eq!(lock_of(&alive), taken, "a live process's lock was touched");
        drop(rescue);
        bystander.kill().unwrap();
        bystander.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lock_that_changes_hands_is_left_alone() {
        let dir = scratch_dir("busy");
        let (free, taken) = spin_lock_values();
        let mut victim = sleeper();
        let busy = fake_region(&dir, victim.id(), "0:0", taken);
        let pid = victim.id();
        victim.kill().unwrap();
        victim.wait().unwrap();
        let region = Region::map(&busy, pid).expect("the fake region maps");
        // Live contention: the taken word changes while it is sampled.
        // Relaxed throughout: the flag only ends the loop, and the lock word is only
        // compared over time by the sampler, never used to order other memory.
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let contender = Region::map(&busy, pid).expect("the fake region maps");
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let word = taken + (n % 3) * (taken - free);
                    contender.word(LOCK_OFFSET).store(word, Ordering::Relaxed);
                    n += 1;
                    std::thread::sleep(Duration::from_micros(500));
                }
            });
            let never = AtomicBool::new(false);
            let released = release_stuck(std::slice::from_ref(&region), free, &never);
            stop.store(true, Ordering::Relaxed);
            assert!(released.is_empty(), "a lock changing hands was released");
        });
        assert_ne!(lock_of(&busy), free);
        drop(region);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
