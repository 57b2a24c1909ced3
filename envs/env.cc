#include "envs/env.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>
#include <string_view>
#include <utility>

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

struct Registration {
  std::string_view id;
  std::unique_ptr<Env> (*make)(uint64_t seed);
};

constexpr Registration kRegistry[] = {
    {"Acrobot-v1", &Make<classic_control::AcrobotEnv>},
    {"CartPole-v1", &Make<classic_control::CartPoleEnv>},
    {"MountainCar-v0", &Make<classic_control::MountainCarEnv>},
    {"Pendulum-v1", &Make<classic_control::PendulumEnv>},
};

void AppendFloats(std::ostringstream& out, const std::vector<float>& values) {
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

std::string Space::ToString() const {
  std::ostringstream out;
  if (kind == Kind::kDiscrete) {
    out << "Discrete(" << n << ')';
    return out.str();
  }
  out << "Box(shape=[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "], low=";
  AppendFloats(out, low);
  out << ", high=";
  AppendFloats(out, high);
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
