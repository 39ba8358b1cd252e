#!/usr/bin/env bash
# Runs, under Miri (Rust's interpreter that checks undefined behaviour: aliasing,
# out-of-bounds and uninitialised reads, data races), the unit tests that touch no OS
# interface Miri cannot model (mmap of /dev/shm, process_vm_readv, libfabric):
#   steadfast-matching  the whole library (lanes, completion cells, queues, context ids;
#                       two exhaustive context-id tests are ignored under Miri)
#   steadfast-agreement its lock-free progress token and the wire decoders (the
#                       protocol engines are safe code, tested natively by the sweeps;
#                       interpreted, their exhaustive tests take hours)
#   steadfast-shm       the ring and the cell encoding
#   steadfast-os        the hash
# Miri needs a nightly toolchain; it is pinned here and installed with rustup when
# missing (the only step that needs the Rust distribution server).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLCHAIN=${STEADFAST_MIRI_TOOLCHAIN:-nightly-2026-10-30}
if ! cargo "+$TOOLCHAIN" miri --version >/dev/null 2>&1; then
    rustup toolchain install "$TOOLCHAIN" --profile minimal --component miri,rust-src
fi
# Its own target directory: Miri builds everything differently.
export CARGO_TARGET_DIR=${STEADFAST_MIRI_TARGET_DIR:-target/miri}
# Isolation off: proptest reads its failure-persistence files. Few cases: Miri is
# about a thousand times slower than native code; the properties themselves run
# natively in scripts/test.sh.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
export PROPTEST_CASES=${PROPTEST_CASES:-4}
miri() { cargo "+$TOOLCHAIN" miri test "$@"; }
miri -p steadfast-matching --lib
miri -p steadfast-agreement --lib -- shared:: wire:: types::
miri -p steadfast-shm --lib -- ring:: message::
miri -p steadfast-os --lib -- hash:: shared_bytes::
