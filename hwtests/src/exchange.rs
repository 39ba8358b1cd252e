//! How the ranks of a test swap small values (endpoint addresses, node ids): the
//! launcher's bootstrap when launched, or a table shared by two threads when run alone
//! (the fabric tests then run between two endpoints of this one process).

use std::collections::HashMap;
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

use steadfast::bootstrap::Bootstrap;

/// Publish / fetch / barrier among the ranks of a test.
pub trait Exchange {
    /// This rank.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Publishes `value` under `key` for this rank.
    ///
    /// # Errors
    /// The launcher's error, as text.
    fn publish(&mut self, key: &str, value: &[u8]) -> Result<(), String>;
    /// What `rank` published under `key`, waiting for it.
    ///
    /// # Errors
    /// The launcher's error (a dead rank), or a timeout.
    fn fetch(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, String>;
    /// Waits for every rank.
    ///
    /// # Errors
    /// The launcher's error.
    fn barrier(&mut self) -> Result<(), String>;
}

/// `key` in the characters every launcher accepts (PMI-1 takes `[A-Za-z0-9_-]`).
pub fn portable_key(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Exchange for Box<dyn Bootstrap> {
    fn rank(&self) -> u32 {
        (**self).rank()
    }
    fn size(&self) -> u32 {
        (**self).size()
    }
    fn publish(&mut self, key: &str, value: &[u8]) -> Result<(), String> {
        self.put(&portable_key(key), value)
            .map_err(|e| format!("bootstrap put {key}: {e}"))
    }
    fn fetch(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, String> {
        self.get(rank, &portable_key(key))
            .map_err(|e| format!("bootstrap get {key} of rank {rank}: {e}"))
    }
    fn barrier(&mut self) -> Result<(), String> {
        self.fence().map_err(|e| format!("bootstrap fence: {e}"))
    }
}

type Table = (Mutex<HashMap<(u32, String), Vec<u8>>>, Condvar);

/// The exchange of `size` threads of one process.
pub struct InProcess {
    rank: u32,
    size: u32,
    table: Arc<Table>,
    barrier: Arc<Barrier>,
    timeout: Duration,
}

impl InProcess {
    /// One exchange per rank, for `size` threads; a fetch gives up after `timeout`.
    pub fn group(size: u32, timeout: Duration) -> Vec<InProcess> {
        let table: Arc<Table> = Arc::default();
        let barrier = Arc::new(Barrier::new(size as usize));
        (0..size)
            .map(|rank| InProcess {
                rank,
                size,
                table: Arc::clone(&table),
                barrier: Arc::clone(&barrier),
                timeout,
            })
            .collect()
    }
}

impl Exchange for InProcess {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn publish(&mut self, key: &str, value: &[u8]) -> Result<(), String> {
        let (map, cv) = &*self.table;
        map.lock()
            .map_err(|_| "exchange table poisoned".to_string())?
            .insert((self.rank, key.to_string()), value.to_vec());
        cv.notify_all();
        Ok(())
    }
    fn fetch(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, String> {
        let (map, cv) = &*self.table;
        let deadline = Instant::now() + self.timeout;
        let mut guard = map
            .lock()
            .map_err(|_| "exchange table poisoned".to_string())?;
        loop {
            if let Some(v) = guard.get(&(rank, key.to_string())) {
                return Ok(v.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "rank {rank} published no {key} within {:?}",
                    self.timeout
                ));
            }
            guard = cv
                .wait_timeout(guard, left)
                .map_err(|_| "exchange table poisoned".to_string())?
                .0;
        }
    }
    fn barrier(&mut self) -> Result<(), String> {
        self.barrier.wait();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_pmi_safe() {
        assert_eq!(
            portable_key("hw.fabric.tcp;ofi_rxm"),
            "hw_fabric_tcp_ofi_rxm"
        );
    }

    #[test]
    fn in_process_ranks_see_each_others_values_and_missing_ones_time_out() {
        let mut g = InProcess::group(2, Duration::from_millis(50));
        let mut b = g.pop().unwrap();
        let mut a = g.pop().unwrap();
        let t = std::thread::spawn(move || {
            b.publish("k", b"from 1").unwrap();
            b.fetch(0, "k").unwrap()
        });
        a.publish("k", b"from 0").unwrap();
        assert_eq!(a.fetch(1, "k").unwrap(), b"from 1");
        assert_eq!(t.join().unwrap(), b"from 0");
        let e = a.fetch(1, "never").unwrap_err();
        assert!(e.contains("never"), "{e}");
    }
}
