//! The ring's protocol under loom (`RUSTFLAGS="--cfg loom"`, scripts/test.sh).

use super::*;
use loom::sync::Arc;

/// Three messages through a ring of two cells (full, wrap-around, empty all
/// reached): the consumer sees every payload word exactly as written, in order.
/// Weakening the Release of the stamp fails this test. Loom does not model a read
/// reordered after a later write (load buffering), so the Release of `tail` (the
/// consumer's reads happen before the producer rewrites the cell) rests on the
/// argument at that store, not on this test.
/// A ring of two cells: `produce` runs on a second thread with its producer,
/// `consume` on this one with its consumer; then the ring must be empty.
fn two_cells(
    produce: impl FnOnce(&mut Producer<'_>) + Send + 'static,
    consume: impl FnOnce(&mut Consumer<'_>),
) {
    let shared = Arc::new((RingHeader::new(), [Cell::new(), Cell::new()]));
    let producer = {
        let shared = shared.clone();
        loom::thread::spawn(move || produce(&mut Producer::new(&shared.0, &shared.1)))
    };
    let mut c = Consumer::new(&shared.0, &shared.1);
    consume(&mut c);
    producer.join().unwrap();
    assert!(c.is_empty());
}

#[test]
fn payload_published_in_order_through_wrap() {
    loom::model(|| {
        two_cells(
            |p| {
                for i in 1..=3u64 {
                    while !p.try_push(|cell| {
                        cell.set(0, i);
                        cell.set(5, i * 10);
                    }) {
                        loom::thread::yield_now();
                    }
                }
            },
            |c| {
                let mut next = 1u64;
                while next <= 3 {
                    match c.try_pop(|cell| (cell.get(0), cell.get(5))).unwrap() {
                        Some((a, b)) => {
                            assert_eq!((a, b), (next, next * 10));
                            next += 1;
                        }
                        None => loom::thread::yield_now(),
                    }
                }
            },
        );
    });
}

/// Two batches of two cells through a ring of two (the second waits for the whole
/// ring to be free): whenever the consumer finds a batch's first cell, its second
/// is published too, payload included. Stamping the first cell before the second
/// fails this test.
/// A reserved push of 2 cells in batches of 1 on the 2-cell ring: the consumer
/// follows batch by batch and reads each payload as written. Fails (loom finds a
/// stale payload) with the stamps stored Relaxed in `try_push_reserved`.
#[test]
fn a_reserved_message_is_read_batch_by_batch_as_written() {
    loom::model(|| {
        two_cells(
            |p| {
                while !p.try_push_reserved(2, 1, |i, cell| cell.set(0, 5 + i as u64)) {
                    loom::thread::yield_now();
                }
            },
            |c| {
                let mut next = 5u64;
                while next < 7 {
                    match c.try_pop(|cell| cell.get(0)).unwrap() {
                        Some(v) => {
                            assert_eq!(v, next);
                            next += 1;
                        }
                        None => loom::thread::yield_now(),
                    }
                }
            },
        );
    });
}

#[test]
fn a_batch_is_visible_whole_once_its_first_cell_is() {
    loom::model(|| {
        two_cells(
            |p| {
                for batch in 0..2u64 {
                    while p.try_push_cells(2, 2, |i, cell| cell.set(0, batch * 2 + i as u64)) == 0 {
                        loom::thread::yield_now();
                    }
                }
            },
            |c| {
                let mut next = 0u64;
                while next < 4 {
                    match c.try_pop(|cell| cell.get(0)).unwrap() {
                        Some(v) => {
                            assert_eq!(v, next);
                            next += 1;
                            if next % 2 == 1 {
                                let second = c.try_pop(|cell| cell.get(0)).unwrap();
                                assert_eq!(second, Some(next), "second cell of the batch");
                                next += 1;
                            }
                        }
                        None => loom::thread::yield_now(),
                    }
                }
            },
        );
    });
}

#[test]
fn a_run_reads_every_cell_of_its_batch_once_in_order() {
    loom::model(|| {
        two_cells(
            |p| {
                for message in 0..2u64 {
                    while !p.try_push_reserved(2, 2, |i, cell| cell.set(0, message * 2 + i as u64))
                    {
                        loom::thread::yield_now();
                    }
                }
            },
            |c| {
                let mut next = 0u64;
                while next < 4 {
                    let popped = c
                        .try_pop_run(2, |_, cell| {
                            assert_eq!(cell.get(0), next);
                            next += 1;
                        })
                        .unwrap();
                    if popped == 0 {
                        loom::thread::yield_now();
                    }
                }
            },
        );
    });
}

/// Two small records, a plain cell, then a small record again, on a ring of two
/// cells (the packed cell closed by the plain push, a second packed cell after the
/// wrap): the consumer reads every record's word as written, in order. Fails with the
/// marks stored Relaxed (the zeroing of the next mark is held by the unit test
/// `stale_payload_never_passes_for_a_slot_mark`).
#[test]
fn packed_records_and_plain_cells_arrive_in_order() {
    loom::model(|| {
        two_cells(
            |p| {
                for i in 1..=4u64 {
                    loop {
                        let pushed = if i == 3 {
                            p.try_push(|cell| cell.set(0, i))
                        } else {
                            p.try_push_small(|cell, base| cell.set(base, i))
                        };
                        if pushed {
                            break;
                        }
                        loom::thread::yield_now();
                    }
                }
            },
            |c| {
                let mut next = 1u64;
                while next <= 4 {
                    match c.try_pop_slot(|cell, base| cell.get(base)).unwrap() {
                        Some(v) => {
                            assert_eq!(v, next);
                            next += 1;
                        }
                        None => loom::thread::yield_now(),
                    }
                }
            },
        );
    });
}
