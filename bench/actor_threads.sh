#!/usr/bin/env bash
# Where an actor process's CPU goes, by thread: one `ferry run` of CONFIG with ACTORS actors of
# ENVS envs each, every actor thread's CPU seconds read from /proc every 0.5 s, summed over the
# actor processes by kind: the acting thread (the process's first; it also starts the process),
# ZeroMQ's threads (ZMQbg/*) and the rest (the weight follower). Also the acting threads' CPU
# before their first step: each one's until its CPU first grows by 20 ms or less in a sample.
# Prints one JSON object, with the run's wall-clock from start to exit.
#   usage: bench/actor_threads.sh BUILD_DIR CONFIG ACTORS ENVS SEED [--set k=v ...]
#   e.g.   bench/actor_threads.sh build configs/cartpole_zoo.yaml 8 1 0
#            --set stop.target_return=1e9 --set stop.max_env_steps=30000
set -euo pipefail
(($# >= 5)) || { sed -n '2,10p' "$0" >&2; exit 2; }
build=$1 config=$2 actors=$3 envs=$4 seed=$5
shift 5
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_blas_env "$build"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$work/run samples=$work/samples
started=$(date +%s.%N)
"$build/ferry" run "$config" --set seed="$seed" --set run.dir="$dir" --set actors.count="$actors" \
  --set actors.envs_per_actor="$envs" "$@" >"$work/log" 2>&1 &
supervisor=$!
: >"$samples"
while kill -0 "$supervisor" 2>/dev/null; do
  # Actors run as `ferry-actor --config RUN_DIR/config.yaml --id N`.
  for pid in $(pgrep -f "actor --config $dir/config.yaml" || true); do
    for task in /proc/"$pid"/task/*; do
      cpu_ticks "$task/stat" || continue
      read -r comm 2>/dev/null <"$task/comm" || continue
      echo "$pid ${task##*/} $comm $ticks"
    done
  done >>"$samples"
  sleep 0.5
done
code=0
wait "$supervisor" || code=$?
wall=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
((code == 0 || code == 2)) || { tail -n 20 "$work/log" >&2; echo "actor_threads: run failed ($code)" >&2; exit 1; }
end=$(grep '"end"' "$dir/metrics.jsonl" | tail -n1)

awk -v hz="$(getconf CLK_TCK)" -v env_steps="$(sed -nE 's/.*"env_steps": ([0-9]+).*/\1/p' <<<"$end")" \
    -v config="$config" -v actors="$actors" -v envs="$envs" -v seed="$seed" \
    -v commit="$(bench_commit)" -v machine="$(bench_machine)" -v wall="$wall" '
  { key = $1 " " $2; last[key] = $4
    kind[key] = $1 == $2 ? "acting" : ($3 ~ /^ZMQbg/ ? "zeromq" : "other")
    if ($1 == $2) acting[$1] = acting[$1] " " $4 }
  END {
    for (key in last) cpu[kind[key]] += last[key] / hz
    for (p in acting) {  # The acting thread until its CPU first grows by 20 ms or less.
      n = split(acting[p], v, " "); start = v[n]
      for (i = 2; i <= n; i++) if (v[i] - v[i - 1] <= 0.02 * hz) { start = v[i - 1]; break }
      startup += start / hz; processes++
    }
    printf "{\"kind\": \"actor_threads\", \"config\": \"%s\", \"seed\": %d, \"actors\": %d, \"envs_per_actor\": %d, ", config, seed, actors, envs
    printf "\"commit\": \"%s\", \"machine\": \"%s\", \"wall_s\": %s, \"env_steps\": %s, \"processes_seen\": %d, ", commit, machine, wall, env_steps == "" ? "null" : env_steps, processes
    printf "\"cpu_acting_s\": %.2f, \"cpu_acting_startup_s\": %.2f, \"cpu_zeromq_s\": %.2f, \"cpu_other_s\": %.2f}\n", cpu["acting"], startup, cpu["zeromq"], cpu["other"]
  }' "$samples"
