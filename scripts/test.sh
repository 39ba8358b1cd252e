#!/usr/bin/env bash
# Runs every test of the workspace (unit tests, multi-process tests on the tcp,
# tcp;ofi_rxm, net and shm providers, doc tests), installing system packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
# Multi-process tests start two processes each and move up to 64 MiB messages: two
# at a time keeps a 2-core machine responsive.
cargo test --workspace --release -- --test-threads 2
# The lock-free structures of the agreement core under loom's model checker (a separate
# target directory, since --cfg loom rebuilds everything).
RUSTFLAGS="--cfg loom" cargo test -p steadfast-agreement --release --target-dir target/loom --lib shared:: -- --test-threads 2
RUSTFLAGS="--cfg loom" cargo test -p steadfast-shm --release --target-dir target/loom --lib ring:: -- --test-threads 2
RUSTFLAGS="--cfg loom" cargo test -p steadfast-matching --release --target-dir target/loom --lib loom_tests -- --test-threads 2
