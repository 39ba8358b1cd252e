#!/usr/bin/env bash
# Starts a single-node Slurm (slurmctld + slurmd, auth/none) whose state lives in DIR,
# for the launcher smoke tests: `scripts/slurm-local.sh start DIR` prints nothing and
# returns once `srun` works with SLURM_CONF=DIR/slurm.conf; `scripts/slurm-local.sh stop
# DIR` stops both daemons. Needs root (slurmd) and the slurm-wlm package.
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: slurm-local.sh start|stop DIR}")
conf="$dir/slurm.conf"
stop() {
    for d in slurmd slurmctld; do
        if [ -f "$dir/$d.pid" ]; then
            kill "$(cat "$dir/$d.pid")" 2>/dev/null || true
        fi
    done
    # Wait for both to exit (they remove nothing we need).
    for _ in $(seq 50); do
        alive=0
        for d in slurmd slurmctld; do
            if [ -f "$dir/$d.pid" ] && kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null; then alive=1; fi
        done
        [ $alive -eq 0 ] && break
        sleep 0.1
    done
}
if [ "$cmd" = stop ]; then
    stop
    exit 0
fi
mkdir -p "$dir/spool" "$dir/state"
host=$(hostname -s)
cpus=$(nproc)
# Random free-ish ports so parallel runs do not collide.
base=$(( 20000 + (RANDOM % 2000) * 2 ))
cat > "$conf" <<CONF
ClusterName=steadfast-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$conf
slurmctld -c -f "$conf"
slurmd -f "$conf"
for _ in $(seq 100); do
    if sinfo -h -o %T 2>/dev/null | grep -qE "^idle"; then
        exit 0
    fi
    sleep 0.2
done
echo "slurm-local: the node did not become idle; logs in $dir" >&2
stop
exit 1
