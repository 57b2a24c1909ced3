// An actor's receiver of weight versions, on a thread of its own, so that the
// acting loop spends no time on sockets, checksums or copies of a blob:
//
//   paramserver (PUB broadcast, or a fetch answer) -> WeightsSubscriber, which the
//   follower thread waits on (zmq poll, waking at least every 20 ms for its
//   RequestLatest, repeated once a second until a first version arrives, and
//   for the stop request) -> Prepare (the blob copied into a network the actor
//   can swap in, VectorActor::PrepareWeights) -> latest-only slot
//   -> Take() on the actor -> VectorActor::AdoptWeights -> Recycle()
//
// Take() is called from one thread (the actor's) and never waits for more
// than the slot's mutex, which the follower holds only to move weights in or
// out. A version the actor has not taken yet is replaced by a newer one, and
// its storage goes to the spares, as do the weights an adoption replaced
// (Recycle); a version is prepared into a spare, so a follower allocates
// weights only while every set it has is in use (the actor's, the slot's and the
// one being prepared): a few times per run. The destructor stops and joins the thread.
#ifndef FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
#define FERRY_ACTORS_WEIGHTS_FOLLOWER_H_

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
  std::optional<PreparedWeights> latest_;  // Guarded by mu_.
  std::vector<PreparedWeights> spares_;    // Guarded by mu_.
  Status error_;                           // Guarded by mu_.
  std::jthread thread_;                    // Last: started once everything it reads exists.
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
