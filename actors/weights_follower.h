// An actor's receiver of weight versions, on a thread of its own, so that the
// acting loop spends no time on sockets, copies or checksums of a blob:
//
//   paramserver (PUB broadcast, or a fetch answer) -> WeightsSubscriber, polled
//   by the follower thread every millisecond (and RequestLatest once a second
//   until a first version arrives) -> latest-only slot -> Take() on the actor
//
// Take() is called from one thread (the actor's) and never waits for more
// than the slot's mutex, which the follower holds only to swap a blob in; a
// version the actor has not taken yet is replaced by a newer one. The
// destructor stops and joins the thread.
#ifndef FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
#define FERRY_ACTORS_WEIGHTS_FOLLOWER_H_

#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "paramserver/client.h"

namespace ferry::actors {

class WeightsFollower {
 public:
  // `context` outlives this.
  WeightsFollower(zmq::context_t& context, std::string endpoint, std::string broadcast_endpoint);

  // The newest version received since the last Take, if any.
  std::optional<paramserver::WeightsBlob> Take();

 private:
  void Run(const std::stop_token& stop);

  zmq::context_t& context_;
  const std::string endpoint_;
  const std::string broadcast_endpoint_;
  std::mutex mu_;
  std::optional<paramserver::WeightsBlob> latest_;  // Guarded by mu_.
  std::jthread thread_;  // Last: started once everything it reads exists.
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_WEIGHTS_FOLLOWER_H_
