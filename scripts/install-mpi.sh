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
prefix=${1:-/usr/local}
case "$prefix" in
    /*) ;;
    *) prefix="$(pwd)/$prefix" ;;
esac
cd "$(dirname "$0")/.."
target_dir=${CARGO_TARGET_DIR:-target}

build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
# The extra rustc flag makes cargo recompile this one crate, so rustc prints the system
# libraries the static library needs.
if ! cargo rustc --release -p steadfast-mpi --lib -- --print native-static-libs \
    >"$build_log" 2>&1; then
    cat "$build_log" >&2
    echo "install-mpi: the release build of steadfast-mpi failed" >&2
    exit 1
fi
if ! cargo build --release -p steadfast --bin steadfast-run >>"$build_log" 2>&1; then
    cat "$build_log" >&2
    echo "install-mpi: the release build of steadfast-run failed" >&2
    exit 1
fi
libs_private=$(sed -n 's/.*native-static-libs: //p' "$build_log" | tail -n 1)
if [ -z "$libs_private" ]; then
    echo "install-mpi: rustc did not print the native static libraries" >&2
    exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

install -d "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
install -m 0755 "$target_dir/release/libsteadfast_mpi.so" "$prefix/lib/libsteadfast-mpi.so"
install -m 0644 "$target_dir/release/libsteadfast_mpi.a" "$prefix/lib/libsteadfast-mpi.a"
install -m 0644 mpi/include/mpi.h mpi/include/mpi-ext.h "$prefix/include/"
install -m 0755 mpi/steadfast-cc "$prefix/bin/steadfast-cc"
install -m 0755 "$target_dir/release/steadfast-run" "$prefix/bin/steadfast-run"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
    mpi/steadfast-mpi.pc.in >"$prefix/lib/pkgconfig/steadfast-mpi.pc"
if command -v pkg-config >/dev/null; then
    PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
        pkg-config --exists --print-errors steadfast-mpi
fi
echo "installed libsteadfast-mpi $version in $prefix"
echo "  compile: $prefix/bin/steadfast-cc prog.c -o prog"
echo "  run:     $prefix/bin/steadfast-run -np 4 ./prog"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs steadfast-mpi"
