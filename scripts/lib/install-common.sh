# Shared by scripts/install-capi.sh and scripts/install-mpi.sh (sourced, not run): the
# release build that reports the static library's system libraries, the version, and
# the pkg-config file. Expects `set -euo pipefail` and the repository as the current
# directory.

# PREFIX made absolute (relative to where the script was started, $1 = that directory).
absolute_prefix() {
    case "$2" in
        /*) echo "$2" ;;
        *) echo "$1/$2" ;;
    esac
}

# Builds crate $1's library in release and prints the system libraries its static
# library needs (rustc's native-static-libs). The extra rustc flag makes cargo recompile
# this one crate (not its dependencies), so rustc prints them. $2 names the script in
# errors; $3... are more `cargo build` arguments to build alongside (optional).
release_build_static_libs() {
    local crate=$1 who=$2
    shift 2
    local log
    log=$(mktemp)
    if ! cargo rustc --release -p "$crate" --lib -- --print native-static-libs >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "$who: the release build of $crate failed" >&2
        return 1
    fi
    if [ $# -gt 0 ] && ! cargo build --release "$@" >>"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "$who: the release build of $* failed" >&2
        return 1
    fi
    local libs
    libs=$(sed -n 's/.*native-static-libs: //p' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "$libs" ]; then
        echo "$who: rustc did not print the native static libraries" >&2
        return 1
    fi
    echo "$libs"
}

# The workspace's version (Cargo.toml).
workspace_version() {
    sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1
}

# Writes pkg-config file $4 (package name $5) from template $1 with prefix $2, version
# $3 and private libraries $6, then checks that pkg-config resolves it (when present).
install_pc() {
    local template=$1 prefix=$2 version=$3 out=$4 name=$5 libs=$6
    sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs|" \
        "$template" >"$out"
    if command -v pkg-config >/dev/null; then
        PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
            pkg-config --exists --print-errors "$name"
    fi
}
