//! `MPI_Comm_free` of an intra-communicator without waiting for the other members.
//!
//! MPI's free marks the communicator for deallocation; Open MPI and MPICH return at
//! once, and programs free their communicators in different orders at different ranks
//! (MPICH's `comm_idup_overlap`), which a free that waits for the other members turns
//! into a deadlock. So the call starts one agreement over the communicator on whether
//! it is whole (not revoked here; `MPIX_Comm_iagree`, which never waits on a dead
//! member) and returns; the [`Closing`] goes with the requests freed while active
//! (`Lib::detached`), progressed by the completion calls, each later `MPI_Comm_free`
//! and `MPI_Finalize`. When every member has contributed, every member has stopped
//! using the communicator (MPI requires its operations complete before the free), so
//! both runtime halves are freed without a closing barrier
//! (`Comm::free_agreed`): their contexts are released when the agreement found the
//! communicator whole with no failed member, retired otherwise (then both halves are
//! revoked first, as a free after a failure did before).

use sf::comm::AgreeRequest;
use sf::Comm;

/// An intra-communicator being freed.
pub(crate) struct Closing {
    /// Until it is decided (it holds a handle to the point-to-point half, which
    /// `Comm::free_agreed` refuses to free while another handle exists).
    agree: Option<AgreeRequest>,
    halves: Option<(Comm, Comm)>,
}

impl Closing {
    /// Starts the closing agreement of `(p2p, coll)`.
    pub(crate) fn start(p2p: Comm, coll: Comm) -> Closing {
        let whole = !p2p.is_revoked() && !coll.is_revoked();
        Closing {
            agree: Some(p2p.iagree(u64::from(whole))),
            halves: Some((p2p, coll)),
        }
    }

    /// Progresses; `true` once both halves are freed.
    pub(crate) fn test(&mut self) -> bool {
        let Some(agree) = &mut self.agree else {
            return true;
        };
        let clean = match agree.test() {
            Ok(None) => return false,
            Ok(Some(a)) => a.value == 1 && a.failed.is_empty(),
            Err(e) => {
                log::debug!("MPI_Comm_free: the closing agreement: {e}");
                false
            }
        };
        self.agree = None;
        let Some((p2p, coll)) = self.halves.take() else {
            return true;
        };
        if !clean {
            p2p.revoke();
            coll.revoke();
        }
        // A runtime communicator still used by a pending request stays until the
        // request goes (MPI: freeing marks for deallocation).
        for c in [coll, p2p] {
            if let Err(e) = c.free_agreed(clean) {
                log::debug!("MPI_Comm_free: {e}");
            }
        }
        true
    }
}
