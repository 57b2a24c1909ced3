// The target network's Q-values of a batch's next observations, computed on the sampling
// thread ahead of the update that needs them.
//
//   update thread: Publish(target, version) after every update -> incoming weights, if new
//   sampling thread: Fill(batch): takes the newest incoming weights, then
//                    batch.target_next_q = target(next_obs), batch.target_version = version
//
// The target network changes only every learner.target_update_period updates, so its forward
// pass on a batch need not wait for the updates before it: it is one of the update's five
// matrix-product volumes (online forward on obs and next_obs, target forward, two backward),
// and here it runs on the CPUs the rest of the run shares, beside the update thread's own.
// The values are the bits the update would compute (models/fast_mlp.h); a batch filled by an
// earlier target network than the updater's is computed again by the update
// (DqnUpdater::ComputeGradients checks the version). Publish and Fill may run on two threads.
#ifndef FERRY_LEARNER_TARGET_AHEAD_H_
#define FERRY_LEARNER_TARGET_AHEAD_H_

#include <cstdint>
#include <mutex>

#include "learner/dqn_loss.h"
#include "models/fast_mlp.h"
#include "models/q_network.h"

namespace ferry::learner {

class TargetAhead {
 public:
  // Whether this process can compute ahead (models::FastMlp::Available()).
  static bool Available();

  // Starts with `target`'s current weights as `version`. Requires Available().
  TargetAhead(models::QNetworkImpl& target, int64_t version);

  // The target network's weights as of `version`, for the batches filled from now on; nothing
  // to do when `version` is the one last published, so the update thread may call it after
  // every update.
  void Publish(models::QNetworkImpl& target, int64_t version);
  // Sets batch->target_next_q (a new [rows, actions] tensor) and batch->target_version.
  void Fill(DqnBatch* batch);

 private:
  std::mutex mu_;
  models::FastMlp incoming_;  // Guarded by mu_: the newest published weights, if fresh.
  int64_t incoming_version_;  // Guarded by mu_: the version last published.
  bool fresh_ = false;        // Guarded by mu_.
  models::FastMlp net_;       // The filling thread's own.
  int64_t version_;
};

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_TARGET_AHEAD_H_
