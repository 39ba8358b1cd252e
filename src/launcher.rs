//! The launcher side of `steadfast-run`: the key-value service ranks bootstrap from,
//! and the relay of rank failures to the survivors.
//!
//! One thread per rank connection; the store is a mutex-protected map (the launcher is
//! not on any hot path). A connection is served only after its `Hello` carries the
//! job's secret and a rank of the job not already connected.

use crate::bootstrap::wire::{Frame, FrameError, SECRET_LEN};
use std::collections::HashMap;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Default)]
struct State {
    store: HashMap<(u32, String), Vec<u8>>,
    dead: HashMap<u32, String>,
    fence_generation: u64,
    fenced: Vec<bool>,
    writers: HashMap<u32, Arc<Mutex<TcpStream>>>,
}

/// The key-value service of one job.
pub struct Service {
    size: u32,
    secret: [u8; SECRET_LEN],
    state: Mutex<State>,
    changed: Condvar,
}

impl Service {
    /// A service for `size` ranks authenticated by `secret`.
    pub fn new(size: u32, secret: [u8; SECRET_LEN]) -> Arc<Service> {
        Arc::new(Service {
            size,
            secret,
            state: Mutex::new(State {
                fenced: vec![false; size as usize],
                ..State::default()
            }),
            changed: Condvar::new(),
        })
    }

    /// Accepts connections on `listener` forever (run it on its own thread).
    pub fn serve(self: &Arc<Self>, listener: TcpListener) {
        for stream in listener.incoming().flatten() {
            let me = Arc::clone(self);
            std::thread::spawn(move || {
                let _ = me.client(stream);
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `rank` died and tells every other connected rank.
    pub fn rank_died(&self, rank: u32, how: &str) {
        let writers: Vec<(u32, Arc<Mutex<TcpStream>>)> = {
            let mut st = self.lock();
            st.dead.insert(rank, how.to_string());
            st.writers.remove(&rank);
            st.writers
                .iter()
                .map(|(r, w)| (*r, Arc::clone(w)))
                .collect()
        };
        self.changed.notify_all();
        let event = Frame::Failed {
            rank,
            how: how.to_string(),
        };
        for (_, w) in writers {
            let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
            let _ = event.write_to(&mut *w);
        }
    }

    fn client(&self, stream: TcpStream) -> Result<(), FrameError> {
        stream.set_nodelay(true).ok();
        let mut reader = stream.try_clone()?;
        let writer = Arc::new(Mutex::new(stream));
        let send = |f: &Frame| -> io::Result<()> {
            let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
            f.write_to(&mut *w)
        };
        let rank = match Frame::read_from(&mut reader)? {
            Frame::Hello { rank, secret } if secret == self.secret && rank < self.size => {
                let mut st = self.lock();
                if st.writers.contains_key(&rank) || st.dead.contains_key(&rank) {
                    drop(st);
                    send(&Frame::Error(format!(
                        "rank {rank} is already connected or dead"
                    )))?;
                    return Ok(());
                }
                st.writers.insert(rank, Arc::clone(&writer));
                rank
            }
            _ => {
                // Wrong secret, bad rank or not a Hello: say nothing useful, hang up.
                send(&Frame::Error("refused".into()))?;
                return Ok(());
            }
        };
        send(&Frame::Ok)?;
        loop {
            let answer = match Frame::read_from(&mut reader) {
                Ok(f) => self.handle(rank, f),
                Err(_) => return Ok(()), // the rank closed or died; its exit is reported
            };
            send(&answer)?;
        }
    }

    fn handle(&self, rank: u32, f: Frame) -> Frame {
        match f {
            Frame::Put { key, value } => {
                self.lock().store.insert((rank, key), value);
                self.changed.notify_all();
                Frame::Ok
            }
            Frame::Get { rank: owner, key } => {
                if owner >= self.size {
                    return Frame::Error(format!("no rank {owner} in a job of {}", self.size));
                }
                let mut st = self.lock();
                loop {
                    if let Some(v) = st.store.get(&(owner, key.clone())) {
                        return Frame::Value(v.clone());
                    }
                    if let Some(how) = st.dead.get(&owner) {
                        return Frame::Error(format!("dead: {how}"));
                    }
                    st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            }
            Frame::Fence => {
                let mut st = self.lock();
                let generation = st.fence_generation;
                st.fenced[rank as usize] = true;
                loop {
                    if st.fence_generation != generation {
                        return Frame::Ok;
                    }
                    let all =
                        (0..self.size).all(|r| st.fenced[r as usize] || st.dead.contains_key(&r));
                    if all {
                        st.fence_generation += 1;
                        st.fenced.iter_mut().for_each(|f| *f = false);
                        self.changed.notify_all();
                        return Frame::Ok;
                    }
                    st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            }
            other => Frame::Error(format!("not a request: {other:?}")),
        }
    }
}
