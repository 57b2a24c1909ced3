#include "actors/vector_actor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/experience.h"

namespace ferry::actors {
namespace {

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v, int rows, int per_row) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + sizeof(T) * rows * per_row);
}

}  // namespace

Result<std::unique_ptr<VectorActor>> VectorActor::Create(const VectorActorOptions& options) {
  if (options.env_seeds.empty() || options.epsilon.size() != options.env_seeds.size()) {
    return InvalidArgument("VectorActor needs one epsilon per env and at least one env, got " +
                           std::to_string(options.epsilon.size()) + " for " +
                           std::to_string(options.env_seeds.size()));
  }
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (uint64_t seed : options.env_seeds) {
    auto env = envs::MakeEnv(options.env_id, seed);
    if (!env.ok()) return env.status();
    envs.push_back(std::move(env).value());
  }
  if (envs[0]->action_space().kind != envs::Space::Kind::kDiscrete) {
    return InvalidArgument("env.id: " + options.env_id +
                           " has continuous actions; the Ape-X DQN actor needs a discrete env");
  }
  std::unique_ptr<VectorActor> actor(new VectorActor(options, std::move(envs)));
  if (options.inference != Inference::kLibTorch && models::FastMlp::Available()) {
    models::FastMlp fast(*actor->net_);
    const int largest = 2 * actor->buffer_.capacity();
    bool exact = true;
    for (int batch : {actor->num_envs(), 2 * options.insert_batch, largest}) {
      exact = exact && models::ForwardMatchesLibTorch(*actor->net_, fast, batch, /*seed=*/batch);
    }
    if (exact) actor->fast_.emplace(std::move(fast));
  }
  if (options.inference == Inference::kFastMlp && !actor->fast_) {
    return InvalidArgument(
        "the fast MLP inference path does not reproduce LibTorch's forward "
        "for this network here (no BLAS sgemm_, or other bits); use LibTorch");
  }
  return actor;
}

VectorActor::VectorActor(const VectorActorOptions& options,
                         std::vector<std::unique_ptr<envs::Env>> envs)
    : envs_(std::move(envs)),
      obs_dim_(envs_[0]->observation_space().flat_size()),
      num_actions_(envs_[0]->action_space().n),
      insert_batch_(options.insert_batch),
      priority_epsilon_(static_cast<float>(options.priority_epsilon)),
      epsilon_(options.epsilon),
      net_(obs_dim_, num_actions_, options.hidden),
      rng_(options.seed),
      random_action_(0, num_actions_ - 1),
      nstep_(envs_.size(), NStepAccumulator(obs_dim_, options.n_step, options.gamma)),
      buffer_(obs_dim_, options.insert_batch + static_cast<int>(envs_.size()) * options.n_step),
      obs_(envs_.size() * obs_dim_),
      next_obs_(obs_dim_),
      priority_input_(2 * static_cast<size_t>(buffer_.capacity()) * obs_dim_),
      episode_return_(envs_.size(), 0.0) {
  net_->eval();
  for (size_t e = 0; e < envs_.size(); ++e) envs_[e]->Reset(&obs_[e * obs_dim_]);
}

const float* VectorActor::QValues(const float* obs, int batch) {
  if (fast_) return fast_->Forward(obs, batch);
  torch::NoGradGuard no_grad;
  libtorch_q_ =
      net_->forward(torch::from_blob(const_cast<float*>(obs), {batch, obs_dim_})).contiguous();
  return libtorch_q_.data_ptr<float>();
}

void VectorActor::Step() {
  const int num_envs = this->num_envs();
  const float* q = QValues(obs_.data(), num_envs);
  for (int e = 0; e < num_envs; ++e) {
    int action;
    if (uniform_(rng_) < epsilon_[e]) {
      action = random_action_(rng_);
    } else {
      const float* row = q + static_cast<size_t>(e) * num_actions_;
      action = static_cast<int>(std::max_element(row, row + num_actions_) - row);
    }
    float* o = &obs_[static_cast<size_t>(e) * obs_dim_];
    const float action_value = static_cast<float>(action);
    const envs::StepResult r = envs_[e]->Step(&action_value, next_obs_.data());
    episode_return_[e] += r.reward;
    nstep_[e].Push(o, action, r.reward, next_obs_.data(), r.terminated, r.truncated, version_,
                   &buffer_);
    if (r.terminated || r.truncated) {
      recent_returns_[episodes_++ % recent_returns_.size()] = episode_return_[e];
      episode_return_[e] = 0;
      envs_[e]->Reset(o);
    } else {
      std::copy(next_obs_.begin(), next_obs_.end(), o);
    }
  }
  steps_ += num_envs;
}

InsertBatch VectorActor::TakeBatch() {
  const int n = buffer_.size;
  InsertBatch batch;
  batch.count = n;
  if (n == 0) return batch;
  // One inference call over [obs; next obs], as LibTorch's cat of the two would be.
  const size_t rows = static_cast<size_t>(n) * obs_dim_;
  std::copy_n(buffer_.obs.data(), rows, priority_input_.data());
  std::copy_n(buffer_.next_obs.data(), rows, priority_input_.data() + rows);
  const float* q = QValues(priority_input_.data(), 2 * n);
  batch.priorities.resize(n);
  for (int i = 0; i < n; ++i) {
    const float* next = q + static_cast<size_t>(n + i) * num_actions_;
    const float best = *std::max_element(next, next + num_actions_);
    const float target = buffer_.reward[i] + buffer_.discount[i] * best;
    const float taken = q[static_cast<size_t>(i) * num_actions_ + buffer_.action[i]];
    batch.priorities[i] = std::abs(target - taken) + priority_epsilon_;
  }
  batch.columns.resize(core::kNumTransitionColumns);
  batch.columns[core::kObs] = Bytes(buffer_.obs, n, obs_dim_);
  batch.columns[core::kAction] = Bytes(buffer_.action, n, 1);
  batch.columns[core::kReward] = Bytes(buffer_.reward, n, 1);
  batch.columns[core::kDiscount] = Bytes(buffer_.discount, n, 1);
  batch.columns[core::kNextObs] = Bytes(buffer_.next_obs, n, obs_dim_);
  batch.columns[core::kPolicyVersion] = Bytes(buffer_.policy_version, n, 1);
  buffer_.Clear();
  return batch;
}

Status VectorActor::LoadWeights(int64_t version, const uint8_t* blob, size_t bytes) {
  FERRY_RETURN_IF_ERROR(models::FromBlob(*net_, blob, bytes));
  if (fast_) fast_->CopyWeights(*net_);
  version_ = version;
  return Status::Ok();
}

double VectorActor::RecentMeanReturn() const {
  const int64_t count = std::min<int64_t>(episodes_, recent_returns_.size());
  if (count == 0) return 0.0;
  return std::accumulate(recent_returns_.begin(), recent_returns_.begin() + count, 0.0) /
         static_cast<double>(count);
}

}  // namespace ferry::actors
