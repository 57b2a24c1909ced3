#!/usr/bin/env bash
# Solves CartPole-v1 with configs/cartpole.yaml for several seeds and prints one
# JSON object per seed, then a summary: wall-clock to the target, env steps,
# and the run's mean env steps/s and learner updates/s.
#   usage: bench/cartpole_seeds.sh [BUILD_DIR] [SEEDS...]   (default: build, seeds 0-4)
# SETS adds config overrides to every run, e.g. SETS="learner.lsdqn_period=500 seed=0".
set -euo pipefail
build=${1:-build}
shift || true
seeds=("${@:-0 1 2 3 4}")
read -r -a seeds <<<"${seeds[*]}"
sets=()
for kv in ${SETS:-}; do sets+=(--set "$kv"); done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for seed in "${seeds[@]}"; do
  dir="$out/seed-$seed"
  start=$(date +%s.%N)
  set +e
  "$build/ferry" run configs/cartpole.yaml --set seed="$seed" --set run.dir="$dir" "${sets[@]}" >"$out/log-$seed" 2>&1
  code=$?
  set -e
  end=$(date +%s.%N)
  # The learner's final record: {"time": .., "updates": .., "env_steps": .., "best_eval_return": .., "end": ..}
  last=$(grep '"end"' "$dir/metrics.jsonl" | tail -n1)
  field() { sed -E "s/.*\"$1\": ([^,}]*).*/\1/" <<<"$last"; }
  t=$(field time); steps=$(field env_steps); updates=$(field updates)
  awk -v seed="$seed" -v code="$code" -v start="$start" -v end="$end" -v t="$t" \
      -v steps="$steps" -v updates="$updates" -v best="$(field best_eval_return)" 'BEGIN {
    printf "{\"seed\": %d, \"exit_code\": %d, \"solved\": %s, \"wall_s\": %.1f, \"learner_s\": %.1f, ",
           seed, code, code == 0 ? "true" : "false", end - start, t
    printf "\"env_steps\": %d, \"env_steps_per_s\": %.0f, \"updates\": %d, \"updates_per_s\": %.0f, ",
           steps, steps / t, updates, updates / t
    printf "\"best_eval_return\": %s}\n", best }'
done | tee "$out/results.jsonl"

awk -F'[:,}]' '{
    for (i = 1; i < NF; i++) { k = $i; gsub(/[ "{]/, "", k); v[k] = $(i + 1) }
    n++; solved += (v["solved"] ~ /true/); wall[n] = v["wall_s"]; steps[n] = v["env_steps"]
  }
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END { printf "{\"summary\": true, \"seeds\": %d, \"solved\": %d, \"median_wall_s\": %.1f, \"median_env_steps\": %.0f}\n",
               n, solved, median(wall, n), median(steps, n) }' "$out/results.jsonl"
