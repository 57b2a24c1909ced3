// Samples from the replay shards ahead of the learner, on a background thread.
//
//   thread: [send queued priority updates, one message per shard]
//           -> ReplaySampler::Sample(G * batch) -> Deal into G batches -> tensors
//           -> [target values ahead, while the learner has a batch in hand] -> queue (depth)
//   learner: Next() pops a batch; UpdatePriorities() queues |TD| for the thread
//
// The thread owns the ReplaySampler and its sockets (ZeroMQ sockets are not
// thread-safe); the learner thread calls Next() and UpdatePriorities(). One request to each
// shard serves G = batches_per_request batches (replay::Deal keeps each one
// global-proportional), and the priority updates queued since the thread last sent go out
// together: a shard's work per message is mostly fixed, so this divides its messages per
// update by G (and more for the updates). The price: a batch's priorities are up to G - 1
// updates staler. With a TargetAhead the thread fills each batch's target values
// (learner/target_ahead.h), but only while the queue holds a batch for the learner: a learner
// that would wait gets its batch at once and computes them itself. The destructor closes the
// queue and joins the thread.
#ifndef FERRY_LEARNER_PREFETCHER_H_
#define FERRY_LEARNER_PREFETCHER_H_

#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/queue.h"
#include "core/status.h"
#include "learner/dqn_loss.h"
#include "learner/target_ahead.h"
#include "replay/sampler.h"

namespace ferry::learner {

// A sampled batch and its columns as the updater takes them.
struct Prefetched {
  replay::SampledBatch sampled;
  DqnBatch batch;
};

class Prefetcher {
 public:
  // `ahead` (may be null) must outlive the prefetcher.
  Prefetcher(zmq::context_t& context, std::vector<std::string> endpoints, core::Schema schema,
             uint32_t client_id, uint64_t seed, int batch_size, int batches_per_request,
             double beta, int depth, torch::Device device, TargetAhead* ahead);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch, or the sampler's error; DeadlineExceeded if none came in time.
  Result<Prefetched> Next(double timeout_seconds);
  // Sends |TD| priorities for `batch`'s items, soon, from the background thread, together
  // with the others queued since it last sent.
  void UpdatePriorities(const replay::SampledBatch& batch, const std::vector<float>& priorities);

 private:
  // The updates queued since the thread last sent, in the order the learner made them.
  struct PendingUpdate {
    replay::SampledBatch keys;  // Only count, shards and keys are filled.
    std::vector<float> priorities;
  };
  void Run();
  // Queues `item` for the learner, sending priority updates while it waits for room.
  void Offer(Result<Prefetched> item);
  void SendUpdates();

  replay::ReplaySampler sampler_;
  const int batch_size_;
  const int batches_per_request_;
  const double beta_;
  const int obs_dim_;
  const torch::Device device_;
  TargetAhead* const ahead_;
  core::BoundedQueue<Result<Prefetched>> ready_;
  std::mutex updates_mu_;
  PendingUpdate pending_;  // Guarded by updates_mu_.
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_PREFETCHER_H_
