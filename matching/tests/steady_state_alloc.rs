//! In the steady state the engine allocates nothing: after a warm-up that grows the slabs
//! and tag tables to their working size, posting, matching, unexpected arrivals, probes
//! and cancels run without a single heap allocation (counted by a wrapping allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use steadfast_matching::{
    Arrival, ContextId, Engine, Envelope, Limits, PostOutcome, Rank, RecvSpec, Tag,
};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted: the test's own thread only (the
    /// harness's main thread may still allocate while the test runs: it did, 4 times,
    /// in one CI run).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Counts an allocation made by a counted thread.
fn count() {
    // `try_with`: a thread being torn down has no slot left, and is not counted.
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        // ORDERING: Relaxed; a statistic read by the same thread after the work.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for `realloc` is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const C: ContextId = ContextId(1);

fn round(e: &mut Engine<u64, u64>, i: u64) {
    let src = (i % 8) as u32;
    let tag = (i % 5) as u32;
    let m = |s: u32, t: u32| Envelope {
        context: C,
        source: Rank(s),
        tag: Tag(t),
        len: 8,
        payload: i,
    };
    // Posted first, exact and wildcard.
    assert!(matches!(
        e.post_recv(C, RecvSpec::new(Some(Rank(src)), Some(Tag(tag))), i),
        Ok(PostOutcome::Posted { .. })
    ));
    let wild = match e.post_recv(C, RecvSpec::new(None, Some(Tag(tag))), i) {
        Ok(PostOutcome::Posted { id, .. }) => id,
        other => panic!("{other:?}"),
    };
    assert!(matches!(e.deliver(m(src, tag)), Ok(Arrival::Matched(_))));
    assert_eq!(e.cancel(wild), Some(i));
    // Unexpected first, then probe, mprobe and a receive.
    for _ in 0..3 {
        assert!(matches!(e.deliver(m(src, tag)), Ok(Arrival::Queued)));
    }
    assert!(e.probe(C, RecvSpec::new(None, None)).unwrap().is_some());
    assert!(e
        .mprobe(C, RecvSpec::new(Some(Rank(src)), None))
        .unwrap()
        .is_some());
    assert!(matches!(
        e.post_recv(C, RecvSpec::new(None, None), i),
        Ok(PostOutcome::Matched(_))
    ));
    assert!(matches!(
        e.post_recv(C, RecvSpec::new(Some(Rank(src)), Some(Tag(tag))), i),
        Ok(PostOutcome::Matched(_))
    ));
}

#[test]
fn matching_allocates_nothing_once_warm() {
    COUNTED.with(|c| c.set(true));
    let mut e: Engine<u64, u64> = Engine::new(Limits::default());
    e.open_context(C, 8).unwrap();
    for i in 0..1000 {
        round(&mut e, i);
    }
    // ORDERING: Relaxed; only this thread's allocations are counted (`COUNTED`).
    let before = ALLOCS.load(Ordering::Relaxed);
    assert!(before > 0, "the counter sees the warm-up's allocations");
    for i in 1000..21_000 {
        round(&mut e, i);
    }
    // ORDERING: Relaxed; as above.
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0, "allocations in the steady state");
}
