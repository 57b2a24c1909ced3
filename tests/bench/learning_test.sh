#!/usr/bin/env bash
# bench/learning.sh end to end on CartPole at a small budget: every part runs (the table, the
# single-process comparison, the LS-DQN switch, scaling and replay ratios), then the report.
# Checks that each run left one valid JSON record of the right kind and that the report has a
# row for each; records and report go to a temporary directory, not docs/.
#   usage: tests/bench/learning_test.sh BUILD_DIR   (from the source directory)
set -euo pipefail
build=$(realpath "$1")
cd "$(dirname "$0")/../.."

dir=$(mktemp -d /tmp/ferry-learning-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "learning test: $*" >&2; exit 1; }

# Ports of this process's own: shards at base and base + 1, then the paramserver's two.
base=$((20000 + $$ % 1000 * 8))
RUNS=$dir/runs RESULTS=$dir/results REPORT=$dir/RESULTS.md BUDGET=3000 ENVS=cartpole SEEDS=0 \
  SCALING_ENVS=cartpole SCALING_SEEDS=0 ACTORS="1 2" RATIO_ENVS=cartpole RATIOS="64 4" \
  RATIO_SEEDS=0 RATIO_SECONDS=5 PARTS="table baseline lsdqn scaling ratio report" \
  SETS="network.replay_port=$base network.paramserver_port=$((base + 4))
        network.broadcast_port=$((base + 5))" \
  bench/learning.sh "$build" 2>"$dir/learning.log" ||
  { tail -n 30 "$dir/learning.log" >&2; fail "bench/learning.sh failed"; }

records=$dir/results/runs.jsonl
# Every line one JSON object: a record the report cannot read is a result lost.
line=0
while IFS= read -r record; do
  line=$((line + 1))
  jq -e 'type == "object"' <<<"$record" >/dev/null || fail "$records:$line is not a JSON object: $record"
done <"$records"

count() { jq -s "map(select($1)) | length" "$records"; }
expect() {  # expect JQ_FILTER N WHAT
  local n
  n=$(count "$1")
  [[ $n == "$2" ]] || fail "$3: $n records, expected $2"
}
# table, paired, baseline, serial, lsdqn: one each; scaling: 1 actor of 1 env, 1 and 2 actors
# of the config's 8 envs, 2 actors of 4 (its 8 in all), 2 ranks; ratio: per ratio, 1 actor of 1
# env, then 1 and 2 actors.
for kind in table paired baseline serial lsdqn; do expect ".kind == \"$kind\"" 1 "$kind runs"; done
expect '.kind == "scaling"' 5 "scaling runs"
expect '.kind == "ratio"' 6 "ratio runs"
# ferry run's exit codes: 0 target reached, 2 budget spent without it; anything else failed.
expect '(.exit_code == 0 and .end == "target_reached") or
        (.exit_code == 2 and .end == "budget_exhausted") | not' 0 "runs that failed"
# A budget run stops at its budget and evaluates its final policy.
expect '(.kind == "table" or .kind == "paired" or .kind == "baseline" or .kind == "serial")
        and .env_steps >= 3000 and (.final_eval_return | type) == "number"' \
  4 "budget runs that ran their budget and evaluated"
expect '.kind == "baseline" and .actors == 1 and .envs_per_actor == 1 and .shards == 1' 1 \
  "1-actor baselines with one env and one shard"
expect '.kind == "scaling" and .ranks == 2' 1 "2-rank scaling runs"
expect '.kind == "scaling" and .actors == 2 and .envs_per_actor == 4' 1 \
  "scaling runs with the config's envs spread over 2 actors"
# Steady rates come in pairs: both measured, or both null (a run with no progress record).
expect '(.steady_env_steps_per_s == null) != (.steady_updates_per_s == null)' 0 \
  "records with one steady rate only"
# Progress records come every 2 s of the learner's clock: a 5 s ratio run has two or more.
expect '.kind == "ratio" and (.steady_env_steps_per_s | type) == "number"' 6 \
  "ratio runs with a steady rate"

report=$dir/RESULTS.md
rows() { grep -c "^| CartPole-v1 | $1" "$report" || true; }
[[ $(rows "500.0 | 3k |") == 1 ]] || fail "no Zoo table row for CartPole-v1 at the 3k budget"
grep -q "^| CartPole-v1 | 1 | .* | [0-9.]*x | [0-9.]*x |$" "$report" ||
  fail "no single-process row with both speed-ups"
# Paired by seed, one seed: its speed-ups with no interval, then the cores busy and the bound.
grep -q "^| CartPole-v1 | 1 | [0-9.]* | [0-9.]*x | - | [01] of 1 | [0-9.]* | [0-9.]*x | - | [01] of 1 | [0-9]*% / [0-9]*% | [0-9.]*x |$" \
  "$report" || fail "no paired single-process row with both speed-ups and the bound"
[[ $(rows "1 / 1 |") == 1 ]] || fail "no LS-DQN row with one seed a side"
[[ $(rows "475 |") == 5 ]] || fail "expected 5 scaling rows"
grep -q "^| CartPole-v1 | 475 | 2 x 4 | 1 | 1 |" "$report" || fail "no scaling row for 2 actors of 4 envs"
[[ $(rows "64 |") == 3 && $(rows "4 |") == 3 ]] || fail "expected 3 rows per replay ratio"
if grep -n -i -w nan "$report"; then fail "the report prints NaN"; fi
for png in cartpole/return_vs_env_steps.png cartpole/return_vs_time.png learning_curves.png \
  replay_ratio.png; do
  [[ -s $dir/results/$png ]] || fail "no $png"
done
echo "learning test: $(wc -l <"$records") records, report $(wc -l <"$report") lines: ok"
