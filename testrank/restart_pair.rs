//! The `pair` mode of the restart test rank (see the crate doc): two ranks killed at
//! once and restarted at once by two survivors, which must reach each other.

use std::time::{Duration, Instant};
use steadfast::{Comm, CommError, World};

use super::{die_leaving_stale_messages, restart};

const KILL: u32 = 31;
const READY: u32 = 32;
const PAIR: u32 = 33;
const PONG: u32 = 8;
const DONE: u32 = 35;

/// Retries `op` while its peer is still failed here (its restart not admitted yet).
fn when_admitted<T>(world: &World, mut op: impl FnMut() -> Result<T, CommError>) -> T {
    let start = Instant::now();
    loop {
        match op() {
            Ok(v) => return v,
            Err(CommError::ProcFailed { .. }) if start.elapsed() < Duration::from_secs(60) => {
                world.progress_for(Duration::from_millis(1));
            }
            Err(e) => panic!("rank {}: {e}", world.rank()),
        }
    }
}

/// `pair` (4 ranks): ranks 2 and 3 are SIGKILLed together (each leaving rank 0 two
/// messages with the answer's tag); rank 0 restarts 2 while rank 1 restarts 3; the new
/// incarnations exchange a message with each other and then answer rank 0 with what
/// they heard, which rank 0 checks (`PAIR ANSWERED rank R`).
pub fn run(world: &World, comm: &Comm) {
    let me = comm.rank();
    if world.is_restored() {
        let other = 5 - me;
        let said = format!("rank {me} generation {}", world.generation());
        when_admitted(world, || comm.send(other, PAIR, said.as_bytes()));
        let mut heard = vec![0u8; 64];
        let st = when_admitted(world, || comm.recv(Some(other), Some(PAIR), &mut heard));
        let heard = String::from_utf8_lossy(&heard[..st.len]).into_owned();
        assert_eq!(heard, format!("rank {other} generation 1"));
        let answer = format!("{said} heard {heard}");
        when_admitted(world, || comm.send(0, PONG, answer.as_bytes()));
        let mut done = [0u8; 1];
        comm.recv(Some(0), Some(DONE), &mut done).unwrap();
        println!("PAIR RESTORED rank {me}");
        return;
    }
    let mut byte = [0u8; 1];
    match me {
        2 | 3 => {
            comm.recv(Some(0), Some(KILL), &mut byte).unwrap();
            die_leaving_stale_messages(comm, 0);
        }
        1 => {
            comm.send(0, READY, b"r").unwrap();
            restart(world, comm, 3).unwrap_or_else(|e| panic!("rank 1: restart of 3: {e}"));
        }
        _ => {
            comm.recv(Some(1), Some(READY), &mut byte).unwrap();
            comm.send(2, KILL, b"k").unwrap();
            comm.send(3, KILL, b"k").unwrap();
            restart(world, comm, 2).unwrap_or_else(|e| panic!("rank 0: restart of 2: {e}"));
            for r in [2, 3] {
                let mut answer = vec![0u8; 3000];
                // Rank 1 restarts 3: until its new incarnation is admitted here, what
                // the dead one sent is still delivered (ULFM: messages sent before a
                // failure may be received); admission drops the rest.
                let st = loop {
                    let st = when_admitted(world, || comm.recv(Some(r), Some(PONG), &mut answer));
                    let stale = &answer[..st.len] == b"stale"
                        || (st.len == 3000 && answer.iter().all(|&b| b == 0xee));
                    if !stale {
                        break st;
                    }
                };
                let other = 5 - r;
                assert_eq!(
                    String::from_utf8_lossy(&answer[..st.len]),
                    format!("rank {r} generation 1 heard rank {other} generation 1"),
                    "rank {r}'s answer"
                );
                println!("PAIR ANSWERED rank {r}");
            }
            for r in 1..4 {
                when_admitted(world, || comm.send(r, DONE, b"d"));
            }
        }
    }
    if me == 1 {
        comm.recv(Some(0), Some(DONE), &mut byte).unwrap();
    }
}
