#include "learner/apex_dqn.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/experience.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/topology.h"
#include "envs/env.h"
#include "learner/evaluation.h"
#include "learner/linalg/allreduce.h"
#include "learner/prefetcher.h"
#include "paramserver/client.h"

namespace ferry::learner {
namespace {

// Control slots appended to the fused gradient buffer.
enum Control : int { kEndCode = 0, kSignalled, kMissingData, kLossSum, kNumControl };

torch::Tensor Column(const std::vector<uint8_t>& bytes, int rows, int per_row,
                     torch::Dtype dtype) {
  std::vector<int64_t> shape = {rows};
  if (per_row > 1) shape.push_back(per_row);
  return torch::from_blob(const_cast<uint8_t*>(bytes.data()), shape, dtype).clone();
}

DqnBatch ToTensors(const replay::SampledBatch& s, int obs_dim, const torch::Device& device) {
  DqnBatch b;
  const int n = s.count;
  b.obs = Column(s.columns[core::kObs], n, obs_dim, torch::kFloat32).view({n, obs_dim});
  b.next_obs = Column(s.columns[core::kNextObs], n, obs_dim, torch::kFloat32).view({n, obs_dim});
  b.action = Column(s.columns[core::kAction], n, 1, torch::kInt32).to(torch::kInt64);
  b.reward = Column(s.columns[core::kReward], n, 1, torch::kFloat32);
  b.discount = Column(s.columns[core::kDiscount], n, 1, torch::kFloat32);
  b.weights = torch::from_blob(const_cast<float*>(s.weights.data()), {n}).clone();
  for (torch::Tensor* t : {&b.obs, &b.next_obs, &b.action, &b.reward, &b.discount, &b.weights}) {
    *t = t->to(device);
  }
  return b;
}

double MedianLag(const replay::SampledBatch& s, int64_t updates) {
  const auto* versions = reinterpret_cast<const int64_t*>(s.columns[core::kPolicyVersion].data());
  std::vector<int64_t> lag;
  for (int i = 0; i < s.count; ++i) {
    if (versions[i] >= 0) lag.push_back(updates - versions[i]);
  }
  if (lag.empty()) return NAN;
  std::nth_element(lag.begin(), lag.begin() + lag.size() / 2, lag.end());
  return static_cast<double>(lag[lag.size() / 2]);
}

// Copies gradients into `fused` (or zeros when `have_data` is false).
void PackGradients(models::QNetwork& net, bool have_data, std::vector<float>* fused) {
  size_t offset = 0;
  for (auto& p : net->parameters()) {
    const auto n = static_cast<size_t>(p.numel());
    if (have_data && p.grad().defined()) {
      const torch::Tensor g = p.grad().to(torch::kCPU).contiguous();
      std::memcpy(fused->data() + offset, g.data_ptr<float>(), n * sizeof(float));
    } else {
      std::fill_n(fused->data() + offset, n, 0.f);
    }
    offset += n;
  }
}

void UnpackGradients(const std::vector<float>& fused, models::QNetwork& net) {
  size_t offset = 0;
  for (auto& p : net->parameters()) {
    const auto n = p.numel();
    torch::Tensor src =
        torch::from_blob(const_cast<float*>(fused.data() + offset), p.sizes(), torch::kFloat32);
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    p.mutable_grad().copy_(src.to(p.device()));
    offset += static_cast<size_t>(n);
  }
}

void BroadcastParameters(models::QNetwork& net, MPI_Comm comm) {
  std::vector<uint8_t> blob = models::ToBlob(*net);
  MPI_Bcast(blob.data(), static_cast<int>(blob.size()), MPI_BYTE, 0, comm);
  FERRY_CHECK(models::FromBlob(*net, blob.data(), blob.size()).ok());
}

}  // namespace

namespace {

DqnLoss TdLoss(models::QNetwork& online, const DqnBatch& batch, const torch::Tensor& q_next,
               double huber_delta, double normaliser) {
  const torch::Tensor y = batch.reward + batch.discount * q_next;
  const torch::Tensor q = online->forward(batch.obs).gather(1, batch.action.unsqueeze(1)).squeeze(1);
  const torch::Tensor huber = torch::nn::functional::huber_loss(
      q, y, torch::nn::functional::HuberLossFuncOptions().reduction(torch::kNone).delta(huber_delta));
  return {(batch.weights * huber).sum() / normaliser, (y - q).detach()};
}

}  // namespace

DqnLoss DoubleDqnLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                      double huber_delta, double normaliser) {
  torch::Tensor q_next;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor best = online->forward(batch.next_obs).argmax(1, /*keepdim=*/true);
    q_next = target->forward(batch.next_obs).gather(1, best).squeeze(1);
  }
  return TdLoss(online, batch, q_next, huber_delta, normaliser);
}

DqnLoss DqnMaxLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                   double huber_delta, double normaliser) {
  torch::Tensor q_next;
  {
    torch::NoGradGuard no_grad;
    q_next = std::get<0>(target->forward(batch.next_obs).max(1));
  }
  return TdLoss(online, batch, q_next, huber_delta, normaliser);
}

Result<RunEnd> RunLearner(const core::Config& config, const std::atomic<bool>& stop) {
  torch::set_num_threads(1);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  core::SetLogName("learner-" + std::to_string(rank));
  if (ranks != config.learner.ranks && rank == 0) {
    core::Log("running with %d MPI ranks (learner.ranks says %d)", ranks, config.learner.ranks);
  }
  if (config.learner.batch_size < ranks) {
    return InvalidArgument("learner.batch_size " + std::to_string(config.learner.batch_size) +
                           " is smaller than the number of ranks " + std::to_string(ranks));
  }
  torch::Device device(torch::kCPU);
  if (config.learner.device == "cuda") {
    if (!torch::cuda::is_available()) {
      return InvalidArgument("learner.device is cuda but LibTorch sees no CUDA device "
                             "(build against a CUDA LibTorch with -DTorch_DIR=...)");
    }
    device = torch::Device(torch::kCUDA);
  }

  auto probe = envs::MakeEnv(config.env.id, config.seed);
  if (!probe.ok()) return probe.status();
  const int obs_dim = (*probe)->observation_space().flat_size();
  if ((*probe)->action_space().kind != envs::Space::Kind::kDiscrete) {
    return InvalidArgument("env.id: " + config.env.id + " has continuous actions; DQN needs a "
                           "discrete env");
  }
  const int num_actions = (*probe)->action_space().n;

  torch::manual_seed(config.seed);
  models::QNetwork online(obs_dim, num_actions, config.model.hidden);
  models::QNetwork target(obs_dim, num_actions, config.model.hidden);
  BroadcastParameters(online, comm);
  models::CopyParameters(*online, *target);
  online->to(device);
  target->to(device);
  torch::optim::Adam optimizer(online->parameters(),
                               torch::optim::AdamOptions(config.learner.learning_rate));

  zmq::context_t context(1);
  std::unique_ptr<paramserver::WeightsPublisher> publisher;
  core::MetricsWriter metrics;
  const std::string run_dir = config.run.dir.empty() ? "." : config.run.dir;
  if (rank == 0) {
    publisher = std::make_unique<paramserver::WeightsPublisher>(
        context, core::ParamServerEndpoint(config));
    const auto blob = models::ToBlob(*online);
    publisher->Publish(0, blob.data(), blob.size());
    FERRY_RETURN_IF_ERROR(metrics.Open(run_dir + "/metrics.jsonl"));
  }

  const int global_batch = config.learner.batch_size;
  const int local_batch = global_batch / ranks + (rank < global_batch % ranks ? 1 : 0);
  Prefetcher prefetcher(context, core::ReplayEndpoints(config),
                        core::TransitionSchema(obs_dim, true, 1), 1000 + rank,
                        config.seed * 104729ull + rank, local_batch, config.replay.beta,
                        /*depth=*/2);
  const int64_t num_params = models::ParameterCount(*online);
  std::vector<float> fused(num_params + kNumControl);

  const double start = core::NowSeconds();
  int64_t updates = 0;
  int64_t env_steps = 0;
  double best_eval = -INFINITY;
  double last_eval = NAN;
  double wait_replay = 0, wait_allreduce = 0, compute = 0;
  double last_report = start;
  int64_t updates_at_report = 0, steps_at_report = 0;
  double loss_acc = 0;
  int loss_count = 0;
  double lag = NAN;
  int64_t replay_size = 0;
  RunEnd end = RunEnd::kStopped;

  while (true) {
    const double t0 = core::NowSeconds();
    auto sampled = prefetcher.Next(/*timeout_seconds=*/2.0);
    const double t1 = core::NowSeconds();
    wait_replay += t1 - t0;
    const bool have_data = sampled.ok();
    torch::Tensor td;
    float local_loss = 0;
    if (have_data) {
      env_steps = sampled->inserted_total;
      replay_size = sampled->global_size;
      lag = MedianLag(*sampled, updates);
      const DqnBatch batch = ToTensors(*sampled, obs_dim, device);
      DqnLoss loss = (config.learner.double_dqn ? DoubleDqnLoss : DqnMaxLoss)(
          online, target, batch, config.learner.huber_delta, static_cast<double>(global_batch));
      optimizer.zero_grad();
      loss.loss.backward();
      td = loss.td.to(torch::kCPU);
      local_loss = loss.loss.item<float>();
    } else if (!stop.load()) {
      core::Log("no batch this step: %s", sampled.status().message().c_str());
    }
    PackGradients(online, have_data, &fused);

    int end_code = -1;
    if (rank == 0) {
      const double elapsed = core::NowSeconds() - start;
      if (best_eval >= config.stop.target_return) {
        end_code = static_cast<int>(RunEnd::kTargetReached);
      } else if (env_steps >= config.stop.max_env_steps || elapsed >= config.stop.max_seconds) {
        end_code = static_cast<int>(RunEnd::kBudgetExhausted);
      }
    }
    float* control = fused.data() + num_params;
    control[kEndCode] = static_cast<float>(end_code + 1);
    control[kSignalled] = stop.load() ? 1.f : 0.f;
    control[kMissingData] = have_data ? 0.f : 1.f;
    control[kLossSum] = local_loss;
    const double t2 = core::NowSeconds();
    linalg::AllreduceSum(fused.data(), fused.size(), comm);
    const double t3 = core::NowSeconds();
    wait_allreduce += t3 - t2;

    if (control[kEndCode] > 0) {
      end = static_cast<RunEnd>(static_cast<int>(control[kEndCode]) - 1);
      break;
    }
    if (control[kSignalled] > 0) {
      end = RunEnd::kStopped;
      break;
    }
    if (control[kMissingData] > 0) continue;  // Skipped on every rank alike.

    UnpackGradients(fused, online);
    torch::nn::utils::clip_grad_norm_(online->parameters(), config.learner.max_grad_norm);
    optimizer.step();
    ++updates;
    loss_acc += control[kLossSum];
    ++loss_count;
    std::vector<float> priorities(td.numel());
    const float* td_data = td.data_ptr<float>();
    for (size_t i = 0; i < priorities.size(); ++i) {
      priorities[i] = std::abs(td_data[i]) + static_cast<float>(config.replay.priority_epsilon);
    }
    prefetcher.UpdatePriorities(*sampled, std::move(priorities));
    if (updates % config.learner.target_update_period == 0) {
      models::CopyParameters(*online, *target);
    }
    compute += core::NowSeconds() - t3 + (t2 - t1);
    if (rank != 0) continue;

    if (updates % config.learner.publish_period == 0) {
      const auto blob = models::ToBlob(*online);
      publisher->Publish(updates, blob.data(), blob.size());
    }
    const double now = core::NowSeconds();
    if (updates % config.learner.eval_period == 0) {
      auto eval = EvaluateGreedy(online, config.env.id, config.learner.eval_episodes,
                                 config.seed * 1000003ull + 999983ull);
      if (!eval.ok()) return eval.status();
      last_eval = eval->mean_return;
      best_eval = std::max(best_eval, last_eval);
      metrics.Write(core::MetricsRecord()
                        .Add("time", now - start)
                        .Add("updates", static_cast<double>(updates))
                        .Add("env_steps", static_cast<double>(env_steps))
                        .Add("eval_return", eval->mean_return)
                        .Add("eval_return_std", eval->std_return)
                        .Add("eval_episodes", eval->episodes));
      core::Log("eval after %lld updates, %lld env steps: mean return %.1f +- %.1f over %d episodes",
                static_cast<long long>(updates), static_cast<long long>(env_steps),
                eval->mean_return, eval->std_return, eval->episodes);
    }
    if (now - last_report >= 2.0) {
      const double dt = now - last_report;
      metrics.Write(core::MetricsRecord()
                        .Add("time", now - start)
                        .Add("updates", static_cast<double>(updates))
                        .Add("env_steps", static_cast<double>(env_steps))
                        .Add("updates_per_s", (updates - updates_at_report) / dt)
                        .Add("env_steps_per_s", (env_steps - steps_at_report) / dt)
                        .Add("loss", loss_count ? loss_acc / loss_count : NAN)
                        .Add("replay_size", static_cast<double>(replay_size))
                        .Add("policy_lag_median", lag)
                        .Add("wait_replay_s", wait_replay)
                        .Add("allreduce_s", wait_allreduce)
                        .Add("compute_s", compute)
                        .Add("last_eval_return", last_eval));
      last_report = now;
      updates_at_report = updates;
      steps_at_report = env_steps;
      loss_acc = 0;
      loss_count = 0;
    }
  }

  if (rank == 0) {
    const char* reason = end == RunEnd::kTargetReached     ? "target_reached"
                         : end == RunEnd::kBudgetExhausted ? "budget_exhausted"
                                                           : "stopped";
    metrics.Write(core::MetricsRecord()
                      .Add("time", core::NowSeconds() - start)
                      .Add("updates", static_cast<double>(updates))
                      .Add("env_steps", static_cast<double>(env_steps))
                      .Add("best_eval_return", best_eval)
                      .Add("end", reason));
    core::Log("learner ended (%s) after %lld updates, %lld env steps, best eval return %.1f",
              reason, static_cast<long long>(updates), static_cast<long long>(env_steps),
              best_eval);
  }
  return end;
}

}  // namespace ferry::learner
