#!/usr/bin/env bash
# Installs every Debian/Ubuntu package ferry needs to build, test and run.
# Idempotent: when everything is present it installs nothing and prints one
# line naming the BLAS that LibTorch will use.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread       # LibTorch is ~12x slower on reference BLAS
  libzmq3-dev cppzmq-dev
  libopenmpi-dev openmpi-bin
  libcereal-dev libyaml-cpp-dev doctest-dev
  liblz4-dev                              # replay.compression: lz4
  libbox2d-dev                            # envs/box2d: LunarLander
  gnuplot-nox                             # ferry plot
  jq                                      # tests/bench/learning_test.sh reads the records
  slurm-wlm munge                         # launch/slurm/ and its test
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "ferry deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# LibTorch links libblas.so.3, which Debian's alternatives point at a provider.
torch_lib=$(ls /usr/lib/*/libtorch_cpu.so* 2>/dev/null | head -n1 || true)
# awk reads all of ldd's output: exiting early would kill ldd with SIGPIPE, which pipefail and
# set -e turn into a failure of this script.
blas=$(ldd "$torch_lib" 2>/dev/null | awk '/libblas|openblas/ && !found {print $3; found = 1}')
blas=$(readlink -f "${blas:-/nonexistent}" 2>/dev/null || true)
case "$blas" in
  *openblas*) echo "ferry deps: ok; LibTorch uses OpenBLAS ($blas)" ;;
  *) echo "ferry deps: WARNING: LibTorch uses ${blas:-an unknown BLAS}, not OpenBLAS;" \
          "expect ~12x slower learner updates (update-alternatives --config libblas.so.3-*)" >&2 ;;
esac
