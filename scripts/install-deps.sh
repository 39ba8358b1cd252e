#!/usr/bin/env bash
# Installs the Debian packages steadfast needs when any is missing. As root it installs
# them; otherwise it names them and stops. `--tests` adds what the tests use besides
# (the launchers of the smoke tests, iproute2 for the namespace tests).
set -euo pipefail
PACKAGES=(libfabric-dev libfabric-bin libhwloc-dev libudev-dev libclang-dev clang pkg-config)
if [ "${1:-}" = --tests ]; then
    PACKAGES+=(mpich openmpi-bin libpmix-dev slurm-wlm iproute2)
fi
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "steadfast needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
