// Which kernels OpenBLAS runs, and the override for CPUs it does not know.
//
// Debian 12's OpenBLAS (0.3.21, built for every x86-64 core) picks its kernels
// from the CPU's model number when it loads. On Intel models newer than it
// knows it falls back to Prescott's, which are SSE3 only: on an Emerald Rapids
// Xeon (model 207) one core's sgemm ran at 15.5 GFLOP/s instead of the 98-100
// it reaches with OPENBLAS_CORETYPE=SkylakeX, and the learner made 300 updates
// a second on LunarLander's config instead of about 1000. The core type is read
// from the environment only when the library loads, so it has to be set by the
// process that starts the one calling BLAS: `ferry` does that for every role it
// starts (SetFastBlasCoreType), bench/*.sh for the binaries they run, and a
// BLAS-calling binary started some other way says so in its log
// (WarnIfBlasIsGeneric).
#ifndef FERRY_CORE_BLAS_KERNELS_H_
#define FERRY_CORE_BLAS_KERNELS_H_

#include <string>
#include <string_view>

namespace ferry::core {

// The vector instructions of a CPU that decide OpenBLAS's sgemm kernels.
struct CpuVectorSupport {
  bool avx2_fma = false;  // AVX2 and FMA: Haswell's kernels.
  bool avx512 = false;    // AVX-512 F, BW, DQ and VL: SkylakeX's kernels.
};

// This CPU's, as the kernel lets processes use them.
CpuVectorSupport ThisCpuVectorSupport();

// The OPENBLAS_CORETYPE to start a process with when OpenBLAS chose `openblas_core` on a CPU
// with `cpu`: "SkylakeX" or "Haswell" where it fell back to a core without AVX2 kernels that the
// CPU outgrows, "" where its choice stands.
std::string FastBlasCoreType(std::string_view openblas_core, CpuVectorSupport cpu);

// The core OpenBLAS chose in this process (loading it for the question if it is not loaded,
// with one thread); "" when there is no OpenBLAS.
std::string OpenBlasCore();

// What OpenBLAS chose here, on which CPU, and what to start processes with instead.
struct BlasChoice {
  std::string openblas_core;  // OpenBlasCore().
  CpuVectorSupport cpu;       // ThisCpuVectorSupport().
  std::string core_type;      // FastBlasCoreType of the two: "" where OpenBLAS's choice stands.
};
BlasChoice ProbeBlas();

// For the processes this one starts: sets OPENBLAS_CORETYPE as FastBlasCoreType says, unless
// the environment sets it already, and logs why. Returns what it set ("" for nothing).
std::string SetFastBlasCoreType();

// For a process that calls BLAS itself: logs, naming `program`, when OpenBLAS runs kernels this
// CPU outgrows and OPENBLAS_CORETYPE is not set.
void WarnIfBlasIsGeneric(const char* program);

}  // namespace ferry::core

#endif  // FERRY_CORE_BLAS_KERNELS_H_
