//! `libsteadfast`: the C ABI of steadfast, for runtimes written in C (an MPI library,
//! say) that embed it as their transport and fault-tolerance layer.
//!
//! The interface is `include/steadfast.h`, generated from this crate by cbindgen
//! (`tests/header.rs` fails when the committed header differs; `docs/capi.md` says how
//! to regenerate and install it). In short:
//!
//! - opaque handles: `sf_world`, `sf_comm`, `sf_request`, `sf_window`, created through
//!   out pointers and freed by `sf_*_free` (or `sf_finalize`), which null the pointer;
//! - every call returns an `int`: `SF_OK` (0) or an `SF_ERR_*` code;
//!   `sf_error_string(code)` describes a code, `sf_last_error_message()` the last
//!   failure on the calling thread with its values;
//! - no panic crosses into C (it becomes `SF_ERR_INTERNAL`); null pointers are
//!   `SF_ERR_INVALID_ARG`;
//! - thread safety: a world and every handle made from it belong to the thread that
//!   called `sf_init`; a call from another thread returns `SF_ERR_WRONG_THREAD` and
//!   does nothing (the Rust `World` and `Comm` are `!Send`);
//! - the non-blocking calls use the caller's memory: it must stay valid until the
//!   request completes or is freed (see `sf_isend`, `sf_irecv`, `sf_comm_iagree`).
//!
//! ```c
//! sf_world *world; sf_comm *comm;
//! if (sf_init(&world) != SF_OK) { fprintf(stderr, "%s\n", sf_last_error_message()); return 1; }
//! sf_world_comm(world, &comm);
//! uint64_t flag = 1;
//! int rc = sf_comm_agree(comm, &flag, NULL, 0, NULL);
//! sf_comm_free(&comm);
//! sf_finalize(&world);
//! ```

// The C names are the interface: `sf_world`, `sf_status`, `sf_failure_fn`.
#![allow(non_camel_case_types)]

mod comm;
mod error;
mod handle;
mod intercomm;
mod p2p;
mod request;
mod window;
mod world;

pub use comm::*;
pub use error::*;
pub use handle::sf_failure_fn;
pub use intercomm::*;
pub use p2p::*;
pub use request::*;
pub use window::*;
pub use world::*;
