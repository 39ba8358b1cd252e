//! Unit tests of the ring (std atomics).

use super::packed::slot_mark;
use super::*;

fn ring(n: usize) -> (RingHeader, Vec<Cell>) {
    (RingHeader::new(), (0..n).map(|_| Cell::new()).collect())
}

#[test]
fn fifo_wraps_and_refuses_when_full() {
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
    let mut next_out = 0u64;
    for round in 0..10u64 {
        for k in 0..4 {
            assert!(p.try_push(|cell| cell.set(0, round * 4 + k)));
        }
        assert!(!p.try_push(|_| panic!("must not fill a full ring")));
        for _ in 0..4 {
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(next_out)));
            next_out += 1;
        }
        assert!(c.is_empty());
    }
}

#[test]
fn admitting_a_restarted_producer_drops_the_dead_ones_cells() {
    for (pushed, popped, lagging_head) in [(3, 1, false), (5, 2, true), (4, 4, false)] {
        let (h, cells) = ring(4);
        let mut c = Consumer::new(&h, &cells);
        {
            let mut dead = Producer::new(&h, &cells);
            for k in 0..pushed {
                assert!(dead.try_push(|cell| cell.set(0, 100 + k)));
                if c.pos().tail < popped {
                    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(100 + k)));
                }
            }
            if lagging_head {
                // Died between the stamp and the counter.
                // ORDERING: Relaxed; one thread here, and `admit` reads it after.
                h.head.store(pushed - 1, Ordering::Relaxed);
            }
            // ... and in the middle of filling the next cell.
            cells[(pushed % 4) as usize].set(0, 666);
        }
        assert!(!h.admits(1));
        c.admit(1);
        assert!(h.admits(1) && !h.admits(2));
        assert_eq!(
            c.try_pop(|cell| cell.get(0)),
            Ok(None),
            "nothing of the dead one"
        );
        let mut new = Producer::new(&h, &cells);
        for k in 0..6 {
            assert!(new.try_push(|cell| cell.set(0, k)));
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
        }
    }
}

#[test]
fn a_reserved_message_goes_whole_or_not_at_all_batch_by_batch() {
    let (h, cells) = ring(8);
    let mut tx = Producer::new(&h, &cells);
    let mut rx = Consumer::new(&h, &cells);
    assert!(tx.try_push(|c| c.set(0, 99)));
    assert!(!tx.try_push_reserved(8, 3, |_, _| panic!("no room: nothing written")));
    assert!(!tx.try_push_reserved(0, 3, |_, _| panic!("nothing to push")));
    assert_eq!(rx.try_pop(|c| c.get(0)), Ok(Some(99)));
    let mut order = Vec::new();
    assert!(tx.try_push_reserved(7, 3, |i, c| {
        order.push(i);
        c.set(0, 10 + i as u64)
    }));
    assert_eq!(order, (0..7).collect::<Vec<_>>(), "filled in order");
    for i in 0..7 {
        assert_eq!(rx.try_pop(|c| c.get(0)), Ok(Some(10 + i)));
    }
    assert_eq!(rx.try_pop(|c| c.get(0)), Ok(None));
    assert!(
        tx.try_push_reserved(8, 8, |i, c| c.set(0, i as u64)),
        "a full ring's worth"
    );
    assert!(!tx.try_push(|_| ()), "full");
}

#[test]
fn cells_pushed_together_all_or_as_many_as_free() {
    let (h, cells) = ring(8);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    assert_eq!(
        p.try_push_cells(3, 3, |i, cell| cell.set(0, 10 + i as u64)),
        3
    );
    assert_eq!(
        p.try_push_cells(6, 6, |_, _| panic!("5 free: none written")),
        0
    );
    assert_eq!(
        p.try_push_cells(9, 9, |_, _| panic!("more than the ring")),
        0
    );
    assert_eq!(
        p.try_push_cells(1, 9, |i, cell| cell.set(0, 13 + i as u64)),
        5
    );
    assert_eq!(p.try_push_cells(1, 1, |_, _| panic!("full")), 0);
    for k in 0..8 {
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(10 + k)));
    }
    // Wraps around the end, and mixes with single pushes.
    assert!(p.try_push(|cell| cell.set(0, 1)));
    assert_eq!(
        p.try_push_cells(7, 7, |i, cell| cell.set(0, 2 + i as u64)),
        7
    );
    for k in 1..9 {
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
    }
    assert!(c.is_empty());
}

#[test]
fn a_producer_dead_while_stamping_cells_leaves_none_of_them() {
    // It stamped the later cells of a batch, not the first: the consumer sees
    // nothing, and after admitting a new incarnation, only the new one's cells.
    for start in [0u64, 6] {
        let (h, cells) = ring(8);
        let mut c = Consumer::new(&h, &cells);
        let mut dead = Producer::new(&h, &cells);
        for k in 0..start {
            assert!(dead.try_push(|cell| cell.set(0, k)));
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)));
        }
        for q in start + 1..start + 4 {
            let cell = &cells[(q % 8) as usize];
            cell.set(0, 666);
            // ORDERING: Release, as `try_push_cells` stamps a cell.
            cell.words[0].store(q + 1, Ordering::Release);
        }
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
        c.admit(1);
        let mut new = Producer::new(&h, &cells);
        for k in 0..10 {
            assert!(new.try_push(|cell| cell.set(0, k)));
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(k)), "start {start}");
            assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None), "start {start}");
        }
    }
}

#[test]
fn bytes_round_trip_through_words() {
    let cell = Cell::new();
    let msg: Vec<u8> = (0..37).collect();
    cell.write_bytes(3, &msg);
    let mut back = vec![0u8; 37];
    cell.read_bytes(3, &mut back);
    assert_eq!(back, msg);
}

#[test]
fn impossible_stamps_are_reported() {
    let (h, cells) = ring(4);
    let mut c = Consumer::new(&h, &cells);
    // ORDERING: Release, as the producer publishes a stamp (here: an impossible one).
    cells[0].words[0].store(99, Ordering::Release);
    assert!(c.try_pop(|_| ()).is_err());
    // The previous lap's stamp is "not yet": push a lap, pop it, look again.
    let (h, cells) = ring(2);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    for i in 0..2 {
        assert!(p.try_push(|cell| cell.set(0, i)));
        assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(i)));
    }
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
    assert!(c.is_empty());
}

#[test]
fn a_resumed_consumer_continues_where_the_last_stopped() {
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    for i in 0..3 {
        assert!(p.try_push(|cell| cell.set(0, i)));
    }
    let mut c = Consumer::new(&h, &cells);
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(0)));
    let saved = c.pos();
    let mut c = Consumer::resume(&h, &cells, saved);
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(1)));
    // A new producer (a restarted sender) continues from head.
    let mut p = Producer::new(&h, &cells);
    assert!(p.try_push(|cell| cell.set(0, 3)));
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(2)));
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(Some(3)));
    assert_eq!(c.try_pop(|cell| cell.get(0)), Ok(None));
}

#[test]
fn threads_stream_a_million_cells_in_order() {
    // Miri interprets every access: a few thousand cells still wrap the ring many
    // times and let it check the producer/consumer hand-off for data races.
    const CELLS: u64 = if cfg!(miri) { 2_000 } else { 1_000_000 };
    let (h, cells) = ring(64);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut p = Producer::new(&h, &cells);
            for i in 0..CELLS {
                while !p.try_push(|cell| {
                    cell.set(0, i);
                    cell.set(DATA_WORDS - 1, !i);
                }) {
                    std::hint::spin_loop();
                }
            }
        });
        let mut c = Consumer::new(&h, &cells);
        let mut expect = 0u64;
        while expect < CELLS {
            if let Some((a, b)) = c
                .try_pop(|cell| (cell.get(0), cell.get(DATA_WORDS - 1)))
                .unwrap()
            {
                assert_eq!((a, b), (expect, !expect));
                expect += 1;
            }
        }
    });
}

#[test]
fn a_run_pops_only_what_is_there_and_frees_it_together() {
    let (h, cells) = ring(8);
    let mut tx = Producer::new(&h, &cells);
    let mut rx = Consumer::new(&h, &cells);
    assert_eq!(rx.try_pop_run(4, |_, _| panic!("nothing there")), Ok(0));
    for k in 0..3 {
        assert!(tx.try_push(|cell| cell.set(0, 10 + k)));
    }
    let mut seen = Vec::new();
    assert_eq!(
        rx.try_pop_run(5, |i, cell| seen.push((i, cell.get(0)))),
        Ok(3)
    );
    assert_eq!(seen, [(0, 10), (1, 11), (2, 12)]);
    // Freed together: the producer sees all eight cells free again.
    assert!(tx.try_push_reserved(8, 8, |i, cell| cell.set(0, i as u64)));
    let mut got = Vec::new();
    assert_eq!(rx.try_pop_run(2, |_, cell| got.push(cell.get(0))), Ok(2));
    assert_eq!(rx.try_pop_run(9, |_, cell| got.push(cell.get(0))), Ok(6));
    assert_eq!(got, (0..8).collect::<Vec<u64>>());
    assert!(rx.is_empty());
}

#[test]
fn a_run_stops_at_a_corrupt_stamp_keeping_what_it_popped() {
    let (h, cells) = ring(4);
    let mut tx = Producer::new(&h, &cells);
    let mut rx = Consumer::new(&h, &cells);
    for k in 0..2 {
        assert!(tx.try_push(|cell| cell.set(0, k)));
    }
    // A stamp from no lap of this ring, where the third cell would be.
    // ORDERING: Relaxed; one thread here.
    cells[2].words[0].store(99, Ordering::Relaxed);
    let mut got = Vec::new();
    assert!(rx.try_pop_run(4, |_, cell| got.push(cell.get(0))).is_err());
    assert_eq!(got, [0, 1]);
    assert_eq!(rx.pos().tail, 2);
    // ORDERING: Relaxed; one thread here.
    assert_eq!(
        h.tail.load(Ordering::Relaxed),
        2,
        "the two popped are freed"
    );
}

/// Pops one record with its slot base: `(base, data word 0 of the record)`.
fn pop_record(c: &mut Consumer<'_>) -> Option<(usize, u64)> {
    c.try_pop_slot(|cell, base| (base, cell.get(base)))
        .expect("not corrupted")
}

#[test]
fn small_records_share_a_cell_until_another_push_closes_it() {
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    for k in 0..3u64 {
        assert!(p.try_push_small(|cell, base| cell.set(base, 100 + k)));
    }
    assert_eq!(p.in_flight(), 1, "three small records in one cell");
    for k in 0..3u64 {
        assert!(!c.is_empty());
        assert_eq!(pop_record(&mut c), Some((k as usize * SLOT_WORDS, 100 + k)));
    }
    assert!(c.is_empty(), "slot 3 is not written");
    assert_eq!(pop_record(&mut c), None);
    // A plain push closes the packed cell; the consumer frees it and reads on.
    assert!(p.try_push(|cell| cell.set(0, 7)));
    assert!(!c.is_empty(), "closed, and the next cell is there");
    assert_eq!(pop_record(&mut c), Some((0, 7)));
    assert!(c.is_empty());
    assert_eq!(h.tail.load(Ordering::Relaxed), 2, "both cells freed");
    // A full packed cell: the ninth record opens another.
    for k in 0..SLOTS as u64 + 1 {
        assert!(p.try_push_small(|cell, base| cell.set(base, k)));
    }
    assert_eq!(h.head.load(Ordering::Relaxed), 4, "two more cells");
    for k in 0..SLOTS as u64 + 1 {
        assert_eq!(pop_record(&mut c).map(|r| r.1), Some(k));
    }
    assert_eq!(h.tail.load(Ordering::Relaxed), 3, "the full cell is freed");
}

/// A plain cell's payload words where a later lap's packed cell has its marks hold
/// exactly the marks that lap will publish: the consumer still waits for the
/// producer (the next mark is zeroed before each record is published). Fails when
/// `try_push_small` does not zero the next mark.
#[test]
fn stale_payload_never_passes_for_a_slot_mark() {
    let (h, cells) = ring(2);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    let capacity = cells.len() as u64;
    for pos in 0..capacity {
        assert!(p.try_push(|cell| {
            for slot in 1..SLOTS {
                // The mark of `slot` in this cell's next lap, written as payload.
                cell.set(
                    slot * SLOT_WORDS - 1,
                    slot_mark(pos + capacity, slot, false),
                );
            }
        }));
        assert!(c.try_pop_slot(|_, _| ()).unwrap().is_some());
    }
    assert!(p.try_push_small(|cell, base| cell.set(base, 1)));
    assert_eq!(pop_record(&mut c), Some((0, 1)));
    assert_eq!(pop_record(&mut c), None, "slot 1 is not published");
    assert!(c.is_empty());
    assert!(p.try_push_small(|cell, base| cell.set(base, 2)));
    assert_eq!(pop_record(&mut c), Some((SLOT_WORDS, 2)));
    assert_eq!(pop_record(&mut c), None, "slot 2 is not published");
}

/// Small records, plain cells and multi-cell pushes mixed over many laps of a small
/// ring come out in order, each exactly once.
#[test]
fn mixed_records_keep_their_order_over_many_laps() {
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    let (mut sent, mut seen) = (0u64, 0u64);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..5000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pushed = match rng % 4 {
            0 | 1 => p.try_push_small(|cell, base| cell.set(base, sent)),
            2 => p.try_push(|cell| cell.set(0, sent)),
            _ => p.try_push_cells(1, 1, |_, cell| cell.set(0, sent)) == 1,
        };
        if pushed {
            sent += 1;
        }
        if rng % 3 == 0 || !pushed {
            while let Some((_, v)) = pop_record(&mut c) {
                assert_eq!(v, seen);
                seen += 1;
            }
        }
    }
    while let Some((_, v)) = pop_record(&mut c) {
        assert_eq!(v, seen);
        seen += 1;
    }
    assert_eq!(seen, sent);
    assert!(sent > 3000);
}

#[test]
fn admitting_drops_the_rest_of_an_open_packed_cell() {
    let (h, cells) = ring(4);
    let mut c = Consumer::new(&h, &cells);
    {
        let mut dead = Producer::new(&h, &cells);
        for k in 0..3 {
            assert!(dead.try_push_small(|cell, base| cell.set(base, k)));
        }
    }
    assert_eq!(pop_record(&mut c), Some((0, 0)));
    c.admit(1);
    assert!(h.admits(1));
    assert!(c.is_empty(), "the dead incarnation's slots are dropped");
    let mut new = Producer::new(&h, &cells);
    assert!(new.try_push_small(|cell, base| cell.set(base, 50)));
    assert!(new.try_push_small(|cell, base| cell.set(base, 51)));
    assert_eq!(pop_record(&mut c), Some((0, 50)));
    assert_eq!(pop_record(&mut c), Some((SLOT_WORDS, 51)));
    assert_eq!(pop_record(&mut c), None);
}

#[test]
fn a_run_refuses_a_packed_cell_and_garbage_marks_are_corruption() {
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    assert!(p.try_push_small(|cell, base| cell.set(base, 1)));
    assert!(
        c.try_pop_run(2, |_, _| ()).is_err(),
        "not a run of plain cells"
    );
    let (h, cells) = ring(4);
    let mut p = Producer::new(&h, &cells);
    let mut c = Consumer::new(&h, &cells);
    assert!(p.try_push_small(|cell, base| cell.set(base, 1)));
    assert_eq!(pop_record(&mut c), Some((0, 1)));
    cells[0].words[SLOT_WORDS].store(12345, Ordering::Relaxed);
    assert!(c.try_pop_slot(|_, _| ()).is_err());
}

#[test]
fn partial_words_are_the_bytes_zero_padded() {
    for n in 1..8 {
        let bytes: Vec<u8> = (0..n as u8).map(|b| 0xa1u8.wrapping_add(b * 17)).collect();
        let mut padded = [0u8; 8];
        padded[..n].copy_from_slice(&bytes);
        assert_eq!(
            partial_word(&bytes),
            u64::from_le_bytes(padded),
            "{n} bytes"
        );
    }
}
