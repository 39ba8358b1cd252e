#!/usr/bin/env bash
# Builds libsteadfast (the C ABI, crate capi/) in release and installs it:
#
#   scripts/install-capi.sh [PREFIX]        (default /usr/local)
#
#   PREFIX/lib/libsteadfast.so, PREFIX/lib/libsteadfast.a
#   PREFIX/include/steadfast.h
#   PREFIX/lib/pkgconfig/steadfast.pc
#
# after which `pkg-config --cflags --libs steadfast` gives the flags to build against
# it (add PREFIX/lib/pkgconfig to PKG_CONFIG_PATH when PREFIX is not a system prefix,
# and PREFIX/lib to the run-time search path: -Wl,-rpath or LD_LIBRARY_PATH).
# `pkg-config --static --libs steadfast` adds what the static library needs.
# Honours CARGO_TARGET_DIR. The header installed is the committed one, which
# capi/tests/header.rs keeps equal to the code.
set -euo pipefail
started_in=$(pwd)
cd "$(dirname "$0")/.."
. scripts/lib/install-common.sh
prefix=$(absolute_prefix "$started_in" "${1:-/usr/local}")
target_dir=${CARGO_TARGET_DIR:-target}

libs_private=$(release_build_static_libs steadfast-capi install-capi)
version=$(workspace_version)

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$target_dir/release/libsteadfast.so" "$prefix/lib/libsteadfast.so"
install -m 0644 "$target_dir/release/libsteadfast.a" "$prefix/lib/libsteadfast.a"
install -m 0644 capi/include/steadfast.h "$prefix/include/steadfast.h"
install_pc capi/steadfast.pc.in "$prefix" "$version" "$prefix/lib/pkgconfig/steadfast.pc" \
    steadfast "$libs_private"
echo "installed libsteadfast $version in $prefix"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs steadfast"
