#!/usr/bin/env bash
# Runs steadfast-hwtests every way this machine allows and checks each report:
#   alone   - one process (fabric tests between two threads; the rest skipped)
#   run2    - steadfast-run -n 2 (shm path, CMA, fi_pingpong reference)
#   run4    - steadfast-run -n 4 (many peers; the fault-tolerance tests: rank 3 dies)
#   netns   - two network namespaces joined by a veth pair as two "nodes", 2 ranks
#             each, fabric between them; node B (ranks 2 and 3) is lost at once:
#             ft.node_loss (root and iproute2; skipped otherwise)
#   slurm   - the single-node Slurm of scripts/slurm-local.sh, srun --no-kill --overcommit
#             --mpi=pmi2 -n 4 --ft on (root and slurm-wlm; skipped otherwise)
#   hydra   - mpiexec.hydra -n 2 (PMI-1; skipped when not installed)
#   mpirun  - Open MPI's mpirun -n 2 (PMIx; skipped when not installed)
# Usage: scripts/hwtests.sh [alone|run2|run4|netns|slurm|hydra|mpirun]...   (default: all)
# Each report must show no failure and gni, cxi, verbs, efa and xpmem skipped with a
# reason. HWTESTS_PROFILE=dev builds the debug profile (default: release).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${HWTESTS_PROFILE:-release}
case $profile in dev) sub=debug ;; *) sub=$profile ;; esac
bin="${CARGO_TARGET_DIR:-target}/$sub"
cargo build --profile "$profile" -p steadfast-hwtests --bin steadfast-hwtests --bin steadfast-hwtests-check
cargo build --profile "$profile" -p steadfast --bin steadfast-run
hw=$(realpath "$bin/steadfast-hwtests")
check=$(realpath "$bin/steadfast-hwtests-check")
run=$(realpath "$bin/steadfast-run")

work=$(mktemp -d "${TMPDIR:-/tmp}/steadfast-hwtests.XXXXXX")
cleanups=()
cleanup() {
    for c in "${cleanups[@]}"; do eval "$c" || true; done
    rm -rf "$work"
}
trap cleanup EXIT

absent=fabric.gni,fabric.cxi,fabric.verbs,fabric.efa,shm.xpmem
ft=ft.detect,ft.revoke,ft.agree,ft.shrink
limit=300
failed=0

# verdict NAME RC WANT_RC VICTIM_PATTERN CHECK_ARGS...: the launcher's exit status must
# be WANT_RC (for runs with the fault-tolerance tests: non-zero is accepted only when
# its stderr names the victim and nothing else failed), then the report is checked.
verdict() {
    local name=$1 rc=$2 want=$3 victim=$4
    shift 4
    if [ "$rc" = 124 ] || [ "$rc" = 137 -a -z "$victim" ]; then
        echo "hwtests $name: timed out after ${limit}s" >&2
        tail -20 "$work/$name.err" >&2
        failed=1
        return
    fi
    if [ "$rc" != "$want" ] && ! { [ -n "$victim" ] && grep -qE "$victim" "$work/$name.err"; }; then
        echo "hwtests $name: launcher exit status $rc (expected $want); stderr:" >&2
        tail -20 "$work/$name.err" >&2
        failed=1
        return
    fi
    if ! "$check" "$work/$name.json" --skipped "$absent" "$@"; then
        tail -20 "$work/$name.err" >&2
        failed=1
    fi
}

alone() {
    local rc=0
    timeout -k 10 $limit "$hw" --json --no-reference >"$work/alone.json" 2>"$work/alone.err" || rc=$?
    verdict alone $rc 0 "" --ranks 1 --passed "fabric.shm.rma,fabric.tcp;ofi_rxm.tagged.rendezvous" \
        --skipped world.p2p,ft.detect
}

run2() {
    local rc=0
    timeout -k 10 $limit "$run" -n 2 "$hw" --json >"$work/run2.json" 2>"$work/run2.err" || rc=$?
    verdict run2 $rc 0 "" --ranks 2 --passed world.routes,world.p2p,shm.messages,shm.cma
}

run4() {
    local rc=0
    timeout -k 10 $limit "$run" -n 4 "$hw" --json --no-reference >"$work/run4.json" 2>"$work/run4.err" || rc=$?
    verdict run4 $rc 0 "^  rank 3: killed by signal 9( |$)" --ranks 4 \
        --passed "$ft,world.p2p,shm.cma,fabric.tcp;ofi_rxm.many_peers"
}

netns() {
    if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
        echo "hwtests netns: SKIPPED (needs root and iproute2)"
        return
    fi
    local id=$$ subnet=$(($$ % 250 + 1)) rc=0
    local a=sfha$id b=sfhb$id
    cleanups+=("ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; ip link del sfhva$id 2>/dev/null")
    ip netns add "$a"
    ip netns add "$b"
    ip link add "sfhva$id" type veth peer name "sfhvb$id"
    ip link set "sfhva$id" netns "$a"
    ip link set "sfhvb$id" netns "$b"
    ip -n "$a" link set "sfhva$id" name sfv
    ip -n "$b" link set "sfhvb$id" name sfv
    ip -n "$a" addr add "10.78.$subnet.1/24" dev sfv
    ip -n "$b" addr add "10.78.$subnet.2/24" dev sfv
    for ns in "$a" "$b"; do
        ip -n "$ns" link set sfv up
        ip -n "$ns" link set lo up
    done
    # Ranks 0-1 on "node" A, 2-3 on B; the fabric between them runs over the veth.
    cat >"$work/place.sh" <<EOF
#!/bin/sh
if [ "\$STEADFAST_RANK" -lt 2 ]; then ns=$a; node=A; else ns=$b; node=B; fi
exec ip netns exec \$ns env STEADFAST_NODE_ID=\$node STEADFAST_DOMAIN=sfv "\$@"
EOF
    chmod +x "$work/place.sh"
    timeout -k 10 $limit ip netns exec "$a" "$run" --listen "10.78.$subnet.1" -n 4 "$work/place.sh" \
        "$hw" --json --no-reference >"$work/netns.json" 2>"$work/netns.err" || rc=$?
    verdict netns $rc 0 "^  rank 3: killed by signal 9( |$)" --ranks 4 \
        --passed "$ft,ft.node_loss,world.routes,world.p2p,shm.messages,world.fabric_messages,fabric.tcp;ofi_rxm.many_peers" \
        --skipped fabric.shm
}

slurm() {
    if [ "$(id -u)" != 0 ] || ! command -v srun >/dev/null || ! command -v slurmd >/dev/null; then
        echo "hwtests slurm: SKIPPED (needs root and slurm-wlm)"
        return
    fi
    local dir="$work/slurm" rc=0
    scripts/slurm-local.sh start "$dir"
    cleanups+=("scripts/slurm-local.sh stop '$dir'")
    # 4 tasks on a node that may have 2 CPUs: --overcommit. srun does not tell its
    # tasks about --no-kill: --ft on says it.
    SLURM_CONF="$dir/slurm.conf" timeout -k 10 $limit srun -n 4 --overcommit --no-kill --mpi=pmi2 \
        "$hw" --json --no-reference --ft on >"$work/slurm.json" 2>"$work/slurm.err" || rc=$?
    verdict slurm $rc 0 "task 3: Killed" --ranks 4 --passed "$ft,world.p2p,shm.cma"
}

# Launchers that end the job when a rank dies: failure-free runs only.
hydra() {
    if ! command -v mpiexec.hydra >/dev/null; then
        echo "hwtests hydra: SKIPPED (mpiexec.hydra not installed)"
        return
    fi
    local rc=0
    timeout -k 10 $limit mpiexec.hydra -n 2 "$hw" --json --no-reference >"$work/hydra.json" 2>"$work/hydra.err" || rc=$?
    verdict hydra $rc 0 "" --ranks 2 --passed world.p2p,shm.cma
}

mpirun() {
    if ! command -v mpirun.openmpi >/dev/null; then
        echo "hwtests mpirun: SKIPPED (mpirun.openmpi not installed)"
        return
    fi
    local rc=0 root=()
    [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    timeout -k 10 $limit mpirun.openmpi "${root[@]}" --oversubscribe -n 2 "$hw" --json --no-reference \
        >"$work/mpirun.json" 2>"$work/mpirun.err" || rc=$?
    verdict mpirun $rc 0 "" --ranks 2 --passed world.p2p,shm.cma
}

modes=("$@")
[ ${#modes[@]} = 0 ] && modes=(alone run2 run4 netns slurm hydra mpirun)
for m in "${modes[@]}"; do
    case $m in
        alone | run2 | run4 | netns | slurm | hydra | mpirun)
            echo "hwtests: $m"
            $m
            ;;
        *)
            echo "usage: scripts/hwtests.sh [alone|run2|run4|netns|slurm|hydra|mpirun]..." >&2
            exit 2
            ;;
    esac
done
if [ $failed != 0 ]; then
    echo "hwtests: FAILED" >&2
    exit 1
fi
echo "hwtests: all runs as expected"
