#include "learner/gradient_reducer.h"

#include <algorithm>

#include "core/status.h"

namespace ferry::learner {
namespace {

// The control slots take whole cache lines, so the gradients start on one.
size_t ControlFloats(int slots) {
  constexpr size_t kLineFloats = 16;
  return (static_cast<size_t>(slots) + kLineFloats - 1) / kLineFloats * kLineFloats;
}

int CommSize(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

size_t BufferFloats(const std::vector<torch::Tensor>& parameters, int control_slots) {
  size_t floats = ControlFloats(control_slots);
  for (const auto& p : parameters) floats += static_cast<size_t>(p.numel());
  return floats;
}

}  // namespace

GradientReducer::GradientReducer(std::vector<torch::Tensor> parameters, MPI_Comm comm,
                                 const GradientReducerOptions& options)
    : parameters_(std::move(parameters)),
      ranks_(CommSize(comm)),
      overlap_(options.overlap && ranks_ > 1),
      control_floats_(ControlFloats(options.control_slots)),
      filled_(parameters_.size(), 0),
      allreducer_(comm, options.algorithm, linalg::Allreducer::kDefaultChunkBytes,
                  BufferFloats(parameters_, options.control_slots)) {
  size_t offset = control_floats_;
  for (const auto& p : parameters_) {
    offsets_.push_back(offset);
    offset += static_cast<size_t>(p.numel());
  }
  // Buckets from the last parameter backwards, the order backward produces gradients in; a
  // bucket closes once it holds bucket_bytes. The front one also takes the control slots.
  const size_t bucket_floats = std::max<size_t>(options.bucket_bytes / sizeof(float), 1);
  bucket_of_.resize(parameters_.size());
  for (size_t i = parameters_.size(); i-- > 0;) {
    if (buckets_.empty() || buckets_.back().count >= bucket_floats) buckets_.emplace_back();
    Bucket& bucket = buckets_.back();
    bucket.begin = offsets_[i];
    bucket.count += static_cast<size_t>(parameters_[i].numel());
    ++bucket.parameters;
    bucket_of_[i] = buckets_.size() - 1;
  }
  if (buckets_.empty()) buckets_.emplace_back();
  buckets_.back().count += buckets_.back().begin;
  buckets_.back().begin = 0;
  if (overlap_) {
    for (size_t i = 0; i < parameters_.size(); ++i) {
      hooks_.push_back(parameters_[i].register_hook([this, i](torch::Tensor gradient) {
        if (!armed_) return;
        Fill(i, gradient);
        StartReadyBuckets();
      }));
    }
  }
}

GradientReducer::~GradientReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) parameters_[i].remove_hook(hooks_[i]);
}

void GradientReducer::BeginBackward() { armed_ = overlap_; }

void GradientReducer::Fill(size_t index, const torch::Tensor& gradient) {
  FERRY_CHECK(!filled_[index]);
  const torch::Tensor& p = parameters_[index];
  float* out = allreducer_.buffer() + offsets_[index];
  if (gradient.defined()) {
    torch::from_blob(out, p.sizes(), torch::kFloat32).copy_(gradient);
  } else {
    std::fill_n(out, p.numel(), 0.f);
  }
  filled_[index] = 1;
  ++buckets_[bucket_of_[index]].filled;
}

void GradientReducer::StartReadyBuckets() {
  // The front bucket waits for Reduce: it carries the control slots, written after backward.
  while (next_bucket_ + 1 < buckets_.size() &&
         buckets_[next_bucket_].filled == buckets_[next_bucket_].parameters) {
    allreducer_.StartSumBuffer(buckets_[next_bucket_].begin, buckets_[next_bucket_].count);
    ++next_bucket_;
  }
}

void GradientReducer::Reduce(bool have_gradients) {
  armed_ = false;
  if (!sums_gradients()) return;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!filled_[i]) Fill(i, have_gradients ? parameters_[i].grad() : torch::Tensor());
  }
  if (overlap_) {
    StartReadyBuckets();
    allreducer_.StartSumBuffer(buckets_.back().begin, buckets_.back().count);
    allreducer_.WaitAll();
  } else {
    allreducer_.SumBuffer(0, allreducer_.buffer_floats());
  }
  std::fill(filled_.begin(), filled_.end(), 0);
  for (Bucket& bucket : buckets_) bucket.filled = 0;
  next_bucket_ = 0;
}

}  // namespace ferry::learner
