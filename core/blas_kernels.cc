#include "core/blas_kernels.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>

#include "core/log.h"

namespace ferry::core {
namespace {

constexpr const char* kCoreTypeVariable = "OPENBLAS_CORETYPE";
constexpr const char* kLibrary = "libopenblas.so.0";

// OpenBLAS's Intel cores whose sgemm kernels stop short of AVX2: the ones it falls back to.
constexpr std::array<std::string_view, 11> kPreAvx2Cores = {
    "Katmai", "Coppermine", "Northwood",  "Prescott", "Banias",     "Atom",
    "Core2",  "Penryn",     "Dunnington", "Nehalem",  "Sandybridge"};

const char* Describe(CpuVectorSupport cpu) { return cpu.avx512 ? "AVX-512" : "AVX2 and FMA"; }

}  // namespace

CpuVectorSupport ThisCpuVectorSupport() {
  __builtin_cpu_init();
  CpuVectorSupport cpu;
  cpu.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  cpu.avx512 = cpu.avx2_fma && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
  return cpu;
}

std::string FastBlasCoreType(std::string_view openblas_core, CpuVectorSupport cpu) {
  bool pre_avx2 = false;
  for (std::string_view core : kPreAvx2Cores) pre_avx2 = pre_avx2 || core == openblas_core;
  if (!pre_avx2 || !cpu.avx2_fma) return "";
  return cpu.avx512 ? "SkylakeX" : "Haswell";
}

std::string OpenBlasCore() {
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (library == nullptr) {
    // Loading it starts its thread pool, one thread a core unless told otherwise.
    const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
    const std::string saved = threads != nullptr ? threads : "";
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (threads != nullptr) {
      setenv("OPENBLAS_NUM_THREADS", saved.c_str(), 1);
    } else {
      unsetenv("OPENBLAS_NUM_THREADS");
    }
  }
  if (library == nullptr) return "";
  using CoreName = char* (*)();
  const auto core_name = reinterpret_cast<CoreName>(dlsym(library, "openblas_get_corename"));
  std::string core = core_name != nullptr ? core_name() : "";
  dlclose(library);
  return core;
}

BlasChoice ProbeBlas() {
  BlasChoice choice;
  choice.openblas_core = OpenBlasCore();
  choice.cpu = ThisCpuVectorSupport();
  choice.core_type = FastBlasCoreType(choice.openblas_core, choice.cpu);
  return choice;
}

std::string SetFastBlasCoreType() {
  if (std::getenv(kCoreTypeVariable) != nullptr) return "";
  const BlasChoice choice = ProbeBlas();
  if (choice.core_type.empty()) return "";
  setenv(kCoreTypeVariable, choice.core_type.c_str(), 1);
  Log("OpenBLAS chose its %s kernels on a CPU with %s; the roles start with %s=%s",
      choice.openblas_core.c_str(), Describe(choice.cpu), kCoreTypeVariable,
      choice.core_type.c_str());
  return choice.core_type;
}

void WarnIfBlasIsGeneric(const char* program) {
  if (std::getenv(kCoreTypeVariable) != nullptr) return;
  const BlasChoice choice = ProbeBlas();
  if (choice.core_type.empty()) return;
  Log("%s: OpenBLAS runs its %s kernels on a CPU with %s, several times slower; start it with "
      "%s=%s (ferry and bench/*.sh do)",
      program, choice.openblas_core.c_str(), Describe(choice.cpu), kCoreTypeVariable,
      choice.core_type.c_str());
}

}  // namespace ferry::core
