#include "envs/env.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>
#include <string_view>
#include <utility>

#include "envs/box2d/lunar_lander.h"
#include "envs/bsuite/catch.h"
#include "envs/classic_control/acrobot.h"
#include "envs/classic_control/cartpole.h"
#include "envs/classic_control/mountain_car.h"
#include "envs/classic_control/pendulum.h"

namespace ferry::envs {

namespace {

template <typename E>
std::unique_ptr<Env> Make(uint64_t seed) {
  return std::make_unique<E>(seed);
}

template <bool kContinuous>
std::unique_ptr<Env> MakeLunarLander(uint64_t seed) {
  return std::make_unique<box2d::LunarLanderEnv>(seed, kContinuous);
}

struct Registration {
  std::string_view id;
  std::unique_ptr<Env> (*make)(uint64_t seed);
};

constexpr Registration kRegistry[] = {
    {"Acrobot-v1", &Make<classic_control::AcrobotEnv>},
    {"CartPole-v1", &Make<classic_control::CartPoleEnv>},
    {"LunarLander-v2", &MakeLunarLander</*kContinuous=*/false>},
    {"LunarLanderContinuous-v2", &MakeLunarLander</*kContinuous=*/true>},
    {"MountainCar-v0", &Make<classic_control::MountainCarEnv>},
    {"Pendulum-v1", &Make<classic_control::PendulumEnv>},
    {"bsuite/Catch-v0", &Make<bsuite::CatchEnv>},
};

// One number when every element has the same bound, else the list.
void AppendBounds(std::ostringstream& out, const std::vector<float>& values) {
  if (values.size() > 1 &&
      std::all_of(values.begin(), values.end(), [&](float v) { return v == values[0]; })) {
    out << values[0];
    return;
  }
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
}

}  // namespace

Space Space::Discrete(int n) {
  FERRY_CHECK(n > 0);
  Space space;
  space.kind = Kind::kDiscrete;
  space.n = n;
  return space;
}

Space Space::Box(std::vector<int> shape, std::vector<float> low, std::vector<float> high) {
  Space space;
  space.kind = Kind::kBox;
  space.shape = std::move(shape);
  space.low = std::move(low);
  space.high = std::move(high);
  FERRY_CHECK(std::all_of(space.shape.begin(), space.shape.end(), [](int d) { return d > 0; }));
  const size_t size = space.flat_size();
  FERRY_CHECK(space.low.size() == size && space.high.size() == size);
  for (size_t i = 0; i < size; ++i) FERRY_CHECK(space.low[i] <= space.high[i]);
  return space;
}

int Space::flat_size() const {
  if (kind == Kind::kDiscrete) return 1;
  return std::accumulate(shape.begin(), shape.end(), 1, std::multiplies<int>());
}

bool Space::Contains(const float* x) const {
  if (kind == Kind::kDiscrete) {
    return std::isfinite(x[0]) && x[0] == std::floor(x[0]) && x[0] >= 0 && x[0] < n;
  }
  for (int i = 0; i < flat_size(); ++i) {
    // Written so that NaN, which fails every comparison, is rejected.
    if (!(x[i] >= low[i] && x[i] <= high[i])) return false;
  }
  return true;
}

void Space::Sample(std::mt19937_64& rng, float* x) const {
  if (kind == Kind::kDiscrete) {
    x[0] = static_cast<float>(std::min(n - 1, static_cast<int>(internal::UniformReal(rng, 0, n))));
    return;
  }
  for (int i = 0; i < flat_size(); ++i) {
    FERRY_CHECK(std::isfinite(static_cast<double>(high[i]) - low[i]));
    // Rounding to float never leaves [low, high]: both ends are floats.
    x[i] = static_cast<float>(internal::UniformReal(rng, low[i], high[i]));
  }
}

std::string Space::ToString() const {
  std::ostringstream out;
  if (kind == Kind::kDiscrete) {
    out << "Discrete(" << n << ')';
    return out.str();
  }
  out << "Box(shape=[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "], low=";
  AppendBounds(out, low);
  out << ", high=";
  AppendBounds(out, high);
  out << ')';
  return out.str();
}

Result<std::unique_ptr<Env>> MakeEnv(const std::string& id, uint64_t seed) {
  for (const Registration& registration : kRegistry) {
    if (registration.id == id) return registration.make(seed);
  }
  std::string ids;
  for (const std::string& known : RegisteredEnvs()) ids += (ids.empty() ? "" : ", ") + known;
  return InvalidArgument("unknown env id \"" + id + "\"; use one of the registered ids: " + ids);
}

std::vector<std::string> RegisteredEnvs() {
  std::vector<std::string> ids;
  for (const Registration& registration : kRegistry) ids.emplace_back(registration.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

namespace internal {

int DiscreteActionIndex(float action, int n) {
  if (!(action > 0.f)) return 0;  // Also NaN.
  if (action >= static_cast<float>(n - 1)) return n - 1;
  return static_cast<int>(std::lround(action));
}

double UniformReal(std::mt19937_64& rng, double low, double high) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

}  // namespace internal

}  // namespace ferry::envs
