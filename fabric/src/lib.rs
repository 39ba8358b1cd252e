//! The libfabric layer of steadfast: safe, zero-copy messaging between processes over
//! any libfabric provider (Cray GNI and CXI, InfiniBand verbs, EFA, TCP, shared memory).
//!
//! # Quick start
//! ```no_run
//! use steadfast_fabric::{FabricConfig, Messenger, MessengerConfig, ANY_TAG};
//! # fn exchange(_: &[u8]) -> Vec<u8> { unimplemented!() }
//! let config = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), 0);
//! let mut messenger = Messenger::open(config)?;
//! // Hand our address to the peer (through your bootstrap) and add theirs.
//! let theirs = exchange(&messenger.address().to_bytes());
//! messenger.add_peer(1, &theirs)?;
//! messenger.send(1, 42, b"hello")?;
//! let mut buf = [0u8; 64];
//! let status = messenger.recv(Some(1), 0, ANY_TAG, &mut buf)?;
//! println!("{} bytes with tag {}", status.len, status.tag);
//! # Ok::<(), steadfast_fabric::Error>(())
//! ```
//!
//! # Layers
//! - [`Info`] resolves a provider name (`tcp` means the fastest RDM-capable TCP path
//!   of the installed libfabric; see [`ProviderResolution`]).
//! - [`Fabric`], [`Domain`], [`CompletionQueue`], [`AddressVector`], [`Endpoint`],
//!   [`MemoryRegion`]: RAII handles; children keep their parents open.
//! - [`Messenger`]: tagged send/receive with inject, eager and rendezvous (RMA-read)
//!   protocols, a registration cache, RMA and atomics, peer-death detection.
//!
//! # Thread safety
//! The handles are `!Send`; a [`Messenger`] owns a whole tree and is `Send`. Drive each
//! from one thread at a time: the domain runs with `FI_THREAD_DOMAIN`, lock-free inside
//! the provider.
//!
//! # Cleanup
//! Dropping a messenger cancels posted operations and closes every object in order.

mod address;
mod error;
mod info;
pub mod liveness;
mod messenger;
mod mr;
mod objects;
pub mod quirks;
mod shm_lock_rescue;

pub use address::PeerAddress;
pub use error::{fi_error_text, Error, Result};
pub use info::{
    apply_quirk_environment, available_providers, resolve_provider, FabricConfig, Info, MrMode,
    ProviderResolution,
};
pub use messenger::{
    Arrival, ArrivalData, Completion, ExposedBuffer, Exposure, Messenger, MessengerConfig,
    MessengerStats, PeerId, RemoteMessage, RemoteRegion, Request, ANY_TAG,
    DEFAULT_ADMISSION_TIMEOUT, DEFAULT_ARRIVAL_POOL, MAX_EXTRA, MAX_PEER_ID, MAX_USER_TAG,
};
pub use mr::{Access, CacheSlot, CacheStats, MemoryRegion, RegistrationCache};
pub use objects::{
    AddressVector, CompletionQueue, CqEntry, CqError, CqPoll, Domain, Endpoint, Fabric, Posted,
};

/// Loads libfabric if this process has not yet (it is opened on first use, never at
/// start: a process that never calls into the fabric never loads it) and says where
/// from: the path or name opened (`STEADFAST_LIBFABRIC` when set, else `libfabric.so.1`
/// through the dynamic linker, else the build-time directory), or "linked".
///
/// # Errors
/// [`Error::LibraryUnavailable`] naming the library and the dynamic linker's reason.
pub fn library() -> Result<&'static str> {
    steadfast_fabric_sys::library()
        .map(|lib| lib.origin())
        .map_err(|e| Error::LibraryUnavailable(e.to_string()))
}

/// The version of the libfabric library loaded at run time, as `(major, minor)`
/// (loading it, as [`library`] does).
///
/// # Errors
/// [`Error::LibraryUnavailable`] when it cannot be loaded.
pub fn libfabric_version() -> Result<(u32, u32)> {
    library()?;
    // SAFETY: fi_version takes no arguments and returns a packed version number.
    let v = unsafe { steadfast_fabric_sys::fi_version() };
    Ok((v >> 16, v & 0xffff))
}
