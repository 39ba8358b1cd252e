#!/usr/bin/env bash
# The main job: the benchmark suite on this machine, over shared memory and over tcp,
# with fault injection. For each path: OSU-style latency, bandwidth, put, get and
# message rate between two ranks, allreduce over four, and the ULFM phases over four ranks with the
# last one SIGKILLed (agree: first agreement after the kill, stabilization, with the
# hole; revoke; shrink; detect: SIGKILL to every survivor's first ProcFailed); then
# restart in place over shared memory (SIGKILL to the restarted rank's answer).
#
#   scripts/bench.sh [--quick]     (--quick: sizes up to 64 KiB, fewer repetitions)
#
# Exits 0 when every benchmark ran and every fault-injection run lost exactly its
# victim. The side-by-side comparison with libfabric and Open MPI is
# benches/compare/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=(--max 4194304)
rate_sizes=(--max 1048576)
reps=(--repetitions 3)
restart_rounds=(--repetitions 5)
if [ "${1:-}" = "--quick" ]; then
    restart_rounds=(--repetitions 3)
    sizes=(--max 65536)
    rate_sizes=(--max 65536)
    reps=(--repetitions 2 --iterations 2000 --warmup 200)
fi
scripts/install-deps.sh
# Build every binary this script starts (a fresh clone has none).
cargo build --release -q -p steadfast -p steadfast-benches --bin steadfast-run --bin steadfast-bench
run=target/release/steadfast-run
bench=target/release/steadfast-bench
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0

# step NAME EXPECTED_STATUS RANKS ARGS...: runs one benchmark and checks its status
# (1 when a rank is killed on purpose: the launcher reports the victim).
step() {
    local name=$1 expect=$2 n=$3
    shift 3
    local status=0
    "$run" -n "$n" "$bench" "$@" >"$log" 2>&1 || status=$?
    grep -v '^steadfast-run: \|^  rank ' "$log" || true
    if [ "$status" != "$expect" ]; then
        echo "bench: $name exited with $status, expected $expect" >&2
        cat "$log" >&2
        failed=1
    elif [ "$expect" = 1 ] && ! grep -q "killed by signal 9" "$log"; then
        echo "bench: $name: no rank was killed" >&2
        failed=1
    fi
    echo
}

for route in shm fabric; do
    if [ $route = shm ]; then
        echo "######## shared memory (one node)"
    else
        echo "######## tcp (the fabric, forced; STEADFAST_PROVIDER=tcp)"
    fi
    export STEADFAST_PROVIDER=tcp
    for sub in latency bw put get; do
        step "$sub $route" 0 2 $sub --route $route "${sizes[@]}" "${reps[@]}"
    done
    step "mbw_mr $route" 0 2 mbw_mr --route $route "${rate_sizes[@]}" "${reps[@]}"
    step "allreduce $route" 0 4 allreduce --route $route --max 4096 "${reps[@]}"
    for sub in agree revoke shrink; do
        expect=0; [ $sub != revoke ] && expect=1
        step "$sub $route" $expect 4 $sub --route $route "${reps[@]}"
    done
    step "detect $route" 1 4 detect --route $route --detectors all "${reps[@]}"
done

echo "######## restart in place (shared memory; under steadfast-run --no-kill)"
# No provider named: a job over shared memory then never loads libfabric (a named
# provider is checked at init, which loads it).
unset STEADFAST_PROVIDER
status=0
"$run" -n 3 --no-kill "$bench" restart --route shm "${restart_rounds[@]}" >"$log" 2>&1 || status=$?
grep -v '^steadfast-run: \|^  rank ' "$log" || true
restarts=$(grep -c "restarted as incarnation" "$log" || true)
if [ "$status" != 0 ]; then
    echo "bench: restart exited with $status, expected 0" >&2
    cat "$log" >&2
    failed=1
elif [ "$restarts" != "${restart_rounds[1]}" ]; then
    echo "bench: restart: $restarts restarts, expected ${restart_rounds[1]}" >&2
    cat "$log" >&2
    failed=1
fi
echo

if [ $failed = 0 ]; then
    echo "bench: every benchmark ran; every fault injection lost exactly its victim; every restart answered"
fi
exit $failed
