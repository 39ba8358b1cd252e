#!/usr/bin/env bash
# The main job: the fault-tolerance demo under `steadfast-run -n 4`. Ranks 0-1 and 2-3
# pose as two nodes (shared memory inside a pair, tcp between pairs); the demo exchanges
# messages, SIGKILLs rank 3, and times detection, agreement, revoke and shrink. Exits 0
# when the three survivors finished and rank 3 is the only rank that died.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release -q --bin steadfast-run --example ft_demo
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
target/release/steadfast-run -n 4 target/release/examples/ft_demo 2>&1 | tee "$out" || status=$?
survivors=$(grep -c "DEMO OK" "$out" || true)
if [ "$survivors" -eq 3 ] && grep -q "1 of 4 ranks failed" "$out" \
    && grep -q "rank 3: killed by signal 9" "$out"; then
    echo "demo: as planned (rank 3 killed, 3 survivors finished; launcher status $status)"
    exit 0
fi
echo "demo: FAILED ($survivors survivors finished; launcher status $status)" >&2
exit 1
