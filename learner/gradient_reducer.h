// Sums the online network's gradients across the learner's ranks: Horovod's tensor fusion, with
// optional overlap of the reduction and backward.
//
// The fused buffer is the Allreducer's own (in the shared window on one node, so nothing is
// copied in or out of it):
//
//   [ control slots | parameter 0 grads | parameter 1 grads | ... ]   (parameter order)
//
// The control slots carry the step's small decisions (stop, no data, loss) in the same
// collective as the gradients. The parameters are cut into buckets of about `bucket_bytes`, back
// to front; the front bucket also holds the control slots.
//
// Without overlap, Reduce copies every gradient in and sums the whole buffer once. With
// overlap, a hook on each parameter copies its gradient in as backward produces it (last layer
// first), and each bucket whose gradients are all in starts reducing in the background while
// backward computes the rest; Reduce then starts the front bucket and waits. Buckets start in
// the same order on every rank, and a rank without a batch starts them with zeros, so the
// ranks' collectives always match.
//
// On one rank the sum is the rank's own: Reduce copies nothing and the gradients stay in the
// parameters' grads (sums_gradients() is false), which saves two copies of every gradient per
// update; the control slots read back as written.
//
// Used from the learner's thread; the parameters must outlive the reducer.
#ifndef FERRY_LEARNER_GRADIENT_REDUCER_H_
#define FERRY_LEARNER_GRADIENT_REDUCER_H_

#include <mpi.h>
#include <torch/torch.h>

#include <cstddef>
#include <vector>

#include "learner/linalg/allreducer.h"

namespace ferry::learner {

struct GradientReducerOptions {
  linalg::Allreducer::Algorithm algorithm = linalg::Allreducer::Algorithm::kAuto;
  bool overlap = false;
  size_t bucket_bytes = size_t{1} << 20;
  int control_slots = 0;
};

class GradientReducer {
 public:
  // Collective over `comm`.
  GradientReducer(std::vector<torch::Tensor> parameters, MPI_Comm comm,
                  const GradientReducerOptions& options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the backward pass of a step: with overlap, the hooks take the gradients from here on.
  void BeginBackward();
  // After backward (have_gradients), or in its place on a rank without a batch: fills in what
  // the hooks did not, sums the whole buffer across the ranks, and waits for it. Write control()
  // before calling.
  void Reduce(bool have_gradients);

  float* control() { return allreducer_.buffer(); }
  // Whether there is more than one rank to sum over; when not, gradients() holds nothing and
  // the parameters' grads are the sum.
  bool sums_gradients() const { return ranks_ > 1; }
  // The summed gradients, in parameter order (what DqnUpdater::UnpackGradients reads).
  const float* gradients() { return allreducer_.buffer() + control_floats_; }
  linalg::Allreducer::Algorithm algorithm() const { return allreducer_.algorithm(); }
  size_t num_buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t begin = 0;  // Floats into the buffer.
    size_t count = 0;
    int parameters = 0;  // How many parameters it holds.
    int filled = 0;      // How many of them are in this step.
  };
  void Fill(size_t index, const torch::Tensor& gradient);
  void StartReadyBuckets();

  std::vector<torch::Tensor> parameters_;
  int ranks_;
  bool overlap_;
  size_t control_floats_;
  std::vector<size_t> offsets_;    // Each parameter's first float in the buffer.
  std::vector<size_t> bucket_of_;  // Each parameter's bucket.
  std::vector<Bucket> buckets_;    // Back to front: buckets_[0] ends at the buffer's end.
  std::vector<char> filled_;       // Per parameter, this step.
  size_t next_bucket_ = 0;         // The next bucket to start.
  bool armed_ = false;
  std::vector<unsigned> hooks_;
  linalg::Allreducer allreducer_;
};

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_GRADIENT_REDUCER_H_
