#include <doctest/doctest.h>

#include <cmath>

#include "actors/actor.h"

namespace ferry::actors {
namespace {

TEST_CASE("ApexEpsilon spans eps to eps^(1 + alpha) across the slots") {
  const double eps = 0.4;
  const double alpha = 7.0;
  const int slots = 8;
  CHECK(ApexEpsilon(eps, alpha, 0, slots) == doctest::Approx(0.4));
  CHECK(ApexEpsilon(eps, alpha, slots - 1, slots) == doctest::Approx(std::pow(0.4, 8.0)));
  // Slot i: 0.4^(1 + i/7 * 7) = 0.4^(1 + i).
  for (int i = 0; i < slots; ++i) {
    CAPTURE(i);
    CHECK(ApexEpsilon(eps, alpha, i, slots) == doctest::Approx(std::pow(0.4, 1.0 + i)));
  }
}

TEST_CASE("ApexEpsilon interpolates the exponent linearly") {
  // Five slots, alpha 2: exponents 1, 1.5, 2, 2.5, 3.
  CHECK(ApexEpsilon(0.5, 2.0, 1, 5) == doctest::Approx(std::pow(0.5, 1.5)));
  CHECK(ApexEpsilon(0.5, 2.0, 2, 5) == doctest::Approx(0.25));
  CHECK(ApexEpsilon(0.5, 2.0, 4, 5) == doctest::Approx(0.125));
}

TEST_CASE("ApexEpsilon decreases strictly from slot to slot") {
  double previous = 1.0;
  for (int i = 0; i < 32; ++i) {
    const double eps = ApexEpsilon(0.4, 7.0, i, 32);
    CHECK(eps < previous);
    CHECK(eps > 0.0);
    previous = eps;
  }
}

TEST_CASE("ApexEpsilon with a single slot is eps") {
  CHECK(ApexEpsilon(0.4, 7.0, 0, 1) == doctest::Approx(0.4));
  CHECK(ApexEpsilon(0.05, 3.0, 0, 1) == doctest::Approx(0.05));
}

TEST_CASE("ApexEpsilon with alpha 0 gives every slot eps") {
  for (int i = 0; i < 4; ++i) CHECK(ApexEpsilon(0.3, 0.0, i, 4) == doctest::Approx(0.3));
}

}  // namespace
}  // namespace ferry::actors
