//! `libsteadfast-mpi`: a subset of MPI 4.1 with the ULFM fault-tolerance extension, as
//! a C library (`include/mpi.h`, `include/mpi-ext.h`, the `steadfast-cc` wrapper) over
//! steadfast's Rust API (`World`, `Comm`, `InterComm`). `docs/mpi.md` lists what is
//! implemented, the thread contract and what is not.
//!
//! - Handles are pointer-sized values, never dereferenced: predefined ones carry the MPI
//!   5.0 ABI's values, created ones come from a counter (`consts`), requests name a
//!   slot of their table (`reqtable`); a bad handle is an error class, never a crash.
//! - Every function exists as `PMPI_x` (the implementation) and `MPI_x` (which calls
//!   it), so profiling tools can interpose `MPI_x`.
//! - State is process-wide (`state`): owned by the main thread without a lock below
//!   `MPI_THREAD_SERIALIZED`, else behind one mutex; under `MPI_THREAD_MULTIPLE`
//!   blocking calls release it between attempts.
//! - Errors go to the communicator's error handler after the lock is released, so a
//!   handler may call MPI (revoke, say). No panic crosses into C (`MPI_ERR_INTERN`).

// The C names are the interface.
#![allow(non_snake_case, non_camel_case_types)]

/// Defines `PMPI_$name` with the body and `MPI_$name` calling it, both exported.
macro_rules! mpi_fn {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Pointer arguments follow the MPI standard's rules for this function.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int $body

        $(#[$doc])*
        ///
        /// # Safety
        /// As the `PMPI_` form, which this calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the same contract as this function's.
            unsafe { $pname($($arg),*) }
        }
    };
}
pub(crate) use mpi_fn;

mod alltoallw;
mod attr;
mod bsend;
mod buffer_attach;
mod coll;
mod coll_c;
mod coll_inter;
mod coll_packed;
mod coll_packed_v;
mod coll_persistent;
mod coll_persistent_c;
mod coll_rounds;
mod coll_scan;
mod collv;
mod collv_c;
mod comm;
mod comm_close;
mod comm_groups;
mod comm_table;
mod comm_variants;
mod consts;
mod count_c;
mod darray;
mod datatype;
mod datatype_c;
mod dist_graph;
mod error;
mod ext32_typemap;
mod external32;
mod f90types;
mod file;
mod file_c;
mod file_io;
mod file_shared;
mod file_split;
mod file_view;
mod fint;
mod graph;
mod greq;
mod group;
mod idup;
mod info;
mod init;
mod isendrecv;
mod memory;
mod mpi1_removed;
mod mprobe;
mod names;
mod nbc;
mod nbc_c;
mod nbc_inter;
mod nbc_packed;
mod nbc_scan;
mod nbc_v;
mod nbcv_c;
mod neighbor;
mod neighbor_c;
mod neighbor_packed;
mod op;
mod op_c;
mod op_deferred;
mod outcome;
mod p2p;
mod p2p_c;
mod p2p_fast;
mod pack_external;
mod partitioned;
mod passive;
mod persistent;
mod ports;
mod pscw;
mod reduce_packed;
mod reduce_wide;
mod reqtable;
mod request;
mod restart;
mod rma;
mod rma_c;
mod rma_gaps;
mod rma_req;
mod sendrecv;
mod session;
mod session_inter;
mod shared_win;
mod singleton;
mod spawn;
mod split_inter;
mod state;
mod status;
mod status_set;
mod tool;
mod tool_categories;
mod tool_cvars;
mod tool_events;
mod tool_pvars;
mod topo;
mod type_attr;
mod type_contents;
mod type_name;
mod typemap;
mod typemap_c;
mod typemap_ctors;
mod ulfm;
mod user_errors;
mod util;
mod wait;
mod win;
mod win_attr;
mod win_dynamic;
