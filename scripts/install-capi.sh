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
prefix=${1:-/usr/local}
case "$prefix" in
    /*) ;;
    *) prefix="$(pwd)/$prefix" ;;
esac
cd "$(dirname "$0")/.."
target_dir=${CARGO_TARGET_DIR:-target}

# The extra rustc flag makes cargo recompile this one crate (not its dependencies),
# so rustc prints the system libraries the static library needs.
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
if ! cargo rustc --release -p steadfast-capi --lib -- --print native-static-libs \
    >"$build_log" 2>&1; then
    cat "$build_log" >&2
    echo "install-capi: the release build of steadfast-capi failed" >&2
    exit 1
fi
libs_private=$(sed -n 's/.*native-static-libs: //p' "$build_log" | tail -n 1)
if [ -z "$libs_private" ]; then
    echo "install-capi: rustc did not print the native static libraries" >&2
    exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$target_dir/release/libsteadfast.so" "$prefix/lib/libsteadfast.so"
install -m 0644 "$target_dir/release/libsteadfast.a" "$prefix/lib/libsteadfast.a"
install -m 0644 capi/include/steadfast.h "$prefix/include/steadfast.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
    capi/steadfast.pc.in >"$prefix/lib/pkgconfig/steadfast.pc"
# The installed files resolve through pkg-config (when it is there to ask).
if command -v pkg-config >/dev/null; then
    PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
        pkg-config --exists --print-errors steadfast
fi
echo "installed libsteadfast $version in $prefix"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs steadfast"
