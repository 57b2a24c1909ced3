# shellcheck shell=bash
# Sourced by the bench scripts that run ferry and keep records of what they measured.

# One BLAS thread per process, with the OpenBLAS kernels `ferry run` gives its roles
# (core/blas_kernels.h), so that what runs beside ferry (serial_dqn) computes as its roles do.
#   bench_blas_env BUILD_DIR   (no ferry built there: OpenBLAS chooses)
bench_blas_env() {
  export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
  local core
  core=$("$1/ferry" blas 2>/dev/null || true)
  if [[ -n $core ]]; then export OPENBLAS_CORETYPE=$core; fi
}

# The source the runs are built from: the short commit, "-dirty" with uncommitted changes
# outside docs/.
bench_commit() {
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo -dirty)"
}

# The machine a record ran on, e.g. "2-core AMD EPYC 7B13": no quotes or backslashes (records
# are JSON) and no ", " (reports split on it).
bench_machine() {
  echo "$(getconf _NPROCESSORS_ONLN)-core $(sed -nE 's/^model name\t: //p' /proc/cpuinfo |
    head -n1 | tr -d '"\\' | sed 's/, / /g')"
}

# Sets `ticks` to the CPU time (user + system, in clock ticks) in the /proc stat file $1 of a
# process or thread; fails once it has exited. Builtins only: samplers call it every second.
cpu_ticks() {
  local stat
  local -a fields
  read -r stat 2>/dev/null <"$1" || return 1
  read -r -a fields <<<"${stat##*) }"  # After the command name: state, ppid, ...
  # shellcheck disable=SC2034  # Read by the caller.
  ticks=$((fields[11] + fields[12]))
}
