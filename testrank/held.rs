//! Running a call while another thread holds a communicator's engine, shared by the
//! thread tests (`tests/threads.rs`) and the ranks they start (`testrank/lane_ft.rs`).

use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use steadfast::Comm;

/// Runs `f` on this thread while another thread holds `comm`'s engine; returns its
/// result and how long it took. Panics if `f` had not returned after 30 s (the holder
/// lets go then: `f` waited for it).
pub fn while_held<T>(comm: &Comm, f: impl FnOnce() -> T) -> (T, Duration) {
    let (held_tx, held_rx) = channel();
    let (done_tx, done_rx) = channel::<()>();
    let holder = {
        let comm = comm.clone();
        std::thread::spawn(move || {
            let hold = comm.hold_engine_for_test();
            held_tx.send(()).unwrap();
            let in_time = done_rx.recv_timeout(Duration::from_secs(30)).is_ok();
            drop(hold);
            in_time
        })
    };
    held_rx.recv().unwrap();
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    done_tx.send(()).unwrap();
    assert!(holder.join().unwrap(), "waited for the holder ({took:?})");
    (out, took)
}
