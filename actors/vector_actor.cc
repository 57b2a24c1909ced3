#include "actors/vector_actor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/experience.h"

namespace ferry::actors {
namespace {

std::vector<int> LayerSizes(int obs_dim, const std::vector<int>& hidden, int num_actions) {
  std::vector<int> sizes = {obs_dim};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(num_actions);
  return sizes;
}

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
  if (!models::FastMlp::Available()) {
    return InvalidArgument(
        "this process has no BLAS sgemm_ to run the actor's network with (link libblas.so.3)");
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
  return std::unique_ptr<VectorActor>(new VectorActor(options, std::move(envs)));
}

VectorActor::VectorActor(const VectorActorOptions& options,
                         std::vector<std::unique_ptr<envs::Env>> envs)
    : envs_(std::move(envs)),
      obs_dim_(envs_[0]->observation_space().flat_size()),
      num_actions_(envs_[0]->action_space().n),
      sizes_(LayerSizes(obs_dim_, options.hidden, num_actions_)),
      insert_batch_(options.insert_batch),
      priority_epsilon_(static_cast<float>(options.priority_epsilon)),
      epsilon_(options.epsilon),
      net_(sizes_),
      rng_(options.seed),
      random_action_(0, num_actions_ - 1),
      nstep_(envs_.size(), NStepAccumulator(obs_dim_, options.n_step, options.gamma)),
      buffer_(obs_dim_, options.insert_batch + 2 * static_cast<int>(envs_.size()) * options.n_step),
      priorities_(buffer_.capacity()),
      bootstrap_row_(buffer_.capacity()),
      obs_(2 * envs_.size() * obs_dim_),
      next_obs_(obs_dim_),
      episode_return_(envs_.size(), 0.0) {
  net_.InitUniform(options.seed);
  for (size_t e = 0; e < envs_.size(); ++e) envs_[e]->Reset(&obs_[e * obs_dim_]);
}

void VectorActor::CompleteRows(const float* q) {
  for (int i = complete_; i < buffer_.size; ++i) {
    float bootstrap = 0.f;
    if (bootstrap_row_[i] >= 0) {
      const float* next = q + static_cast<size_t>(bootstrap_row_[i]) * num_actions_;
      bootstrap = *std::max_element(next, next + num_actions_);
    }
    const float target = buffer_.reward[i] + buffer_.discount[i] * bootstrap;
    priorities_[i] = std::abs(target - buffer_.q_taken[i]) + priority_epsilon_;
  }
  complete_ = buffer_.size;
}

void VectorActor::Step() {
  const int num_envs = this->num_envs();
  const float* q = net_.Forward(obs_.data(), num_envs + truncated_rows_);
  CompleteRows(q);
  int truncated_rows = 0;
  for (int e = 0; e < num_envs; ++e) {
    const float* row = q + static_cast<size_t>(e) * num_actions_;
    int action;
    if (uniform_(rng_) < epsilon_[e]) {
      action = random_action_(rng_);
    } else {
      action = static_cast<int>(std::max_element(row, row + num_actions_) - row);
    }
    float* o = &obs_[static_cast<size_t>(e) * obs_dim_];
    const float action_value = static_cast<float>(action);
    const envs::StepResult r = envs_[e]->Step(&action_value, next_obs_.data());
    episode_return_[e] += r.reward;
    const int first = buffer_.size;
    nstep_[e].Push(o, action, row[action], r.reward, next_obs_.data(), r.terminated, r.truncated,
                   version_, &buffer_);
    // Where the emitted rows' max_a Q(next obs) will be in the next Step's Q-values.
    int bootstrap_row = e;
    if (r.terminated) {
      bootstrap_row = -1;
    } else if (r.truncated) {
      bootstrap_row = num_envs + truncated_rows++;
      std::copy(next_obs_.begin(), next_obs_.end(),
                &obs_[static_cast<size_t>(bootstrap_row) * obs_dim_]);
    }
    std::fill(bootstrap_row_.begin() + first, bootstrap_row_.begin() + buffer_.size, bootstrap_row);
    if (r.terminated || r.truncated) {
      recent_returns_[episodes_++ % recent_returns_.size()] = episode_return_[e];
      episode_return_[e] = 0;
      envs_[e]->Reset(o);
    } else {
      std::copy(next_obs_.begin(), next_obs_.end(), o);
    }
  }
  truncated_rows_ = truncated_rows;
  steps_ += num_envs;
}

InsertBatch VectorActor::TakeBatch() {
  const int n = complete_;
  InsertBatch batch;
  batch.count = n;
  if (n == 0) return batch;
  batch.priorities.assign(priorities_.begin(), priorities_.begin() + n);
  batch.columns.resize(core::kNumTransitionColumns);
  batch.columns[core::kObs] = Bytes(buffer_.obs, n, obs_dim_);
  batch.columns[core::kAction] = Bytes(buffer_.action, n, 1);
  batch.columns[core::kReward] = Bytes(buffer_.reward, n, 1);
  batch.columns[core::kDiscount] = Bytes(buffer_.discount, n, 1);
  batch.columns[core::kNextObs] = Bytes(buffer_.next_obs, n, obs_dim_);
  batch.columns[core::kPolicyVersion] = Bytes(buffer_.policy_version, n, 1);
  // The latest Step's rows, still without bootstrap values, move to the front.
  std::copy(bootstrap_row_.begin() + n, bootstrap_row_.begin() + buffer_.size,
            bootstrap_row_.begin());
  buffer_.DropFront(n);
  complete_ = 0;
  return batch;
}

Status VectorActor::LoadWeights(int64_t version, const uint8_t* blob, size_t bytes) {
  FERRY_RETURN_IF_ERROR(net_.LoadBlob(blob, bytes));
  version_ = version;
  return Status::Ok();
}

Status VectorActor::PrepareWeights(int64_t version, const uint8_t* blob, size_t bytes,
                                   PreparedWeights* into) const {
  if (!into->net) into->net.emplace(sizes_);
  FERRY_RETURN_IF_ERROR(into->net->LoadBlob(blob, bytes));
  into->version = version;
  return Status::Ok();
}

void VectorActor::AdoptWeights(PreparedWeights& weights) {
  FERRY_CHECK(weights.net.has_value());
  net_.SwapWeights(*weights.net);
  std::swap(version_, weights.version);
}

int64_t VectorActor::transitions_waiting() const {
  int64_t waiting = buffer_.size;
  for (const NStepAccumulator& nstep : nstep_) waiting += nstep.pending();
  return waiting;
}

double VectorActor::RecentMeanReturn() const {
  const int64_t count = std::min<int64_t>(episodes_, recent_returns_.size());
  if (count == 0) return 0.0;
  return std::accumulate(recent_returns_.begin(), recent_returns_.begin() + count, 0.0) /
         static_cast<double>(count);
}

}  // namespace ferry::actors
