#!/usr/bin/env bash
# Learning results beside RL Baselines3 Zoo's DQN table, and how ferry scales.
#
#   table     each tuned config (configs/<env>.yaml; CartPole: configs/cartpole_zoo.yaml) for
#             every seed at the Zoo's env-step budget; the run's final policy and the one its
#             best periodic evaluation kept are evaluated greedily on 100 fresh episodes
#   baseline  per env and seed, the config as it is ("paired"), then as one actor with one
#             env, one shard and one learner rank ("baseline"), then bench/serial_dqn on it
#             ("serial", a single-process DQN): back to back, so all see the same machine
#   lsdqn     the table's runs again with the LS-DQN head refit switched: on (LSDQN_SETS, default
#             every 1000 updates on 4096 transitions) where the config has it off, off where
#             the config has it on; for the tuned configs' "on or off" choice
#   scaling   time until the periodic greedy evaluation reaches the env's threshold, with
#             one actor with one env and one shard, with 1, 2, 4, 8 actors of the config's envs
#             each (one learner rank), with the config's envs spread over 2, 4, 8 actors (more
#             processes, the same envs) and with 2 learner ranks (2 actors)
#   ratio     acting against learning: each env's config for RATIO_SECONDS of the learner's
#             clock at each replay ratio in RATIOS (samples per insert), as one actor with one
#             env and one shard, then with 1, 2, 4, 8 actors; steady env steps/s and updates/s
#   report    $REPORT from $RESULTS/runs.jsonl, and PNG curves (ferry plot, gnuplot)
#
#   usage: bench/learning.sh [BUILD_DIR]          (default: build)
# Environment: SEEDS="0 1 2 3 4"  ENVS="cartpole acrobot mountaincar lunarlander"
#   BASELINE_SEEDS (default: SEEDS)  SCALING_ENVS="cartpole lunarlander"  ACTORS="1 2 4 8"
#   SCALING_SEEDS="0 1 2"  PARTS="table baseline scaling ratio report"  RUNS=/tmp/ferry-learning
#   LSDQN_SETS="learner.lsdqn_period=1000 learner.lsdqn_samples=4096"
#   RATIO_ENVS="cartpole lunarlander"  RATIOS="64 16 4 1"  RATIO_SEEDS="0 1"  RATIO_SECONDS=12
#   BUDGET (every env's env-step budget instead of the Zoo's: a short try, or the script's test)
#   SETS="k=v ..." (passed to every run as --set k=v after the part's own, e.g. other ports)
#   RESULTS=docs/results (records and curves)  REPORT=docs/RESULTS.md
# Each part appends to $RESULTS/runs.jsonl, one JSON object per run; `report` reads it,
# so parts can run in separate sessions. Delete that file to start afresh.
set -euo pipefail
build=${1:-build}
seeds=${SEEDS:-0 1 2 3 4}
envs=${ENVS:-cartpole acrobot mountaincar lunarlander}
baseline_seeds=${BASELINE_SEEDS:-$seeds}
scaling_envs=${SCALING_ENVS:-cartpole lunarlander}
actor_counts=${ACTORS:-1 2 4 8}
scaling_seeds=${SCALING_SEEDS:-0 1 2}
parts=${PARTS:-table baseline scaling ratio report}
runs=${RUNS:-/tmp/ferry-learning}
lsdqn_sets=${LSDQN_SETS:-learner.lsdqn_period=1000 learner.lsdqn_samples=4096}
ratio_envs=${RATIO_ENVS:-cartpole lunarlander}
ratios=${RATIOS:-64 16 4 1}
ratio_seeds=${RATIO_SEEDS:-0 1}
ratio_seconds=${RATIO_SECONDS:-12}
results=${RESULTS:-docs/results}
report=${REPORT:-docs/RESULTS.md}
extra_sets=()
for kv in ${SETS:-}; do extra_sets+=(--set "$kv"); done
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
# The source every run of this invocation was built from, and the machine each record ran on.
commit=$(bench_commit)
machine=$(bench_machine)
bench_blas_env "$build"
mkdir -p "$runs" "$results"

# The published reference: RL Baselines3 Zoo, DQN, benchmark.md (mean return, env steps),
# and the return at which the scaling runs stop (CartPole: its "solved" 475; LunarLander: 150,
# near the Zoo's figure, since its "solved" 200 takes several times the budget here).
declare -A env_id=([cartpole]=CartPole-v1 [acrobot]=Acrobot-v1 [mountaincar]=MountainCar-v0
                   [lunarlander]=LunarLander-v2)
declare -A reference=([cartpole]=500.0 [acrobot]=-76.6 [mountaincar]=-100.8 [lunarlander]=154.4)
declare -A budget=([cartpole]=50000 [acrobot]=100000 [mountaincar]=120000 [lunarlander]=100000)
if [[ -n ${BUDGET:-} ]]; then for env in "${!budget[@]}"; do budget[$env]=$BUDGET; done; fi
declare -A threshold=([cartpole]=475 [acrobot]=-100 [mountaincar]=-110 [lunarlander]=150)
# The tuned configs (configs/cartpole.yaml is the quick start `make run` starts).
declare -A config=([cartpole]=configs/cartpole_zoo.yaml [acrobot]=configs/acrobot.yaml
                   [mountaincar]=configs/mountaincar.yaml [lunarlander]=configs/lunarlander.yaml)

# A config value, e.g. yaml_value configs/acrobot.yaml capacity.
yaml_value() { sed -nE "s/^ +$2: *([^ #]+).*/\1/p" "$1" | head -n1; }

# Appends every second the CPU seconds of each process of the run in $1 to $2
# ("pid seconds command..."); a process's last line is its total, roles exit at different times.
watch_cpu() {
  local hz pid args ticks
  hz=$(getconf CLK_TCK)
  while sleep 1; do
    # Builtins only per process (read, mapfile): this loop shares the run's 2 cores.
    for pid in $(grep -l -a -F "$1/config.yaml" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
      mapfile -d '' args 2>/dev/null <"/proc/$pid/cmdline" || continue
      ((${#args[@]})) || continue  # Exited between grep and read: an empty command line.
      [[ ${args[0]##*/} == grep ]] && continue
      cpu_ticks "/proc/$pid/stat" || continue
      printf '%s %d.%02d %s\n' "$pid" $((ticks / hz)) $((ticks % hz * 100 / hz)) "${args[*]}"
    done >>"$2"
  done
}

# run KIND ENV SEED NAME [--set k=v ...]: one run, its record appended to runs.jsonl.
run() {
  local kind=$1 env=$2 seed=$3 name=$4
  shift 4
  local dir="$runs/$name" cpu="$runs/$name.cpu"
  rm -rf "$dir" "$cpu"
  echo "learning.sh: $kind $env seed $seed ($name)" >&2
  watch_cpu "$dir" "$cpu" &
  local watcher=$!
  local start end code
  start=$(date +%s.%N)
  set +e
  local launcher=("$build/ferry" run)
  [[ $kind == serial ]] && launcher=("$build/bench/serial_dqn")
  "${launcher[@]}" "${config[$env]}" --set seed="$seed" --set run.dir="$dir" \
    --set stop.max_seconds=3600 "$@" "${extra_sets[@]}" >"$runs/$name.log" 2>&1
  code=$?
  set -e
  end=$(date +%s.%N)
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  local last
  last=$(grep '"end"' "$dir/metrics.jsonl" | tail -n1)
  [[ -n "$last" ]] || { echo "learning.sh: $name wrote no end record; see $runs/$name.log" >&2; return 1; }
  field() { sed -nE "s/.*\"$1\": (\"[^\"]*\"|[^,}]*).*/\1/p" <<<"$last"; }
  local final final_std
  final=$(field final_eval_return)
  final_std=$(field final_eval_std)
  # CPU seconds per role, from the last sample before the run ended.
  local cpu_roles
  cpu_roles=$(awk '$3 == "mpirun" { next }
      { role = "other" }
      / learner / { role = "learner" } /ferry-actor|ferry actor/ { role = "actors" }
      /ferry-replay|ferry replay/ { role = "replay" }
      /ferry-paramserver|ferry paramserver/ { role = "paramserver" }
      { total[$1] = $2; role_of[$1] = role }
      END {
        for (pid in total) cpu[role_of[pid]] += total[pid]
        printf "\"cpu_learner_s\": %.2f, \"cpu_actors_s\": %.2f, \"cpu_replay_s\": %.2f, \"cpu_paramserver_s\": %.2f",
               cpu["learner"], cpu["actors"], cpu["replay"], cpu["paramserver"] }' "$cpu" 2>/dev/null ||
               echo '"cpu_learner_s": 0, "cpu_actors_s": 0, "cpu_replay_s": 0, "cpu_paramserver_s": 0')
  local progress
  # The last progress record; a run can end before its first one.
  progress=$(grep '"wait_replay_s"' "$dir/metrics.jsonl" | tail -n1 || true)
  pfield() {
    local v
    v=$(sed -nE "s/.*\"$1\": ([^,}]*).*/\1/p" <<<"$progress")
    echo "${v:-null}"
  }
  # Env steps and updates a second between the first progress record and the last: the run's
  # steady rate, without its start-up or its final evaluations.
  local steady
  # A run that ends before its first progress record has none: awk then reads nothing.
  steady=$({ grep '"wait_replay_s"' "$dir/metrics.jsonl" || true; } | awk '
      function value(key,   skip) {  # The number after "key": in this line.
        skip = length(key) + 4
        return match($0, "\"" key "\": [^,}]*") ? substr($0, RSTART + skip, RLENGTH - skip) : ""
      }
      NR == 1 { t0 = value("time"); s0 = value("env_steps"); u0 = value("updates") }
      { t = value("time"); s = value("env_steps"); u = value("updates") }
      END {
        if (NR >= 2 && t - t0 > 0) printf "%.1f %.1f", (s - s0) / (t - t0), (u - u0) / (t - t0)
        else printf "null null"
      }')
  local selected selected_updates online
  selected=$(field selected_eval_return)
  selected_updates=$(field selected_updates)
  # Where the final policy is a weight average (learner.policy_average): the online network.
  online=$(field online_eval_return)
  # Opened only now, for one write: a run holding runs.jsonl open for its whole length would
  # write into a file that something replaced meanwhile (git stash, an editor), and be lost.
  {
    printf '{"kind": "%s", "env": "%s", "seed": %s, "name": "%s", "commit": "%s", "machine": "%s", "exit_code": %d, "wall_s": %.1f, ' \
      "$kind" "$env" "$seed" "$name" "$commit" "$machine" "$code" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
    printf '"learner_s": %s, "env_steps": %s, "updates": %s, "end": %s, ' \
      "$(field time)" "$(field env_steps)" "$(field updates)" "$(field end)"
    printf '"final_eval_return": %s, "final_eval_std": %s, "best_eval_return": %s, ' \
      "${final:-null}" "${final_std:-null}" "$(field best_eval_return)"
    printf '"selected_eval_return": %s, "selected_updates": %s, ' \
      "${selected:-null}" "${selected_updates:-null}"
    printf '"online_eval_return": %s, ' "${online:-null}"
    printf '"lsdqn_period": %s, ' "$(yaml_value "$dir/config.yaml" lsdqn_period)"
    printf '"samples_per_insert": %s, "batch_size": %s, "envs_per_actor": %s, "shards": %s, ' \
      "$(yaml_value "$dir/config.yaml" samples_per_insert)" "$(yaml_value "$dir/config.yaml" batch_size)" \
      "$(yaml_value "$dir/config.yaml" envs_per_actor)" "$(yaml_value "$dir/config.yaml" shards)"
    printf '"steady_env_steps_per_s": %s, "steady_updates_per_s": %s, ' ${steady}
    printf '"actors": %s, "ranks": %s, "wait_replay_s": %s, "eval_wait_s": %s, "compute_s": %s, "allreduce_s": %s, %s}\n' \
      "$(yaml_value "$dir/config.yaml" count)" "$(yaml_value "$dir/config.yaml" ranks)" \
      "$(pfield wait_replay_s)" "$(pfield eval_wait_s)" "$(pfield compute_s)" "$(pfield allreduce_s)" "$cpu_roles"
  } >>"$results/runs.jsonl"
}

# One shard holding what the config's shards hold together (the 1-actor, 1-shard settings).
one_shard_capacity() {
  echo $(( $(yaml_value "${config[$1]}" capacity) * $(yaml_value "${config[$1]}" shards) ))
}

# The whole budget: the target is out of reach, so every run ends at its env-step budget.
budget_sets() { echo --set stop.target_return=1e9 --set stop.max_env_steps="${budget[$1]}"; }

for part in $parts; do
  case $part in
    table)
      for env in $envs; do
        for seed in $seeds; do
          # shellcheck disable=SC2046
          run table "$env" "$seed" "$env-s$seed" $(budget_sets "$env")
        done
      done ;;
    baseline)
      for env in $envs; do
        capacity=$(one_shard_capacity "$env")
        for seed in $baseline_seeds; do
          # shellcheck disable=SC2046
          run paired "$env" "$seed" "$env-paired-s$seed" $(budget_sets "$env")
          # shellcheck disable=SC2046
          run baseline "$env" "$seed" "$env-baseline-s$seed" $(budget_sets "$env") \
            --set actors.count=1 --set actors.envs_per_actor=1 --set learner.ranks=1 \
            --set replay.shards=1 --set replay.capacity="$capacity"
          # The serial DQN has no LS-DQN refit, so it runs without one whatever the config says.
          # shellcheck disable=SC2046
          run serial "$env" "$seed" "$env-serial-s$seed" $(budget_sets "$env") \
            --set replay.shards=1 --set replay.capacity="$capacity" --set learner.lsdqn_period=0
        done
      done ;;
    lsdqn)
      for env in $envs; do
        switch=()
        if (($(yaml_value "${config[$env]}" lsdqn_period) + 0 > 0)); then
          switch=(--set learner.lsdqn_period=0)
        else
          for kv in $lsdqn_sets; do switch+=(--set "$kv"); done
        fi
        for seed in $seeds; do
          # shellcheck disable=SC2046
          run lsdqn "$env" "$seed" "$env-lsdqn-s$seed" $(budget_sets "$env") "${switch[@]}"
        done
      done ;;
    scaling)
      for env in $scaling_envs; do
        capacity=$(one_shard_capacity "$env")
        envs_each=$(yaml_value "${config[$env]}" envs_per_actor)
        for seed in $scaling_seeds; do
          run scaling "$env" "$seed" "$env-a1e1-r1-s$seed" --set actors.count=1 \
            --set actors.envs_per_actor=1 --set replay.shards=1 --set replay.capacity="$capacity" \
            --set learner.ranks=1 --set stop.target_return="${threshold[$env]}" \
            --set stop.max_env_steps=$((2 * budget[$env]))
          for n in $actor_counts; do
            run scaling "$env" "$seed" "$env-a$n-r1-s$seed" --set actors.count="$n" \
              --set learner.ranks=1 --set stop.target_return="${threshold[$env]}" \
              --set stop.max_env_steps=$((2 * budget[$env]))
          done
          # The config's envs in all, over more processes: what a process costs, apart from
          # the envs it adds.
          for n in $actor_counts; do
            ((n > 1 && envs_each % n == 0)) || continue
            run scaling "$env" "$seed" "$env-a$n-e$((envs_each / n))-r1-s$seed" \
              --set actors.count="$n" --set actors.envs_per_actor=$((envs_each / n)) \
              --set learner.ranks=1 --set stop.target_return="${threshold[$env]}" \
              --set stop.max_env_steps=$((2 * budget[$env]))
          done
          run scaling "$env" "$seed" "$env-a2-r2-s$seed" --set actors.count=2 \
            --set learner.ranks=2 --set stop.target_return="${threshold[$env]}" \
            --set stop.max_env_steps=$((2 * budget[$env]))
        done
      done ;;
    ratio)
      for env in $ratio_envs; do
        capacity=$(one_shard_capacity "$env")
        for seed in $ratio_seeds; do
          for spi in $ratios; do
            timed=(--set replay.samples_per_insert="$spi" --set stop.target_return=1e9
                   --set stop.max_env_steps=1000000000 --set stop.max_seconds="$ratio_seconds")
            run ratio "$env" "$seed" "$env-spi$spi-a1e1-s$seed" "${timed[@]}" \
              --set actors.count=1 --set actors.envs_per_actor=1 --set learner.ranks=1 \
              --set replay.shards=1 --set replay.capacity="$capacity"
            for n in $actor_counts; do
              run ratio "$env" "$seed" "$env-spi$spi-a$n-s$seed" "${timed[@]}" \
                --set actors.count="$n" --set learner.ranks=1
            done
          done
        done
      done ;;
    report) ;;
    *) echo "learning.sh: unknown part '$part' (table, baseline, lsdqn, scaling, ratio, report)" >&2; exit 2 ;;
  esac
done
[[ " $parts " == *" report "* ]] || exit 0

# ---- report ----------------------------------------------------------------------------------
jsonl="$results/runs.jsonl"
[[ -s "$jsonl" ]] || { echo "learning.sh: $jsonl is empty; run a part first" >&2; exit 1; }
# The curves are drawn from the table runs' directories still under $runs; an env with none
# there keeps an earlier report's curves. `plotted` says whose curves are in $results
# ("cartpole: s5 s6 ...; ..."), read from their data files, since the records may hold more runs.
plotted=""
for env in cartpole acrobot mountaincar lunarlander; do
  dirs=()
  for d in "$runs/$env"-s[0-9]*; do [[ -d "$d" ]] && dirs+=("$d"); done
  if ((${#dirs[@]})); then
    rm -f "$results/$env"/*.dat  # an earlier report's runs, whose curves these replace
    "$build/ferry" plot "${dirs[@]}" --out "$results/$env" >/dev/null
  fi
  seeds=$(for f in "$results/$env"/*.eval.dat; do [[ -f "$f" ]] || continue; basename "$f" .eval.dat
           done | sed -E 's/.*-//' | sort -t s -k2n | xargs)
  if [[ -n "$seeds" ]]; then plotted+="${plotted:+; }$env: $seeds"; fi
done

# Flattens each JSON line into k=v fields for awk.
flat() { sed -E 's/[{}"]//g; s/, /\t/g; s/: /=/g' "$jsonl"; }
refs=$(for env in cartpole acrobot mountaincar lunarlander; do
  printf '%s=%s=%s=%s=%s=%s\n' "$env" "${env_id[$env]}" "${reference[$env]}" "${budget[$env]}" \
    "${threshold[$env]}" "$(yaml_value "${config[$env]}" envs_per_actor)"; done)

rm -f "$runs/ratio.dat"
# Two-sided 95% Student t quantiles, for the report's intervals and the mean curves' bands.
# Beyond 9 degrees of freedom, the Cornish-Fisher expansion of t about the normal's 1.96,
# within 0.003 of the exact quantile there and closer as df grows.
awk_t95='
function t95(df,   t, z) {
  split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26", t, " ")
  if (df >= 1 && df <= 9) return t[df]
  z = 1.959964
  return z + (z ^ 3 + z) / (4 * df) + (5 * z ^ 5 + 16 * z ^ 3 + 3 * z) / (96 * df ^ 2)
}'
flat | awk -F'\t' -v refs="$refs" -v plotted="$plotted" -v ratio_dat="$runs/ratio.dat" -v machine="$machine" \
  -v date="$(date -u +%Y-%m-%d)" "$awk_t95"'
# "mean ± sd | [lo, hi]" over `count` values with this sum and sum of squares, and in
# met[0] whether the mean reaches `target`.
function summary(total, squares, count, target, met,   mean, sd, ci) {
  mean = total / count
  sd = count > 1 ? sqrt((squares - count * mean ^ 2) / (count - 1)) : 0
  ci = count > 1 ? t95(count - 1) * sd / sqrt(count) : 0
  met[0] = mean >= target ? "yes" : "**no**"
  return sprintf("%.1f ± %.1f | [%.1f, %.1f]", mean, sd, mean - ci, mean + ci)
}
function mean_sd(total, squares, count,   mean) {
  if (!count) return "-"
  mean = total / count
  return sprintf("%.1f ± %.1f", mean, count > 1 ? sqrt((squares - count * mean ^ 2) / (count - 1)) : 0)
}
# Whether a record has this field with a value (older records lack some fields).
function known(v) { return v != "" && v != "null" }
# A list entry as a number; "inf" (a run that never reached its threshold) above every other.
# Spelled out because awks differ: mawk reads "inf" as infinity, gawk as 0.
function number(v) { return v == "inf" ? 1e300 : v + 0 }
function median(list,   a, n, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (number(a[j]) < number(a[i])) { t = a[i]; a[i] = a[j]; a[j] = t }
  if (n == 0) return ""
  if (n % 2) return a[(n + 1) / 2]
  return a[n / 2 + 1] == "inf" ? "inf" : (a[n / 2] + a[n / 2 + 1]) / 2
}
# "lo-hi s" over a list of times in seconds ("inf": a run that never got there).
function time_range(list,   a, n, i, lo, hi) {
  n = split(list, a, " ")
  lo = hi = a[1]
  for (i = 2; i <= n; i++) { if (number(a[i]) < number(lo)) lo = a[i]; if (number(a[i]) > number(hi)) hi = a[i] }
  return (lo == "inf" ? "inf" : sprintf("%.1f", lo)) "-" (hi == "inf" ? "inf" : sprintf("%.1f", hi)) " s"
}
# The speed-ups of ferry (kind "paired") over kind `other` on env e, seed by seed (the other
# run'"'"'s wall-clock / ferry'"'"'s, both of that seed): "per seed | geometric mean | 95% CI | seeds
# ferry was faster on", the interval a Student t one on the logarithms; "" without a pair.
function speedups(e, other,   s, n_s, i, r, n, list, faster, lsum, lsq, m, sd, h) {
  n_s = split(paired_seeds[e], s, " ")
  for (i = 1; i <= n_s; i++) {
    if (!((other, e, s[i]) in seed_wall)) continue
    r = seed_wall[other, e, s[i]] / seed_wall["paired", e, s[i]]
    list = list sprintf("%s%.2f", n++ ? ", " : "", r)
    faster += r > 1
    lsum += log(r); lsq += log(r) ^ 2
  }
  if (!n) return ""
  m = lsum / n
  sd = n > 1 ? sqrt(lsq > n * m ^ 2 ? (lsq - n * m ^ 2) / (n - 1) : 0) : 0
  h = n > 1 ? t95(n - 1) * sd / sqrt(n) : 0
  return sprintf("%s | %.2fx | %s | %d of %d", list, exp(m),
                 n > 1 ? sprintf("[%.2f, %.2f]", exp(m - h), exp(m + h)) : "-", faster, n)
}
# The median over the seeds of ferry'"'"'s runs on env e of kind `kind`'"'"'s cores busy; "" with none.
function median_busy(kind, e,   s, n_s, i, list) {
  n_s = split(paired_seeds[e], s, " ")
  for (i = 1; i <= n_s; i++) if ((kind, e, s[i]) in seed_busy) list = list " " seed_busy[kind, e, s[i]]
  return median(list)
}
BEGIN {
  n_refs = split(refs, lines, "\n")
  for (i = 1; i <= n_refs; i++) {
    split(lines[i], f, "="); order[i] = f[1]; id[f[1]] = f[2]; ref[f[1]] = f[3]; bud[f[1]] = f[4]; thr[f[1]] = f[5]
  }
}
{
  delete r
  for (i = 1; i <= NF; i++) { k = substr($i, 1, index($i, "=") - 1); r[k] = substr($i, index($i, "=") + 1) }
  e = r["env"]
  c = r["commit"] == "" ? "unrecorded" : r["commit"]
  m = known(r["machine"]) ? r["machine"] : machine  # Records before 6 December lack it.
  if (!(m in machine_commits)) { machines[++n_machines] = m; machine_commits[m] = "" }
  if (!((m, c) in commit_seen)) {
    commit_seen[m, c] = 1
    machine_commits[m] = machine_commits[m] (machine_commits[m] == "" ? "" : ", ") c
  }
  if (r["kind"] == "table" && r["final_eval_return"] != "null") {
    n[e]++; sum[e] += r["final_eval_return"]; sq[e] += r["final_eval_return"] ^ 2
    per_seed[e] = per_seed[e] sprintf("%s%.1f", per_seed[e] == "" ? "" : ", ", r["final_eval_return"])
    wall[e] = wall[e] " " r["wall_s"]
    rate[e] = rate[e] " " r["env_steps"] / r["learner_s"]
    v = r["selected_eval_return"]
    if (known(v)) {
      sel_n[e]++; sel_sum[e] += v; sel_sq[e] += v ^ 2
      sel_seed[e] = sel_seed[e] sprintf("%s%.1f", sel_seed[e] == "" ? "" : ", ", v)
    }
    v = r["online_eval_return"]
    if (known(v)) {
      onl_n[e]++; onl_sum[e] += v
      onl_seed[e] = onl_seed[e] sprintf("%s%.1f", onl_seed[e] == "" ? "" : ", ", v)
    }
  }
  if (r["kind"] == "baseline" && r["final_eval_return"] != "null") {
    bn[e]++; bsum[e] += r["final_eval_return"]; bwall[e] = bwall[e] " " r["wall_s"]
    bsel[e] += r["selected_eval_return"]
    bupd[e] = bupd[e] " " r["updates"] / r["learner_s"]
    if (known(r["eval_wait_s"])) bevw[e] = bevw[e] " " r["eval_wait_s"]
  }
  # Wall-clock by kind, env and seed in the single-process comparison, for the paired
  # speed-ups; the seeds of kind "paired" (ferry) in the order they ran.
  if ((r["kind"] == "paired" || r["kind"] == "baseline" || r["kind"] == "serial") &&
      r["final_eval_return"] != "null") {
    if (r["kind"] == "paired" && !(("paired", e, r["seed"]) in seed_wall)) {
      paired_n[e]++
      paired_seeds[e] = paired_seeds[e] " " r["seed"]
    }
    seed_wall[r["kind"], e, r["seed"]] = r["wall_s"]
    # The share of the machine'"'"'s cores the run kept busy: its processes'"'"' CPU seconds over its
    # wall-clock times the cores ("2-core ..."); serial runs have no CPU record.
    work = r["cpu_learner_s"] + r["cpu_actors_s"] + r["cpu_replay_s"] + r["cpu_paramserver_s"]
    if (work > 0 && match(m, /^[0-9]+-core/)) {
      seed_busy[r["kind"], e, r["seed"]] = work / (substr(m, 1, RLENGTH - 5) * r["wall_s"])
    }
  }
  if (r["kind"] == "serial" && r["final_eval_return"] != "null") {
    qn[e]++; qsum[e] += r["final_eval_return"]; qwall[e] = qwall[e] " " r["wall_s"]
    qsel[e] += r["selected_eval_return"]
    qupd[e] = qupd[e] " " r["updates"] / r["learner_s"]
  }
  if (r["kind"] == "paired" && r["final_eval_return"] != "null") {
    pn[e]++; psum[e] += r["final_eval_return"]; pwall[e] = pwall[e] " " r["wall_s"]
    psel[e] += r["selected_eval_return"]
    pupd[e] = pupd[e] " " r["updates"] / r["learner_s"]
    if (known(r["eval_wait_s"])) pevw[e] = pevw[e] " " r["eval_wait_s"]
  }
  # The refit on and off, from the table runs and the lsdqn runs, which switch it; records
  # from before lsdqn_period was recorded had it on exactly in part lsdqn.
  if ((r["kind"] == "table" || r["kind"] == "lsdqn") && r["final_eval_return"] != "null") {
    if (r["kind"] == "lsdqn") lsdqn_seen[e] = 1
    side = (known(r["lsdqn_period"]) ? (r["lsdqn_period"] + 0 > 0) : (r["kind"] == "lsdqn")) ? "on" : "off"
    rn[e, side]++; rsum[e, side] += r["final_eval_return"]; rsq[e, side] += r["final_eval_return"] ^ 2
    rsel[e, side] += r["selected_eval_return"]; rsel_sq[e, side] += r["selected_eval_return"] ^ 2
    rwall[e, side] = rwall[e, side] " " r["wall_s"]
    rupd[e, side] = rupd[e, side] " " r["updates"] / r["learner_s"]
    if (side == "on")
      rseed[e] = rseed[e] sprintf("%s%.1f", rseed[e] == "" ? "" : ", ", r["final_eval_return"])
  }
  # Acting against learning: per env, replay ratio and setting ("1x1": one actor with one env
  # and one shard), in the order the part ran them.
  if (r["kind"] == "ratio" && known(r["steady_env_steps_per_s"])) {
    setting = r["actors"] == 1 && r["envs_per_actor"] == 1 && r["shards"] == 1 ? "1x1" : r["actors"]
    key = e SUBSEP r["samples_per_insert"] SUBSEP setting
    if (!(key in xseen)) { xseen[key] = 1; xkeys[++nx] = key }
    xbatch[key] = r["batch_size"]; xenvs[key] = r["envs_per_actor"]; xshards[key] = r["shards"]
    xrate[key] = xrate[key] " " r["steady_env_steps_per_s"]
    xupd[key] = xupd[key] " " r["steady_updates_per_s"]
    xseeds[key]++
    xcl[key] += r["cpu_learner_s"]; xca[key] += r["cpu_actors_s"]
    xcr[key] += r["cpu_replay_s"]; xcp[key] += r["cpu_paramserver_s"]
    xwaits[key] += r["wait_replay_s"]
    xbusy[key] += r["compute_s"] + r["allreduce_s"] + r["wait_replay_s"] + r["eval_wait_s"]
  }
  if (r["kind"] == "scaling") {
    alone = r["actors"] == 1 && r["envs_per_actor"] == 1 && r["shards"] == 1
    key = e SUBSEP (alone ? "1 x 1, 1 shard" : r["actors"] " x " r["envs_per_actor"]) SUBSEP r["ranks"]
    if (!(key in seen)) { seen[key] = 1; skeys[++ns] = key }
    reached = r["end"] == "target_reached"
    stime[key] = stime[key] " " (reached ? r["learner_s"] : "inf")
    ssteps[key] = ssteps[key] " " (reached ? r["env_steps"] : "inf")
    srate[key] = srate[key] " " r["env_steps"] / r["learner_s"]
    supd[key] = supd[key] " " r["updates"] / r["learner_s"]
    # Summed over the seeds of a setting: a short run holds few whole CPU seconds per role.
    sseeds[key]++
    scl[key] += r["cpu_learner_s"]; sca[key] += r["cpu_actors_s"]
    scr[key] += r["cpu_replay_s"]; scp[key] += r["cpu_paramserver_s"]
    if (r["wait_replay_s"] != "null") {
      swaits[key] += r["wait_replay_s"]
      sbusy[key] += r["compute_s"] + r["allreduce_s"] + r["wait_replay_s"]
      # Records before bench/learning.sh kept the evaluation waits have none.
      if (known(r["eval_wait_s"])) {
        sevals[key] += r["eval_wait_s"]; sbusy[key] += r["eval_wait_s"]; sev_n[key]++
      }
    }
  }
}
END {
  print "# Learning results"
  print ""
  ran = ""
  for (i = 1; i <= n_machines; i++) {
    ran = ran (i == 1 ? "" : "; ") sprintf("%s on a %s", machine_commits[machines[i]], machines[i])
  }
  printf "Generated by `bench/learning.sh` on %s from runs of commit(s) %s, Debian 12,\n", date, ran
  print "OpenBLAS (1 thread per process)."
  print "Every figure below is measured in that run; the Zoo numbers are quoted from RL Baselines3 Zoo'"'"'s"
  print "DQN `benchmark.md`. Reproduce: `make build && bench/learning.sh` (about two and a half hours on 2 cores);"
  print "`ferry eval RUN_DIR` repeats any run'"'"'s final evaluation from its last checkpoint, `ferry eval"
  print "RUN_DIR --best` that of its selected policy."
  print ""
  print "## Against RL Baselines3 Zoo (DQN), at the Zoo'"'"'s env-step budget"
  print ""
  print "Each seed runs its env'"'"'s tuned config (`configs/<env>.yaml`; CartPole: `configs/cartpole_zoo.yaml`)"
  print "until the budget is spent. Two policies of each run are then evaluated greedily on the same 100"
  print "fresh episodes (env seeds no periodic evaluation used): the *final* policy, the one the run ends"
  print "with, and the *selected* policy, the one the learner kept at its best periodic evaluation"
  print "(`learner.eval_episodes` episodes every `learner.eval_period` updates, always the same start"
  print "states; `checkpoints/best-policy.pt`, as Stable-Baselines3'"'"'s EvalCallback keeps a best model)."
  print "A return is the mean over seeds of those 100-episode means, ± the sample standard deviation"
  print "across seeds, with a 95% Student-t confidence interval."
  print ""
  print "| env | Zoo return | budget (env steps) | final policy | 95% CI | met? | selected policy | 95% CI | met? | seeds | wall-clock (median) | env steps/s (median) |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= n_refs; i++) {
    e = order[i]
    if (!n[e]) continue
    final_cells = summary(sum[e], sq[e], n[e], ref[e], final_met)
    selected_cells = sel_n[e] ? summary(sel_sum[e], sel_sq[e], sel_n[e], ref[e], selected_met) : "- | -"
    printf "| %s | %s | %dk | %s | %s | %s | %s | %d | %.0f s | %.0f |\n", id[e], ref[e], bud[e] / 1000,
           final_cells, final_met[0], selected_cells, (sel_n[e] ? selected_met[0] : "-"), n[e],
           median(wall[e]), median(rate[e])
  }
  print ""
  print "Per seed (100-episode mean returns, seeds in order):"
  print ""
  for (i = 1; i <= n_refs; i++) {
    e = order[i]
    if (!n[e]) continue
    printf "- %s: final %s; selected %s", id[e], per_seed[e], (sel_n[e] ? sel_seed[e] : "-")
    # The final policy is a weight average: the online network on the same episodes.
    if (onl_n[e]) printf "; online network, not averaged, %s (mean %.1f)", onl_seed[e], onl_sum[e] / onl_n[e]
    printf "\n"
  }
  print ""
  print "## Against a single-process DQN"
  print ""
  print "Per env and seed, three runs back to back at the same budget: the config as it is (*ferry*);"
  print "the same config as `actors.count=1 actors.envs_per_actor=1 learner.ranks=1 replay.shards=1`"
  print "(the shard holding the whole buffer; *1 actor*), still four processes side by side; and"
  print "`bench/serial_dqn` on that config (*serial*): the same algorithm, replay ratio and evaluations"
  print "done in turn on one thread, as a single-process DQN (Stable-Baselines3'"'"'s) runs. Wall-clock is"
  print "from start to exit, including start-up and the final evaluations; a speed-up is the other'"'"'s"
  print "median time / ferry'"'"'s (above 1: ferry faster). Returns are means over seeds, final / selected."
  print "Evaluation waits are the seconds a run'"'"'s update thread spent waiting for the periodic"
  print "evaluation before it to finish (median; serial plays its evaluations in turn, so has none)."
  print ""
  print "| env | seeds | ferry return | 1-actor return | serial return | ferry wall-clock | 1-actor wall-clock | serial wall-clock | updates/s ferry / 1-actor / serial | evaluation waits ferry / 1-actor | speed-up vs 1 actor | speed-up vs serial |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= n_refs; i++) {
    e = order[i]
    if (!bn[e] || !pn[e]) continue
    printf "| %s | %d | %.1f / %.1f | %.1f / %.1f | %s | %.0f s | %.0f s | %s | %.0f / %.0f / %s | %s | %.2fx | %s |\n", id[e], bn[e],
           psum[e] / pn[e], psel[e] / pn[e], bsum[e] / bn[e], bsel[e] / bn[e],
           (qn[e] ? sprintf("%.1f / %.1f", qsum[e] / qn[e], qsel[e] / qn[e]) : "-"), median(pwall[e]),
           median(bwall[e]), (qn[e] ? sprintf("%.0f s", median(qwall[e])) : "-"), median(pupd[e]),
           median(bupd[e]), (qn[e] ? sprintf("%.0f", median(qupd[e])) : "-"),
           (pevw[e] != "" && bevw[e] != "" ? sprintf("%.1f / %.1f s", median(pevw[e]), median(bevw[e])) : "-"),
           median(bwall[e]) / median(pwall[e]),
           (qn[e] ? sprintf("%.2fx", median(qwall[e]) / median(pwall[e])) : "-")
  }
  print ""
  print "The speed-ups above divide medians. Here the runs are paired by seed (each seed'"'"'s three ran"
  print "back to back, on the same machine at the same moment): a seed'"'"'s speed-up is the other run'"'"'s"
  print "wall-clock / ferry'"'"'s, summarised by the geometric mean over seeds with a 95% Student t"
  print "interval on the logarithms. An interval that holds 1.00 is a tie at this many seeds. Cores"
  print "busy are a run'"'"'s CPU seconds (all its processes) over its wall-clock times the machine'"'"'s"
  print "cores, the median over seeds. No layout of the 1-actor runs'"'"' work finishes before that work"
  print "spread over every core with none idle, so without doing less work nothing, more actors and"
  print "ranks included, beats them by more than 1 / their cores busy: the last column."
  print ""
  print "| env | seeds | vs 1 actor, per seed | geometric mean | 95% CI | ferry faster on | vs serial, per seed | geometric mean | 95% CI | ferry faster on | cores busy, ferry / 1 actor | bound on a speed-up over 1 actor |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= n_refs; i++) {
    e = order[i]
    one = speedups(e, "baseline")
    if (one == "") continue
    serial = speedups(e, "serial")
    cores = bound = "-"
    one_busy = median_busy("baseline", e)
    if (one_busy != "") {
      ferry_busy = median_busy("paired", e)
      bound = sprintf("%.2fx", 1 / one_busy)
      cores = sprintf("%s / %.0f%%", ferry_busy == "" ? "-" : sprintf("%.0f%%", 100 * ferry_busy),
                      100 * one_busy)
    }
    printf "| %s | %d | %s | %s | %s | %s |\n", id[e], paired_n[e], one,
           serial == "" ? "- | - | - | -" : serial, cores, bound
  }
  print ""
  if (length(lsdqn_seen)) {
    print "## The LS-DQN head refit, on and off"
    print ""
    print "The table'"'"'s seeds and budgets again (part `lsdqn`), with the least-squares refit of the"
    print "last layer switched from the config'"'"'s setting (on: `LSDQN_SETS`; off:"
    print "`learner.lsdqn_period=0`); the other side is the table above. Returns are final / selected,"
    print "mean ± standard deviation over seeds; \"Reading these numbers\" says which the configs keep,"
    print "and why."
    print ""
    print "| env | seeds off / on | off: final | on: final | off: selected | on: selected | on: final per seed | wall-clock off / on (median) | updates/s off / on (median) |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= n_refs; i++) {
      e = order[i]
      if (!lsdqn_seen[e] || !rn[e, "off"] || !rn[e, "on"]) continue
      printf "| %s | %d / %d | %s | %s | %s | %s | %s | %.0f / %.0f s | %.0f / %.0f |\n", id[e],
             rn[e, "off"], rn[e, "on"],
             mean_sd(rsum[e, "off"], rsq[e, "off"], rn[e, "off"]),
             mean_sd(rsum[e, "on"], rsq[e, "on"], rn[e, "on"]),
             mean_sd(rsel[e, "off"], rsel_sq[e, "off"], rn[e, "off"]),
             mean_sd(rsel[e, "on"], rsel_sq[e, "on"], rn[e, "on"]), rseed[e],
             median(rwall[e, "off"]), median(rwall[e, "on"]), median(rupd[e, "off"]), median(rupd[e, "on"])
    }
    print ""
  }
  print "## Scaling: time to the threshold with more actors and learner ranks"
  print ""
  print "Time is the learner'"'"'s clock when its periodic greedy evaluation first reaches the threshold"
  print "(\"inf\": not within 2x the budget); time, env steps and rates are medians over the seeds,"
  print "and the range is the fastest seed'"'"'s time to the slowest'"'"'s."
  print "CPU shares are of the CPU seconds of all the runs'"'"' processes, summed over the seeds (learner /"
  print "actors / replay shards / paramserver); learner waits are the shares of the learner'"'"'s loop spent"
  print "waiting for a sampled batch (the shards'"'"' rate limiters or the network) and for the periodic"
  print "evaluation before to finish, over the runs that lasted to a progress record. *Actors x envs*"
  print "gives the actor processes and the envs each one steps, over the config'"'"'s shards: first 1 to 8"
  print "actors of the config'"'"'s 8 envs each (more processes, more envs), then the config'"'"'s 8 envs"
  print "spread over 2 to 8 actors (more processes, the same envs); *1 x 1, 1 shard* is the"
  print "single-process comparison'"'"'s 1-actor configuration."
  print ""
  print "| env | threshold | actors x envs | learner ranks | seeds | time (median) | time, seeds'"'"' range | env steps | env steps/s | updates/s | CPU % L/A/R/P | learner waits: batches / evaluations |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= ns; i++) {
    k = skeys[i]
    split(k, part_of, SUBSEP)
    t = median(stime[k])
    cpu = scl[k] + sca[k] + scr[k] + scp[k]
    shares = cpu > 0 ? sprintf("%.0f / %.0f / %.0f / %.0f", 100 * scl[k] / cpu, 100 * sca[k] / cpu,
                               100 * scr[k] / cpu, 100 * scp[k] / cpu) : "-"
    printf "| %s | %s | %s | %s | %d | %s | %s | %s | %.0f | %.0f | %s | %s |\n", id[part_of[1]], thr[part_of[1]], part_of[2], part_of[3],
           sseeds[k], (t == "inf" ? "inf" : sprintf("%.1f s", t)), time_range(stime[k]), median(ssteps[k]), median(srate[k]), median(supd[k]),
           shares, (sbusy[k] > 0 ? sprintf("%.0f%% / %s", 100 * swaits[k] / sbusy[k],
                                           sev_n[k] ? sprintf("%.0f%%", 100 * sevals[k] / sbusy[k]) : "-") : "-")
  }
  print ""
  if (nx) {
    print "## Acting against learning: where more actors pay"
    print ""
    print "The tables above run at the configs'"'"' replay ratios, where a budget of env steps is a fixed"
    print "number of updates and the learner'"'"'s one update thread sets the pace. Here each env'"'"'s config"
    print "ran for a fixed time of the learner'"'"'s clock (part `ratio`, `RATIO_SECONDS`) with"
    print "`replay.samples_per_insert` set to each ratio, as one actor with one env and one shard (*1 x 1*,"
    print "the single-process comparison'"'"'s *1 actor*) and as 1, 2, 4 and 8 actors with the config'"'"'s envs"
    print "and shards. Rates are steady ones, from the run'"'"'s first progress record to its last (without"
    print "start-up and the final evaluations), medians over the seeds; *vs 1 x 1* divides the env steps/s"
    print "by those of 1 x 1 at the same ratio. The last two columns say who waited: the share of the"
    print "learner'"'"'s loop spent waiting for a batch (the shards'"'"' rate limiters hold the learner back while"
    print "the actors fall behind the ratio), and each role'"'"'s share of the CPU seconds (learner / actors /"
    print "replay shards / paramserver), summed over the seeds."
    print ""
    print "| env | samples per insert | updates per env step | actors x envs, shards | seeds | env steps/s | updates/s | vs 1 x 1 | learner waits for batches | CPU % L/A/R/P |"
    print "|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nx; i++) {
      k = xkeys[i]
      split(k, part_of, SUBSEP)
      base = median(xrate[part_of[1], part_of[2], "1x1"])
      rate_k = median(xrate[k])
      cpu = xcl[k] + xca[k] + xcr[k] + xcp[k]
      shares = cpu > 0 ? sprintf("%.0f / %.0f / %.0f / %.0f", 100 * xcl[k] / cpu, 100 * xca[k] / cpu,
                                 100 * xcr[k] / cpu, 100 * xcp[k] / cpu) : "-"
      printf "| %s | %s | %.3g | %s x %s, %s | %d | %.0f | %.0f | %s | %s | %s |\n", id[part_of[1]], part_of[2],
             part_of[2] / xbatch[k], (part_of[3] == "1x1" ? 1 : part_of[3]), xenvs[k], xshards[k], xseeds[k],
             rate_k, median(xupd[k]), (base > 0 ? sprintf("%.2f", rate_k / base) : "-"),
             (xbusy[k] > 0 ? sprintf("%.0f%%", 100 * xwaits[k] / xbusy[k]) : "-"), shares
      if (part_of[3] != "1x1" && base > 0)
        print part_of[1], part_of[2], part_of[3], rate_k / base > ratio_dat
    }
    print ""
  }
  print "Curves: `docs/results/learning_curves.png`, each env'"'"'s table runs as the mean over seeds of their"
  print "periodic greedy evaluations (each run'"'"'s curve interpolated between its evaluations) with"
  print "a band for its 95% t interval, beside the Zoo'"'"'s return; per run,"
  print "`docs/results/<env>/return_vs_env_steps.png`, `return_vs_time.png`, `throughput.png`"
  printf "(one curve per table run: %s); scaling: `docs/results/scaling.png` and\n", (plotted == "" ? "none" : plotted)
  printf "`scaling_throughput.png`%s. Raw records: `docs/results/runs.jsonl`.\n",
         (nx ? ";\nacting against learning: `docs/results/replay_ratio.png`" : "")
}' >"$report"

# The table runs' learning curves over seeds, one panel an env: at 50 points evenly over the
# env steps every run's evaluations span, the mean of the runs' returns there (each run's
# linearly interpolated between its evaluations) and a band for its 95% t interval.
declare -A curve_runs=()  # env -> the table runs its panel averages
for env in cartpole acrobot mountaincar lunarlander; do
  evals=("$results/$env"/*.eval.dat)
  [[ -f ${evals[0]} ]] || continue
  curve_runs[$env]=${#evals[@]}
  awk "$awk_t95"'
    FNR == 1 { runs++ }
    /^#/ { next }
    { n[runs]++; x[runs, n[runs]] = $2; y[runs, n[runs]] = $3 }
    END {
      for (r = 1; r <= runs; r++) {
        if (r == 1 || x[r, 1] > from) from = x[r, 1]
        if (r == 1 || x[r, n[r]] < to) to = x[r, n[r]]
      }
      for (g = 0; g < 50; g++) {
        at = from + (to - from) * g / 49
        total = squares = 0
        for (r = 1; r <= runs; r++) {
          for (i = 2; i < n[r] && x[r, i] < at; i++) {}
          w = n[r] > 1 && x[r, i] > x[r, i - 1] ? (at - x[r, i - 1]) / (x[r, i] - x[r, i - 1]) : 0
          v = y[r, i - 1] + w * (y[r, i] - y[r, i - 1])
          total += v; squares += v * v
        }
        mean = total / runs
        h = runs > 1 ? t95(runs - 1) * sqrt((squares - runs * mean ^ 2) / (runs - 1) / runs) : 0
        print at, mean, mean - h, mean + h
      }
    }' "${evals[@]}" >"$runs/curve-$env.dat"
done
if ((${#curve_runs[@]})); then
  {
    echo "set terminal pngcairo size 1100,800 noenhanced; set output '$results/learning_curves.png'"
    echo "set multiplot layout 2,2; set grid; set key bottom right"
    echo "set xlabel 'thousands of env steps'; set ylabel 'greedy evaluation return'"
    for env in cartpole acrobot mountaincar lunarlander; do
      [[ -n ${curve_runs[$env]:-} ]] || continue
      echo "set title '${env_id[$env]}: table runs, ${curve_runs[$env]} seeds'"
      printf "plot '%s' using (\$1 / 1000):3:4 with filledcurves fs transparent solid 0.25 lc 1 " \
        "$runs/curve-$env.dat"
      printf "title '95%% interval', '' using (\$1 / 1000):2 with lines lw 2 lc 1 title 'mean', "
      printf "%s with lines dt 2 lc 'black' title 'Zoo: %s'\n" "${reference[$env]}" "${reference[$env]}"
    done
    echo "unset multiplot"
  } | gnuplot
fi
# Scaling plots against actors (one learner rank): each seed a point, each env and layout a line
# through the mean over its seeds. Layout "each": the config's envs per actor; "all": the
# config's envs spread over the actors. One actor of the config's envs is in both.
flat | awk -F'\t' -v refs="$refs" '
  BEGIN { n = split(refs, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, "="); each[f[1]] = f[6] } }
  {
    delete r
    for (i = 1; i <= NF; i++) { k = substr($i, 1, index($i, "=") - 1); r[k] = substr($i, index($i, "=") + 1) }
    if (r["kind"] != "scaling" || r["ranks"] != 1 || r["end"] != "target_reached") next
    row = r["actors"] " " r["learner_s"] " " r["updates"] / r["learner_s"]
    if (r["envs_per_actor"] == each[r["env"]]) print r["env"], "each", row
    if (r["actors"] * r["envs_per_actor"] == each[r["env"]]) print r["env"], "all", row
  }' | sort -k1,1 -k2,2 -k3n >"$runs/scaling.dat"
# scaling_plot PNG YLABEL TITLE COLUMN
scaling_plot() {
  echo "set terminal pngcairo size 900,560 noenhanced; set output '$results/$1'"
  echo "set grid; set logscale x 2; set xlabel 'actors'; set ylabel '$2'"
  echo "set title '$3'; set key top right"
  printf "plot "
  local sep="" n=0 env layout envs title dash point
  for env in $(cut -d' ' -f1 "$runs/scaling.dat" | sort -u); do
    n=$((n + 1))
    envs=$(yaml_value "${config[$env]}" envs_per_actor)
    for layout in each all; do
      grep -q "^$env $layout " "$runs/scaling.dat" || continue
      dash=1 point=7
      title="${env_id[$env]}, $envs envs each: mean of seeds"
      [[ $layout == all ]] && { title="${env_id[$env]}, $envs envs in all: mean of seeds"; dash=2 point=6; }
      printf "%s'< grep \"^%s %s \" %s' using 3:%s with points lc %d pt %d notitle, '' using 3:%s smooth unique with lines lc %d dt %d title '%s'" \
        "$sep" "$env" "$layout" "$runs/scaling.dat" "$4" "$n" "$point" "$4" "$n" "$dash" "$title"
      sep=", "
    done
  done
  echo
}
if [[ -s "$runs/scaling.dat" ]]; then
  scaling_plot scaling.png "seconds to threshold" "time to the return threshold (1 learner rank)" 4 | gnuplot
  scaling_plot scaling_throughput.png "updates per second" \
    "learner updates/s at the configured replay ratio (1 learner rank)" 5 | gnuplot
fi
# Acting against learning: each env a panel, each replay ratio a line of env steps/s over those
# of one actor with one env at that ratio, against actors.
if [[ -s "$runs/ratio.dat" ]]; then
  ratio_envs_seen=$(cut -d' ' -f1 "$runs/ratio.dat" | awk '!seen[$0]++' | xargs)
  {
    echo "set terminal pngcairo size 1100,480 noenhanced; set output '$results/replay_ratio.png'"
    echo "set multiplot layout 1,$(wc -w <<<"$ratio_envs_seen")"
    echo "set grid; set logscale x 2; set xlabel 'actors (8 envs each)'; set key top right"
    echo "set ylabel 'env steps/s over 1 actor with 1 env'"
    for env in $ratio_envs_seen; do
      echo "set title '${env_id[$env]}'"
      printf "plot 1 with lines dt 2 lc 'black' title '1 actor, 1 env'"
      for spi in $(awk -v e="$env" '$1 == e { print $2 }' "$runs/ratio.dat" | awk '!seen[$0]++'); do
        awk -v e="$env" -v q="$spi" '$1 == e && $2 == q { print $3, $4 }' "$runs/ratio.dat" \
          >"$runs/ratio-$env-$spi.dat"
        printf ", '%s' using 1:2 with linespoints title 'samples per insert: %s'" \
          "$runs/ratio-$env-$spi.dat" "$spi"
      done
      echo
    done
    echo "unset multiplot"
  } | gnuplot
fi
if [[ -f $results/discussion.md ]]; then { echo; cat "$results/discussion.md"; } >>"$report"; fi
echo "learning.sh: wrote $report and $results/" >&2
