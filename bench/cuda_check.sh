#!/usr/bin/env bash
# The learner on a CUDA GPU, for a machine that has one. Builds ferry against a CUDA LibTorch
# (the pip torch's by default; Debian's LibTorch is CPU-only), runs the learner's tests, whose
# tests/learner/cuda_test.cc compares the update and its checkpoints on the GPU with the CPU's,
# then runs CartPole (configs/cartpole_zoo.yaml) to its solved threshold with the learner on
# each device, with two learner ranks, and as the single-actor baseline of bench/learning.sh,
# seed by seed.
#
#   bench/cuda_check.sh OUTDIR
#     TORCH_DIR=...    LibTorch's CMake folder (default: python3's torch)
#     BUILD=build-cuda CMAKE_ARGS="..." (extra configure arguments)
#     SEEDS="0 1"      DEADLINE=420 (seconds from the start; no run starts after it)
#
# OUTDIR gets build.log, tests.log, one log per run, and runs.jsonl: a line naming the machine,
# then one JSON object per run (setting, seed, end, wall_s, learner_s, env_steps, updates,
# best_eval_return, and the learner loop's seconds waiting for replay and computing).
set -euo pipefail

out=${1:?usage: bench/cuda_check.sh OUTDIR}
build=${BUILD:-build-cuda}
seeds=${SEEDS:-0 1}
deadline=$((SECONDS + ${DEADLINE:-420}))
mkdir -p "$out"
torch_dir=${TORCH_DIR:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# shellcheck disable=SC2086
{
  cmake -S . -B "$build" -G Ninja -DTorch_DIR="$torch_dir" ${CMAKE_ARGS:-} &&
    cmake --build "$build" --target ferry ferry-torch ferry-replay ferry-paramserver \
      ferry_learner_tests
} >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log" >&2; exit 1; }
echo "cuda_check: built in ${SECONDS} s" >&2

# pip's LibTorch (2.11 seen) exports its own copies of libstdc++'s std::filesystem functions,
# and a binary linked against it may bind to them: the tests' remove_all jumped to address 0.
# The compiler's libstdc++ loaded first takes those calls back (all learner tests pass then).
export LD_PRELOAD
LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6)${LD_PRELOAD:+:$LD_PRELOAD}

set +e
timeout 300 "$build/tests/ferry_learner_tests" >"$out/tests.log" 2>&1
tests=$?
set -e
grep -E "test cases|CUDA|skipped" "$out/tests.log" >&2 || true
echo "cuda_check: learner tests exit $tests" >&2

# The settings: the tuned config with the learner on the CPU and on the GPU, the single-process
# baseline of bench/learning.sh (one actor with one env, one shard, one rank), and two learner
# ranks with four actors, which a machine with cores to spare can feed.
declare -A sets=(
  [cpu]="--set learner.device=cpu"
  [cuda]="--set learner.device=cuda"
  [ranks2]="--set learner.ranks=2 --set actors.count=4"
  [baseline]="--set actors.count=1 --set actors.envs_per_actor=1 --set learner.ranks=1
              --set replay.shards=1 --set replay.capacity=100000"
)
# field RECORD KEY: the value in a metrics.jsonl record, or null where the run wrote none.
field() {
  local v
  v=$(sed -nE "s/.*\"$2\": (\"[^\"]*\"|[^,}]*).*/\1/p" <<<"$1")
  echo "${v:-null}"
}
machine() {
  python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))' 2>/dev/null ||
    echo "no CUDA torch"
}
{
  printf '{"machine": "%s", "cpus": %d, "torch_and_gpu": "%s"}\n' \
    "$(uname -m) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
    "$(getconf _NPROCESSORS_ONLN)" "$(machine)"
  for seed in $seeds; do
    for setting in baseline cpu cuda ranks2; do
      if ((SECONDS > deadline)); then
        echo "cuda_check: deadline passed; $setting seed $seed not run" >&2
        continue
      fi
      dir="$out/runs/$setting-s$seed"
      rm -rf "$dir"
      start=$(date +%s.%N)
      set +e
      # shellcheck disable=SC2086
      timeout 150 "$build/ferry" run configs/cartpole_zoo.yaml --set seed="$seed" \
        --set run.dir="$dir" --set stop.max_env_steps=100000 --set stop.max_seconds=120 \
        ${sets[$setting]} \
        >"$out/$setting-s$seed.log" 2>&1
      code=$?
      set -e
      wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      last=$(grep '"end"' "$dir/metrics.jsonl" 2>/dev/null | tail -n1 || true)
      progress=$(grep '"wait_replay_s"' "$dir/metrics.jsonl" 2>/dev/null | tail -n1 || true)
      printf '{"setting": "%s", "seed": %s, "exit_code": %d, "wall_s": %s, "end": %s, ' \
        "$setting" "$seed" "$code" "$wall" "$(field "$last" end)"
      printf '"learner_s": %s, "env_steps": %s, "updates": %s, "best_eval_return": %s, ' \
        "$(field "$last" time)" "$(field "$last" env_steps)" "$(field "$last" updates)" \
        "$(field "$last" best_eval_return)"
      printf '"wait_replay_s": %s, "compute_s": %s}\n' \
        "$(field "$progress" wait_replay_s)" "$(field "$progress" compute_s)"
    done
  done
} | tee "$out/runs.jsonl"
exit "$tests"
