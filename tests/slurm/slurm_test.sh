#!/usr/bin/env bash
# Submits launch/slurm/ferry.sbatch to a real Slurm: a one-node cluster (slurmctld + slurmd,
# munge for authentication) started here on loopback, and torn down at the end.
#   usage: tests/slurm/slurm_test.sh FERRY_BINARY
# Exit 77 (CTest: skipped) where this machine cannot run the daemons, saying why.
set -euo pipefail
ferry=$(realpath "$1")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)

skip() { echo "slurm test skipped: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "slurmd must run as root (run the suite as root, or see README)"
for tool in slurmctld slurmd sbatch squeue scontrol munged munge; do
  command -v "$tool" >/dev/null || skip "$tool not installed (apt-get install slurm-wlm munge)"
done

dir=$(mktemp -d /tmp/ferry-slurm-XXXXXX)
started_munge=0
cleanup() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    if [[ -f $pidfile ]]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  sleep 1
  if ((started_munge)); then pkill -x munged || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [[ -f /etc/munge/munge.key ]] || skip "no /etc/munge/munge.key (reinstall munge)"
  mkdir -p /run/munge && chown munge:munge /run/munge
  munged --force 2>/dev/null || skip "munged does not start here"
  started_munge=1
fi

host=$(hostname -s)
port=$((17000 + $$ % 400 * 2))
cat >"$dir/slurm.conf" <<CONF
ClusterName=ferrytest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
mkdir -p "$dir/state" "$dir/spool"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start here (see $dir/slurmctld.log)"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start here (see $dir/slurmd.log)"
for ((i = 0; i < 60; i++)); do
  [[ $(sinfo --noheader --format=%t 2>/dev/null) == idle ]] && break
  sleep 0.5
done
[[ $(sinfo --noheader --format=%t) == idle ]] || { cat "$dir"/*.log; echo "FAIL: node never idle"; exit 1; }

fail() { echo "FAIL: $*"; for f in "$run_dir"/logs/*.log; do echo "== $f"; tail -n 5 "$f"; done; exit 1; }

# submit RELAYS: one 30 s CartPole job, its actors following the root paramserver (0) or a relay
# on their host (1); checks that it trained and that every role stopped cleanly.
submit() {
  local relays=$1
  run_dir=$dir/run-relays$relays
  local ports=$((23500 + $$ % 400 * 16)) status=0
  (cd "$dir" && FERRY_BINARY=$ferry FERRY_RUN_DIR=$run_dir FERRY_RELAYS=$relays timeout 300 \
    sbatch --wait --nodes=1 --output="$dir/job$relays.out" "$source_dir/launch/slurm/ferry.sbatch" \
    "$source_dir/configs/cartpole.yaml" --set stop.max_seconds=30 --set "network.replay_port=$ports" \
    --set "network.paramserver_port=$((ports + 10))" --set "network.broadcast_port=$((ports + 11))") ||
    status=$?
  cat "$dir/job$relays.out"
  [[ $status -eq 0 || $status -eq 2 ]] || fail "the job exited with $status (0: target, 2: budget)"
  grep -q '"end": ' "$run_dir/metrics.jsonl" || fail "the learner wrote no end record"
  # The end record's update count: a quick run can reach its target before the first progress
  # record.
  grep '"end": ' "$run_dir/metrics.jsonl" | grep -qE '"updates": [1-9]' || fail "the learner never trained"
  for k in 0 1; do
    grep -q "final snapshot\|no final snapshot needed" "$run_dir/logs/replay-$k.log" ||
      fail "replay-$k was not stopped cleanly"
    grep -q " 0 bad messages" "$run_dir/logs/replay-$k.log" || fail "replay-$k saw bad messages"
    grep -q "the learner has ended" "$run_dir/logs/replay-$k.log" ||
      fail "replay-$k was not told that the learner had ended (SIGUSR1)"
  done
  grep -q "stopped after" "$run_dir/logs/actor-0.log" || fail "actor-0 was not stopped cleanly"
  if grep -q "still unacked" "$run_dir/logs/actor-0.log"; then
    fail "actor-0 stopped with batches unacked"
  fi
  if ((relays)); then
    grep -q "relaying tcp://" "$run_dir/logs/relay-$host.log" || fail "no relay started on $host"
    grep -qE "stopped at version [1-9]" "$run_dir/logs/relay-$host.log" ||
      fail "the relay on $host passed on no weights"
    grep -qE "policy v[1-9]" "$run_dir/logs/actor-0.log" || fail "actor-0 got no weights"
  fi
  if pgrep -f -- "$run_dir" >/dev/null; then fail "processes of the run are still running"; fi
}

submit 0
submit 1
echo "slurm test passed"
