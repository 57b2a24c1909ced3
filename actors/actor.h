// An Ape-X actor: E envs stepped together, one batched inference per step.
//
//   weights (paramserver -> WeightsFollower's thread, which receives them and
//     copies them into a spare network, never waited on) -> swapped into
//     VectorActor (vector_actor.h) between two steps:
//   obs[E] -> Q[E, A] -> epsilon-greedy per env -> Env::Step x E
//          -> n-step accumulators -> TransitionBuffer
//          -> (full) initial priorities |TD| from this network -> ReplayWriter
//
// Env slot i of all N*E slots explores with eps_i = eps^(1 + i/(N*E-1) * alpha):
// Ape-X's per-actor schedule, applied per env so one process covers a range.
// Run() loops on the calling thread until `stop` is set.
#ifndef FERRY_ACTORS_ACTOR_H_
#define FERRY_ACTORS_ACTOR_H_

#include <atomic>
#include <cstdint>

#include "core/config.h"
#include "core/status.h"

namespace ferry::actors {

// Exploration rate of env slot `slot` out of `slots` (Ape-X).
double ApexEpsilon(double epsilon, double alpha, int slot, int slots);

// Runs actor `actor_id` of the config's topology until `stop`.
Status RunActor(const core::Config& config, int actor_id, const std::atomic<bool>& stop);

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_ACTOR_H_
