//! 100 000 communicators created and freed in a loop across three simulated processes,
//! with traffic on each while up to eight are live at once: context ids come from the
//! allocator's AND rounds, messages go through each receiver's engine, and no message
//! ever reaches a receive of another communicator. Then the id space is filled until the
//! allocator reports exhaustion.

use steadfast_matching::{
    Arrival, ContextAllocator, ContextError, ContextId, Decision, Engine, Envelope, Limits,
    PostOutcome, Proposal, Rank, RecvSpec, Tag,
};

const PROCS: usize = 3;

struct Process {
    ids: ContextAllocator,
    engine: Engine<u64, u64>,
}

/// One creation over all processes; returns the agreed id.
fn create(procs: &mut [Process], op: u64) -> Result<ContextId, ContextError> {
    let mut window = 0;
    loop {
        let mut agreed: Option<Proposal> = None;
        for p in procs.iter_mut() {
            let mine = p.ids.propose(op, window);
            match &mut agreed {
                None => agreed = Some(mine),
                Some(a) => a.combine(&mine).expect("same window"),
            }
        }
        let agreed = agreed.expect("members");
        let mut decided = None;
        for p in procs.iter_mut() {
            let d = p.ids.finish(op, &agreed)?;
            assert!(decided.is_none_or(|x| x == d), "members disagree");
            decided = Some(d);
        }
        match decided.expect("members") {
            Decision::Allocated(id) => return Ok(id),
            Decision::Retry { window: w } => window = w,
        }
    }
}

/// A payload naming the communicator instance and the message, so a crossed message is
/// recognised.
fn payload(instance: u64, n: u64) -> u64 {
    instance << 16 | n
}

#[test]
fn hundred_thousand_communicators_never_cross() {
    let mut procs: Vec<Process> = (0..PROCS)
        .map(|_| Process {
            ids: ContextAllocator::new(16, 2).unwrap(),
            engine: Engine::new(Limits::default()),
        })
        .collect();
    // Live communicators: (instance, context id).
    let mut live: Vec<(u64, ContextId)> = Vec::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for instance in 0..100_000u64 {
        let id = create(&mut procs, instance).expect("ids never run out with 8 live");
        assert!(
            live.iter().all(|(_, c)| *c != id),
            "id {id:?} given to two live communicators"
        );
        for p in procs.iter_mut() {
            p.engine.open_context(id, PROCS as u32).unwrap();
        }
        live.push((instance, id));
        // Traffic on a random live communicator: each rank sends to the next; half the
        // receives are posted first, half find the message waiting.
        let (inst, ctx) = live[(next() % live.len() as u64) as usize];
        for from in 0..PROCS {
            let to = (from + 1) % PROCS;
            let msg = Envelope {
                context: ctx,
                source: Rank(from as u32),
                tag: Tag((inst % 7) as u32),
                len: 8,
                payload: payload(inst, from as u64),
            };
            let spec = RecvSpec::new(None, None);
            let engine = &mut procs[to].engine;
            let got = if next() % 2 == 0 {
                assert!(matches!(
                    engine.post_recv(ctx, spec, inst).unwrap(),
                    PostOutcome::Posted { .. }
                ));
                match engine.deliver(msg).unwrap() {
                    Arrival::Matched(m) => (m.recv, m.message.payload),
                    Arrival::Queued => panic!("a posted wildcard receive was skipped"),
                }
            } else {
                assert_eq!(engine.deliver(msg).unwrap(), Arrival::Queued);
                match engine.post_recv(ctx, spec, inst).unwrap() {
                    PostOutcome::Matched(m) => (m.recv, m.message.payload),
                    PostOutcome::Posted { .. } => panic!("the waiting message was missed"),
                }
            };
            assert_eq!(got, (inst, payload(inst, from as u64)), "crossed message");
        }
        // Keep up to 8 live: free a random one beyond that.
        if live.len() > 8 {
            let (_, gone) = live.swap_remove((next() % live.len() as u64) as usize);
            for p in procs.iter_mut() {
                p.engine.close_context(gone).unwrap();
                assert!(p.engine.poll_event().is_none(), "nothing left behind");
                p.ids.release(gone).unwrap();
            }
        }
    }
    // Fill the space: exhaustion is a clear error, not a collision.
    let mut made = 0u32;
    let err = loop {
        match create(&mut procs, 1 << 40 | u64::from(made)) {
            Ok(_) => made += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(made, (1 << 16) - 2 - live.len() as u32);
    assert!(matches!(
        err,
        ContextError::ContextsExhausted {
            capacity: 65_536,
            ..
        }
    ));
}
