//! `MPI_Comm_idup`: the dup as a request that each test advances without waiting, so
//! a member may start it, then send the messages another member waits for before that
//! one starts its own (MPICH's `comm_idup` test does).
//!
//! An intra-communicator's dup is `MPI_Comm_dup`'s three steps, each non-blocking:
//! the point-to-point half duplicated over the parent's collective half
//! (`Comm::idup_on_tag`, on a tag of the parent's collective sequence taken at the
//! call, so it never meets another collective's messages), then the collective half
//! duplicated over the new point-to-point half, then a barrier over the new halves
//! (`comm::collective_half` says why). Their messages use [`SPARE_TAG`], above the
//! collective sequence's 20 bits, on communicators nobody else uses yet.
//!
//! An inter-communicator's dup takes the same three steps over the union of both groups
//! (`InterComm::idup_on_tag`): its point-to-point half over the parent's collective
//! half, its collective half over the new point-to-point half (on [`SPARE_TAG`]), a
//! barrier over the new unions. It used to make its collective half as the blocking
//! `MPI_Comm_dup` does, by agreements over the new union (`comm::inter_half`), inside
//! the test that saw the first half done: that test then waited, holding the library's
//! lock, for every other member to reach the same test, and two threads of two
//! processes each waiting so for a dup the other's blocked thread had to advance hung
//! (MPICH's `threads/comm/idup_nb`: three threads, each `MPI_Wait` on the first of
//! three idups of its own inter-communicator). No step waits now.
//!
//! The handle is chosen, written to `newcomm`, and the attributes copied (their copy
//! callbacks run) at the call; the communicator is registered under that handle when a
//! completion call (`MPI_Wait`, `MPI_Test`...) completes the request (`settle`), and
//! before that the handle is not a communicator (`MPI_ERR_COMM`), as MPI allows.

use sf::comm::{DupRequest, InterComm, InterDupRequest};
use sf::Comm;

use crate::coll::{Coll, Ibarrier};
use crate::consts::*;
use crate::error::R;
use crate::request::{Op, Req};
use crate::state::{call, CommEntry, CommKind, Lib, Topology};
use crate::util::{new_request_out, out};

/// The tag of the steps over the new communicators.
const SPARE_TAG: u32 = 1 << 20;

/// Where a non-blocking dup is.
enum Stage {
    /// The point-to-point half, over the parent's collective half.
    P2p(DupRequest),
    /// The collective half, over the new point-to-point half.
    Coll {
        p2p: Comm,
        req: DupRequest,
    },
    /// The barrier over both halves.
    Barrier(Box<Ibarrier>),
    /// An inter-communicator's point-to-point half.
    InterP2p(InterDupRequest),
    /// Its collective half, over the new point-to-point half.
    InterColl {
        p2p: InterComm,
        req: InterDupRequest,
    },
    /// The barrier over both unions.
    InterBarrier {
        p2p: InterComm,
        coll: InterComm,
        barrier: Box<Ibarrier>,
    },
    /// Both halves, to be registered.
    Intra(Comm, Comm),
    Inter(InterComm, InterComm),
    /// Failed or registered.
    Over,
}

/// A non-blocking dup (`Op::Idup`).
pub(crate) struct Idup {
    /// The new communicator's handle (written to `newcomm` at the call).
    handle: Handle,
    errhandler: Handle,
    topology: Topology,
    stage: Stage,
}

impl Idup {
    /// Advances without waiting; `true` once both halves exist.
    pub(crate) fn test(&mut self) -> R<bool> {
        loop {
            let stage = std::mem::replace(&mut self.stage, Stage::Over);
            self.stage = match stage {
                Stage::P2p(mut req) => {
                    if !req.test()? {
                        self.stage = Stage::P2p(req);
                        return Ok(false);
                    }
                    let p2p = req.wait()?;
                    let req = p2p.idup_on_tag(SPARE_TAG)?;
                    Stage::Coll { p2p, req }
                }
                Stage::Coll { p2p, mut req } => {
                    if !req.test()? {
                        self.stage = Stage::Coll { p2p, req };
                        return Ok(false);
                    }
                    let coll = req.wait()?;
                    let (me, n) = (p2p.rank(), p2p.size());
                    Stage::Barrier(Box::new(Ibarrier::new(Coll::new(
                        p2p, coll, SPARE_TAG, me, n,
                    ))))
                }
                Stage::Barrier(mut b) => match b.test() {
                    Ok(false) => {
                        self.stage = Stage::Barrier(b);
                        return Ok(false);
                    }
                    // A revoke during the barrier comes from a member past it: every
                    // member has both halves (as `comm::collective_half`).
                    Ok(true) => halves(b),
                    Err(f) if f.class == MPI_ERR_REVOKED => halves(b),
                    Err(f) => return Err(f),
                },
                Stage::InterP2p(mut req) => {
                    if !req.test()? {
                        self.stage = Stage::InterP2p(req);
                        return Ok(false);
                    }
                    let p2p = req.wait()?;
                    let req = p2p.idup_on_tag(SPARE_TAG)?;
                    Stage::InterColl { p2p, req }
                }
                Stage::InterColl { p2p, mut req } => {
                    if !req.test()? {
                        self.stage = Stage::InterColl { p2p, req };
                        return Ok(false);
                    }
                    let coll = req.wait()?;
                    let (u, c) = (p2p.union().clone(), coll.union().clone());
                    let (me, n) = (u.rank(), u.size());
                    let barrier = Box::new(Ibarrier::new(Coll::new(u, c, SPARE_TAG, me, n)));
                    Stage::InterBarrier { p2p, coll, barrier }
                }
                Stage::InterBarrier {
                    p2p,
                    coll,
                    mut barrier,
                } => match barrier.test() {
                    Ok(false) => {
                        self.stage = Stage::InterBarrier { p2p, coll, barrier };
                        return Ok(false);
                    }
                    // As the intra-communicator's barrier.
                    Ok(true) => Stage::Inter(p2p, coll),
                    Err(f) if f.class == MPI_ERR_REVOKED => Stage::Inter(p2p, coll),
                    Err(f) => return Err(f),
                },
                done @ (Stage::Intra(..) | Stage::Inter(..)) => {
                    self.stage = done;
                    return Ok(true);
                }
                Stage::Over => return Ok(true),
            };
        }
    }

    /// Registers the new communicator under its handle once the request completed
    /// (`made`), or forgets it.
    pub(crate) fn settle(self, lib: &mut Lib, made: bool) {
        if !made {
            return self.forget(lib);
        }
        let entry = match self.stage {
            Stage::Intra(p2p, coll) => {
                if p2p.is_revoked() {
                    coll.revoke();
                }
                let mut e = CommEntry::new(CommKind::Intra { p2p, coll }, self.errhandler, "");
                e.set_topology(self.topology);
                e
            }
            Stage::Inter(p2p, coll) => {
                if p2p.is_revoked() {
                    coll.revoke();
                }
                CommEntry::new(CommKind::Inter { p2p, coll }, self.errhandler, "")
            }
            _ => return self.forget(lib),
        };
        lib.comms.insert(self.handle, entry);
    }

    /// The dup failed: the attributes copied at the call go (their delete callbacks do
    /// not run: the communicator never existed).
    fn forget(&self, lib: &mut Lib) {
        lib.attrs.forget(self.handle);
    }
}

fn halves(b: Box<Ibarrier>) -> Stage {
    let c = b.into_coll();
    Stage::Intra(c.p2p, c.coll)
}

crate::mpi_fn! {
    /// `MPI_Comm_idup` (see the module doc).
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: Handle, newcomm: *mut Handle, request: *mut Handle) {
        call(comm, |g| {
            // SAFETY: MPI's contract: `request` and `newcomm` are valid for writes.
            let slot = unsafe { new_request_out(request) }?;
            // SAFETY: as above.
            let new_slot = unsafe { out(newcomm) }?;
            let lib = g.lib()?;
            let e = lib.comm(comm)?;
            let (errhandler, topology) = (e.errhandler, e.topology());
            let stage = match &e.kind {
                CommKind::Intra { coll, .. } => {
                    let coll = coll.clone();
                    let tag = lib.coll_tag(comm)?;
                    Stage::P2p(coll.idup_on_tag(tag)?)
                }
                CommKind::Inter { coll, .. } => {
                    let coll = coll.clone();
                    let tag = lib.coll_tag(comm)?;
                    Stage::InterP2p(coll.idup_on_tag(tag)?)
                }
            };
            let handle = lib.new_handle();
            let idup = Idup {
                handle,
                errhandler,
                topology,
                stage,
            };
            let h = lib.add_request(Req::new(comm, Op::Idup(Box::new(idup))))?;
            crate::attr::copy_all(g, comm, handle)?;
            *slot = h;
            *new_slot = handle;
            Ok(())
        })
    }
}
