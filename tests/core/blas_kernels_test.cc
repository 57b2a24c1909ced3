// Where Debian's OpenBLAS falls back to pre-AVX2 kernels on a CPU it does not know, the
// processes ferry starts get a core type that matches the CPU; elsewhere its choice stands.
#include "core/blas_kernels.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

namespace ferry::core {
namespace {

constexpr CpuVectorSupport kAvx512{true, true};
constexpr CpuVectorSupport kAvx2{true, false};
constexpr CpuVectorSupport kSse{false, false};

TEST_CASE("a fallback to Prescott's kernels is lifted to what the CPU runs") {
  CHECK(FastBlasCoreType("Prescott", kAvx512) == "SkylakeX");
  CHECK(FastBlasCoreType("Prescott", kAvx2) == "Haswell");
  CHECK(FastBlasCoreType("Nehalem", kAvx2) == "Haswell");
  CHECK(FastBlasCoreType("Sandybridge", kAvx512) == "SkylakeX");
}

TEST_CASE("OpenBLAS's choice stands where it has AVX2 kernels or the CPU has no AVX2") {
  for (const char* core : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}) {
    CAPTURE(core);
    CHECK(FastBlasCoreType(core, kAvx512).empty());
    CHECK(FastBlasCoreType(core, kAvx2).empty());
  }
  CHECK(FastBlasCoreType("Prescott", kSse).empty());
  CHECK(FastBlasCoreType("", kAvx512).empty());  // No OpenBLAS.
}

TEST_CASE("the core type set for started processes matches this machine's OpenBLAS and CPU") {
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before != nullptr ? before : "";
  unsetenv("OPENBLAS_CORETYPE");
  const std::string expected = FastBlasCoreType(OpenBlasCore(), ThisCpuVectorSupport());
  CHECK(SetFastBlasCoreType() == expected);
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  CHECK(std::string(set != nullptr ? set : "") == expected);
  // One that the environment sets already is left alone.
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  CHECK(SetFastBlasCoreType().empty());
  CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == "Haswell");
  if (before != nullptr) {
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
}

}  // namespace
}  // namespace ferry::core
