#!/usr/bin/env bash
# Runs every benchmark binary (one per bench/*.cc and per bench/<name>/ folder) and collects their JSON
# lines (one object per measurement) into one file; other output only goes to the terminal.
#   usage: bench/run_all.sh BUILD_DIR [OUT_FILE]   (OUT_FILE: BUILD_DIR/bench/results.jsonl)
# BENCH_ARGS is passed to every binary, e.g. BENCH_ARGS=--quick for a smoke run.
# A binary linked with MPI runs under $MPIRUN (two ranks, as its header asks).
# bench/cartpole_seeds.sh is not run here: it trains CartPole for minutes per seed.
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [OUT_FILE]" >&2
  exit 2
fi
build=$1
out=${2:-$build/bench/results.jsonl}
here=$(cd "$(dirname "$0")" && pwd)
read -r -a args <<<"${BENCH_ARGS:-}"
default_mpirun="mpirun -np 2 --oversubscribe --bind-to none"
default_mpirun+=" --mca btl_vader_single_copy_mechanism none"
read -r -a mpirun <<<"${MPIRUN:-$default_mpirun}"
# Open MPI refuses to start as root (as in containers) without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One BLAS thread per process (Debian's OpenBLAS reads this only when it loads): two ranks with
# a BLAS thread per core each would thrash the 2 cores.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
# The OpenBLAS kernels `ferry run` gives its roles, on CPUs Debian's OpenBLAS does not know too
# (core/blas_kernels.h).
blas_core=$("$build/ferry" blas 2>/dev/null || true)  # No ferry built: nothing to set.
if [[ -n $blas_core ]]; then export OPENBLAS_CORETYPE=$blas_core; fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

: >"$out"
status=0
names=()
for src in "$here"/*.cc "$here"/*/main.cc; do
  if [[ $src == */main.cc ]]; then src=$(dirname "$src"); fi
  names+=("$(basename "$src" .cc)")
done
for name in "${names[@]}"; do
  binary=$build/bench/$name
  if [[ ! -x $binary ]]; then
    echo "run_all: $binary is missing; build it with: ninja -C $build $name" >&2
    status=1
    continue
  fi
  launcher=()
  # grep reads all of ldd's output: an early exit would kill ldd with SIGPIPE under pipefail.
  if ldd "$binary" | grep libmpi >/dev/null; then launcher=("${mpirun[@]}"); fi
  echo "run_all: ${launcher[*]} $name" >&2
  if ! "${launcher[@]}" "$binary" "${args[@]}" | tee "$log"; then
    echo "run_all: $name failed" >&2
    status=1
  fi
  grep '^{' "$log" >>"$out" || true
done
echo "run_all: results in $out" >&2
exit $status
