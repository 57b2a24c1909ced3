#include "actors/n_step.h"

#include <algorithm>

#include "core/status.h"

namespace ferry::actors {

TransitionBuffer::TransitionBuffer(int obs_dim_in, int capacity)
    : obs_dim(obs_dim_in),
      obs(static_cast<size_t>(capacity) * obs_dim_in),
      next_obs(static_cast<size_t>(capacity) * obs_dim_in),
      reward(capacity),
      discount(capacity),
      q_taken(capacity),
      action(capacity),
      policy_version(capacity) {}

void TransitionBuffer::DropFront(int rows) {
  FERRY_CHECK(rows >= 0 && rows <= size);
  const int kept = size - rows;
  // std::copy allows the overlap: the destination starts before the source.
  const auto move = [&](auto& column, size_t per_row) {
    const auto first = column.begin() + rows * per_row;
    std::copy(first, first + kept * per_row, column.begin());
  };
  const size_t per_obs = static_cast<size_t>(obs_dim);
  move(obs, per_obs);
  move(next_obs, per_obs);
  move(reward, 1);
  move(discount, 1);
  move(q_taken, 1);
  move(action, 1);
  move(policy_version, 1);
  size = kept;
}

NStepAccumulator::NStepAccumulator(int obs_dim, int n, double gamma)
    : obs_dim_(obs_dim),
      n_(n),
      gamma_(gamma),
      obs_(static_cast<size_t>(n) * obs_dim),
      action_(n),
      q_taken_(n),
      reward_(n),
      version_(n) {}

void NStepAccumulator::Emit(int steps, const float* next_obs, bool terminated,
                            TransitionBuffer* out) {
  FERRY_CHECK(out->size < out->capacity());
  const int i = out->size++;
  double ret = 0;
  double discount = 1;
  for (int k = 0; k < steps; ++k) {
    ret += discount * reward_[(head_ + k) % n_];
    discount *= gamma_;
  }
  std::copy_n(&obs_[static_cast<size_t>(head_) * obs_dim_], obs_dim_,
              &out->obs[static_cast<size_t>(i) * obs_dim_]);
  std::copy_n(next_obs, obs_dim_, &out->next_obs[static_cast<size_t>(i) * obs_dim_]);
  out->action[i] = action_[head_];
  out->q_taken[i] = q_taken_[head_];
  out->reward[i] = static_cast<float>(ret);
  out->discount[i] = terminated ? 0.f : static_cast<float>(discount);
  out->policy_version[i] = version_[head_];
  head_ = (head_ + 1) % n_;
  --count_;
}

void NStepAccumulator::Push(const float* obs, int32_t action, float q_taken, float reward,
                            const float* next_obs, bool terminated, bool truncated,
                            int64_t policy_version, TransitionBuffer* out) {
  const int slot = (head_ + count_) % n_;
  std::copy_n(obs, obs_dim_, &obs_[static_cast<size_t>(slot) * obs_dim_]);
  action_[slot] = action;
  q_taken_[slot] = q_taken;
  reward_[slot] = reward;
  version_[slot] = policy_version;
  ++count_;
  if (terminated || truncated) {
    while (count_ > 0) Emit(count_, next_obs, terminated, out);
    head_ = 0;
  } else if (count_ == n_) {
    Emit(n_, next_obs, /*terminated=*/false, out);
  }
}

}  // namespace ferry::actors
