//! A rank program for `tests/spawn.rs` (not a user tool): the Rust API of spawning
//! (`Comm::spawn`, `World::parent`, `docs/spawn.md`).
//!
//! `spawn-test-rank spawn`: the ranks started with the job spawn 2 children from their
//! own communicator; each parent r exchanges a message both ways with child r over the
//! inter-communicator, then both sides merge it (parents first) and check ranks, sizes
//! and an allreduce. `spawn-test-rank pairs`: two pairs of ranks spawn one child each
//! at the same time (one slot each). `spawn-test-rank dies`: the child exits before it
//! joins; the spawn is `CommError::Spawn` naming why. `spawn-test-rank none`: a spawn in a job without
//! spare slots is `CommError::Spawn` at every parent, at once. `spawn-test-rank command
//! MARKER`: the parents spawn one child running this program with its own `argv[0]` and
//! arguments (`Comm::spawn_command`: `cmd-worker cmdchild MARKER k=v`); the child checks
//! them, tells its root and SIGKILLs itself; the root restarts it in place, and the new
//! incarnation runs the same command again.

use steadfast::bootstrap::SpawnCommand;
use steadfast::comm::{InterComm, ReduceOp};
use steadfast::{Comm, CommError, World};

/// The `argv[0]` the `command` mode's child gets.
const CMD_ARGV0: &str = "cmd-worker";

fn fail(what: &str, e: CommError) -> ! {
    eprintln!("{what}: {e}");
    std::process::exit(1)
}

/// The merged communicator's ranks sum to 0 + 1 + 2 + 3, and this process is `at`.
fn check_merged(inter: &InterComm, high: bool, at: u32) {
    let merged = inter.merge(high).unwrap_or_else(|e| fail("merge", e));
    assert_eq!((merged.rank(), merged.size()), (at, 4));
    let mut v = [u64::from(merged.rank())];
    merged
        .allreduce(&mut v, ReduceOp::Sum)
        .unwrap_or_else(|e| fail("allreduce", e));
    assert_eq!(v[0], 6);
    merged.free().unwrap_or_else(|e| fail("free", e));
}

fn parent(world: &World, mode: &str) {
    let started: Vec<u32> = (0..world.job_ranks()).collect();
    let parents: Comm = world
        .comm()
        .create_group(&started, 3)
        .unwrap_or_else(|e| fail("create_group", e));
    let me = parents.rank();
    if mode == "dies" {
        match parents.spawn(0, 1) {
            Err(CommError::Spawn(why)) if why.contains("exited with status 3 before it joined") => {
                println!("rank {me}: DIED BEFORE JOINING OK")
            }
            other => panic!("rank {me}: a spawn whose child exits gave {other:?}"),
        }
        return;
    }
    if mode == "none" {
        match parents.spawn(0, 1) {
            Err(CommError::Spawn(why)) if why.contains("no free slot") => {
                println!("rank {me}: NO SLOT OK")
            }
            other => panic!("rank {me}: a spawn without spare slots gave {other:?}"),
        }
        return;
    }
    if mode == "command" {
        command_parent(world, &parents);
        return;
    }
    if mode == "pairs" {
        // Two pairs spawn at once: both roots go for the same lowest free slot; the
        // launcher gives it to one and the other takes the next.
        let pair = parents
            .split(me / 2, me)
            .unwrap_or_else(|e| fail("split", e));
        let s = pair.spawn(0, 1).unwrap_or_else(|e| fail("spawn", e));
        let child = *s.children[0].as_ref().expect("started");
        if pair.rank() == 0 {
            s.inter
                .send(0, 7, &[me as u8 / 2])
                .unwrap_or_else(|e| fail("send", e));
            let mut b = [0u8; 1];
            s.inter
                .recv(Some(0), Some(8), &mut b)
                .unwrap_or_else(|e| fail("recv", e));
            assert_eq!(u32::from(b[0]), 100 + me / 2);
            println!("pair {} spawned world rank {child}", me / 2);
        }
        s.inter.free().unwrap_or_else(|e| fail("free", e));
        println!("rank {me}: PAIR OK");
        return;
    }
    let s = parents.spawn(0, 2).unwrap_or_else(|e| fail("spawn", e));
    let children: Vec<u32> = s
        .children
        .iter()
        .map(|c| *c.as_ref().expect("started"))
        .collect();
    assert_eq!(children, [world.job_ranks(), world.job_ranks() + 1]);
    assert_eq!((s.inter.rank(), s.inter.remote_size()), (me, 2));
    s.inter
        .send(me, 7, &[me as u8])
        .unwrap_or_else(|e| fail("send", e));
    let mut b = [0u8; 1];
    s.inter
        .recv(Some(me), Some(8), &mut b)
        .unwrap_or_else(|e| fail("recv", e));
    assert_eq!(b[0], 100 + me as u8);
    check_merged(&s.inter, false, me);
    s.inter.free().unwrap_or_else(|e| fail("free", e));
    println!("rank {me}: RUST SPAWN PARENT OK");
}

/// The `command` mode's parents: spawn the command, then (root) restart the child in
/// place once it killed itself.
fn command_parent(world: &World, parents: &Comm) {
    let me = parents.rank();
    let marker = std::env::args().nth(2).unwrap_or_default();
    let exe = std::env::current_exe().expect("this program's path");
    let cmd = SpawnCommand::new(exe)
        .arg0(CMD_ARGV0)
        .args(["cmdchild", &marker, "k=v"]);
    let s = parents
        .spawn_command(0, 1, &cmd)
        .unwrap_or_else(|e| fail("spawn_command", e));
    let child = *s.children[0].as_ref().expect("started");
    if me == 0 {
        let mut b = [0u8; 2];
        s.inter
            .recv(Some(0), Some(7), &mut b)
            .unwrap_or_else(|e| fail("recv", e));
        assert_eq!(&b, b"ok");
        // The child kills itself: the next receive fails, then it is restarted.
        let dead = s.inter.recv(Some(0), Some(8), &mut b);
        assert!(
            matches!(dead, Err(CommError::ProcFailed { .. })),
            "{dead:?}"
        );
        let g = world
            .comm()
            .restart_rank(child)
            .unwrap_or_else(|e| fail("restart_rank", e));
        println!("rank 0: restarted world rank {child} as incarnation {g}");
    }
    println!("rank {me}: RUST CMD PARENT OK");
}

/// This process's arguments are those of the `command` mode's spawn.
fn check_command_args() {
    let args: Vec<String> = std::env::args().collect();
    let marker = args.get(2).cloned().unwrap_or_default();
    assert_eq!(args, [CMD_ARGV0, "cmdchild", &marker, "k=v"]);
}

fn command_child(p: &steadfast::comm::Parent) {
    check_command_args();
    p.inter
        .send(0, 7, b"ok")
        .unwrap_or_else(|e| fail("send", e));
    println!("command child: CMD CHILD OK generation 1");
    // Flushed: the process dies without running destructors.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: raise has no memory-safety preconditions; the process ends here.
    unsafe { libc::raise(libc::SIGKILL) };
}

fn child(p: steadfast::comm::Parent, mode: &str) {
    if mode == "cmdchild" {
        command_child(&p);
        return;
    }
    let me = p.world.rank();
    if mode == "pairs" {
        assert_eq!((p.world.size(), p.inter.remote_size()), (1, 2));
        let mut b = [0u8; 1];
        p.inter
            .recv(Some(0), Some(7), &mut b)
            .unwrap_or_else(|e| fail("recv", e));
        p.inter
            .send(0, 8, &[100 + b[0]])
            .unwrap_or_else(|e| fail("send", e));
        p.inter.free().unwrap_or_else(|e| fail("free", e));
        println!("child of pair {}: PAIR CHILD OK", b[0]);
        return;
    }
    assert_eq!((p.world.size(), p.inter.remote_size()), (2, 2));
    let mut b = [0u8; 1];
    p.inter
        .recv(Some(me), Some(7), &mut b)
        .unwrap_or_else(|e| fail("recv", e));
    assert_eq!(u32::from(b[0]), me);
    p.inter
        .send(me, 8, &[100 + me as u8])
        .unwrap_or_else(|e| fail("send", e));
    check_merged(&p.inter, true, 2 + me);
    p.inter.free().unwrap_or_else(|e| fail("free", e));
    println!("child {me}: RUST SPAWN CHILD OK");
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode == "dies" && std::env::var("STEADFAST_GENERATION").as_deref() == Ok("1") {
        // A spawned process that ends before it joins the job.
        std::process::exit(3);
    }
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("init: {e}");
        std::process::exit(3)
    });
    match world.parent() {
        Ok(Some(p)) => child(p, &mode),
        // A spawned child restarted in place: an ordinary restored process.
        Ok(None) if mode == "cmdchild" => {
            check_command_args();
            let g = std::env::var("STEADFAST_GENERATION").unwrap_or_default();
            println!("command child: CMD CHILD OK generation {g}");
        }
        Ok(None) => parent(&world, &mode),
        Err(e) => fail("parent", e),
    }
    world.finalize();
}
