//! The service's event loop: one thread, `poll` over the listener, a wake-up socket
//! and every connection, all nonblocking. See the module doc of [`super`] for the
//! rules it enforces.

use super::store::{Pending, Step, Store};
use super::Service;
use crate::bootstrap::wire::{Frame, HELLO_LEN, MAX_FRAME, PROTOCOL_VERSION};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Longest sleep of one poll when nothing has a deadline.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// Connections accepted per round, so reading what arrived is never starved.
const ACCEPTS_PER_ROUND: usize = 64;
/// Pause of accepting when the process is out of descriptors and no stranger is left
/// to push out.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Who is at the other end of a connection.
enum Who {
    /// Not authenticated yet; connected at `since`.
    Stranger { since: Instant },
    /// Rank `rank`, with the request it waits on, if any.
    Rank { rank: u32, pending: Option<Pending> },
}

struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet decoded.
    rbuf: Vec<u8>,
    /// Bytes to send; `wbuf[..sent]` are sent.
    wbuf: Vec<u8>,
    sent: usize,
    who: Who,
    /// Close once `wbuf` is sent (a refusal), reading nothing more.
    closing: bool,
}

impl Conn {
    /// Largest frame body this end may send now.
    fn max_body(&self) -> usize {
        match self.who {
            Who::Stranger { .. } => HELLO_LEN,
            Who::Rank { .. } => MAX_FRAME,
        }
    }
    fn waiting(&self) -> bool {
        matches!(
            self.who,
            Who::Rank {
                pending: Some(_),
                ..
            }
        )
    }
}

/// What reading a connection found.
enum Fill {
    Open,
    Closed,
}

pub(super) struct EventLoop<'a> {
    svc: &'a Service,
    listener: TcpListener,
    store: Store,
    conns: Vec<Option<Conn>>,
    /// The connection of each rank.
    by_rank: Vec<Option<usize>>,
    accept_paused_until: Option<Instant>,
}

impl<'a> EventLoop<'a> {
    pub(super) fn new(svc: &'a Service, listener: TcpListener) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let mut store = Store::new(svc.size, svc.limits.clone());
        if svc
            .spawn_hook
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            store.allow_spawns();
        }
        store.set_spares(*svc.first_spare.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(EventLoop {
            svc,
            listener,
            store,
            conns: Vec::new(),
            by_rank: vec![None; svc.size as usize],
            accept_paused_until: None,
        })
    }

    pub(super) fn run(mut self) -> io::Result<()> {
        loop {
            let now = Instant::now();
            let accepting = self.accept_paused_until.is_none_or(|t| now >= t);
            let mut fds = vec![
                pollfd(self.svc.wake_rx.as_raw_fd(), libc::POLLIN),
                pollfd(
                    self.listener.as_raw_fd(),
                    if accepting { libc::POLLIN } else { 0 },
                ),
            ];
            let mut slots = Vec::new();
            for (i, c) in self.conns.iter().enumerate() {
                let Some(c) = c else { continue };
                let mut events = 0;
                if !c.closing && c.rbuf.len() < 4 + c.max_body() {
                    events |= libc::POLLIN;
                }
                if c.sent < c.wbuf.len() {
                    events |= libc::POLLOUT;
                }
                fds.push(pollfd(c.stream.as_raw_fd(), events));
                slots.push(i);
            }
            let due = self.next_deadline(now);
            let timeout = due.map_or(IDLE_POLL, |d| {
                d.saturating_duration_since(now).min(IDLE_POLL)
            });
            // Round up so a deadline is never polled for just before it passes.
            let ms = timeout.as_micros().div_ceil(1000) as i32;
            // SAFETY: `fds` is a valid array of pollfds whose descriptors stay open
            // for the duration of the call.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                log::error!("launcher service: poll failed: {e}");
                return Err(e);
            }
            if fds[0].revents != 0 {
                let mut sink = [0u8; 64];
                while matches!((&self.svc.wake_rx).read(&mut sink), Ok(n) if n > 0) {}
            }
            let deaths = self.take_deaths();
            for (k, &i) in slots.iter().enumerate() {
                let revents = fds[k + 2].revents;
                if revents & libc::POLLOUT != 0 {
                    self.flush(i);
                }
                if revents & libc::POLLERR != 0
                    || revents & (libc::POLLHUP | libc::POLLIN) == libc::POLLHUP
                {
                    // Gone, with nothing left to read.
                    self.close(i);
                } else if revents & libc::POLLIN != 0 {
                    self.read(i);
                }
            }
            if fds[1].revents & libc::POLLIN != 0 {
                self.accept();
            }
            let now = Instant::now();
            self.expire(now);
            // Requests are re-examined after puts and fences as they come; here only
            // for deaths and deadlines.
            if deaths || due.is_some_and(|d| now >= d) {
                self.answer_waiting(now);
            }
        }
    }

    /// The earliest stranger timeout or get deadline.
    fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let mut next = self.accept_paused_until.filter(|&t| t > now);
        for c in self.conns.iter().flatten() {
            let at = match &c.who {
                Who::Stranger { since } => Some(*since + self.svc.limits.hello_timeout),
                Who::Rank {
                    pending: Some(p), ..
                } => self.store.deadline(p),
                Who::Rank { .. } => None,
            };
            next = match (next, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    /// Applies the deaths reported since the last round; whether there were any.
    fn take_deaths(&mut self) -> bool {
        let deaths =
            std::mem::take(&mut *self.svc.deaths.lock().unwrap_or_else(|p| p.into_inner()));
        let any = !deaths.is_empty();
        for (rank, generation, how) in deaths {
            if !self.store.rank_died(rank, generation, &how) {
                continue;
            }
            if let Some(i) = self.by_rank[rank as usize] {
                self.close(i);
            }
            let event = Frame::Failed {
                rank,
                generation: self.store.generation(rank),
                how,
            };
            for i in self.by_rank.clone().into_iter().flatten() {
                self.send(i, &event);
            }
        }
        any
    }

    /// Starts the incarnations the store asked for (a spawn that fails is the death of
    /// that incarnation, which answers its restarts), and announces the ones that
    /// joined. Returns whether a spawn failed (waiting requests must be looked at).
    fn spawn_and_announce(&mut self) -> bool {
        let mut failed = false;
        for (rank, generation, command) in self.store.take_spawns() {
            let result = {
                let mut hook = self
                    .svc
                    .spawn_hook
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                match hook.as_mut() {
                    Some(spawn) => spawn(rank, generation, command.as_ref()),
                    None => Err("this launcher service has no spawner".into()),
                }
            };
            match result {
                Ok(pid) => {
                    log::debug!("launcher service: rank {rank} restarted as incarnation {generation} (pid {pid})");
                    self.store.spawned(rank, generation, pid);
                }
                Err(why) => {
                    log::warn!("launcher service: cannot restart rank {rank}: {why}");
                    self.store.rank_died(
                        rank,
                        Some(generation),
                        &format!("could not be started ({why})"),
                    );
                    failed = true;
                }
            }
        }
        for (rank, generation) in self.store.take_rejoined() {
            let event = Frame::Rejoined { rank, generation };
            for (r, i) in self.by_rank.clone().into_iter().enumerate() {
                if let (Some(i), true) = (i, r as u32 != rank) {
                    self.send(i, &event);
                }
            }
        }
        failed
    }

    fn accept(&mut self) {
        for _ in 0..ACCEPTS_PER_ROUND {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    stream.set_nodelay(true).ok();
                    if self.strangers() >= self.svc.limits.max_strangers {
                        self.push_out_oldest_stranger();
                    }
                    log::debug!("launcher service: connection from {peer}");
                    let i = self.insert(Conn {
                        stream,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        sent: 0,
                        who: Who::Stranger {
                            since: Instant::now(),
                        },
                        closing: false,
                    });
                    // A rank's Hello is often there already.
                    self.read(i);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    if !self.push_out_oldest_stranger() {
                        log::warn!(
                            "launcher service: out of descriptors ({e}); accepting again in {ACCEPT_BACKOFF:?}"
                        );
                        self.accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                        return;
                    }
                }
                // The peer gave up before we accepted (ECONNABORTED) and the like.
                Err(e) => log::debug!("launcher service: accept: {e}"),
            }
        }
    }

    fn insert(&mut self, c: Conn) -> usize {
        match self.conns.iter().position(Option::is_none) {
            Some(i) => {
                self.conns[i] = Some(c);
                i
            }
            None => {
                self.conns.push(Some(c));
                self.conns.len() - 1
            }
        }
    }

    fn strangers(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .filter(|c| matches!(c.who, Who::Stranger { .. }))
            .count()
    }

    /// Closes the stranger that connected first; false if there is none.
    fn push_out_oldest_stranger(&mut self) -> bool {
        let oldest = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c.as_ref()?.who {
                Who::Stranger { since } => Some((since, i)),
                Who::Rank { .. } => None,
            })
            .min();
        match oldest {
            Some((_, i)) => {
                log::debug!("launcher service: pushing out the oldest unauthenticated connection");
                self.close(i);
                true
            }
            None => false,
        }
    }

    /// Closes strangers past their time, and refused connections done sending.
    fn expire(&mut self, now: Instant) {
        let timeout = self.svc.limits.hello_timeout;
        for i in 0..self.conns.len() {
            let Some(c) = &self.conns[i] else { continue };
            let late = matches!(c.who, Who::Stranger { since } if now >= since + timeout);
            if late {
                log::debug!("launcher service: no hello within {timeout:?}; closing");
            }
            if late || (c.closing && c.sent == c.wbuf.len()) {
                self.close(i);
            }
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(c) = self.conns[i].take() {
            if let Who::Rank { rank, .. } = c.who {
                if self.by_rank[rank as usize] == Some(i) {
                    self.by_rank[rank as usize] = None;
                }
            }
        }
    }

    /// Reads what connection `i` has (up to one frame more than it may send), then
    /// handles its complete frames.
    fn read(&mut self, i: usize) {
        if let Fill::Closed = self.fill(i) {
            self.close(i);
            return;
        }
        self.handle_frames(i, Instant::now());
    }

    fn fill(&mut self, i: usize) -> Fill {
        let Some(c) = self.conns[i].as_mut() else {
            return Fill::Closed;
        };
        if c.closing {
            return Fill::Open;
        }
        let cap = 4 + c.max_body();
        let mut chunk = [0u8; 16 << 10];
        while c.rbuf.len() < cap {
            let want = (cap - c.rbuf.len()).min(chunk.len());
            match c.stream.read(&mut chunk[..want]) {
                Ok(0) => return Fill::Closed,
                Ok(n) => c.rbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return Fill::Closed,
            }
        }
        Fill::Open
    }

    /// Handles the complete frames of connection `i` until one must wait.
    fn handle_frames(&mut self, i: usize, now: Instant) {
        loop {
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            if c.closing || c.waiting() || c.rbuf.len() < 4 {
                return;
            }
            let len = u32::from_le_bytes([c.rbuf[0], c.rbuf[1], c.rbuf[2], c.rbuf[3]]) as usize;
            if len == 0 || len > c.max_body() {
                log::debug!("launcher service: frame of {len} bytes refused; closing");
                self.refuse(i, "frame length out of range".into());
                return;
            }
            if c.rbuf.len() < 4 + len {
                return;
            }
            let body: Vec<u8> = c.rbuf.drain(..4 + len).skip(4).collect();
            let frame = match Frame::decode(&body) {
                Ok(f) => f,
                Err(e) => {
                    self.refuse(i, e.to_string());
                    return;
                }
            };
            match c.who {
                Who::Stranger { .. } => self.hello(i, frame),
                Who::Rank { rank, .. } => self.request(i, rank, frame, now),
            }
        }
    }

    /// Sends `why` and closes connection `i` once it is sent.
    fn refuse(&mut self, i: usize, why: String) {
        self.send(i, &Frame::Error(why));
        if let Some(c) = self.conns[i].as_mut() {
            c.closing = true;
            c.rbuf.clear();
        }
    }

    fn hello(&mut self, i: usize, frame: Frame) {
        let (version, rank, generation) = match frame {
            Frame::Hello {
                version,
                rank,
                generation,
                secret,
            } if constant_time_eq(&secret, &self.svc.secret) && rank < self.svc.size => {
                (version, rank, generation)
            }
            // Wrong secret, bad rank or not a Hello: say nothing useful, hang up.
            _ => return self.refuse(i, "refused".into()),
        };
        if version != PROTOCOL_VERSION {
            return self.refuse(
                i,
                format!(
                    "bootstrap protocol version {version}, but this steadfast-run speaks version {PROTOCOL_VERSION}"
                ),
            );
        }
        let current = self.store.generation(rank);
        if generation != current {
            // Fencing: an old incarnation never gets back in once replaced.
            let why =
                format!("rank {rank} incarnation {generation} is not the current one ({current})");
            return self.refuse(i, why);
        }
        if let Some(how) = self.store.dead(rank) {
            let why = format!("rank {rank} has already ended ({how})");
            return self.refuse(i, why);
        }
        if let Some(old) = self.by_rank[rank as usize] {
            log::info!("launcher service: rank {rank} connected again; closing its old connection");
            self.close(old);
        }
        self.by_rank[rank as usize] = Some(i);
        if let Some(c) = self.conns[i].as_mut() {
            c.who = Who::Rank {
                rank,
                pending: None,
            };
        }
        self.send(i, &Frame::Ok);
        // A rank that connects after others died (a restarted one) learns of them.
        for (dead, generation, how) in self.store.dead_ranks() {
            if dead != rank {
                let event = Frame::Failed {
                    rank: dead,
                    generation,
                    how,
                };
                self.send(i, &event);
            }
        }
    }

    fn request(&mut self, i: usize, rank: u32, frame: Frame, now: Instant) {
        let put_key = match &frame {
            Frame::Put { key, .. } => Some(key.clone()),
            _ => None,
        };
        // Only a put or a fence can complete others' requests (or show a get cannot
        // be answered); a get changes nothing.
        let may_unblock = !matches!(frame, Frame::Get { .. });
        match self.store.request(rank, frame, now) {
            Step::Answer(answer) => {
                if let (Frame::Ok, Some(key)) = (&answer, put_key) {
                    self.run_put_hook(rank, &key);
                }
                self.send(i, &answer);
            }
            Step::Wait(p) => {
                if let Some(Conn {
                    who: Who::Rank { pending, .. },
                    ..
                }) = self.conns[i].as_mut()
                {
                    *pending = Some(p);
                }
            }
        }
        if may_unblock {
            self.answer_waiting(now);
        }
    }

    fn run_put_hook(&mut self, rank: u32, key: &str) {
        let mut hook = self.svc.put_hook.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(hook), Some(value)) = (hook.as_mut(), self.store.value(rank, key)) {
            hook(rank, key, value);
        }
    }

    /// Answers every waiting request that can be answered, until none can; starts
    /// the restarts asked for.
    fn answer_waiting(&mut self, now: Instant) {
        loop {
            if self.spawn_and_announce() {
                continue;
            }
            let mut answered = Vec::new();
            for i in self.by_rank.iter().flatten().copied() {
                let Some(Conn {
                    who: Who::Rank { rank, pending },
                    ..
                }) = self.conns[i].as_mut()
                else {
                    continue;
                };
                let Some(p) = pending else { continue };
                if let Some(answer) = self.store.poll(*rank, p, now) {
                    *pending = None;
                    answered.push((i, answer));
                }
            }
            if answered.is_empty() && !self.spawn_and_announce() {
                return;
            }
            for (i, answer) in answered {
                self.send(i, &answer);
                // Requests sent behind the one that waited.
                self.handle_frames(i, now);
            }
        }
    }

    /// Queues `frame` on connection `i` and sends what the socket takes.
    fn send(&mut self, i: usize, frame: &Frame) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        if c.sent == c.wbuf.len() {
            c.wbuf.clear();
            c.sent = 0;
        }
        c.wbuf.extend_from_slice(&frame.encode());
        if c.wbuf.len() - c.sent > self.svc.limits.max_queued_bytes {
            log::warn!(
                "launcher service: more than {} bytes queued to a connection that does not read; closing it",
                self.svc.limits.max_queued_bytes
            );
            self.close(i);
            return;
        }
        self.flush(i);
    }

    fn flush(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        while c.sent < c.wbuf.len() {
            match c.stream.write(&c.wbuf[c.sent..]) {
                Ok(0) => return self.close(i),
                Ok(n) => c.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
    }
}

fn pollfd(fd: i32, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Compares secrets in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}
