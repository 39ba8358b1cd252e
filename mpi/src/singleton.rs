//! The bootstrap of a program started without a launcher (`./prog`): a job of one
//! process, as MPI's singleton `MPI_Init` gives (Open MPI and MPICH do the same).

use std::collections::HashMap;
use std::time::Duration;

use sf::bootstrap::{Bootstrap, BootstrapError, FailureEvent};

/// A job of one: this process is rank 0 of 1; what it publishes it reads back.
#[derive(Default)]
pub(crate) struct Singleton {
    published: HashMap<String, Vec<u8>>,
}

impl Bootstrap for Singleton {
    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        self.published.insert(key.to_string(), value.to_vec());
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        match (rank, self.published.get(key)) {
            (0, Some(v)) => Ok(v.clone()),
            _ => Err(BootstrapError::Refused(format!(
                "a job of one process has no key {key:?} of rank {rank}"
            ))),
        }
    }

    /// What this process published (the ports and names of `ports.rs` and
    /// `names.rs` read it), without waiting; nothing of another rank.
    fn lookup(&mut self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, BootstrapError> {
        Ok(self.published.get(key).filter(|_| rank == 0).cloned())
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    fn failures(&mut self, _wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        // Nobody else can fail; the engine asks without waiting.
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_of_one_reads_back_what_it_published() {
        let mut s = Singleton::default();
        assert_eq!((s.rank(), s.size()), (0, 1));
        s.put("k", b"v").unwrap();
        s.fence().unwrap();
        assert_eq!(s.get(0, "k").unwrap(), b"v");
        assert!(s.get(0, "other").is_err());
        assert!(s.get(1, "k").is_err());
        assert_eq!(s.lookup(0, "k").unwrap().as_deref(), Some(&b"v"[..]));
        assert_eq!(s.lookup(0, "other").unwrap(), None);
        assert_eq!(s.lookup(1, "k").unwrap(), None);
        assert!(s.failures(Duration::ZERO).unwrap().is_empty());
    }
}
