//! How a runtime embeds steadfast, end to end (`docs/embedding.md` walks through it):
//! bootstrap from the launcher, typed parameters, point-to-point with owned buffers,
//! one-sided access to an allocated window, then a failure: the last rank dies, the
//! survivors are told (`ProcFailed`), acknowledge, revoke, agree, shrink and go on, and
//! every survivor finalizes.
//!
//! ```sh
//! cargo build --release --example embed --bin steadfast-run
//! target/release/steadfast-run -n 4 target/release/examples/embed
//! ```
//!
//! Every survivor prints `EMBED OK`; the launcher exits 1 because a rank died (add
//! `--exit-status survivors` to get the survivors' status instead).

use steadfast::bootstrap;
use steadfast::params::ParamsBuilder;
use steadfast::{CommError, World, ANY_SOURCE};

fn main() {
    if let Err(e) = run() {
        eprintln!("embed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Parameters: the params files and `STEADFAST_*` variables, then the program's
    //    own choices on top (every value is checked; an error names the key, the value,
    //    the bound and where it came from).
    let params = ParamsBuilder::from_env(
        |name| std::env::var(name).ok(),
        std::env::var_os("HOME").map(Into::into),
    )?
    .progress_thread(false)
    .build()?;
    // 2. Bootstrap from whichever launcher started us (steadfast-run, Hydra, Slurm,
    //    mpirun), then the world: transports, node map, failure detector.
    let world = World::init_with(bootstrap::from_env()?, params)?;
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    if n < 3 {
        return Err("run with at least 3 ranks".into());
    }
    let victim = n - 1;

    // 3. Point to point with owned buffers: the requests own them until completion,
    //    so nothing the caller does can leave a transport writing freed memory.
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let mut recv = comm.irecv_owned(Some(left), Some(1), vec![0u8; 64 << 10])?;
    let mut send = comm.isend_owned(right, 1, vec![me as u8; 64 << 10])?;
    // Both are tested until both are done (a receive makes progress when it is
    // tested, so waiting on the send alone could wait for ever on a large message).
    while !(send.test()? & recv.test()?.is_some()) {}
    let (_, sent) = send.wait();
    sent?;
    let (inbox, status) = recv.wait();
    let status = status?;
    assert_eq!((status.source, status.len), (left, inbox.len()));
    assert!(inbox.iter().all(|&b| b == left as u8));

    // 4. One-sided: every rank puts its rank into the next rank's window.
    let win = comm.window_allocate(4)?;
    win.put(right, 0, &me.to_le_bytes())?;
    win.fence()?;
    let mut got = [0u8; 4];
    win.read_local(0, &mut got)?;
    assert_eq!(u32::from_le_bytes(got), left);
    win.free()?;

    // 5. A failure. The victim dies abruptly; everyone else blocks on a receive
    //    from it and is told, without any timeout in the program.
    //    A rank may leave a collective before the others have, and the others' part
    //    may then fail on the death (as ULFM allows): the victim dies only once every
    //    other rank says it is past the barrier.
    comm.barrier()?;
    if me == victim {
        for _ in 1..n {
            comm.recv(ANY_SOURCE, Some(4), &mut [])?;
        }
        // SAFETY: raise only delivers a signal to this process.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    comm.send(victim, 4, &[])?;
    // Another survivor may revoke first (step 6): then the operation reports that.
    let mut byte = [0u8; 1];
    match comm.recv(Some(victim), Some(2), &mut byte) {
        Err(CommError::ProcFailed { ranks }) => assert_eq!(ranks, vec![victim]),
        Err(CommError::Revoked) => {}
        other => return Err(format!("expected ProcFailed, got {other:?}").into()),
    }
    // A blocking wildcard receive fails while the failure is not acknowledged (a
    // non-blocking one would report `ProcFailedPending` and stay posted).
    match comm.recv(ANY_SOURCE, Some(3), &mut byte) {
        Err(CommError::ProcFailed { ranks }) if ranks.contains(&victim) => {}
        Err(CommError::Revoked) => {}
        other => return Err(format!("expected ProcFailed, got {other:?}").into()),
    }
    comm.ack_failed();
    // 6. Revoke (every survivor's pending and future operations on `comm` fail with
    //    Revoked), agree on a flag among survivors, shrink to a working communicator.
    if me == 0 {
        comm.revoke();
    }
    let agreed = comm.agree_full(1)?;
    assert_eq!(agreed.failed, vec![victim]);
    let survivors = comm.shrink()?;
    assert_eq!(survivors.size(), n - 1);
    let mut sum = [u64::from(me)];
    survivors.allreduce(&mut sum, steadfast::comm::ReduceOp::Sum)?;
    assert_eq!(sum[0], u64::from((0..victim).sum::<u32>()));
    println!(
        "rank {me}: EMBED OK (failures seen: {:?})",
        world
            .failures()
            .iter()
            .map(|f| (f.rank, f.how.as_str()))
            .collect::<Vec<_>>()
    );
    // 7. Leave together; finalize never waits on the dead.
    world.finalize();
    Ok(())
}
