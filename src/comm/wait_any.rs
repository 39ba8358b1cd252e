//! Waiting on several requests of different kinds at once (`MPI_Waitany`,
//! `MPI_Waitall`): receives, sends, agreements and restarts in one array.
//!
//! A request whose peer died reports its error and leaves the array; the others go on
//! and complete. A wildcard receive that meets a failure not yet acknowledged reports
//! [`CommError::ProcFailedPending`] and stays in the array (ULFM: it is still pending;
//! acknowledge with [`Comm::ack_failed`](super::Comm::ack_failed), then wait again, or
//! drop it to cancel it).
//!
//! ```no_run
//! use steadfast::comm::{wait_all, AnyRequest, Completion};
//! # fn demo(comm: &steadfast::Comm) -> Result<(), steadfast::CommError> {
//! let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
//! // SAFETY: the buffers outlive the requests, which wait_all finishes.
//! let mut reqs: Vec<Option<AnyRequest<'_>>> = unsafe {
//!     vec![
//!         Some(comm.irecv(Some(1), Some(7), &mut a)?.into()),
//!         Some(comm.irecv(Some(2), Some(7), &mut b)?.into()),
//!     ]
//! };
//! for (i, outcome) in wait_all(&mut reqs).into_iter().enumerate() {
//!     match outcome {
//!         Ok(Completion::Received(st)) => println!("{i}: {} bytes", st.len),
//!         Ok(_) => unreachable!("only receives here"),
//!         Err(e) => println!("{i}: {e}"),
//!     }
//! }
//! # Ok(()) }
//! ```

use steadfast_os::SpinWait;

use super::{AgreeRequest, Agreement, CommError, RecvRequest, RestartRequest, SendRequest, Status};

/// What a finished request gave.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// A send whose buffer may be reused.
    Sent,
    /// A receive, with its status.
    Received(Status),
    /// An agreement.
    Agreed(Agreement),
    /// A restart: the new incarnation's generation.
    Restarted(u32),
}

/// One request of any kind, for [`wait_any`] and [`wait_all`].
#[derive(Debug)]
#[non_exhaustive]
pub enum AnyRequest<'a> {
    /// [`Comm::irecv`](super::Comm::irecv).
    Recv(RecvRequest<'a>),
    /// [`Comm::isend`](super::Comm::isend).
    Send(SendRequest<'a>),
    /// [`Comm::iagree`](super::Comm::iagree).
    Agree(AgreeRequest),
    /// [`Comm::irestart_rank`](super::Comm::irestart_rank).
    Restart(RestartRequest),
}

impl<'a> From<RecvRequest<'a>> for AnyRequest<'a> {
    fn from(r: RecvRequest<'a>) -> Self {
        AnyRequest::Recv(r)
    }
}

impl<'a> From<SendRequest<'a>> for AnyRequest<'a> {
    fn from(r: SendRequest<'a>) -> Self {
        AnyRequest::Send(r)
    }
}

impl From<AgreeRequest> for AnyRequest<'_> {
    fn from(r: AgreeRequest) -> Self {
        AnyRequest::Agree(r)
    }
}

impl From<RestartRequest> for AnyRequest<'_> {
    fn from(r: RestartRequest) -> Self {
        AnyRequest::Restart(r)
    }
}

impl AnyRequest<'_> {
    /// Progresses once; the outcome once the request has finished.
    ///
    /// # Errors
    /// The request's own error (see each request's `test`).
    pub fn test(&mut self) -> Result<Option<Completion>, CommError> {
        Ok(match self {
            AnyRequest::Recv(r) => r.test()?.map(Completion::Received),
            AnyRequest::Send(r) => r.test()?.then_some(Completion::Sent),
            AnyRequest::Agree(r) => r.test()?.map(Completion::Agreed),
            AnyRequest::Restart(r) => r.test()?.map(Completion::Restarted),
        })
    }
}

/// Tests every request once, in order; the first that finished (its slot set to
/// `None`, as `MPI_Waitany` sets `MPI_REQUEST_NULL`), or that reports an error.
/// `None` when nothing finished this round.
fn test_round(
    requests: &mut [Option<AnyRequest<'_>>],
) -> Option<(usize, Result<Completion, CommError>)> {
    for (i, slot) in requests.iter_mut().enumerate() {
        let Some(r) = slot else { continue };
        match r.test() {
            Ok(None) => {}
            Ok(Some(c)) => {
                *slot = None;
                return Some((i, Ok(c)));
            }
            // ULFM: still pending, reported.
            Err(e @ CommError::ProcFailedPending { .. }) => return Some((i, Err(e))),
            Err(e) => {
                *slot = None;
                return Some((i, Err(e)));
            }
        }
    }
    None
}

/// Waits until one of `requests` finishes or fails; its index and outcome (the
/// request leaves the array, except a wildcard receive reporting
/// [`CommError::ProcFailedPending`], which stays). `None` when every slot is empty.
pub fn wait_any(
    requests: &mut [Option<AnyRequest<'_>>],
) -> Option<(usize, Result<Completion, CommError>)> {
    let mut spin = SpinWait::default();
    loop {
        if requests.iter().all(Option::is_none) {
            return None;
        }
        if let Some(done) = test_round(requests) {
            return Some(done);
        }
        spin.pause();
    }
}

/// Waits until every request has finished or failed; each one's outcome, by index
/// (an empty slot gives `InvalidArgument`). A wildcard receive reporting
/// [`CommError::ProcFailedPending`] is reported so and dropped (cancelled): `wait_all`
/// returns only when nothing is pending.
pub fn wait_all(requests: &mut [Option<AnyRequest<'_>>]) -> Vec<Result<Completion, CommError>> {
    let mut out: Vec<Option<Result<Completion, CommError>>> = vec![None; requests.len()];
    while let Some((i, outcome)) = wait_any(requests) {
        if matches!(outcome, Err(CommError::ProcFailedPending { .. })) {
            requests[i] = None;
        }
        out[i] = Some(outcome);
    }
    out.into_iter()
        .map(|o| {
            o.unwrap_or(Err(CommError::InvalidArgument(
                "no request in this slot".into(),
            )))
        })
        .collect()
}
