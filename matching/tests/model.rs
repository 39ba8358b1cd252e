//! The engine against a reference model of MPI matching: two lists per context scanned
//! in order, with ULFM's rules written the plainest way. Random sequences of post /
//! arrive / probe / mprobe / cancel / fail / ack / revoke / open / close must give the
//! same observations (which receive got which message, every error and event, the queue
//! lengths) from both.
//!
//! The check is itself checked: with a deliberately broken model (a message matching the
//! latest posted receive, a receive taking the latest unexpected message, a named dead
//! source failing although its message waits, a wildcard receive failing instead of
//! staying posted when a failure is pending) the same property must fail.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use steadfast_matching::{
    Arrival, ContextId, Engine, Envelope, Event, Limits, Match, MatchError, PostOutcome, QueueKind,
    Rank, RecvId, RecvSpec, Rejected, SourceSpec, Tag,
};

const LIMITS: Limits = Limits {
    max_posted: 6,
    max_unexpected: 7,
    max_early: 3,
};
/// Contexts 1 and 2 start open with 3 ranks; 3 starts closed and opens with 2.
const CONTEXTS: [u32; 3] = [1, 2, 3];

fn size_of(ctx: u32) -> u32 {
    if ctx == 3 {
        2
    } else {
        3
    }
}

#[derive(Debug, Clone)]
enum Op {
    Post(u32, RecvSpec),
    Arrive(u32, u32, u32),
    Probe(u32, RecvSpec),
    Mprobe(u32, RecvSpec),
    /// Cancel the n-th receive ever posted (modulo how many there were).
    Cancel(usize),
    Fail(u32, u32),
    Ack(u32),
    /// Acknowledge the first n failures (`ack_first_failures`).
    AckFirst(u32, usize),
    Revoke(u32),
    Open(u32),
    Close(u32),
}

fn spec() -> impl Strategy<Value = RecvSpec> {
    (
        prop_oneof![1 => Just(None), 3 => (0u32..4).prop_map(Some)],
        prop_oneof![1 => Just(None), 3 => (0u32..3).prop_map(Some)],
    )
        .prop_map(|(s, t)| RecvSpec::new(s.map(Rank), t.map(Tag)))
}

fn ctx() -> impl Strategy<Value = u32> {
    prop_oneof![4 => Just(1u32), 2 => Just(2u32), 2 => Just(3u32)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (ctx(), spec()).prop_map(|(c, s)| Op::Post(c, s)),
        8 => (ctx(), 0u32..4, 0u32..3).prop_map(|(c, s, t)| Op::Arrive(c, s, t)),
        2 => (ctx(), spec()).prop_map(|(c, s)| Op::Probe(c, s)),
        2 => (ctx(), spec()).prop_map(|(c, s)| Op::Mprobe(c, s)),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => (ctx(), 0u32..4).prop_map(|(c, r)| Op::Fail(c, r)),
        1 => ctx().prop_map(Op::Ack),
        1 => (ctx(), 0usize..4).prop_map(|(c, n)| Op::AckFirst(c, n)),
        1 => ctx().prop_map(Op::Revoke),
        1 => ctx().prop_map(Op::Open),
        1 => ctx().prop_map(Op::Close),
    ]
}

/// What one step showed: the call's result and the events it caused, plus every open
/// context's `(posted, unexpected, failure pending)`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Obs {
    Post(Result<Option<Match<u32, u32>>, Rejected<u32>>, bool),
    Arrive(Result<Arrival<u32, u32>, Rejected<Envelope<u32>>>),
    Probe(Result<Option<Envelope<u32>>, MatchError>),
    Cancel(Option<u32>),
    Unit(Result<(), MatchError>),
    Ack(Result<usize, MatchError>),
}

type Step = (Obs, Vec<Event<u32, u32>>, Vec<(u32, usize, usize, bool)>);

/// Deliberate errors for checking that the comparison catches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    None,
    LatestPosted,
    LatestUnexpected,
    DeadSourceIgnoresWaitingMessage,
    PendingWildcardFails,
}

struct ModelCtx {
    size: u32,
    posted: Vec<(RecvSpec, u32)>,
    unexpected: Vec<Envelope<u32>>,
    failed: Vec<Rank>,
    acked: usize,
    revoked: bool,
}

struct Model {
    open: HashMap<u32, ModelCtx>,
    early: Vec<Envelope<u32>>,
    events: Vec<Event<u32, u32>>,
    mutation: Mutation,
}

impl Model {
    fn new(mutation: Mutation) -> Self {
        let mut m = Model {
            open: HashMap::new(),
            early: Vec::new(),
            events: Vec::new(),
            mutation,
        };
        for c in [1, 2] {
            m.open_ctx(c).unwrap();
        }
        m
    }

    fn open_ctx(&mut self, c: u32) -> Result<(), MatchError> {
        if self.open.contains_key(&c) {
            return Err(MatchError::ContextExists(ContextId(c)));
        }
        self.open.insert(
            c,
            ModelCtx {
                size: size_of(c),
                posted: vec![],
                unexpected: vec![],
                failed: vec![],
                acked: 0,
                revoked: false,
            },
        );
        let early = std::mem::take(&mut self.early);
        for e in early {
            if e.context.0 != c {
                self.early.push(e);
            } else if let Err(r) = self.arrive(e) {
                self.events.push(Event::MessageDropped {
                    message: r.item,
                    error: r.error,
                });
            }
        }
        Ok(())
    }

    fn check(c: &ModelCtx, id: u32, source: SourceSpec) -> Result<(), MatchError> {
        if c.revoked {
            return Err(MatchError::Revoked(ContextId(id)));
        }
        match source {
            SourceSpec::Rank(r) if r.0 >= c.size => Err(MatchError::RankOutOfRange {
                context: ContextId(id),
                rank: r,
                size: c.size,
            }),
            _ => Ok(()),
        }
    }

    fn find_unexpected(&self, c: &ModelCtx, s: RecvSpec) -> Option<usize> {
        let mut fits = c
            .unexpected
            .iter()
            .enumerate()
            .filter(|(_, e)| s.accepts(e.source, e.tag))
            .map(|(i, _)| i);
        if self.mutation == Mutation::LatestUnexpected {
            fits.next_back()
        } else {
            fits.next()
        }
    }

    fn unmatched_error(c: &ModelCtx, id: u32, s: RecvSpec) -> Option<MatchError> {
        match s.source {
            SourceSpec::Rank(r) if c.failed.contains(&r) => Some(MatchError::ProcFailed {
                context: ContextId(id),
                rank: r,
            }),
            SourceSpec::Any if c.acked < c.failed.len() => {
                Some(MatchError::ProcFailedPending(ContextId(id)))
            }
            _ => None,
        }
    }

    fn post(
        &mut self,
        id: u32,
        s: RecvSpec,
        tok: u32,
    ) -> Result<Option<Match<u32, u32>>, Rejected<u32>> {
        let rej = |error| Rejected { error, item: tok };
        let Some(c) = self.open.get(&id) else {
            return Err(rej(MatchError::UnknownContext(ContextId(id))));
        };
        Self::check(c, id, s.source).map_err(rej)?;
        if self.mutation == Mutation::DeadSourceIgnoresWaitingMessage {
            if let SourceSpec::Rank(r) = s.source {
                if c.failed.contains(&r) {
                    return Err(rej(MatchError::ProcFailed {
                        context: ContextId(id),
                        rank: r,
                    }));
                }
            }
        }
        if let Some(i) = self.find_unexpected(c, s) {
            let c = self.open.get_mut(&id).unwrap();
            let message = c.unexpected.remove(i);
            return Ok(Some(Match { recv: tok, message }));
        }
        if let Some(e @ MatchError::ProcFailed { .. }) = Self::unmatched_error(c, id, s) {
            return Err(rej(e));
        }
        if c.posted.len() >= LIMITS.max_posted {
            return Err(rej(MatchError::QueueFull {
                context: ContextId(id),
                queue: QueueKind::Posted,
                limit: LIMITS.max_posted,
            }));
        }
        self.open.get_mut(&id).unwrap().posted.push((s, tok));
        Ok(None)
    }

    fn arrive(&mut self, e: Envelope<u32>) -> Result<Arrival<u32, u32>, Rejected<Envelope<u32>>> {
        let id = e.context.0;
        let Some(c) = self.open.get_mut(&id) else {
            if self.early.len() < LIMITS.max_early {
                self.early.push(e);
                return Ok(Arrival::Queued);
            }
            return Err(Rejected {
                error: MatchError::QueueFull {
                    context: e.context,
                    queue: QueueKind::Early,
                    limit: LIMITS.max_early,
                },
                item: e,
            });
        };
        if let Err(error) = Self::check(c, id, SourceSpec::Rank(e.source)) {
            return Err(Rejected { error, item: e });
        }
        let mut fits = c
            .posted
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| s.accepts(e.source, e.tag))
            .map(|(i, _)| i);
        let hit = if self.mutation == Mutation::LatestPosted {
            fits.next_back()
        } else {
            fits.next()
        };
        if let Some(i) = hit {
            let (_, recv) = c.posted.remove(i);
            return Ok(Arrival::Matched(Match { recv, message: e }));
        }
        if c.unexpected.len() >= LIMITS.max_unexpected {
            return Err(Rejected {
                error: MatchError::QueueFull {
                    context: e.context,
                    queue: QueueKind::Unexpected,
                    limit: LIMITS.max_unexpected,
                },
                item: e,
            });
        }
        c.unexpected.push(e);
        Ok(Arrival::Queued)
    }

    fn probe(
        &mut self,
        id: u32,
        s: RecvSpec,
        take: bool,
    ) -> Result<Option<Envelope<u32>>, MatchError> {
        let c = self
            .open
            .get(&id)
            .ok_or(MatchError::UnknownContext(ContextId(id)))?;
        Self::check(c, id, s.source)?;
        match self.find_unexpected(c, s) {
            Some(i) if take => Ok(Some(self.open.get_mut(&id).unwrap().unexpected.remove(i))),
            Some(i) => Ok(Some(c.unexpected[i].clone())),
            None => Self::unmatched_error(c, id, s).map_or(Ok(None), Err),
        }
    }

    fn would_match(&self, id: u32, s: u32, t: u32) -> Result<bool, MatchError> {
        let c = self
            .open
            .get(&id)
            .ok_or(MatchError::UnknownContext(ContextId(id)))?;
        Self::check(c, id, SourceSpec::Rank(Rank(s)))?;
        Ok(c.posted
            .iter()
            .any(|(spec, _)| spec.accepts(Rank(s), Tag(t))))
    }

    fn cancel(&mut self, tok: u32) -> Option<u32> {
        for c in self.open.values_mut() {
            if let Some(i) = c.posted.iter().position(|(_, t)| *t == tok) {
                return Some(c.posted.remove(i).1);
            }
        }
        None
    }

    fn fail(&mut self, id: u32, r: u32) -> Result<(), MatchError> {
        let c = self
            .open
            .get_mut(&id)
            .ok_or(MatchError::UnknownContext(ContextId(id)))?;
        Self::check(
            &ModelCtx {
                revoked: false,
                ..empty(c.size)
            },
            id,
            SourceSpec::Rank(Rank(r)),
        )?;
        if c.failed.contains(&Rank(r)) {
            return Ok(());
        }
        c.failed.push(Rank(r));
        if c.revoked {
            return Ok(());
        }
        let error = MatchError::ProcFailed {
            context: ContextId(id),
            rank: Rank(r),
        };
        let wildcard_fails = self.mutation == Mutation::PendingWildcardFails;
        let (dead, keep): (Vec<_>, Vec<_>) = c.posted.drain(..).partition(|(s, _)| {
            s.source == SourceSpec::Rank(Rank(r)) || (wildcard_fails && s.source == SourceSpec::Any)
        });
        c.posted = keep;
        for (_, recv) in dead {
            self.events.push(Event::RecvFailed { recv, error });
        }
        for (s, recv) in &c.posted {
            if s.source == SourceSpec::Any {
                self.events.push(Event::FailurePending { recv: *recv });
            }
        }
        Ok(())
    }

    fn flush(&mut self, id: u32, error: MatchError) {
        let c = self.open.get_mut(&id).unwrap();
        for (_, recv) in c.posted.drain(..) {
            self.events.push(Event::RecvFailed { recv, error });
        }
        for message in c.unexpected.drain(..) {
            self.events.push(Event::MessageDropped { message, error });
        }
    }

    fn step(&mut self, op: &Op, tok: u32, msg: u32, posted: &[u32]) -> Obs {
        match *op {
            Op::Post(c, s) => {
                let r = self.post(c, s, tok);
                let pending = matches!(r, Ok(None))
                    && s.source == SourceSpec::Any
                    && self.open[&c].acked < self.open[&c].failed.len();
                Obs::Post(r, pending)
            }
            Op::Arrive(c, s, t) => Obs::Arrive(self.arrive(envelope(c, s, t, msg))),
            Op::Probe(c, s) => Obs::Probe(self.probe(c, s, false)),
            Op::Mprobe(c, s) => Obs::Probe(self.probe(c, s, true)),
            Op::Cancel(n) if posted.is_empty() => {
                let _ = n;
                Obs::Cancel(None)
            }
            Op::Cancel(n) => Obs::Cancel(self.cancel(posted[n % posted.len()])),
            Op::Fail(c, r) => Obs::Unit(self.fail(c, r)),
            Op::Ack(c) => Obs::Ack(match self.open.get_mut(&c) {
                Some(x) => {
                    x.acked = x.failed.len();
                    Ok(x.acked)
                }
                None => Err(MatchError::UnknownContext(ContextId(c))),
            }),
            Op::AckFirst(c, n) => Obs::Ack(match self.open.get_mut(&c) {
                Some(x) => {
                    x.acked = x.acked.max(n.min(x.failed.len()));
                    Ok(x.acked)
                }
                None => Err(MatchError::UnknownContext(ContextId(c))),
            }),
            Op::Revoke(c) => Obs::Unit(match self.open.get_mut(&c) {
                Some(x) if x.revoked => Ok(()),
                Some(x) => {
                    x.revoked = true;
                    self.flush(c, MatchError::Revoked(ContextId(c)));
                    Ok(())
                }
                None => Err(MatchError::UnknownContext(ContextId(c))),
            }),
            Op::Open(c) => Obs::Unit(self.open_ctx(c)),
            Op::Close(c) => Obs::Unit(if self.open.contains_key(&c) {
                self.flush(c, MatchError::UnknownContext(ContextId(c)));
                self.open.remove(&c);
                Ok(())
            } else {
                Err(MatchError::UnknownContext(ContextId(c)))
            }),
        }
    }

    fn summary(&self) -> Vec<(u32, usize, usize, bool)> {
        CONTEXTS
            .iter()
            .filter_map(|c| {
                self.open.get(c).map(|x| {
                    (
                        *c,
                        x.posted.len(),
                        x.unexpected.len(),
                        x.acked < x.failed.len(),
                    )
                })
            })
            .collect()
    }
}

fn empty(size: u32) -> ModelCtx {
    ModelCtx {
        size,
        posted: vec![],
        unexpected: vec![],
        failed: vec![],
        acked: 0,
        revoked: false,
    }
}

fn envelope(c: u32, s: u32, t: u32, msg: u32) -> Envelope<u32> {
    Envelope {
        context: ContextId(c),
        source: Rank(s),
        tag: Tag(t),
        len: msg as usize * 8,
        payload: msg,
    }
}

/// The engine side of one step.
fn engine_step(
    e: &mut Engine<u32, u32>,
    ids: &mut HashMap<u32, RecvId>,
    op: &Op,
    tok: u32,
    msg: u32,
    posted: &[u32],
) -> Obs {
    match *op {
        Op::Post(c, s) => match e.post_recv(ContextId(c), s, tok) {
            Ok(PostOutcome::Matched(m)) => Obs::Post(Ok(Some(m)), false),
            Ok(PostOutcome::Posted {
                id,
                failure_pending,
            }) => {
                ids.insert(tok, id);
                Obs::Post(Ok(None), failure_pending)
            }
            Err(r) => Obs::Post(Err(r), false),
        },
        Op::Arrive(c, s, t) => Obs::Arrive(e.deliver(envelope(c, s, t, msg))),
        Op::Probe(c, s) => Obs::Probe(e.probe(ContextId(c), s).map(|m| m.cloned())),
        Op::Mprobe(c, s) => Obs::Probe(e.mprobe(ContextId(c), s)),
        Op::Cancel(_) if posted.is_empty() => Obs::Cancel(None),
        Op::Cancel(n) => Obs::Cancel(
            ids.get(&posted[n % posted.len()])
                .and_then(|id| e.cancel(*id)),
        ),
        Op::Fail(c, r) => Obs::Unit(e.notify_failure(ContextId(c), Rank(r))),
        Op::Ack(c) => Obs::Ack(e.ack_failures(ContextId(c))),
        Op::AckFirst(c, n) => Obs::Ack(e.ack_first_failures(ContextId(c), n)),
        Op::Revoke(c) => Obs::Unit(e.revoke(ContextId(c))),
        Op::Open(c) => Obs::Unit(e.open_context(ContextId(c), size_of(c))),
        Op::Close(c) => Obs::Unit(e.close_context(ContextId(c))),
    }
}

fn engine_summary(e: &Engine<u32, u32>) -> Vec<(u32, usize, usize, bool)> {
    CONTEXTS
        .iter()
        .filter_map(|&c| {
            let id = ContextId(c);
            Some((
                c,
                e.posted_len(id).ok()?,
                e.unexpected_len(id).ok()?,
                e.failure_pending(id).ok()?,
            ))
        })
        .collect()
}

/// Runs `ops` on both and compares every step.
fn compare(ops: &[Op], mutation: Mutation) -> Result<(), TestCaseError> {
    let mut model = Model::new(mutation);
    let mut engine: Engine<u32, u32> = Engine::new(LIMITS);
    for c in [1, 2] {
        engine.open_context(ContextId(c), size_of(c)).unwrap();
    }
    let mut ids = HashMap::new();
    let mut posted = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let (tok, msg) = (i as u32, 1000 + i as u32);
        if let Op::Arrive(c, s, t) = *op {
            prop_assert_eq!(
                engine.would_match(ContextId(c), Rank(s), Tag(t)),
                model.would_match(c, s, t),
                "would_match before step {}",
                i
            );
        }
        let want_obs = model.step(op, tok, msg, &posted);
        let want: Step = (want_obs, std::mem::take(&mut model.events), model.summary());
        let got_obs = engine_step(&mut engine, &mut ids, op, tok, msg, &posted);
        let got: Step = (
            got_obs,
            std::iter::from_fn(|| engine.poll_event()).collect(),
            engine_summary(&engine),
        );
        prop_assert_eq!(&got, &want, "step {} ({:?}) of {:?}", i, op, ops);
        if matches!(op, Op::Post(..)) {
            posted.push(tok);
        }
    }
    Ok(())
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..120)
}

proptest! {
    #![proptest_config(Config { cases: 2000, ..Config::default() })]

    /// Every completion, error, event and queue length agrees with the reference model.
    #[test]
    fn engine_matches_the_reference_model(ops in ops()) {
        compare(&ops, Mutation::None)?;
    }
}

/// The comparison must catch each deliberately broken rule.
#[test]
fn broken_rules_are_caught() {
    for mutation in [
        Mutation::LatestPosted,
        Mutation::LatestUnexpected,
        Mutation::DeadSourceIgnoresWaitingMessage,
        Mutation::PendingWildcardFails,
    ] {
        let mut runner = TestRunner::new(Config {
            cases: 2000,
            failure_persistence: None,
            ..Config::default()
        });
        let caught = runner.run(&ops(), |ops| compare(&ops, mutation));
        assert!(caught.is_err(), "{mutation:?} went unnoticed");
    }
}

/// A hand-written scenario of the ULFM rules, step by step.
#[test]
fn ulfm_scenario() {
    let ops = [
        Op::Arrive(1, 2, 0),                                     // a message from 2 waits
        Op::Post(1, RecvSpec::new(None, Some(Tag(1)))),          // wildcard, posted
        Op::Post(1, RecvSpec::new(Some(Rank(2)), Some(Tag(1)))), // named 2, posted
        Op::Fail(1, 2),                                          // named fails, wildcard pending
        Op::Post(1, RecvSpec::new(Some(Rank(2)), Some(Tag(0)))), // takes the waiting one
        Op::Post(1, RecvSpec::new(Some(Rank(2)), Some(Tag(0)))), // ProcFailed
        Op::Post(1, RecvSpec::new(None, None)),                  // posted, failure pending
        Op::Ack(1),
        Op::Post(1, RecvSpec::new(None, Some(Tag(2)))), // posted, not pending
        Op::Arrive(1, 0, 1),                            // the first wildcard gets it
        Op::Revoke(1),                                  // the rest fail with Revoked
        Op::Arrive(1, 0, 1),                            // rejected
    ];
    compare(&ops, Mutation::None).unwrap();
}
