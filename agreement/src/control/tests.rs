use super::*;
use crate::detector::DetectorConfig;
use crate::Outcome;

fn planes(n: u32) -> Vec<ControlPlane> {
    let config = DetectorConfig::new(1_000_000, 20_000_000);
    (0..n)
        .map(|r| ControlPlane::new(r, n, Detector::new(Rank(r), n, config).unwrap()))
        .collect()
}

fn key(id: u64) -> CommKey {
    CommKey {
        comm: CommId(id),
        epoch: Epoch(0),
    }
}

/// Delivers every queued message (in order) until none is left; the dead drop theirs.
fn settle(cps: &mut [ControlPlane], dead: &[u32]) -> u64 {
    let mut delivered = 0;
    loop {
        let mut moved = Vec::new();
        for (from, cp) in cps.iter_mut().enumerate() {
            cp.apply_failures(0);
            while let Some(o) = cp.next_output() {
                if let Output::Send { to, range } = o {
                    moved.push((from as u32, to, cp.bytes(range).to_vec()));
                }
            }
        }
        if moved.is_empty() {
            return delivered;
        }
        for (from, to, bytes) in moved {
            if !dead.contains(&to) && !dead.contains(&from) {
                cps[to as usize].on_control(from, &bytes, 0);
                delivered += 1;
            }
        }
    }
}

#[test]
fn every_process_decides_the_and_of_the_values() {
    for n in [2u32, 3, 5] {
        let mut cps = planes(n);
        for cp in cps.iter_mut() {
            cp.add_comm(key(7), 0, (0..n).collect());
        }
        let seqs: Vec<Seq> = cps
            .iter_mut()
            .enumerate()
            .map(|(r, cp)| cp.start_agreement(CommId(7), !(1 << r)).unwrap())
            .collect();
        assert!(settle(&mut cps, &[]) > 0);
        let expect = (0..n).fold(!0u64, |a, r| a & !(1 << r));
        for (cp, seq) in cps.iter_mut().zip(seqs) {
            let d = cp.comm_mut(CommId(7)).unwrap().take_decision(seq).unwrap();
            assert_eq!(
                (d.value, d.outcome),
                (expect, Outcome::Success),
                "{n} ranks"
            );
        }
    }
}

#[test]
fn a_reported_failure_is_agreed_and_applied_once() {
    let mut cps = planes(4);
    for cp in cps.iter_mut() {
        cp.add_comm(key(7), 0, (0..4).collect());
    }
    for cp in cps.iter_mut().take(3) {
        cp.report_failure(3, "test".into());
        // A second report of the same rank is ignored once applied.
        cp.apply_failures(5);
        cp.report_failure(3, "again".into());
    }
    let seqs: Vec<Seq> = cps
        .iter_mut()
        .take(3)
        .map(|cp| cp.start_agreement(CommId(7), 1).unwrap())
        .collect();
    settle(&mut cps, &[3]);
    for (cp, seq) in cps.iter_mut().take(3).zip(seqs) {
        assert_eq!(cp.notes().len(), 1);
        assert_eq!(cp.notes()[0].how, "test");
        let d = cp.comm_mut(CommId(7)).unwrap().take_decision(seq).unwrap();
        assert_eq!(d.failed.iter().map(|r| r.0).collect::<Vec<_>>(), vec![3]);
        // Not acknowledged: the outcome says so, uniformly.
        assert_eq!(d.outcome, Outcome::ProcFailed);
    }
}

#[test]
fn messages_for_a_communicator_not_created_yet_wait_for_it() {
    let mut cps = planes(2);
    cps[0].add_comm(key(9), 0, vec![0, 1]);
    let seq = cps[0].start_agreement(CommId(9), 6).unwrap();
    settle(&mut cps, &[]);
    assert!(cps[0]
        .comm_mut(CommId(9))
        .unwrap()
        .take_decision(seq)
        .is_none());
    // Rank 1 creates it late: the early contribution is replayed.
    cps[1].add_comm(key(9), 0, vec![0, 1]);
    let seq1 = cps[1].start_agreement(CommId(9), 3).unwrap();
    settle(&mut cps, &[]);
    assert_eq!(
        cps[1]
            .comm_mut(CommId(9))
            .unwrap()
            .take_decision(seq1)
            .unwrap()
            .value,
        2
    );
    assert_eq!(
        cps[0]
            .comm_mut(CommId(9))
            .unwrap()
            .take_decision(seq)
            .unwrap()
            .value,
        2
    );
}

#[test]
fn a_revocation_reaches_every_member() {
    let mut cps = planes(6);
    for cp in cps.iter_mut() {
        cp.add_comm(key(5), 0, (0..6).collect());
    }
    cps[4].revoke(CommId(5));
    assert!(cps[4].comm(CommId(5)).unwrap().revoked());
    settle(&mut cps, &[]);
    assert!(cps.iter().all(|cp| cp.comm(CommId(5)).unwrap().revoked()));
}

#[test]
fn malformed_and_misaddressed_messages_are_counted_not_trusted() {
    let mut cps = planes(3);
    cps[0].add_comm(key(5), 0, vec![0, 2]);
    cps[0].on_control(1, b"garbage", 0);
    cps[0].on_control(0, b"from myself", 0);
    cps[0].on_control(9, b"from nobody", 0);
    assert_eq!(cps[0].stats().malformed, 3);
    assert_eq!(cps[0].stats().received, 3);
    // A report about this process itself excludes it.
    cps[0].report_failure(0, "suspected".into());
    cps[0].apply_failures(1);
    assert!(cps[0].excluded());
}

#[test]
fn a_removed_communicator_is_forgotten_with_the_messages_held_for_it() {
    let mut cps = planes(2);
    cps[0].add_comm(key(9), 4, vec![0, 1]);
    cps[0].start_agreement(CommId(9), 6).unwrap();
    settle(&mut cps, &[]);
    // Rank 1 holds rank 0's contribution early; removing the id drops it.
    assert!(!cps[1].remove_comm(CommId(9)), "never registered at rank 1");
    assert_eq!(cps[1].early_count, 0);
    assert!(cps[0].remove_comm(CommId(9)));
    assert!(cps[0].comm(CommId(9)).is_none());
    assert!(!cps[0].remove_comm(CommId(9)), "removed once");
    // Late messages for a removed communicator are dropped, not held.
    cps[1].add_comm(key(8), 0, vec![0, 1]);
    cps[1].remove_comm(CommId(8));
    cps[0].add_comm(key(8), 0, vec![0, 1]);
    cps[0].start_agreement(CommId(8), 1).unwrap();
    settle(&mut cps, &[]);
    assert_eq!(cps[1].early_count, 0);
    assert!(cps[1].stats().stale > 0);
    // A communicator registered again later starts clean, with its new context.
    cps[1].add_comm(key(9), 5, vec![0, 1]);
    let c = cps[1].comm_mut(CommId(9)).unwrap();
    assert_eq!(c.context(), 5);
    c.set_context(6);
    assert_eq!(cps[1].comm(CommId(9)).unwrap().context(), 6);
}

#[test]
fn a_readmitted_rank_is_alive_for_the_transports_but_failed_in_old_communicators() {
    let mut cps = planes(3);
    for cp in cps.iter_mut() {
        cp.add_comm(key(7), 0, (0..3).collect());
    }
    // Rank 2 dies; rank 0 learns it, and a second report of it is still pending.
    cps[0].report_failure(2, "launcher".into());
    cps[0].apply_failures(0);
    assert!(cps[0].is_failed(2));
    cps[0].report_failure(2, "late report about the dead incarnation".into());
    assert!(cps[0].readmit(2, 1, 10));
    assert!(!cps[0].is_failed(2));
    assert!(!cps[0].readmit(2, 1, 10), "already admitted");
    assert!(!cps[0].readmit(0, 1, 10), "oneself");
    // The pending report was about the dead incarnation: dropped.
    cps[0].apply_failures(20);
    assert!(!cps[0].is_failed(2));
    // The old communicator still holds rank 2 failed: an agreement of the survivors
    // decides without it.
    cps[1].report_failure(2, "launcher".into());
    let s0 = cps[0].start_agreement(CommId(7), 1).unwrap();
    let s1 = cps[1].start_agreement(CommId(7), 1).unwrap();
    settle(&mut cps, &[2]);
    for (r, s) in [(0, s0), (1, s1)] {
        let d = cps[r]
            .comm_mut(CommId(7))
            .unwrap()
            .take_decision(s)
            .unwrap();
        assert_eq!(d.failed.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2]);
    }
    // The decision names the dead incarnation: the new one stays alive at rank 0.
    cps[0].apply_failures(30);
    assert!(!cps[0].is_failed(2));
}

#[test]
fn a_new_epoch_brings_a_restarted_rank_back_into_agreement() {
    let mut cps = planes(3);
    for cp in cps.iter_mut() {
        cp.add_comm(key(7), 4, (0..3).collect());
    }
    for cp in cps.iter_mut().take(2) {
        cp.report_failure(2, "launcher".into());
        cp.apply_failures(0);
    }
    // Rank 2 restarts: a fresh plane at generation 1, admitted by both survivors.
    let config = DetectorConfig::new(1_000_000, 20_000_000);
    cps[2] = ControlPlane::new(2, 3, Detector::new(Rank(2), 3, config).unwrap());
    cps[2].set_generation(2, 1);
    for cp in cps.iter_mut().take(2) {
        assert!(cp.readmit(2, 1, 5));
    }
    // The restarted process registers the new epoch first; a message of the new epoch
    // reaching a survivor still in the old one waits there.
    let next = CommKey {
        comm: CommId(7),
        epoch: Epoch(1),
    };
    assert_eq!(
        cps[2].add_comm_at(next, 4, (0..3).collect(), vec![0, 0, 1]),
        Some(2)
    );
    let s2 = cps[2].start_agreement(CommId(7), 0b110).unwrap();
    // The survivors agree on the old epoch (rank 2 is not in it), then switch.
    let old: Vec<Seq> = (0..2)
        .map(|r| cps[r].start_agreement(CommId(7), 1).unwrap())
        .collect();
    settle(&mut cps, &[]);
    for (r, s) in old.iter().enumerate() {
        let d = cps[r]
            .comm_mut(CommId(7))
            .unwrap()
            .take_decision(*s)
            .unwrap();
        assert_eq!(d.failed.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2]);
        assert!(
            !cps[r].is_failed(2),
            "the decision is about the dead incarnation"
        );
    }
    let mut seqs = vec![];
    for cp in cps.iter_mut().take(2) {
        assert_eq!(cp.new_epoch(CommId(7), &[2]), Some(next));
        assert_eq!(cp.comm(CommId(7)).unwrap().incarnations(), &[0, 0, 1]);
        seqs.push(cp.start_agreement(CommId(7), 0b011).unwrap());
    }
    seqs.push(s2);
    settle(&mut cps, &[]);
    for (cp, s) in cps.iter_mut().zip(seqs) {
        let d = cp.comm_mut(CommId(7)).unwrap().take_decision(s).unwrap();
        assert_eq!(d.value, 0b010);
        assert!(d.failed.is_empty());
        assert_eq!(d.outcome, Outcome::Success);
    }
    // A late message of the old epoch is stale now.
    let before = cps[0].stats().stale;
    let mut bytes = Vec::new();
    crate::wire::FtMsg::Bcast(crate::bcast::Topic::Revoke).encode(key(7), 0, &mut bytes);
    cps[0].on_control(1, &bytes, 0);
    assert_eq!(cps[0].stats().stale, before + 1);
    assert!(!cps[0].comm(CommId(7)).unwrap().revoked());
}

#[test]
fn a_two_member_communicator_agrees_alone_once_its_peer_is_replaced() {
    let mut cps = planes(2);
    for cp in cps.iter_mut() {
        cp.add_comm(key(9), 0, vec![0, 1]);
    }
    cps[0].report_failure(1, "launcher".into());
    cps[0].apply_failures(0);
    assert!(cps[0].readmit(1, 1, 5));
    // The old epoch's peer is the dead incarnation: decided without it, at once.
    let s = cps[0].start_agreement(CommId(9), 3).unwrap();
    let d = cps[0]
        .comm_mut(CommId(9))
        .unwrap()
        .take_decision(s)
        .expect("decided alone");
    assert_eq!(
        (d.value, d.failed.iter().map(|r| r.0).collect::<Vec<_>>()),
        (3, vec![1])
    );
    assert!(!cps[0].is_failed(1));
}

#[test]
fn a_restarted_process_replaces_its_registered_communicator_by_the_survivors_epoch() {
    // A world-like communicator: the restarted process has it registered already (its
    // init's, epoch 0), and takes the survivors' epoch by registering the id again.
    let mut cps = planes(3);
    for cp in cps.iter_mut() {
        cp.add_comm(key(1), 1, (0..3).collect());
    }
    for cp in cps.iter_mut().take(2) {
        cp.report_failure(2, "launcher".into());
        cp.apply_failures(0);
    }
    let config = DetectorConfig::new(1_000_000, 20_000_000);
    cps[2] = ControlPlane::new(2, 3, Detector::new(Rank(2), 3, config).unwrap());
    cps[2].set_generation(2, 1);
    assert_eq!(cps[2].add_comm(key(1), 1, (0..3).collect()), Some(2));
    for cp in cps.iter_mut().take(2) {
        assert!(cp.readmit(2, 1, 5));
    }
    // The survivors switch first and start an agreement at the new epoch: what reaches
    // the restarted process is held (later than its epoch 0), not handled by its
    // init's state.
    let next = CommKey {
        comm: CommId(1),
        epoch: Epoch(1),
    };
    let mut seqs = vec![];
    for cp in cps.iter_mut().take(2) {
        assert_eq!(cp.new_epoch(CommId(1), &[2]), Some(next));
        seqs.push(cp.start_agreement(CommId(1), 0b011).unwrap());
    }
    settle(&mut cps, &[]);
    for (cp, s) in cps.iter_mut().zip(&seqs) {
        assert!(cp.comm_mut(CommId(1)).unwrap().take_decision(*s).is_none());
    }
    assert_eq!(cps[2].comm(CommId(1)).unwrap().key().epoch, Epoch(0));
    // The rejoin: the same id again, at the survivors' epoch with their incarnations.
    assert_eq!(
        cps[2].add_comm_at(next, 1, (0..3).collect(), vec![0, 0, 1]),
        Some(2)
    );
    assert_eq!(cps[2].comm(CommId(1)).unwrap().key(), next);
    seqs.push(cps[2].start_agreement(CommId(1), 0b110).unwrap());
    settle(&mut cps, &[]);
    for (cp, s) in cps.iter_mut().zip(seqs) {
        let d = cp.comm_mut(CommId(1)).unwrap().take_decision(s).unwrap();
        assert_eq!((d.value, d.failed.is_empty()), (0b010, true));
        assert_eq!(d.outcome, Outcome::Success);
    }
}

#[test]
fn a_suspicion_names_the_incarnation_so_a_restarted_rank_can_fail_again() {
    let mut cps = planes(4);
    for cp in cps.iter_mut().filter(|cp| cp.me != 2) {
        cp.report_failure(2, "launcher".into());
    }
    settle(&mut cps, &[2]);
    // Rank 2 restarts in place as incarnation 1, admitted by every survivor.
    let config = DetectorConfig::new(1_000_000, 20_000_000);
    cps[2] = ControlPlane::new(2, 4, Detector::new(Rank(2), 4, config).unwrap());
    cps[2].set_generation(2, 1);
    for cp in cps.iter_mut().filter(|cp| cp.me != 2) {
        assert!(cp.readmit(2, 1, 5));
    }
    // The dead incarnation's suspicion arrives late (or resent by a ring repair): it
    // fails neither the new incarnation at a survivor nor excludes the new process.
    let mut stale = Vec::new();
    FtMsg::Bcast(Topic::Suspicion {
        rank: Rank(2),
        incarnation: 0,
    })
    .encode(FT_KEY, 0, &mut stale);
    cps[0].on_control(1, &stale, 10);
    cps[2].on_control(1, &stale, 10);
    settle(&mut cps, &[]);
    assert!(!cps[0].is_failed(2));
    assert!(!cps[2].excluded(), "the new incarnation is not the suspect");
    // The new incarnation dies too: one survivor learns it, the broadcast tells the
    // others (before suspicions named the incarnation, the first one deduplicated it).
    cps[0].report_failure(2, "launcher".into());
    settle(&mut cps, &[2]);
    for r in [0, 1, 3] {
        assert!(cps[r].is_failed(2), "rank {r}");
    }
}

#[test]
fn a_readmission_moves_the_known_incarnation_even_before_the_death_is_learnt() {
    // Rank 1 learns of rank 2's restart (a launcher event) before any report of the
    // old incarnation's death: the new incarnation is known here all the same, so a
    // late suspicion of the old one is stale.
    let mut cps = planes(3);
    assert!(!cps[1].readmit(2, 1, 0), "rank 2 was not failed here");
    assert_eq!(cps[1].generation(2), 1);
    assert!(!cps[1].readmit(1, 7, 0), "never itself");
    assert_eq!(cps[1].generation(1), 0);
    cps[1].set_generation(2, 0);
    assert_eq!(cps[1].generation(2), 1, "never moves back");
}
