#!/usr/bin/env bash
# bench/actor_threads.sh on a short CartPole run of two actors with one env each: one JSON
# record that saw both actor processes, with CPU on their acting threads and the acting
# threads' start-up no more than their whole, and far below what loading LibTorch costs.
#   usage: tests/bench/actor_threads_test.sh BUILD_DIR   (from the source directory)
set -euo pipefail
build=$(realpath "$1")
cd "$(dirname "$0")/../.."
fail() { echo "actor_threads test: $*" >&2; exit 1; }

# Ports of this process's own: shards at base and base + 1, then the paramserver's two.
base=$((30000 + $$ % 1000 * 8))
record=$(bench/actor_threads.sh "$build" configs/cartpole_zoo.yaml 2 1 0 \
  --set stop.target_return=1e9 --set stop.max_env_steps=3000 \
  --set network.replay_port=$base --set network.paramserver_port=$((base + 4)) \
  --set network.broadcast_port=$((base + 5))) || fail "bench/actor_threads.sh failed"
jq -e 'type == "object"' <<<"$record" >/dev/null || fail "not a JSON object: $record"
check() { jq -e "$1" <<<"$record" >/dev/null || fail "$2: $record"; }
check '.actors == 2 and .envs_per_actor == 1 and .processes_seen == 2' "did not see both actors"
check '.env_steps >= 3000' "the run did not spend its budget"
# A run this short can leave ZeroMQ's and the follower's threads under one clock tick.
check '.cpu_acting_s > 0 and .cpu_zeromq_s >= 0 and .cpu_other_s >= 0' "no CPU on the acting threads"
check '.cpu_acting_startup_s >= 0 and .cpu_acting_startup_s <= .cpu_acting_s' \
  "start-up CPU not within the acting threads' CPU"
# Actors load no LibTorch (ferry-actor), which cost about 0.5-0.65 s of CPU a process to start.
check '.cpu_acting_startup_s < 0.25 * .processes_seen' "actors took LibTorch's start-up time"
echo "actor_threads test: ok: $record"
