// An actor's receiver of weight versions, on a thread of its own, so that the
// acting loop spends no time on sockets, checksums or copies of a blob:
//
//   paramserver (PUB broadcast, or a fetch answer) -> WeightsSubscriber, which the
//   follower thread waits on (zmq poll, waking at least every 20 ms for its
//   RequestLatest, repeated once a second until a first version arrives, and
//   for the stop request) -> Prepare (the blob copied into a network the actor
//   can swap in, VectorActor::PrepareWeights) -> one-version slot
//   -> Take() on the actor -> VectorActor::AdoptWeights -> Recycle()
//
// Take() is called from one thread (the actor's) and never waits for more
// than the slot's mutex, which the follower holds only to move weights in or
// out. While the slot holds a version the actor has not taken, the follower
// prepares no other: it waits for the Take, then prepares the newest version
// that has arrived by then (the subscriber keeps only the newest), so it checks
// and copies at most one version per actor step, not every one the learner
// publishes. (Many actors, each stepping many envs, take far fewer versions
// than a learner publishing every few updates sends; preparing every one was
// most of their CPU.) So an actor acts, from each step on, with the newest
// version of the step before, or of its first step once the follower has one.
// A version is prepared into a spare (the weights an adoption replaced, handed
// back by Recycle), so a follower allocates weights only while every set it has
// is in use (the actor's and the slot's): a few times per run. The destructor
// stops and joins the thread.
#ifndef FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
#define FERRY_ACTORS_WEIGHTS_FOLLOWER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "actors/vector_actor.h"
#include "core/status.h"
#include "paramserver/client.h"

namespace ferry::actors {

class WeightsFollower {
 public:
  // Runs on the follower thread: makes `into` hold `blob`'s weights (its storage,
  // when it has any, is weights handed back by Recycle).
  using Prepare =
      std::function<Status(const paramserver::WeightsBlob& blob, PreparedWeights* into)>;

  // `context` outlives this.
  WeightsFollower(zmq::context_t& context, std::string endpoint, std::string broadcast_endpoint,
                  Prepare prepare);

  // The newest version prepared since the last Take, if any; the error of a
  // version that could not be prepared (a blob of another architecture).
  Result<std::optional<PreparedWeights>> Take();
  // Weights the actor no longer acts with, for a later version to fill.
  void Recycle(PreparedWeights weights);

 private:
  void Run(const std::stop_token& stop);

  zmq::context_t& context_;
  const std::string endpoint_;
  const std::string broadcast_endpoint_;
  const Prepare prepare_;
  std::mutex mu_;
  std::condition_variable taken_;          // Signalled when Take empties the slot.
  std::optional<PreparedWeights> latest_;  // The slot. Guarded by mu_.
  std::vector<PreparedWeights> spares_;    // Guarded by mu_.
  Status error_;                           // Guarded by mu_.
  std::jthread thread_;                    // Last: started once everything it reads exists.
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
