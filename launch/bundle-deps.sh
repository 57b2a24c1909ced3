#!/usr/bin/env bash
# Copies ferry's dependencies other than LibTorch, as this Debian machine has them installed
# (launch/install-deps.sh), into one folder that works wherever it is put: for building and
# running ferry on a machine that has a CUDA LibTorch but no package archive to install from
# (a cluster's GPU node without internet, say). bench/cuda_check.sh ran on an H200 that way.
#
#   launch/bundle-deps.sh DIR           here; then, with DIR copied beside the source there:
#   source DIR/env.sh && CMAKE_ARGS="$BUNDLE_CMAKE_ARGS" bench/cuda_check.sh OUTDIR
#
# DIR/root holds the packages' files under their usual paths, DIR/lib the shared libraries
# they load beyond glibc, libstdc++ and the few every distribution has. env.sh points Open MPI
# (OPAL_PREFIX), pkg-config (PKG_CONFIG_SYSROOT_DIR), CMake (CMAKE_PREFIX_PATH) and the loader
# (LD_LIBRARY_PATH) there. PMIx still looks for its compression plugin where Debian put it,
# and mpirun prints a help message ("unavailable", help-pcompress.txt) that changes nothing.
set -euo pipefail

dir=${1:?usage: launch/bundle-deps.sh DIR}
packages=(
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2
  libhwloc15 libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7
  libzmq3-dev libzmq5 cppzmq-dev liblz4-dev liblz4-1
  libyaml-cpp-dev libyaml-cpp0.7 libbox2d-dev libbox2d2 libcereal-dev doctest-dev
  pkgconf pkgconf-bin libpkgconf3 libopenblas0-pthread
)
rm -rf "$dir"
mkdir -p "$dir/root" "$dir/lib"
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "bundle-deps: $p is not installed (launch/install-deps.sh installs it)" >&2; exit 1; }
  dpkg -L "$p" | while read -r f; do
    if [[ (-f $f || -L $f) && ! -d $f && $f != /usr/share/doc/* && $f != /usr/share/man/* ]]; then
      mkdir -p "$dir/root${f%/*}"
      cp -a "$f" "$dir/root$f"
    fi
  done
done

# The shared libraries the copied ones load that are not copied yet (ldd refuses the scripts
# among the tools), except those of the C and C++ runtimes and the few every distribution has:
# a second copy of those would shadow the other machine's own, which its other programs need.
common='^(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux-x86-64|libz|libudev|libuuid|libatomic|libcom_err|libkeyutils)\.so'
declare -A copied
while read -r name; do copied[$name]=1; done < <(find "$dir/root" -name '*.so*' -printf '%f\n')
find "$dir/root" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0 |
  { xargs -0 ldd 2>/dev/null || true; } | awk '/=> \// { print $3 }' | sort -u |
  while read -r lib; do
    name=${lib##*/}
    [[ $name =~ $common || -n ${copied[$name]:-} ]] || cp -L "$lib" "$dir/lib/"
  done

usr=$dir/root/usr
# Debian chooses mpirun and mpicxx through /etc/alternatives, which does not travel.
for tool in mpirun mpiexec mpicc mpicxx mpic++; do ln -sf "$tool.openmpi" "$usr/bin/$tool"; done
# And the BLAS behind libblas.so.3, which ferry-actor links (CMakeLists.txt, FERRY_BLAS).
ln -sf openblas-pthread/libblas.so.3 "$usr/lib/x86_64-linux-gnu/libblas.so.3"
# Static links only need these; shared ones do not, and the other machine may lack them.
sed -i '/^Requires.private/d' "$usr/lib/x86_64-linux-gnu/pkgconfig/libzmq.pc"

cat >"$dir/env.sh" <<'EOF'
# Sourced: ferry's dependencies from this folder (launch/bundle-deps.sh made it).
BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$BUNDLE/root/usr
export PATH=$BUNDLE/root/usr/bin:$PATH
export LD_LIBRARY_PATH=$BUNDLE/root/usr/lib/x86_64-linux-gnu:$BUNDLE/root/usr/lib/x86_64-linux-gnu/openmpi/lib:$BUNDLE/root/usr/lib/x86_64-linux-gnu/openblas-pthread:$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_SYSROOT_DIR=$BUNDLE/root
export PKG_CONFIG_LIBDIR=$BUNDLE/root/usr/lib/x86_64-linux-gnu/pkgconfig:$BUNDLE/root/usr/share/pkgconfig
export CMAKE_PREFIX_PATH=$BUNDLE/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export BUNDLE_CMAKE_ARGS="-DPKG_CONFIG_EXECUTABLE=$BUNDLE/root/usr/bin/pkgconf -DMPI_CXX_COMPILER=$BUNDLE/root/usr/bin/mpicxx -DMPI_C_COMPILER=$BUNDLE/root/usr/bin/mpicc -DCMAKE_POLICY_VERSION_MINIMUM=3.5"
# doctest's CMake file names its install prefix outright.
sed -i "s|set(_IMPORT_PREFIX \"/usr\")|set(_IMPORT_PREFIX \"$BUNDLE/root/usr\")|" \
  "$BUNDLE/root/usr/lib/cmake/doctest/doctestTargets.cmake"
EOF
echo "bundle-deps: $(du -sh "$dir" | cut -f1) in $dir; source $dir/env.sh there" >&2
