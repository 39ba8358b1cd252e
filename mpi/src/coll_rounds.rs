//! The message rounds of the tree collectives over borrowed buffers: the program's own
//! buffers, and a scratch buffer on the stack up to [`SMALL`] bytes, so
//! `MPI_Barrier` and a small `MPI_Allreduce`, `MPI_Reduce` or `MPI_Bcast` allocate
//! nothing. [`Rounds`] names
//! the communicator by its handle and reaches its runtime communicators in the table
//! when it posts a round or looks at failures, instead of holding clones (two
//! reference counts up and down per call were a tenth of a small allreduce).
//! [`Rounds::post_wait`] posts one round's sends and its receive at once and waits for
//! them as `Coll::exchange` does (revocation and failures looked at every few polls).

use sf::comm::{GiveUpClock, RecvRequest, SendRequest};
use sf::CommError;

use crate::coll::{Coll, INTERRUPT_POLLS};
use crate::consts::*;
use crate::error::{Fail, R};
use crate::op::Reduction;
use crate::state::Guard;

/// Messages up to this size take a collective's scratch buffer on the stack.
pub(crate) const SMALL: usize = 256;

/// Most sends one round of a broadcast posts: a binomial tree's children, one per
/// bit of a rank.
const MAX_SENDS: usize = 32;

/// One tree collective call: its communicator, tag and place. The tree spans `n`
/// consecutive ranks of the communicator's collective twin from `base` (0: all of an
/// intra-communicator; one group of an inter-communicator in the union underneath,
/// `coll_inter`); `me` and the ranks of the rounds count from `base`.
pub(crate) struct Rounds {
    comm: Handle,
    pub tag: u32,
    pub me: u32,
    pub n: u32,
    base: u32,
    /// When a failure seen while waiting ends the call.
    clock: GiveUpClock,
}

/// A collective's scratch space for one message: on the stack up to [`SMALL`] bytes.
pub(crate) struct Scratch {
    small: [u8; SMALL],
    big: Vec<u8>,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            small: [0; SMALL],
            big: Vec::new(),
        }
    }

    /// `len` bytes of scratch (their content unspecified).
    pub fn get(&mut self, len: usize) -> &mut [u8] {
        if len <= SMALL {
            &mut self.small[..len]
        } else {
            self.big.resize(len, 0);
            &mut self.big[..]
        }
    }
}

impl Rounds {
    /// Starts a call of `phases` phases on intra-communicator `comm` (as
    /// `Coll::start_phases`: all its tags are taken now).
    pub fn start(g: &mut Guard, comm: Handle, phases: u32) -> R<Rounds> {
        let lib = g.lib()?;
        lib.comm(comm)?.intra()?;
        let tag = lib.coll_tag(comm)?;
        for _ in 1..phases {
            lib.coll_tag(comm)?;
        }
        let e = lib.comm(comm)?;
        let (me, n) = (e.rank, e.size);
        let clock = GiveUpClock::start(e.halves().1.any_failed());
        Ok(Rounds {
            comm,
            tag,
            me,
            n,
            base: 0,
            clock,
        })
    }

    /// The rounds of a call started as `c` on `comm`, at its current phase.
    pub fn of(c: &Coll, comm: Handle) -> Rounds {
        Rounds {
            comm,
            tag: c.tag,
            me: c.me,
            n: c.n,
            base: 0,
            clock: c.clock.clone(),
        }
    }

    /// Rounds with tag `tag` among the `n` ranks of `comm`'s collective twin from
    /// `base`, this process being the `me`th of them (an inter-communicator's group in
    /// the union underneath), on the call's `clock`.
    pub fn in_group(
        comm: Handle,
        tag: u32,
        base: u32,
        me: u32,
        n: u32,
        clock: GiveUpClock,
    ) -> Rounds {
        Rounds {
            comm,
            tag,
            me,
            n,
            base,
            clock,
        }
    }

    /// The tag of the call's next phase.
    fn next_phase(&mut self) {
        self.tag = (self.tag + 1) & 0xf_ffff;
    }

    /// Comm rank of relative rank `v` in a tree rooted at `root`.
    fn abs(&self, v: u32, root: u32) -> u32 {
        (v + root) % self.n
    }

    /// As `Coll::interrupted`, on the communicators in the table (gone: the program
    /// freed it meanwhile from another thread, an error).
    fn interrupted(&self, g: &mut Guard) -> R<Option<Fail>> {
        let (p2p, coll) = g.lib()?.comm(self.comm)?.halves();
        if p2p.is_revoked() {
            coll.revoke();
            return Ok(Some(CommError::Revoked.into()));
        }
        if coll.any_failed() && self.clock.expired() {
            let ranks = coll.failed_ranks();
            return Ok(Some(CommError::ProcFailed { ranks }.into()));
        }
        Ok(None)
    }

    /// Sends each of `sends` and receives exactly `recv`'s length from its rank, all
    /// posted at once (the receive first) on the caller's buffers, then waits for
    /// them all; nothing is allocated. A message of another length is
    /// `MPI_ERR_TRUNCATE` (the ranks passed different counts or types). `S` bounds the
    /// sends (1 but for a broadcast).
    pub(crate) fn post_wait<const S: usize>(
        &self,
        g: &mut Guard,
        sends: &[(u32, &[u8])],
        recv: Option<(u32, &mut [u8])>,
    ) -> R<()> {
        if sends.len() > S {
            return Err(Fail::new(
                MPI_ERR_INTERN,
                "more sends in a round than planned",
            ));
        }
        let (_, coll) = g.lib()?.comm(self.comm)?.halves();
        let base = self.base;
        let mut rreqs: [Option<PendingRecv<'_>>; 1] = [match recv {
            Some((src, buf)) => {
                let len = buf.len();
                // SAFETY: the request borrows `buf`; it is completed or dropped (which
                // cancels it) before this function returns, never leaked.
                let req = unsafe { coll.irecv(Some(base + src), Some(self.tag), buf) }?;
                Some(PendingRecv { req, src, len })
            }
            None => None,
        }];
        let mut sreqs: [Option<SendRequest<'_>>; S] = std::array::from_fn(|_| None);
        for (slot, &(dest, data)) in sreqs.iter_mut().zip(sends) {
            // SAFETY: as above, for `data`.
            *slot = Some(unsafe { coll.isend(base + dest, self.tag, data) }?);
        }
        let mut spin = crate::util::spin_wait();
        let mut polls: u32 = 0;
        loop {
            g.lib()?;
            let pending = test_once(&mut sreqs, &mut rreqs)?;
            if !pending {
                return Ok(());
            }
            // As in `exchange`: not at every poll.
            polls = polls.wrapping_add(1);
            if polls % INTERRUPT_POLLS == 0 {
                if let Some(f) = self.interrupted(g)? {
                    return Err(f);
                }
            }
            g.relax(&mut spin);
        }
    }

    /// Dissemination barrier, with empty messages: in round k every rank sends to
    /// rank + 2^k and receives from rank - 2^k (as `Ibarrier`).
    pub(crate) fn barrier(&self, g: &mut Guard) -> R<()> {
        let mut mask = 1u32;
        while mask < self.n {
            let to = (self.me + mask) % self.n;
            let from = (self.me + self.n - mask) % self.n;
            self.post_wait::<1>(g, &[(to, &[])], Some((from, &mut [])))?;
            mask <<= 1;
        }
        Ok(())
    }

    /// Binomial broadcast of `data` (significant at `root`) into `data`.
    pub(crate) fn bcast(&self, g: &mut Guard, data: &mut [u8], root: u32) -> R<()> {
        let vr = (self.me + self.n - root) % self.n;
        let mut mask = 1u32;
        while mask < self.n {
            if vr & mask != 0 {
                let parent = self.abs(vr - mask, root);
                self.post_wait::<1>(g, &[], Some((parent, &mut *data)))?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        let mut sends: [(u32, &[u8]); MAX_SENDS] = [(0, &[]); MAX_SENDS];
        let mut k = 0;
        while mask > 0 {
            if vr + mask < self.n {
                sends[k] = (self.abs(vr + mask, root), &*data);
                k += 1;
            }
            mask >>= 1;
        }
        self.post_wait::<MAX_SENDS>(g, &sends[..k], None)
    }

    /// Recursive-doubling allreduce of `acc` (every rank ends with the result), `tmp`
    /// as long as `acc` for the partner's value: in round k each rank exchanges its
    /// partial result with the rank whose number differs in bit k, so `log2(n)`
    /// message latencies instead of the `2 log2(n)` of a reduction and a broadcast.
    /// When `n` is not a power of two, the first `2 * (n - p)` ranks (`p` the largest
    /// power of two below `n`) pair up first: each even one hands its value to the odd
    /// one above it, which takes part for both and returns the result at the end (the
    /// first phase's tag serves the rounds, the second's the return). The rounds' ranks
    /// are in the real ranks' order and each holds the reduction of consecutive real
    /// ranks, so combining the partner's value on the side of its rank keeps rank
    /// order (MPI 4.1 §6.9.5, for non-commutative operations). Two partial results are
    /// always combined as `lower op higher` evaluated into the lower one's buffer, so
    /// both partners compute the same expression and every rank ends with the same
    /// bits, even for floating point.
    pub(crate) fn allreduce(
        &mut self,
        g: &mut Guard,
        acc: &mut [u8],
        tmp: &mut [u8],
        op: &Reduction,
    ) -> R<()> {
        let n = self.n;
        let me = self.me;
        let p = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let paired = 2 * (n - p);
        // This rank's number among the `p` taking part in the rounds, and back.
        let virt = if me < paired {
            if me % 2 == 0 {
                self.post_wait::<1>(g, &[(me + 1, &*acc)], None)?;
                None
            } else {
                self.post_wait::<1>(g, &[], Some((me - 1, &mut *tmp)))?;
                combine(g, acc, tmp, op)?;
                Some(me / 2)
            }
        } else {
            Some(me - paired / 2)
        };
        let real = |v: u32| {
            if v < paired / 2 {
                2 * v + 1
            } else {
                v + paired / 2
            }
        };
        if let Some(v) = virt {
            let mut mask = 1u32;
            while mask < p {
                let partner = real(v ^ mask);
                self.post_wait::<1>(g, &[(partner, &*acc)], Some((partner, &mut *tmp)))?;
                if partner < me {
                    combine(g, acc, tmp, op)?;
                } else {
                    op.reduce_into_lower(g, acc, tmp)?;
                }
                mask <<= 1;
            }
        }
        self.next_phase();
        if me < paired {
            if me % 2 == 0 {
                self.post_wait::<1>(g, &[], Some((me + 1, acc)))?;
            } else {
                self.post_wait::<1>(g, &[(me - 1, &*acc)], None)?;
            }
        }
        Ok(())
    }

    /// Binomial reduction of `acc` toward `root`, where it ends with the result; `tmp`
    /// as long as `acc` for the children's values. A node of the tree combines its
    /// children in the order of their subtrees, which follow it in rank order counted
    /// from the tree's root; so a non-commutative operation (MPI 4.1 §6.9.5: rank
    /// order) takes a tree rooted at rank 0, whose result rank 0 then sends to `root`
    /// (on the same tag: that is the only message from rank 0 to `root`, which is not
    /// its child in that tree, and `root` sends rank 0 nothing after it).
    pub(crate) fn reduce(
        &self,
        g: &mut Guard,
        acc: &mut [u8],
        tmp: &mut [u8],
        op: &Reduction,
        root: u32,
    ) -> R<()> {
        let tree_root = if op.commutes() { root } else { 0 };
        self.reduce_tree(g, acc, tmp, op, tree_root)?;
        if tree_root != root {
            if self.me == tree_root {
                self.post_wait::<1>(g, &[(root, &*acc)], None)?;
            } else if self.me == root {
                self.post_wait::<1>(g, &[], Some((tree_root, acc)))?;
            }
        }
        Ok(())
    }

    /// The binomial tree of [`Rounds::reduce`] rooted at `root`: the result, at
    /// `root`, is the reduction in rank order counted from `root` (`root`, `root + 1`,
    /// ..., `n - 1`, `0`, ...).
    fn reduce_tree(
        &self,
        g: &mut Guard,
        acc: &mut [u8],
        tmp: &mut [u8],
        op: &Reduction,
        root: u32,
    ) -> R<()> {
        let vr = (self.me + self.n - root) % self.n;
        let mut mask = 1u32;
        while mask < self.n {
            if vr & mask == 0 {
                let src = vr | mask;
                if src < self.n {
                    self.post_wait::<1>(g, &[], Some((self.abs(src, root), &mut *tmp)))?;
                    // `acc` covers `vr..vr + mask`, the child's subtree the next
                    // `mask` ranks.
                    op.reduce_into_lower(g, acc, tmp)?;
                }
            } else {
                let dest = self.abs(vr & !mask, root);
                self.post_wait::<1>(g, &[(dest, &*acc)], None)?;
                break;
            }
            mask <<= 1;
        }
        Ok(())
    }
}

/// `acc = lower op acc`, evaluated into `lower` (overwritten) as the lower rank's
/// partner evaluates it with [`Reduction::reduce_into_lower`], then copied into `acc`
/// (see [`Rounds::allreduce`]).
fn combine(g: &mut Guard, acc: &mut [u8], lower: &mut [u8], op: &Reduction) -> R<()> {
    op.reduce_into_lower(g, lower, acc)?;
    acc.copy_from_slice(lower);
    Ok(())
}

/// A receive of a collective in flight: its request, source and expected length.
pub(crate) struct PendingRecv<'a> {
    pub req: RecvRequest<'a>,
    pub src: u32,
    pub len: usize,
}

/// Tests each pending send and receive once (a finished one becomes `None`); whether
/// any is still pending. A message of another length than expected is
/// `MPI_ERR_TRUNCATE` (the ranks passed different counts or types). Shared by the
/// rounds here and `Coll::exchange`.
pub(crate) fn test_once(
    sends: &mut [Option<SendRequest<'_>>],
    recvs: &mut [Option<PendingRecv<'_>>],
) -> R<bool> {
    let mut pending = false;
    for s in sends.iter_mut() {
        if let Some(r) = s {
            if r.test()? {
                *s = None;
            } else {
                pending = true;
            }
        }
    }
    for slot in recvs.iter_mut() {
        let Some(p) = slot else { continue };
        match p.req.test()? {
            Some(st) if st.len != p.len => {
                return Err(Fail::new(
                    MPI_ERR_TRUNCATE,
                    format!(
                        "rank {} sent {} bytes where {} were expected: the ranks passed \
                         different counts or types",
                        p.src, st.len, p.len
                    ),
                ))
            }
            Some(_) => *slot = None,
            None => pending = true,
        }
    }
    Ok(pending)
}
