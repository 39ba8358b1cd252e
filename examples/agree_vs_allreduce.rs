//! Failure-free agreement against an 8-byte allreduce, alternated in one run so both
//! see the same machine load: `steadfast-run -n N agree_vs_allreduce [ITERS] [ROUNDS] [agree|allreduce]`
//! (the last: time only that one).
//! Rank 0 prints one line per round: `round agree_us allreduce_us ratio`, then medians.

use std::time::Instant;

use steadfast::comm::ReduceOp;
use steadfast::World;

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: usize = args.next().map_or(5000, |v| v.parse().expect("ITERS"));
    let rounds: usize = args.next().map_or(7, |v| v.parse().expect("ROUNDS"));
    let only = args.next().unwrap_or_default();
    let (do_ag, do_ar) = (only != "allreduce", only != "agree");
    let world = World::init().expect("init");
    let comm = world.comm();
    let me = comm.rank();
    let (mut ag, mut ar) = (Vec::new(), Vec::new());
    for _ in 0..iters / 5 {
        comm.agree(1).unwrap();
        comm.allreduce(&mut [1], ReduceOp::Sum).unwrap();
    }
    for r in 0..rounds {
        let t = Instant::now();
        for _ in 0..iters * do_ag as usize {
            comm.agree(1).unwrap();
        }
        let a = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
        let t = Instant::now();
        for _ in 0..iters * do_ar as usize {
            comm.allreduce(&mut [1], ReduceOp::Sum).unwrap();
        }
        let b = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
        if me == 0 {
            println!("{r} {a:.3} {b:.3} {:.2}", a / b);
        }
        ag.push(a);
        ar.push(b);
    }
    if me == 0 {
        ag.sort_by(f64::total_cmp);
        ar.sort_by(f64::total_cmp);
        let (a, b) = (ag[rounds / 2], ar[rounds / 2]);
        println!("median agree {a:.3} allreduce {b:.3} ratio {:.2}", a / b);
    }
    drop(comm);
    world.finalize();
}
