// The Env interface every environment family implements, and its spaces.
//
//   Reset(obs) -> Step(action, obs) -> ... -> terminated or truncated -> Reset(obs)
//
// Observations and actions are flat float32 arrays owned by the caller, a
// multi-dimensional Box (an image) in row-major order; a Discrete action is
// passed as one float holding the index. Truncation (the time limit) is not
// termination: a learner bootstraps through it. Each env owns its RNG, seeded
// at construction, so the same seed gives the same trajectory on every machine
// (for the Box2D family: with the same libbox2d build). An Env is used from one
// thread at a time.
//
// Step after the episode ended, or before the first Reset, is a caller bug and
// aborts. A Discrete action that is not a valid index never causes undefined
// behaviour: it is rounded to the nearest index and clamped into range, and
// NaN selects index 0 (see internal::DiscreteActionIndex). Box actions are
// clamped into the action space, and a NaN element acts as 0.
#ifndef FERRY_ENVS_ENV_H_
#define FERRY_ENVS_ENV_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::envs {

struct Space {
  enum class Kind { kDiscrete, kBox };
  Kind kind = Kind::kBox;
  int n = 0;               // Discrete: number of actions.
  std::vector<int> shape;  // Box: shape; Discrete: empty.
  std::vector<float> low;  // Box: per-element bounds (size = product of shape).
  std::vector<float> high;

  static Space Discrete(int n);
  static Space Box(std::vector<int> shape, std::vector<float> low, std::vector<float> high);
  // Elements in one flat sample: 1 for Discrete, product of shape for Box.
  int flat_size() const;
  bool Contains(const float* x) const;
  // Writes a uniform random element: an index for Discrete, each element on
  // [low, high] for Box. Every Box bound must be finite (aborts otherwise).
  void Sample(std::mt19937_64& rng, float* x) const;
  // E.g. "Discrete(4)", "Box(shape=[2], low=[-1, 0], high=[1, 2.5])"; bounds
  // that are the same for every element print once: "Box(shape=[10, 5], low=0, high=1)".
  std::string ToString() const;
};

struct StepResult {
  float reward = 0.f;
  bool terminated = false;  // The MDP reached a terminal state: do not bootstrap.
  bool truncated = false;   // Cut by the time limit: bootstrap from obs.
};

class Env {
 public:
  virtual ~Env() = default;
  virtual const Space& observation_space() const = 0;
  virtual const Space& action_space() const = 0;
  // The step of an episode on which it is truncated; 0 when the env has no
  // time limit.
  virtual int max_episode_steps() const = 0;
  // Starts a new episode and writes its first observation.
  virtual void Reset(float* obs) = 0;
  // Advances one step; writes the next observation (the final one when the
  // episode ended; the caller then calls Reset).
  virtual StepResult Step(const float* action, float* obs) = 0;
};

// Creates a registered env by id (e.g. "CartPole-v1", "bsuite/Catch-v0"), seeded with `seed`.
Result<std::unique_ptr<Env>> MakeEnv(const std::string& id, uint64_t seed);
// Ids of all registered envs, sorted.
std::vector<std::string> RegisteredEnvs();

// Shared by the env families; not for callers of Env.
namespace internal {
// The index a Discrete action selects among n: nearest integer, clamped to
// [0, n-1]; NaN selects 0.
int DiscreteActionIndex(float action, int n);
// Uniform on [low, high] from the top 53 bits of one draw. Unlike
// std::uniform_real_distribution, whose algorithm the standard leaves open,
// this gives the same numbers with every standard library.
double UniformReal(std::mt19937_64& rng, double low, double high);
}  // namespace internal

}  // namespace ferry::envs

#endif  // FERRY_ENVS_ENV_H_
