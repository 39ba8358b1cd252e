//! The one error type of the fabric layer.

use std::time::Duration;

use crate::PeerId;

/// Everything that can go wrong in the fabric layer.
///
/// `-FI_EAGAIN` never appears here: it is back-pressure, handled by progressing and
/// retrying inside the layer. Errors that mean "the peer is gone" are
/// [`Error::PeerUnreachable`], so that a runtime can turn them into failure suspicions.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No provider of that name is available on this machine.
    #[error("provider {requested:?} is not available here; available providers: {}", available.join(", "))]
    ProviderNotFound {
        /// The name that was asked for.
        requested: String,
        /// Providers that `fi_getinfo` offers on this machine (RDM endpoints).
        available: Vec<String>,
    },
    /// The provider exists but offers nothing matching the requested domain or features.
    #[error("provider {provider:?} has no endpoint matching {what}")]
    NoMatchingEndpoint {
        /// The provider that was resolved.
        provider: String,
        /// What could not be matched (domain name, capability).
        what: String,
    },
    /// libfabric could not be loaded (it is opened on first use; see
    /// `steadfast_fabric_sys::library`): the text names the library and the reason.
    #[error("{0}")]
    LibraryUnavailable(String),
    /// A libfabric call failed.
    #[error("{call} failed: {message} (-{code})")]
    Fabric {
        /// The libfabric function that failed.
        call: &'static str,
        /// The positive libfabric error number (`FI_E*`).
        code: u32,
        /// `fi_strerror` of the code.
        message: String,
    },
    /// Address bytes that do not decode to an address of this provider.
    #[error("malformed endpoint address: {0}")]
    MalformedAddress(String),
    /// The peer is gone: its process died, its connection was refused or reset.
    #[error("peer {peer} unreachable: {reason}")]
    PeerUnreachable {
        /// The peer.
        peer: PeerId,
        /// What showed it (provider error text, "process exited").
        reason: String,
    },
    /// A message was longer than the receive buffer. The buffer's contents are unspecified.
    #[error("message of {} truncated to a receive buffer of {buffer_len} bytes",
        message_len.map_or("unreported length".to_owned(), |n| format!("{n} bytes")))]
    Truncated {
        /// Length of the message as sent: always known for rendezvous messages and for
        /// messages that fit the 64-byte bounce buffer; for other eager messages only if
        /// the provider reports it (libfabric 1.17's net, shm and rxm do not).
        message_len: Option<usize>,
        /// Length of the buffer that was posted.
        buffer_len: usize,
    },
    /// The provider cannot do this operation.
    #[error("unsupported by provider {provider:?}: {what}")]
    Unsupported {
        /// The provider.
        provider: String,
        /// The operation.
        what: String,
    },
    /// A blocking operation did not complete within its timeout.
    #[error("{operation} did not complete within {after:?}")]
    Timeout {
        /// What was waited for.
        operation: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// A restarted process's send waited longer than the admission bound
    /// ([`MessengerConfig::admission_timeout`](crate::MessengerConfig::admission_timeout),
    /// or `operation_timeout` if shorter) for its peer to admit it: the peer admits a
    /// restarted process in a round of its own progress once it learns of the restart,
    /// so a peer that makes no progress (or never learns of it) holds the send.
    #[error(
        "peer {peer} did not admit this restarted process (incarnation {generation}) within {after:?}: \
         a peer admits a restarted process in its own progress once it learns of the restart; \
         is it progressing?"
    )]
    NotAdmitted {
        /// The peer.
        peer: PeerId,
        /// This process's incarnation.
        generation: u32,
        /// The bound that passed.
        after: Duration,
    },
    /// The operation was cancelled before it completed.
    #[error("operation cancelled")]
    Cancelled,
    /// A rendezvous message's sender withdrew it while it was being read (its send was
    /// cancelled or abandoned: over MPI, its communicator was revoked or it learnt of a
    /// failure). The sender is alive as far as this process knows; the receive buffer's
    /// contents are unspecified.
    #[error("peer {peer} withdrew the message while it was being read")]
    Withdrawn {
        /// The sender.
        peer: PeerId,
    },
    /// Bad input from the caller (an out-of-range tag, an unknown peer id, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// More operations in flight than the configured request slots.
    #[error("all {0} request slots are in use")]
    TooManyRequests(usize),
    /// The messenger stopped working and every later call returns this: the provider
    /// kept a buffer after a cancel, so the endpoint was closed to make it let go (see
    /// `Messenger::cancel`). Open a new messenger.
    #[error("messenger broken: {reason}")]
    Broken {
        /// What broke it.
        reason: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Human-readable text for a libfabric error number (positive or negative).
pub fn fi_error_text(code: i64) -> String {
    let code = code.unsigned_abs().min(i32::MAX as u64) as i32;
    // SAFETY: fi_strerror accepts any int and returns a pointer to a static,
    // NUL-terminated string (or a strerror buffer), never null.
    let text = unsafe { std::ffi::CStr::from_ptr(steadfast_fabric_sys::fi_strerror(code)) };
    text.to_string_lossy().into_owned()
}

/// Turns a libfabric return code into a `Result`: negative is an error of `call`.
pub(crate) fn check(call: &'static str, ret: i64) -> Result<i64> {
    if ret < 0 {
        Err(Error::Fabric {
            call,
            code: ret.unsigned_abs() as u32,
            message: fi_error_text(ret),
        })
    } else {
        Ok(ret)
    }
}

/// Whether a positive libfabric error number means the remote process is gone.
pub(crate) fn means_peer_gone(code: u32) -> bool {
    use steadfast_fabric_sys as sys;
    [
        sys::FI_ECONNREFUSED,
        sys::FI_ECONNRESET,
        sys::FI_ECONNABORTED,
        sys::FI_ENOTCONN,
        sys::FI_EHOSTUNREACH,
        sys::FI_ENETUNREACH,
        sys::FI_ETIMEDOUT,
        sys::FI_EADDRNOTAVAIL,
        sys::FI_ESHUTDOWN,
        sys::FI_EIO,
    ]
    .contains(&code)
        || code == libc::EPIPE as u32
}
