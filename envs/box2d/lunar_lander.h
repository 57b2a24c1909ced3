// LunarLander-v2 and LunarLanderContinuous-v2 as Gym publishes them (Oleg
// Klimov's lunar_lander.py), on Box2D 2.4.
//
// A lander with two spring-loaded legs starts at the top centre of a 20 x
// 13.3 m world (600 x 400 px at 30 px/m) with a random force of up to 1000 N
// per axis on its first step, above terrain of 11 chunks whose middle ones
// form a flat helipad at (0, 0) of the observation's frame. Gravity -10, 50
// steps per second, Box2D run with 180 velocity and 60 position iterations.
//
// Actions. Discrete(4): 0 nothing, 1 left orientation engine, 2 main engine,
// 3 right orientation engine, each at full power. Box([2], -1, 1) for the
// continuous version: main > 0 fires the main engine at 50%..100% power,
// |lateral| > 0.5 fires a side engine at 50%..100%. Engine impulses (13 main,
// 0.6 side) act at randomly dispersed points, two uniform draws per step.
//
// Observation, 8 floats: x and y relative to the helipad (scaled by half the
// world's width and height), their velocities, the angle (not wrapped), 20 x
// the angular velocity / FPS, and 1/0 for each leg touching the ground.
//
// Reward: the change of shaping = -100 |(x, y)| - 100 |(vx, vy)| - 100 |angle|
// + 10 per leg in contact, minus 0.3 x main power and 0.03 x side power per
// step. Terminates with reward -100 when the lander's body touches the ground
// or |x| >= 1, and with +100 when the lander comes to rest (Box2D puts it to
// sleep); truncated after 1000 steps. Reset includes one no-op step, as Gym's
// does, and returns its observation.
//
// Wind is off, as in Gym by default, and not offered. The engines' exhaust
// particles are left out: Gym draws them but they never touch the lander.
// The observation space keeps Gym's bounds where the dynamics guarantee them
// (x within 1.5, y above -1.5, legs in [0, 1]); Gym's +-5 on velocities, +-pi
// on the angle and 1.5 on y are nominal and a lander can leave them, so those
// elements are unbounded here.
#ifndef FERRY_ENVS_BOX2D_LUNAR_LANDER_H_
#define FERRY_ENVS_BOX2D_LUNAR_LANDER_H_

#include <cstdint>
#include <memory>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::box2d {

class LunarLanderEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 1000;

  LunarLanderEnv(uint64_t seed, bool continuous);
  ~LunarLanderEnv() override;

 private:
  // Box2D's world of one episode; defined in the .cc, so that Box2D stays out
  // of this header.
  class Scene;
  // How hard each engine fires on one step, both in [0, 1], after the action
  // has been decoded; side_direction is -1 (left engine), 0 or +1.
  struct Throttle {
    double main = 0;
    double side = 0;
    int side_direction = 0;
  };

  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  Throttle Decode(const float* action) const;
  // Fires the engines, steps the world and scores the step.
  Outcome Simulate(const Throttle& throttle);

  bool continuous_;
  std::unique_ptr<Scene> scene_;
  // The engines' dispersion, reseeded from the env's RNG at every Reset.
  std::mt19937_64 dispersion_rng_;
  double previous_shaping_ = 0;
};

}  // namespace ferry::envs::box2d

#endif  // FERRY_ENVS_BOX2D_LUNAR_LANDER_H_
