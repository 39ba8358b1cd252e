//! ERA, the early-returning agreement (MPI_Comm_agree semantics), as a sans-IO state machine.
//!
//! Algorithm: Herault, Bouteiller, Bosilca, Gamell, Teranishi, Parashar, Dongarra,
//! "Practical scalable consensus for pseudo-synchronous distributed systems", SC'15.
//! Contributions flow up an implicit heap ([`crate::tree`]: a star up to 8 ranks, binary
//! beyond), the root decides, and
//! the decision flows down; a process returns as soon as it has forwarded the decision.
//!
//! # Call order
//! One [`Era`] serves one communicator (id + epoch) at one process. The caller:
//! 1. calls [`Era::start`] when the local process enters agreement `seq`;
//! 2. feeds every ERA message for this communicator to [`Era::on_bytes`] (or
//!    [`Era::on_message`] once decoded) and every failure notice to [`Era::on_failure`];
//! 3. after each call, performs the returned actions in order: `Send` the message,
//!    report `Decided`, stop on `Excluded`.
//!
//! Instances are independent: several may be in flight at once. A process must keep
//! calling the engine after it decided, so that late UPs and requests are answered.
//!
//! # Guarantees (under fail-stop: a rank reported failed never sends again)
//! - Agreement: every surviving process decides the same value, failed set and outcome.
//! - Validity: the value is the AND of a set of real contributions including every
//!   survivor's; the failed set holds only failed ranks.
//! - Termination: once failures stop and every survivor learns each failure, every
//!   survivor decides.
//! - Not uniform: a process that decides and then fails may have decided otherwise than
//!   the survivors when every holder of its decision failed before passing it on (MPI
//!   does not ask for more; the simulator counts how often it happens).
//!
//! Why survivors cannot disagree: a decision reaches a process only along tree edges of
//! views whose known failures are real, so it passes through every live ancestor; a new
//! root asks its children before deciding, and a child that answers with its UP has first
//! learnt that the old root is dead and from then on ignores DOWN messages from the dead.

mod instance;

pub use crate::decision::{Contribution, Decision, Outcome};
pub use instance::State;

use crate::tree::{TreeShape, TreeView};
use crate::types::{CommKey, Rank, RankSet, Seq};
use crate::wire::{EraMsg, WireError};
use instance::{push_unique, Instance};

/// Tunables of the agreement engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct EraConfig {
    /// Tree layout.
    pub shape: TreeShape,
}

/// What the caller must do after a call into the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EraAction {
    /// Send `msg` for instance `seq` to `to` (encode with [`EraMsg::encode`]).
    Send {
        /// Destination rank.
        to: Rank,
        /// Instance.
        seq: Seq,
        /// The message.
        msg: EraMsg,
    },
    /// Instance `seq` is decided at this process: return it to the user.
    Decided {
        /// Instance.
        seq: Seq,
        /// The decision.
        decision: Decision,
    },
    /// This process was declared failed by the others: it must stop.
    Excluded {
        /// Instance whose decision named us.
        seq: Seq,
    },
}

/// Misuse of the engine by its caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EraError {
    /// `start` called twice for one instance, or for one already dropped.
    #[error("agreement {0} was already started here")]
    AlreadyStarted(Seq),
}

/// Counters of what the engine saw and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EraStats {
    /// Messages handled.
    pub messages: u64,
    /// Messages refused by the decoder or naming an impossible sender.
    pub malformed: u64,
    /// Messages for dropped instances, or DOWN from a rank known dead.
    pub stale: u64,
}

/// The agreement engine of one process for one communicator.
#[derive(Debug)]
pub struct Era {
    me: Rank,
    n: u32,
    key: CommKey,
    config: EraConfig,
    /// Every failure this process knows of (notices, messages, decisions).
    known_failed: RankSet,
    /// Failures decided by agreements (uniform across survivors).
    agreed_failed: RankSet,
    /// Live instances, sorted by sequence.
    instances: Vec<Instance>,
    /// Every instance below this is decided here (or dropped).
    decided_below: Seq,
    /// Every instance below this was dropped; messages for them are stale.
    dropped_below: Seq,
    stats: EraStats,
    kids: Vec<Rank>,
    stack: Vec<u32>,
}

impl Era {
    /// The engine of rank `me` in a communicator of `n` ranks identified by `key`.
    ///
    /// # Panics
    /// If `me` is not below `n`.
    pub fn new(me: Rank, n: u32, key: CommKey, config: EraConfig) -> Self {
        assert!(me.0 < n, "rank {me} outside a communicator of {n}");
        Era {
            me,
            n,
            key,
            config,
            known_failed: RankSet::new(),
            agreed_failed: RankSet::new(),
            instances: Vec::new(),
            decided_below: 0,
            dropped_below: 0,
            stats: EraStats::default(),
            kids: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> Rank {
        self.me
    }

    /// The communicator this engine serves.
    pub fn key(&self) -> CommKey {
        self.key
    }

    /// Failures this process knows of.
    pub fn known_failed(&self) -> &RankSet {
        &self.known_failed
    }

    /// Failures decided by agreements so far.
    pub fn agreed_failed(&self) -> &RankSet {
        &self.agreed_failed
    }

    /// Counters.
    pub fn stats(&self) -> EraStats {
        self.stats
    }

    /// The decision of instance `seq`, while it is kept.
    pub fn decision(&self, seq: Seq) -> Option<&Decision> {
        self.find(seq)
            .and_then(|i| self.instances[i].decision.as_ref())
    }

    /// The state of instance `seq`, if it is live here.
    pub fn state(&self, seq: Seq) -> Option<State> {
        self.find(seq).map(|i| self.instances[i].state)
    }

    /// Number of instances held (in flight or kept to answer late messages).
    pub fn instances_held(&self) -> usize {
        self.instances.len()
    }

    /// Enters agreement `seq` with `value`; `acked` are the failures the caller has
    /// acknowledged (they count as known).
    ///
    /// # Errors
    /// [`EraError::AlreadyStarted`] if this instance was started (or dropped) before.
    pub fn start(
        &mut self,
        seq: Seq,
        value: u64,
        acked: &RankSet,
        out: &mut Vec<EraAction>,
    ) -> Result<(), EraError> {
        if seq < self.dropped_below {
            return Err(EraError::AlreadyStarted(seq));
        }
        let acked: RankSet = acked.iter().filter(|r| r.0 < self.n).collect();
        self.learn(&acked, out);
        let idx = self.find_or_insert(seq);
        let me = self.me;
        let own = Contribution {
            value,
            decided_below: self.decided_below,
            known_failed: self.known_failed.clone(),
            acked,
        };
        let inst = &mut self.instances[idx];
        if inst.contributed {
            return Err(EraError::AlreadyStarted(seq));
        }
        inst.contributed = true;
        match inst.state {
            State::NotContributed => {}
            // Decided without us (we were declared failed): hand the decision over.
            State::Completed => {
                let decision = inst.decision.clone().expect("completed has a decision");
                out.push(EraAction::Decided { seq, decision });
                return Ok(());
            }
            State::Gathering | State::Broadcasting => unreachable!("state without contribution"),
        }
        if self.config.shape == TreeShape::Rebuilt {
            inst.excluded = self.agreed_failed.clone();
            if inst.excluded.contains(me) {
                inst.excluded = RankSet::new();
                out.push(EraAction::Excluded { seq });
            }
        }
        inst.absorb(&own);
        inst.state = State::Gathering;
        self.request_missing(idx, false, out);
        self.progress(idx, out);
        Ok(())
    }

    /// A failure notice for `rank` (from the detector, the launcher, the transport).
    pub fn on_failure(&mut self, rank: Rank, out: &mut Vec<EraAction>) {
        if rank.0 < self.n && rank != self.me {
            let one = RankSet::from_sorted(vec![rank]);
            self.learn(&one, out);
        }
    }

    /// Bytes received from `from`: decoded defensively, then handled.
    ///
    /// # Errors
    /// The decoder's error (the message is dropped and counted), or `WrongComm`.
    pub fn on_bytes(
        &mut self,
        from: Rank,
        bytes: &[u8],
        out: &mut Vec<EraAction>,
    ) -> Result<(), WireError> {
        let (header, msg) = EraMsg::decode(bytes, self.n).inspect_err(|_| {
            self.stats.malformed += 1;
        })?;
        if header.key != self.key {
            self.stats.malformed += 1;
            return Err(WireError::WrongComm {
                got: header.key,
                expected: self.key,
            });
        }
        self.on_message(from, header.seq, msg, out);
        Ok(())
    }

    /// A decoded ERA message for instance `seq` from `from`.
    pub fn on_message(&mut self, from: Rank, seq: Seq, msg: EraMsg, out: &mut Vec<EraAction>) {
        self.stats.messages += 1;
        // A rank beyond the communicator in a set (which `on_bytes`'s decoder refuses)
        // would reach the decided failed set and the rebuilt tree: rejected, counted.
        if from.0 >= self.n || from == self.me || !ranks_within(&msg, self.n) {
            self.stats.malformed += 1;
            return;
        }
        if seq < self.dropped_below {
            self.stats.stale += 1;
            return;
        }
        match msg {
            EraMsg::Up(c) => self.on_up(from, seq, c, out),
            EraMsg::Down(d) => self.on_down(from, seq, d, out),
            EraMsg::ResultRequest { known_failed } => self.on_request(from, seq, known_failed, out),
        }
    }

    fn on_up(&mut self, from: Rank, seq: Seq, c: Contribution, out: &mut Vec<EraAction>) {
        self.learn(&c.known_failed, out);
        let idx = self.find_or_insert(seq);
        let inst = &mut self.instances[idx];
        if let Some(d) = &inst.decision {
            // Late UP (the sender's parent changed): it needs the decision.
            out.push(send(from, seq, EraMsg::Down(d.clone())));
            return;
        }
        inst.absorb(&c);
        push_unique(&mut inst.got, from);
        if inst.state == State::Gathering {
            self.progress(idx, out);
        }
    }

    fn on_down(&mut self, from: Rank, seq: Seq, d: Decision, out: &mut Vec<EraAction>) {
        if self.known_failed.contains(from) {
            // A decision from a rank we consider dead: we may already have given our
            // UP to its successor, which decides without it.
            self.stats.stale += 1;
            return;
        }
        let idx = self.find_or_insert(seq);
        if self.instances[idx].decision.is_none() {
            self.complete(idx, d, Some(from), out);
        }
    }

    fn on_request(&mut self, from: Rank, seq: Seq, known: RankSet, out: &mut Vec<EraAction>) {
        self.learn(&known, out);
        let idx = self.find_or_insert(seq);
        let inst = &mut self.instances[idx];
        if let Some(d) = &inst.decision {
            out.push(send(from, seq, EraMsg::Down(d.clone())));
            return;
        }
        match inst.state {
            State::Broadcasting => {
                let mut up = inst.acc.clone().expect("broadcasting has a contribution");
                up.known_failed.union_with(&self.known_failed);
                out.push(send(from, seq, EraMsg::Up(up)));
                if !self.known_failed.contains(from) {
                    inst.sent_to = Some(from);
                }
            }
            _ => {
                push_unique(&mut inst.requesters, from);
            }
        }
    }

    /// Adds failures to what this process knows, and repairs every instance in flight.
    fn learn(&mut self, failed: &RankSet, out: &mut Vec<EraAction>) {
        let mut grew = false;
        for r in failed.iter() {
            if r != self.me && r.0 < self.n {
                grew |= self.known_failed.insert(r);
            }
        }
        if !grew {
            return;
        }
        // By sequence, not index: an instance that decides here may drop older ones
        // (`complete` garbage-collects), which shifts the indices under the loop.
        let in_flight: Vec<Seq> = self
            .instances
            .iter()
            .filter(|i| matches!(i.state, State::Gathering | State::Broadcasting))
            .map(|i| i.seq)
            .collect();
        for seq in in_flight {
            let Some(idx) = self.find(seq) else {
                continue;
            };
            match self.instances[idx].state {
                State::Gathering => {
                    self.request_missing(idx, false, out);
                    self.progress(idx, out);
                }
                State::Broadcasting => self.reparent(idx, out),
                State::NotContributed | State::Completed => {}
            }
        }
    }

    /// Our parent may have died while we wait for DOWN: resend UP to the new parent, or,
    /// as the new root, gather what is missing and decide.
    fn reparent(&mut self, idx: usize, out: &mut Vec<EraAction>) {
        let inst = &self.instances[idx];
        let view = TreeView::new(self.n, &inst.excluded, &self.known_failed);
        match view.parent(self.me) {
            None => {
                self.instances[idx].state = State::Gathering;
                self.request_missing(idx, true, out);
                self.progress(idx, out);
            }
            Some(p) if inst.sent_to != Some(p) => {
                let mut up = inst.acc.clone().expect("broadcasting has a contribution");
                up.known_failed.union_with(&self.known_failed);
                let seq = inst.seq;
                self.instances[idx].sent_to = Some(p);
                out.push(send(p, seq, EraMsg::Up(up)));
            }
            Some(_) => {}
        }
    }

    /// Sends RESULT_REQUEST to children whose UP is missing and who may have given it to
    /// someone else: adopted children always, our own heap children only when `all`
    /// (a new root that was waiting for DOWN).
    fn request_missing(&mut self, idx: usize, all: bool, out: &mut Vec<EraAction>) {
        let kids = self.take_children(idx);
        let inst = &mut self.instances[idx];
        let view = TreeView::new(self.n, &inst.excluded, &self.known_failed);
        for &c in &kids {
            let own_child = view.parent_position_is(c, self.me);
            if (all || !own_child)
                && !view.covered(c, self.me, &inst.got)
                && push_unique(&mut inst.requested, c)
            {
                out.push(send(
                    c,
                    inst.seq,
                    EraMsg::ResultRequest {
                        known_failed: self.known_failed.clone(),
                    },
                ));
            }
        }
        self.kids = kids;
    }

    /// In `Gathering`: once every child is covered, send UP to the parent or, at the
    /// root, decide.
    fn progress(&mut self, idx: usize, out: &mut Vec<EraAction>) {
        let kids = self.take_children(idx);
        let inst = &self.instances[idx];
        let view = TreeView::new(self.n, &inst.excluded, &self.known_failed);
        let ready = kids.iter().all(|&c| view.covered(c, self.me, &inst.got));
        let parent = view.parent(self.me);
        self.kids = kids;
        if !ready {
            return;
        }
        let seq = inst.seq;
        let mut up = inst.acc.clone().expect("gathering has a contribution");
        up.known_failed.union_with(&self.known_failed);
        match parent {
            None => {
                let outcome = if up.known_failed.is_subset(&up.acked) {
                    Outcome::Success
                } else {
                    Outcome::ProcFailed
                };
                let decision = Decision {
                    value: up.value,
                    outcome,
                    gc_below: up.decided_below,
                    failed: up.known_failed,
                };
                self.complete(idx, decision, None, out);
            }
            Some(p) => {
                let inst = &mut self.instances[idx];
                inst.state = State::Broadcasting;
                inst.sent_to = Some(p);
                for r in std::mem::take(&mut inst.requesters) {
                    if r != p && !self.known_failed.contains(r) {
                        out.push(send(r, seq, EraMsg::Up(up.clone())));
                    }
                }
                out.push(send(p, seq, EraMsg::Up(up)));
            }
        }
    }

    /// Records the decision, forwards it (children, and the parent when it came from
    /// elsewhere), reports it, and drops decisions everyone holds.
    fn complete(&mut self, idx: usize, d: Decision, from: Option<Rank>, out: &mut Vec<EraAction>) {
        let seq = self.instances[idx].seq;
        let named_us = d.failed.contains(self.me);
        {
            let inst = &mut self.instances[idx];
            inst.state = State::Completed;
            inst.decision = Some(d.clone());
        }
        self.agreed_failed.union_with(&d.failed);
        self.learn(&d.failed, out);
        if named_us {
            out.push(EraAction::Excluded { seq });
        } else if let Some(idx) = self.find(seq) {
            // Found again: `learn` may have decided other instances and garbage-collected
            // older ones, shifting indices. Gone means dropped by a decision whose
            // `gc_below` says every participant already holds this one.
            self.forward_down(idx, &d, from, out);
        }
        out.push(EraAction::Decided {
            seq,
            decision: d.clone(),
        });
        while self
            .find(self.decided_below)
            .is_some_and(|i| self.instances[i].state == State::Completed)
        {
            self.decided_below += 1;
        }
        if d.gc_below > self.dropped_below {
            self.dropped_below = d.gc_below;
            self.instances
                .retain(|i| i.seq >= d.gc_below || i.state != State::Completed);
        }
    }

    fn forward_down(
        &mut self,
        idx: usize,
        d: &Decision,
        from: Option<Rank>,
        out: &mut Vec<EraAction>,
    ) {
        let kids = self.take_children(idx);
        let inst = &mut self.instances[idx];
        let view = TreeView::new(self.n, &inst.excluded, &self.known_failed);
        let parent = view.parent(self.me);
        let seq = inst.seq;
        let mut targets = std::mem::take(&mut inst.requesters);
        for &c in &kids {
            push_unique(&mut targets, c);
        }
        if let Some(p) = parent {
            // A decision that did not come from our parent goes up too, in case the root
            // side still waits for our subtree. Under fail-stop only a root hears a
            // decision from below (answering its request), so this is a guard for views
            // that lag; the simulator never exercises it.
            if from != Some(p) {
                push_unique(&mut targets, p);
            }
        }
        for t in targets {
            if Some(t) != from && !self.known_failed.contains(t) {
                out.push(send(t, seq, EraMsg::Down(d.clone())));
            }
        }
        self.kids = kids;
    }

    /// This process's children in instance `idx`'s current view, in the reused scratch
    /// vector (hand it back with `self.kids = kids` so nothing is allocated next time).
    fn take_children(&mut self, idx: usize) -> Vec<Rank> {
        let mut kids = std::mem::take(&mut self.kids);
        let view = TreeView::new(self.n, &self.instances[idx].excluded, &self.known_failed);
        view.children(self.me, &mut kids, &mut self.stack);
        kids
    }

    fn find(&self, seq: Seq) -> Option<usize> {
        self.instances.iter().position(|i| i.seq == seq)
    }

    fn find_or_insert(&mut self, seq: Seq) -> usize {
        match self.instances.binary_search_by_key(&seq, |i| i.seq) {
            Ok(i) => i,
            Err(at) => {
                self.instances.insert(at, Instance::new(seq));
                at
            }
        }
    }
}

/// Whether every rank named in `msg` is below `n`.
fn ranks_within(msg: &EraMsg, n: u32) -> bool {
    let sets: [&RankSet; 2] = match msg {
        EraMsg::Up(c) => [&c.known_failed, &c.acked],
        EraMsg::Down(d) => [&d.failed, &d.failed],
        EraMsg::ResultRequest { known_failed } => [known_failed, known_failed],
    };
    sets.iter().all(|s| s.iter().all(|r| r.0 < n))
}

fn send(to: Rank, seq: Seq, msg: EraMsg) -> EraAction {
    EraAction::Send { to, seq, msg }
}

#[cfg(test)]
mod tests;
