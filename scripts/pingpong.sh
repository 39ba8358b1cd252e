#!/usr/bin/env bash
# The main job for now: a two-process ping-pong over the tcp provider (as resolved),
# printing an OSU-style latency/bandwidth table from 8 B to 4 MiB. Extra arguments go to
# the example (--provider shm, --max 64M, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo run --release -q -p steadfast-fabric --example pingpong -- --provider tcp "$@"
