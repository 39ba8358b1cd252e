#!/usr/bin/env bash
# Runs every test of the workspace (unit tests, multi-process tests on the tcp,
# tcp;ofi_rxm, net and shm providers, doc tests), installing system packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Multi-process tests start two processes each and move up to 64 MiB messages: two
# at a time keeps a 2-core machine responsive.
cargo test --workspace --release -- --test-threads 2
