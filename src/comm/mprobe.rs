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
    /// # Errors
    /// [`CommError::Truncated`] when it is longer than `buf` (it is consumed);
    /// [`CommError::ProcFailed`] when its sender died before a large message was pulled.
    pub fn recv(mut self, buf: &mut [u8]) -> Result<Status, CommError> {
        let env = self.env.take().expect("a message is received once");
        let out = self.comm.engine.lock().receive_taken(env, buf);
        super::p2p::outcome_result(out)
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            self.comm.engine.lock().release_taken(env);
        }
    }
}

impl Comm {
    /// `MPI_Improbe`: takes the earliest message a receive `(source, tag)` posted now
    /// would get; `None` when none has arrived.
    ///
    /// # Errors
    /// As [`Comm::iprobe`].
    pub fn improbe(
        &self,
        source: Option<u32>,
        tag: Option<u32>,
    ) -> Result<Option<Message>, CommError> {
        let mut guard = self.engine.lock();
        let e = &mut *guard;
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

    /// `MPI_Mprobe`: waits until [`improbe`](Self::improbe) takes a message.
    ///
    /// # Errors
    /// As [`Comm::probe`].
    pub fn mprobe(&self, source: Option<u32>, tag: Option<u32>) -> Result<Message, CommError> {
        let found = Spin::until(self, || {
            let m = self.improbe(source, tag);
            if matches!(m, Ok(None)) {
                self.engine.lock().progress();
            }
            m
        });
        match found {
            Err(CommError::ProcFailedPending { ranks }) => Err(CommError::ProcFailed { ranks }),
            other => other,
        }
    }
}
