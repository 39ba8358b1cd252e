//! Gives the shared library the soname it is installed under, `libsteadfast-mpi.so`
//! (cargo's file is `libsteadfast_mpi.so`), so that programs linked against the
//! installed file ask for that name at run time.

fn main() {
    println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libsteadfast-mpi.so");
    println!("cargo::rerun-if-changed=build.rs");
}
