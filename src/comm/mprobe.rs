//! Matched probes (`MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`): a probe that takes the
//! message out of the matcher, so no other receive can get it, and hands it out as a
//! [`Message`] to receive later. Over every path (self, shared memory, fabric), as
//! `Comm::probe`.
//!
//! A taken message is matched: a synchronous sender is answered then. A large shm or
//! fabric message stays in its sender's memory until [`Message::recv`] pulls it; a
//! [`Message`] dropped unreceived lets it go (the sender's send completes), so nothing
//! waits for ever on a forgotten message. `mem::forget` of one leaks the envelope and
//! leaves such a sender waiting: memory safe, never a dangling buffer.

use steadfast_matching::Envelope;

use super::{Comm, CommError, Spin, Status};
use crate::world::engine::Engine;
use crate::world::matching::Payload;

/// A message taken by [`Comm::improbe`]/[`Comm::mprobe`], to be received with
/// [`Message::recv`].
pub struct Message {
    comm: Comm,
    env: Option<Envelope<Payload>>,
    status: Status,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Message {
    /// Source (comm rank), tag and length of the message.
    pub fn status(&self) -> Status {
        self.status
    }

    /// Receives the message into `buf` (`MPI_Mrecv`).
    ///
    /// The copy needs the engine (a message in a shared-memory ring or a large one
    /// still in its sender's memory is reached through the transports, which only the
    /// holder may drive), so this waits for it, by trying each turn
    /// (`Spin::until_polled`), never for another thread's whole operation.
    ///
    /// # Errors
    /// [`CommError::Truncated`] when it is longer than `buf` (it is consumed);
    /// [`CommError::ProcFailed`] when its sender died before a large message was pulled.
    pub fn recv(mut self, buf: &mut [u8]) -> Result<Status, CommError> {
        let mut env = self.env.take();
        Spin::until_polled(&self.comm.engine, |turn| {
            let Some(mut e) = turn.try_lock() else {
                return Ok(None);
            };
            match env.take() {
                Some(env) => super::p2p::outcome_result(e.receive_taken(env, buf)).map(Some),
                None => Err(CommError::InvalidArgument(
                    "a matched message is received once".into(),
                )),
            }
        })
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            // Releasing needs the engine too (a synchronous sender is answered, a large
            // message's sender let go): tried each turn, as `recv`.
            let mut env = Some(env);
            let _ = Spin::until_polled(&self.comm.engine, |turn| {
                Ok(turn.try_lock().map(|mut e| {
                    if let Some(env) = env.take() {
                        e.release_taken(env);
                    }
                }))
            });
        }
    }
}

impl Comm {
    /// `MPI_Improbe`: takes the earliest message a receive `(source, tag)` posted now
    /// would get; `None` when none has arrived.
    ///
    /// Never waits for another thread: while another thread holds the engine, `None`
    /// at once, as [`Comm::iprobe`] (whose doc says which errors are reported then).
    ///
    /// # Errors
    /// As [`Comm::iprobe`].
    pub fn improbe(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Message>, CommError> {
        match self.engine.try_lock() {
            Some(mut guard) => self.improbe_in(&mut guard, source, tag),
            None => self.probe_busy(source, tag).map(|()| None),
        }
    }

    /// [`improbe`](Self::improbe) with the engine held.
    fn improbe_in(
        &self,
        e: &mut Engine,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Message>, CommError> {
        let ctx = self.probe_plan(e, source, tag)?;
        match e.take_envelope(ctx, source, tag) {
            Ok(found) => Ok(found.map(|env| Message {
                comm: self.clone(),
                status: Status {
                    source: env.source.0,
                    tag: env.tag.0,
                    len: env.len,
                },
                env: Some(env),
            })),
            Err(err) => Err(self.probe_error(e, err)),
        }
    }

    /// `MPI_Mprobe`: waits until [`improbe`](Self::improbe) takes a message, trying the
    /// engine each turn as [`Comm::probe`] (a try that gets it and finds nothing runs
    /// a round of progress).
    ///
    /// # Errors
    /// As [`Comm::probe`].
    pub fn mprobe(&self, source: Option<u32>, tag: Option<u32>) -> Result<Message, CommError> {
        let found = Spin::until_polled(&self.engine, |turn| match turn.try_lock() {
            Some(mut e) => {
                let m = self.improbe_in(&mut e, source, tag);
                if matches!(m, Ok(None)) {
                    e.progress();
                }
                m
            }
            None => self.probe_busy(source, tag).map(|()| None),
        });
        super::probe::blocking_error(found)
    }
}
