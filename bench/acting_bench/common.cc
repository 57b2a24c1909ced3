#include "bench/acting_bench/common.h"

#include <cstdlib>
#include <iostream>
#include <utility>

#include "actors/actor.h"

namespace ferry::bench::acting_bench {

Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 3;
  s.window_s = 0.03;
  s.warmup_s = 0.01;
  return s;
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "acting_bench: " << what << std::endl;
  std::exit(1);
}

actors::VectorActorOptions CartPoleActor(int num_envs, std::vector<int> hidden) {
  actors::VectorActorOptions o;
  o.env_id = "CartPole-v1";
  for (int e = 0; e < num_envs; ++e) {
    o.env_seeds.push_back(1000 + e);
    o.epsilon.push_back(actors::ApexEpsilon(0.4, 7.0, e, num_envs));
  }
  o.seed = 3;
  o.hidden = std::move(hidden);
  o.n_step = 3;
  o.gamma = 0.99;
  o.insert_batch = 64;
  o.priority_epsilon = 1e-6;
  return o;
}

std::unique_ptr<actors::VectorActor> MakeActor(const actors::VectorActorOptions& options,
                                               const std::vector<uint8_t>& weights) {
  Result<std::unique_ptr<actors::VectorActor>> made = actors::VectorActor::Create(options);
  if (!made.ok()) Die(made.status().ToString());
  const Status loaded = (*made)->LoadWeights(1, weights.data(), weights.size());
  if (!loaded.ok()) Die(loaded.ToString());
  return std::move(made).value();
}

}  // namespace ferry::bench::acting_bench
