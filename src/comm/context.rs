//! Communicator contexts: agreed among the members when a communicator is created,
//! released when it is freed ([`Comm::free`]).
//!
//! Each process keeps the contexts it uses in a [`ContextAllocator`] (16 bits, 0 and 1
//! reserved for the detector and the world). A creation ANDs the members' proposals of
//! free ids and every member takes the lowest id free at all of them, so the id is the
//! same everywhere and unused everywhere (`docs/matching.md`, section 3). The AND travels
//! in one of these ways:
//!
//! - [`Comm::dup`]: one `allreduce(And)` of the proposal's words over the parent (a
//!   second one only when a window of 4096 ids has no common free id);
//! - [`Comm::split`]: one more round of the pairwise exchange it makes for (color, key),
//!   among the same ranks (those not acknowledged failed);
//! - [`Comm::create_group`]: the same pairwise exchange among the group's members, on
//!   the creation's key (`keyed.rs`), since other threads may be creating over other
//!   groups of the same parent at the same time;
//! - [`Comm::shrink`] and inter-communicators: the parent cannot carry a collective (it
//!   is broken, or the two groups have none in common), so the new communicator is
//!   registered first with no context and its own agreement (ERA over control messages,
//!   which need no context, and which survives failures) ANDs the proposal one word at a
//!   time: the complete flag, then mask words until one is not zero (usually two
//!   agreements).
//!
//! On free, an id is released only when the communicator was freed cleanly (not revoked,
//! its closing barrier succeeded): then every member has matched every message (MPI 4.1
//! §6.4.3 makes that the program's duty before `MPI_Comm_free`), and none can arrive
//! later for the next holder of the id. A revoked communicator may still have messages
//! in flight, so its id is retired for the life of the process instead of reused.

use steadfast_agreement::CommId;
use steadfast_matching::{ContextError, Decision, OpKey, Proposal};

use super::{Comm, CommError, ReduceOp};
use crate::world::WORLD_COMM;

/// The context of a communicator registered before its context is agreed (the
/// detector's, which carries no user message): nothing is sent on it.
pub(super) const UNAGREED: u64 = 0;

/// A limit on the windows one agreement on a context moves through (one per window of
/// 4096 ids with nothing in common). Rounds retried in the same window, while another
/// creation holds the mask here or at another member, do not count: that creation
/// finishes (or fails and gives the mask up) whatever this one does, and a thread
/// that lost its core while holding it could make any count run out (8 threads
/// creating at once on a busy 2-core machine did).
pub(super) const MAX_ROUNDS: u32 = 1 << 10;

/// Where the members AND their proposals.
pub(super) enum Over<'a> {
    /// An `allreduce` over the parent, which every member of the new communicator is in.
    Parent(&'a Comm),
    /// A pairwise exchange among these ranks of the parent (a split leaves out the
    /// ranks acknowledged failed, which an allreduce could not).
    Live(&'a Comm, &'a [u32]),
    /// A keyed exchange among these ranks of the parent, under this creation key
    /// (`create_group`: creations with other keys may run at once on the parent).
    Keyed(&'a Comm, &'a [u32], u64),
    /// Agreements over the new communicator itself, already registered.
    Own(&'a Comm),
}

/// The key of a creation: the parent's context and its creation number, the same at
/// every member.
pub(super) fn op_key(parent_ctx: u64, child: u64) -> OpKey {
    (parent_ctx << 32) | (child & 0xffff_ffff)
}

/// Agrees on a context for creation `op` among the members (see the module doc).
///
/// # Errors
/// [`CommError::ContextsExhausted`] when no id is free at every member; the errors of
/// the collective carrying the AND (`ProcFailed`, `Revoked`, `Excluded`).
pub(super) fn agree_context(over: Over<'_>, op: OpKey) -> Result<u64, CommError> {
    let comm = match over {
        Over::Parent(c) | Over::Live(c, _) | Over::Keyed(c, ..) | Over::Own(c) => c,
    };
    if let Some(ctx) = solo_context(&over)? {
        return Ok(ctx);
    }
    let mut window = 0;
    let mut windows_tried = 0;
    while windows_tried < MAX_ROUNDS {
        let mine = comm.engine.lock().contexts_mut().propose(op, window);
        let words = match over {
            Over::Parent(parent) => and_over_parent(parent, &mine),
            Over::Live(parent, live) => and_over_live(parent, live, &mine),
            Over::Keyed(parent, live, key) => and_over_keyed(parent, live, key, &mine),
            Over::Own(own) => and_over_agreements(own, &mine),
        };
        let words = match words {
            Ok(w) => w,
            Err(e) => {
                comm.engine.lock().contexts_mut().abandon(op);
                return Err(e);
            }
        };
        let agreed = Proposal::from_words(&words).map_err(|e| bad_round(comm, op, e))?;
        let decision = comm.engine.lock().contexts_mut().finish(op, &agreed);
        match decision {
            Ok(Decision::Allocated(id)) => {
                log::debug!("context {} agreed for creation {op:#x}", id.0);
                return Ok(u64::from(id.0));
            }
            Ok(Decision::Retry { window: w }) => {
                if w == window {
                    // Another creation holds the mask: a non-blocking dup nobody tests
                    // now is advanced here, a blocking one gets the core.
                    super::idup::advance_others(None);
                    std::thread::yield_now();
                } else {
                    windows_tried += 1;
                }
                window = w;
            }
            Err(ContextError::ContextsExhausted { capacity, live }) => {
                return Err(CommError::ContextsExhausted { capacity, live })
            }
            Err(e) => return Err(bad_round(comm, op, e)),
        }
    }
    comm.engine.lock().contexts_mut().abandon(op);
    Err(CommError::Protocol {
        rank: comm.rank(),
        problem: "the context-id agreement did not settle",
    })
}

/// The context of a communicator of this process alone (an `MPI_COMM_SELF`, a dup of
/// it, a split leaving one member): taken here with no round, since nobody else needs
/// to agree, and without waiting for the mask (`ContextAllocator::take_solo`: the
/// highest free id outside the window another creation offered). Waiting for the mask
/// deadlocked: a thread's dup of `MPI_COMM_SELF` waited here behind another thread's
/// dup of a shared communicator, which waited for a process whose own `MPI_COMM_SELF`
/// dup waited behind a dup the first process had not started (MPICH's
/// `comm_dup_deadlock`). Ids agreed with others come from the bottom of the space, and
/// so did those of the communicators a restarted rank's earlier incarnation was in:
/// the lowest free id here could be one of them, which a later
/// [`World::rejoin`](crate::World::rejoin) of such a communicator then could not claim
/// (a rejoined `MPI_COMM_WORLD`'s collectives half had the id the restarted process's
/// `MPI_COMM_SELF` took). `None` for any other creation.
fn solo_context(over: &Over<'_>) -> Result<Option<u64>, CommError> {
    let (comm, solo) = match over {
        Over::Parent(c) | Over::Own(c) => (c, c.size() == 1),
        Over::Live(c, live) | Over::Keyed(c, live, _) => (c, live.len() == 1),
    };
    if !solo {
        return Ok(None);
    }
    let mut e = comm.engine.lock();
    let id = e.contexts_mut().take_solo().map_err(|err| match err {
        ContextError::ContextsExhausted { capacity, live } => {
            CommError::ContextsExhausted { capacity, live }
        }
        other => CommError::InvalidArgument(format!("a context of this process alone: {other}")),
    })?;
    log::debug!(
        "context {} taken for a communicator of this process alone",
        id.0
    );
    Ok(Some(u64::from(id.0)))
}

/// An allocator error other than exhaustion: the members' rounds got out of step.
fn bad_round(comm: &Comm, op: OpKey, e: ContextError) -> CommError {
    log::warn!("context agreement of creation {op:#x}: {e}");
    comm.engine.lock().contexts_mut().abandon(op);
    CommError::Protocol {
        rank: comm.rank(),
        problem: "the members' context proposals do not combine",
    }
}

fn and_over_parent(parent: &Comm, mine: &Proposal) -> Result<Vec<u64>, CommError> {
    let mut words = mine.to_words();
    parent.allreduce(&mut words, ReduceOp::And)?;
    Ok(words)
}

/// Tag of the proposals exchanged by [`Over::Live`] (the top application tag: the
/// collectives use the two below it).
const EXCHANGE_TAG: u32 = crate::world::tags::MAX_TAG;

fn and_over_live(parent: &Comm, live: &[u32], mine: &Proposal) -> Result<Vec<u64>, CommError> {
    let mut words = mine.to_words();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    parent.exchange_live(
        live,
        EXCHANGE_TAG,
        &bytes,
        "a context proposal of the wrong length",
        |_, theirs| and_into(&mut words, theirs),
    )?;
    Ok(words)
}

/// ANDs a member's proposal, as bytes, into `words`.
fn and_into(words: &mut [u64], theirs: &[u8]) {
    for (w, c) in words.iter_mut().zip(theirs.chunks_exact(8)) {
        *w &= u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
}

/// The step of a context round in a creation's key (`keyed.rs`); the attempt exchange
/// of `create_group` is step 0.
pub(super) const KEYED_PROPOSAL: u64 = 1;

fn and_over_keyed(
    parent: &Comm,
    live: &[u32],
    key: u64,
    mine: &Proposal,
) -> Result<Vec<u64>, CommError> {
    let mut words = mine.to_words();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    parent.exchange_keyed(
        live,
        (key, KEYED_PROPOSAL),
        &bytes,
        "a context proposal of the wrong length",
        |_, theirs| and_into(&mut words, theirs),
    )?;
    Ok(words)
}

/// The AND of the members' proposals through agreements: the complete flag, then mask
/// words in order until one has a common free id (the words after it stay zero: the
/// allocator takes the lowest common id, which is in that word). The window needs no
/// agreement: every member derives it from the same earlier decisions.
fn and_over_agreements(own: &Comm, mine: &Proposal) -> Result<Vec<u64>, CommError> {
    let words = mine.to_words();
    let mut agreed = vec![0; words.len()];
    agreed[0] = words[0];
    agreed[1] = own.agree_full(words[1])?.value;
    if agreed[1] & 1 == 1 {
        for k in 2..words.len() {
            agreed[k] = own.agree_full(words[k])?.value;
            if agreed[k] != 0 {
                break;
            }
        }
    }
    Ok(agreed)
}

impl Comm {
    /// Frees the communicator (`MPI_Comm_free`): collective over its members, who must
    /// have completed every operation on it. A closing barrier, then the communicator's
    /// state and its context are released here; a later communicator may get the same
    /// context. A revoked communicator (or one whose closing barrier fails: a member
    /// died) is freed too, but its context is retired, never reused by this process,
    /// since messages sent on it may still be in flight.
    ///
    /// ```no_run
    /// # fn f(world: &steadfast::World) -> Result<(), steadfast::CommError> {
    /// let dup = world.comm().dup()?;
    /// dup.barrier()?;
    /// dup.free()?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for the world communicator, or when other handles to it exist
    /// (clones, requests, windows, an inter-communicator over it): drop them first;
    /// nothing is freed then. `Excluded`.
    pub fn free(self) -> Result<(), CommError> {
        self.check_freeable()?;
        let clean = if self.is_revoked() {
            false
        } else {
            match self.barrier() {
                Ok(()) => true,
                Err(CommError::Excluded) => return Err(CommError::Excluded),
                Err(e) => {
                    log::info!("closing barrier of communicator {:#x}: {e}", self.id.0);
                    false
                }
            }
        };
        release(&self, self.id, clean);
        Ok(())
    }
}

impl Comm {
    /// Frees the communicator as [`free`](Self::free) does, without its closing
    /// barrier: for a caller whose members have already agreed, after each stopped
    /// using it, on whether it is whole (the C library's non-blocking `MPI_Comm_free`
    /// closes with one [`iagree`](Self::iagree)). With `clean` (the agreement found
    /// every member done and none failed) its context is released for reuse, else
    /// retired; a revoked communicator's is always retired. Releasing it while a
    /// member may still send on it would let that message reach the next communicator
    /// given the context.
    ///
    /// # Errors
    /// As [`free`](Self::free): `InvalidArgument` for the world communicator or while
    /// other handles exist.
    pub fn free_agreed(self, clean: bool) -> Result<(), CommError> {
        self.check_freeable()?;
        let clean = clean && !self.is_revoked();
        release(&self, self.id, clean);
        Ok(())
    }
}

impl Comm {
    /// Refuses to free the world communicator, or one with other handles.
    fn check_freeable(&self) -> Result<(), CommError> {
        if self.id == WORLD_COMM {
            return Err(CommError::InvalidArgument(
                "the world communicator cannot be freed".into(),
            ));
        }
        let others = self.other_handles();
        if others > 0 {
            return Err(CommError::InvalidArgument(format!(
                "communicator {:#x} still has {others} other handle(s) (clones, requests, \
                 windows or an inter-communicator): drop them before freeing it",
                self.id.0
            )));
        }
        Ok(())
    }
}

/// Forgets `comm` here after its closing barrier (`clean` if it succeeded) when `comm` is
/// its only handle (a window's own communicator); otherwise leaves it registered.
pub(super) fn release_sole_handle(comm: &Comm, clean: bool) {
    if comm.other_handles() == 0 {
        release(comm, comm.id, clean);
    }
}

/// Forgets communicator `id` here and releases (or retires) its context.
pub(super) fn release(comm: &Comm, id: CommId, clean: bool) {
    let mut e = comm.engine.lock();
    let ctx = e.comm(id).context();
    let dropped = e.remove_comm(id, ctx, !clean);
    if dropped > 0 {
        log::warn!(
            "communicator {:#x} freed with {dropped} unreceived message(s); dropped",
            id.0
        );
    }
    if ctx == UNAGREED {
        return;
    }
    if clean {
        if let Err(err) = e.contexts_mut().release((ctx as u32).into()) {
            log::warn!("context {ctx} of communicator {:#x}: {err}", id.0);
        }
    } else {
        log::info!(
            "context {ctx} of communicator {:#x} retired (revoked or not closed cleanly: \
             messages may still be in flight)",
            id.0
        );
    }
}

/// Agrees on the context of `comm`, registered with [`UNAGREED`], over its own
/// agreement, and sets it; on failure `comm` is forgotten here.
///
/// # Errors
/// As [`agree_context`].
pub(super) fn set_agreed_context(comm: &Comm, op: OpKey) -> Result<(), CommError> {
    match agree_context(Over::Own(comm), op) {
        Ok(ctx) => {
            comm.engine.lock().set_comm_context(comm.id, ctx);
            Ok(())
        }
        Err(e) => {
            release(comm, comm.id, false);
            Err(e)
        }
    }
}
