#!/usr/bin/env bash
# Builds libsteadfast-mpi (the MPI library with ULFM, crate mpi/) in release and
# installs it with its compiler wrapper:
#
#   scripts/install-mpi.sh [PREFIX]        (default /usr/local)
#
#   PREFIX/lib/libsteadfast-mpi.so, PREFIX/lib/libsteadfast-mpi.a
#   PREFIX/include/mpi.h, PREFIX/include/mpi-ext.h
#   PREFIX/bin/steadfast-cc                (like mpicc: adds -I, -L, -lsteadfast-mpi, rpath)
#   PREFIX/bin/steadfast-run               (the launcher, like mpiexec)
#   PREFIX/lib/pkgconfig/steadfast-mpi.pc
#
# then: PREFIX/bin/steadfast-cc prog.c -o prog && PREFIX/bin/steadfast-run -np 4 ./prog
# Honours CARGO_TARGET_DIR. Cargo names the library files libsteadfast_mpi.*; they are
# installed as libsteadfast-mpi.* (the shared library's soname says so, see mpi/build.rs).
set -euo pipefail
started_in=$(pwd)
cd "$(dirname "$0")/.."
. scripts/lib/install-common.sh
prefix=$(absolute_prefix "$started_in" "${1:-/usr/local}")
target_dir=${CARGO_TARGET_DIR:-target}

libs_private=$(release_build_static_libs steadfast-mpi install-mpi -p steadfast --bin steadfast-run)
version=$(workspace_version)

install -d "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
install -m 0755 "$target_dir/release/libsteadfast_mpi.so" "$prefix/lib/libsteadfast-mpi.so"
install -m 0644 "$target_dir/release/libsteadfast_mpi.a" "$prefix/lib/libsteadfast-mpi.a"
install -m 0644 mpi/include/mpi.h mpi/include/mpi-ext.h "$prefix/include/"
install -m 0755 mpi/steadfast-cc "$prefix/bin/steadfast-cc"
install -m 0755 "$target_dir/release/steadfast-run" "$prefix/bin/steadfast-run"
install_pc mpi/steadfast-mpi.pc.in "$prefix" "$version" "$prefix/lib/pkgconfig/steadfast-mpi.pc" \
    steadfast-mpi "$libs_private"
echo "installed libsteadfast-mpi $version in $prefix"
echo "  compile: $prefix/bin/steadfast-cc prog.c -o prog"
echo "  run:     $prefix/bin/steadfast-run -np 4 ./prog"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs steadfast-mpi"
