#include "actors/actor.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>
#include <random>

#include <torch/torch.h>
#include <zmq.hpp>

#include "actors/n_step.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/topology.h"
#include "envs/env.h"
#include "models/q_network.h"
#include "paramserver/client.h"
#include "replay/writer.h"

namespace ferry::actors {
namespace {

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v, int rows, int per_row) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + sizeof(T) * rows * per_row);
}

// Initial priorities: |n-step TD error| under this actor's own network.
std::vector<float> InitialPriorities(models::QNetwork& net, const TransitionBuffer& b,
                                     double priority_epsilon) {
  torch::NoGradGuard no_grad;
  const int n = b.size;
  auto obs = torch::from_blob(const_cast<float*>(b.obs.data()), {n, b.obs_dim});
  auto next = torch::from_blob(const_cast<float*>(b.next_obs.data()), {n, b.obs_dim});
  auto q = net->forward(torch::cat({obs, next})).contiguous();
  auto qa = q.accessor<float, 2>();
  std::vector<float> priorities(n);
  for (int i = 0; i < n; ++i) {
    float best = qa[n + i][0];
    for (int a = 1; a < q.size(1); ++a) best = std::max(best, qa[n + i][a]);
    const float target = b.reward[i] + b.discount[i] * best;
    priorities[i] = std::abs(target - qa[i][b.action[i]]) + static_cast<float>(priority_epsilon);
  }
  return priorities;
}

}  // namespace

double ApexEpsilon(double epsilon, double alpha, int slot, int slots) {
  if (slots <= 1) return epsilon;
  return std::pow(epsilon, 1.0 + static_cast<double>(slot) / (slots - 1) * alpha);
}

Status RunActor(const core::Config& config, int actor_id, const std::atomic<bool>& stop) {
  torch::set_num_threads(1);
  const int num_envs = config.actors.envs_per_actor;
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (int e = 0; e < num_envs; ++e) {
    const uint64_t env_seed = config.seed * 1000003ull + actor_id * 1009ull + e;
    auto env = envs::MakeEnv(config.env.id, env_seed);
    if (!env.ok()) return env.status();
    envs.push_back(std::move(env).value());
  }
  const envs::Space& action_space = envs[0]->action_space();
  if (action_space.kind != envs::Space::Kind::kDiscrete) {
    return InvalidArgument("env.id: " + config.env.id +
                           " has continuous actions; the Ape-X DQN actor needs a discrete env");
  }
  const int obs_dim = envs[0]->observation_space().flat_size();
  const int num_actions = action_space.n;
  const core::Schema schema = core::TransitionSchema(obs_dim, true, 1);

  models::QNetwork net(obs_dim, num_actions, config.model.hidden);
  net->eval();
  int64_t version = -1;

  zmq::context_t context(1);
  replay::WriterOptions writer_options;
  writer_options.actor_id = static_cast<uint32_t>(actor_id);
  writer_options.epoch = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch()).count());
  writer_options.max_in_flight = config.actors.max_in_flight;
  writer_options.resend_after = 5.0;
  replay::ReplayWriter writer(context, core::ReplayEndpoints(config), schema, writer_options);
  paramserver::WeightsSubscriber weights(context, core::ParamServerEndpoint(config),
                                         core::BroadcastEndpoint(config));
  weights.RequestLatest();
  double last_fetch = core::NowSeconds();

  const int slots = config.actors.count * num_envs;
  std::vector<double> epsilon(num_envs);
  for (int e = 0; e < num_envs; ++e) {
    epsilon[e] = ApexEpsilon(config.actors.epsilon, config.actors.epsilon_alpha,
                             actor_id * num_envs + e, slots);
  }
  std::mt19937_64 rng(config.seed * 7919ull + actor_id);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::uniform_int_distribution<int> random_action(0, num_actions - 1);

  std::vector<NStepAccumulator> nstep(
      num_envs, NStepAccumulator(obs_dim, config.actors.n_step, config.learner.gamma));
  TransitionBuffer buffer(obs_dim, config.actors.insert_batch + num_envs * config.actors.n_step);
  std::vector<float> obs(static_cast<size_t>(num_envs) * obs_dim);
  std::vector<float> next_obs(obs_dim);
  std::vector<double> episode_return(num_envs, 0.0);
  std::deque<double> recent_returns;
  for (int e = 0; e < num_envs; ++e) envs[e]->Reset(&obs[static_cast<size_t>(e) * obs_dim]);

  auto send = [&]() -> Status {
    if (buffer.size == 0) return Status::Ok();
    std::vector<float> priorities =
        InitialPriorities(net, buffer, config.replay.priority_epsilon);
    const int n = buffer.size;
    std::vector<std::vector<uint8_t>> columns(core::kNumTransitionColumns);
    columns[core::kObs] = Bytes(buffer.obs, n, obs_dim);
    columns[core::kAction] = Bytes(buffer.action, n, 1);
    columns[core::kReward] = Bytes(buffer.reward, n, 1);
    columns[core::kDiscount] = Bytes(buffer.discount, n, 1);
    columns[core::kNextObs] = Bytes(buffer.next_obs, n, obs_dim);
    columns[core::kPolicyVersion] = Bytes(buffer.policy_version, n, 1);
    buffer.Clear();
    return writer.Write(n, std::move(columns), std::move(priorities), stop);
  };

  core::Log("actor %d: %d x %s, epsilon %.4g..%.4g, sending to %d shards", actor_id, num_envs,
            config.env.id.c_str(), epsilon.front(), epsilon.back(), config.replay.shards);
  int64_t steps = 0;
  double last_report = core::NowSeconds();
  int64_t steps_at_report = 0;
  std::vector<float> action_value(1);
  while (!stop.load()) {
    if (auto blob = weights.Poll()) {
      Status loaded = models::FromBlob(*net, blob->bytes.data(), blob->bytes.size());
      if (!loaded.ok()) return loaded;
      version = blob->version;
    } else if (version < 0 && core::NowSeconds() - last_fetch > 1.0) {
      weights.RequestLatest();  // Start-up, or the paramserver came back.
      last_fetch = core::NowSeconds();
    }
    torch::Tensor q;
    {
      torch::NoGradGuard no_grad;
      q = net->forward(torch::from_blob(obs.data(), {num_envs, obs_dim})).contiguous();
    }
    const float* qs = q.data_ptr<float>();
    for (int e = 0; e < num_envs; ++e) {
      int action;
      if (uniform(rng) < epsilon[e]) {
        action = random_action(rng);
      } else {
        const float* row = qs + static_cast<size_t>(e) * num_actions;
        action = static_cast<int>(std::max_element(row, row + num_actions) - row);
      }
      float* o = &obs[static_cast<size_t>(e) * obs_dim];
      action_value[0] = static_cast<float>(action);
      const envs::StepResult r = envs[e]->Step(action_value.data(), next_obs.data());
      episode_return[e] += r.reward;
      nstep[e].Push(o, action, r.reward, next_obs.data(), r.terminated, r.truncated, version,
                    &buffer);
      if (r.terminated || r.truncated) {
        recent_returns.push_back(episode_return[e]);
        if (recent_returns.size() > 20) recent_returns.pop_front();
        episode_return[e] = 0;
        envs[e]->Reset(o);
      } else {
        std::copy(next_obs.begin(), next_obs.end(), o);
      }
    }
    steps += num_envs;
    if (buffer.size >= config.actors.insert_batch) {
      Status sent = send();
      if (!sent.ok() && !stop.load()) return sent;
    }
    writer.Poll(0);
    const double now = core::NowSeconds();
    if (now - last_report >= 10.0) {
      const double mean_return =
          recent_returns.empty()
              ? 0.0
              : std::accumulate(recent_returns.begin(), recent_returns.end(), 0.0) /
                    recent_returns.size();
      core::Log("actor %d: %lld steps (%.0f/s), acked %lld, in flight %lld, policy v%lld, "
                "recent return %.1f", actor_id, static_cast<long long>(steps),
                (steps - steps_at_report) / (now - last_report),
                static_cast<long long>(writer.acked_transitions()),
                static_cast<long long>(writer.in_flight()), static_cast<long long>(version),
                mean_return);
      last_report = now;
      steps_at_report = steps;
    }
  }
  const Status flushed = writer.Flush(/*timeout_seconds=*/2.0);
  core::Log("actor %d: stopped after %lld steps, %lld transitions acked%s", actor_id,
            static_cast<long long>(steps), static_cast<long long>(writer.acked_transitions()),
            flushed.ok() ? "" : (", " + flushed.message()).c_str());
  return Status::Ok();
}

}  // namespace ferry::actors
