//! A communicator's revoked flag: the first flip is the broadcast's dedup.

use super::sync::{AtomicBool, Ordering};

/// Set once, never cleared; any thread may revoke or check.
#[derive(Debug, Default)]
pub struct RevokeFlag {
    revoked: AtomicBool,
}

impl RevokeFlag {
    /// A flag not yet revoked.
    pub fn new() -> Self {
        RevokeFlag {
            revoked: AtomicBool::new(false),
        }
    }

    /// Revokes; true only for the one call that flipped the flag (that caller forwards
    /// the revoke, everyone else drops it).
    pub fn revoke(&self) -> bool {
        // ORDERING: AcqRel swap. Release publishes what the revoker did before (the
        // pending operations it failed) to threads that see the flag with Acquire in
        // `is_revoked`; the swap itself makes the first flip unique.
        !self.revoked.swap(true, Ordering::AcqRel)
    }

    /// Whether revoked; operations check this before blocking and while waiting.
    pub fn is_revoked(&self) -> bool {
        // ORDERING: Acquire; pairs with the Release side of the swap in `revoke`.
        self.revoked.load(Ordering::Acquire)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn exactly_one_revoker_forwards() {
        loom::model(|| {
            let f = Arc::new(RevokeFlag::new());
            let t: Vec<_> = (0..2)
                .map(|_| {
                    let f = f.clone();
                    loom::thread::spawn(move || f.revoke())
                })
                .collect();
            let mine = f.revoke();
            let firsts = t.into_iter().map(|h| h.join().unwrap() as u32).sum::<u32>() + mine as u32;
            assert_eq!(firsts, 1);
            assert!(f.is_revoked());
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn first_flip_only() {
        let f = RevokeFlag::new();
        assert!(!f.is_revoked());
        assert!(f.revoke());
        assert!(!f.revoke());
        assert!(f.is_revoked());
    }
}
