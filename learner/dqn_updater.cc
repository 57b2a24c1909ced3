#include "learner/dqn_updater.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "core/log.h"
#include "envs/env.h"
#include "learner/fused_adam.h"
#include "learner/gradient_reducer.h"

namespace ferry::learner {

Result<UpdaterOptions> UpdaterOptionsFor(const core::Config& config) {
  auto probe = envs::MakeEnv(config.env.id, config.seed);
  if (!probe.ok()) return probe.status();
  if ((*probe)->action_space().kind != envs::Space::Kind::kDiscrete) {
    return InvalidArgument("env.id: " + config.env.id +
                           " has continuous actions; DQN needs a "
                           "discrete env");
  }
  UpdaterOptions options;
  options.obs_dim = (*probe)->observation_space().flat_size();
  options.num_actions = (*probe)->action_space().n;
  options.hidden = config.model.hidden;
  options.learning_rate = config.learner.learning_rate;
  options.learning_rate_final_fraction = config.learner.learning_rate_final_fraction;
  options.decay_env_steps = config.stop.max_env_steps;
  options.huber_delta = config.learner.huber_delta;
  options.max_grad_norm = config.learner.max_grad_norm;
  options.target_update_period = config.learner.target_update_period;
  options.double_dqn = config.learner.double_dqn;
  options.autograd = config.learner.overlap_allreduce;
  options.policy_average = config.learner.policy_average;
  return options;
}
namespace {

namespace fs = std::filesystem;

Status FsyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return Unavailable("cannot fsync " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

// Writes `archive` to a temp file, fsyncs it, renames it to `path` and fsyncs the directory.
Status SaveAtomically(torch::serialize::OutputArchive& archive, const std::string& path) {
  const std::string tmp = path + ".tmp";
  try {
    archive.save_to(tmp);
  } catch (const c10::Error& e) {
    return Unavailable("cannot write " + tmp + ": " + e.what_without_backtrace());
  }
  FERRY_RETURN_IF_ERROR(FsyncPath(tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Unavailable("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
  return FsyncPath(fs::path(path).parent_path().string());
}

// Module::load, refusing (c10::Error) a file whose parameters have other shapes: load itself
// would adopt them.
void LoadSameShapes(torch::nn::Module& module, torch::serialize::InputArchive& archive) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : module.parameters()) shapes.push_back(p.sizes().vec());
  module.load(archive);
  const auto loaded = module.parameters();
  for (size_t i = 0; i < shapes.size(); ++i) {
    TORCH_CHECK(loaded[i].sizes().vec() == shapes[i], "parameter ", i, " has shape ",
                loaded[i].sizes(), ", this model's is ", c10::IntArrayRef(shapes[i]));
  }
}

// Checkpoint files sorted newest first by their update count.
std::vector<fs::path> CheckpointFiles(const std::string& dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    long long updates = 0;
    char tail[8] = {0};
    if (std::sscanf(name.c_str(), "learner-%lld.%3s", &updates, tail) == 2 &&
        std::string(tail) == "pt" &&
        name.size() == std::string("learner-.pt").size() + std::to_string(updates).size()) {
      found.emplace_back(updates, entry.path());
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> files;
  for (auto& f : found) files.push_back(std::move(f.second));
  return files;
}

}  // namespace

DqnUpdater::DqnUpdater(const UpdaterOptions& options, torch::Device device)
    : options_(options),
      device_(device),
      online_(options.obs_dim, options.num_actions, options.hidden),
      target_(options.obs_dim, options.num_actions, options.hidden),
      optimizer_(online_->parameters(), torch::optim::AdamOptions(options.learning_rate)) {
  models::CopyParameters(*online_, *target_);
  online_->to(device_);
  target_->to(device_);
  if (options.policy_average > 0) {
    average_ = models::QNetwork(options.obs_dim, options.num_actions, options.hidden);
    models::CopyParameters(*online_, *average_);
    average_->to(device_);
  }
  if (device_.is_cpu() && !options.autograd && FastDqnGradients::Available()) fast_.emplace();
}

DqnLoss DqnUpdater::ComputeGradients(const DqnBatch& batch, double normaliser) {
  if (fast_) {
    const float* ahead = nullptr;
    if (batch.target_next_q.defined() && batch.target_version == target_version()) {
      TORCH_CHECK(batch.target_next_q.sizes() ==
                          torch::IntArrayRef({batch.obs.size(0), options_.num_actions}) &&
                      batch.target_next_q.is_contiguous() &&
                      batch.target_next_q.scalar_type() == torch::kFloat32,
                  "target values computed ahead of shape ", batch.target_next_q.sizes(),
                  " for a batch of ", batch.obs.size(0), " rows and ", options_.num_actions,
                  " actions");
      ahead = batch.target_next_q.data_ptr<float>();
    }
    return fast_->Compute(*online_, *target_, batch, options_.double_dqn, options_.huber_delta,
                          normaliser, ahead);
  }
  DqnLoss loss = (options_.double_dqn ? DoubleDqnLoss : DqnMaxLoss)(
      online_, target_, batch, options_.huber_delta, normaliser);
  optimizer_.zero_grad();
  loss.loss.backward();
  return loss;
}

void DqnUpdater::UnpackGradients(GradientReducer& reducer) {
  if (!reducer.sums_gradients()) return;
  const float* in = reducer.gradients();
  for (auto& p : online_->parameters()) {
    torch::Tensor src = torch::from_blob(const_cast<float*>(in), p.sizes(), torch::kFloat32);
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    p.mutable_grad().copy_(src.to(p.device()));
    in += p.numel();
  }
}

void DqnUpdater::ScheduleLearningRate(int64_t env_steps) {
  const double progress = std::clamp(
      static_cast<double>(env_steps) / static_cast<double>(options_.decay_env_steps), 0.0, 1.0);
  const double rate =
      options_.learning_rate * (1.0 - (1.0 - options_.learning_rate_final_fraction) * progress);
  for (auto& group : optimizer_.param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(rate);
  }
}

double DqnUpdater::learning_rate() {
  return static_cast<torch::optim::AdamOptions&>(optimizer_.param_groups().front().options()).lr();
}

void DqnUpdater::ApplyGradients() {
  if (fast_) {
    ClipAndStep(optimizer_, options_.max_grad_norm);
  } else {
    torch::nn::utils::clip_grad_norm_(online_->parameters(), options_.max_grad_norm);
    optimizer_.step();
  }
  ++updates_;
  if (updates_ % options_.target_update_period == 0) models::CopyParameters(*online_, *target_);
  if (average_) {
    torch::NoGradGuard no_grad;
    const auto from = online_->parameters();
    auto to = average_->parameters();
    for (size_t i = 0; i < to.size(); ++i) {
      to[i].lerp_(from[i], 1.0 - options_.policy_average);
    }
  }
}

uint32_t DqnUpdater::ParameterChecksum() {
  uint32_t crc = 0;
  for (const auto& p : online_->parameters()) {
    const torch::Tensor bytes = p.detach().to(torch::kCPU).contiguous();
    crc = core::Crc32c(crc, bytes.data_ptr(), bytes.nbytes());
  }
  return crc;
}

Status DqnUpdater::SaveCheckpoint(const std::string& path, const RunCounters& counters) {
  torch::serialize::OutputArchive archive;
  try {
    torch::serialize::OutputArchive online, target, optimizer;
    online_->save(online);
    target_->save(target);
    optimizer_.save(optimizer);
    archive.write("online", online);
    archive.write("target", target);
    archive.write("optimizer", optimizer);
    if (average_) {
      torch::serialize::OutputArchive average;
      average_->save(average);
      archive.write("average", average);
    }
    archive.write("updates", torch::tensor(updates_, torch::kInt64));
    archive.write("env_steps", torch::tensor(counters.env_steps, torch::kInt64));
    archive.write("elapsed_seconds", torch::tensor(counters.elapsed_seconds, torch::kFloat64));
    archive.write("best_eval", torch::tensor(counters.best_eval, torch::kFloat64));
    archive.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  } catch (const c10::Error& e) {
    return Unavailable("cannot write checkpoint " + path + ": " + e.what_without_backtrace());
  }
  return SaveAtomically(archive, path);
}

Status DqnUpdater::LoadCheckpoint(const std::string& path, RunCounters* counters) {
  try {
    // Onto the CPU whatever device wrote it (the RNG state must be there); Adam's moments
    // follow the parameters below.
    torch::serialize::InputArchive archive;
    archive.load_from(path, torch::Device(torch::kCPU));
    torch::serialize::InputArchive online, target, optimizer;
    archive.read("online", online);
    archive.read("target", target);
    archive.read("optimizer", optimizer);
    LoadSameShapes(*online_, online);
    LoadSameShapes(*target_, target);
    optimizer_.load(optimizer);
    for (auto& entry : optimizer_.state()) {
      auto& state = static_cast<torch::optim::AdamParamState&>(*entry.second);
      state.exp_avg(state.exp_avg().to(device_));
      state.exp_avg_sq(state.exp_avg_sq().to(device_));
    }
    if (average_) {
      // A checkpoint of a run that kept no average starts one from its online network.
      torch::serialize::InputArchive average;
      if (archive.try_read("average", average)) {
        LoadSameShapes(*average_, average);
      } else {
        models::CopyParameters(*online_, *average_);
      }
    }
    // InputArchive::read reuses a defined tensor's storage, so each read gets a fresh one.
    auto read = [&archive](const char* key) {
      torch::Tensor t;
      archive.read(key, t);
      return t;
    };
    updates_ = read("updates").item<int64_t>();
    counters->env_steps = read("env_steps").item<int64_t>();
    counters->elapsed_seconds = read("elapsed_seconds").item<double>();
    counters->best_eval = read("best_eval").item<double>();
    const torch::Tensor rng = read("rng");
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(rng);
  } catch (const c10::Error& e) {
    return DataLoss("checkpoint " + path +
                    " is unreadable or from another model: " + e.what_without_backtrace());
  }
  online_->to(device_);
  target_->to(device_);
  if (average_) average_->to(device_);
  return Status::Ok();
}

std::string CheckpointPath(const std::string& dir, int64_t updates) {
  return (fs::path(dir) / ("learner-" + std::to_string(updates) + ".pt")).string();
}

void PruneCheckpoints(const std::string& dir, int keep) {
  const auto files = CheckpointFiles(dir);
  std::error_code ec;
  for (size_t i = static_cast<size_t>(keep); i < files.size(); ++i) fs::remove(files[i], ec);
}

Result<std::string> LoadNewestCheckpoint(const std::string& dir, DqnUpdater* updater,
                                         RunCounters* counters) {
  for (const auto& file : CheckpointFiles(dir)) {
    const Status loaded = updater->LoadCheckpoint(file.string(), counters);
    if (loaded.ok()) return file.string();
    core::Log("skipping checkpoint: %s", loaded.message().c_str());
  }
  return NotFound("no loadable learner checkpoint in " + dir);
}

std::string BestPolicyPath(const std::string& dir) {
  return (fs::path(dir) / "best-policy.pt").string();
}

Status SavePolicy(models::QNetwork& net, const PolicyInfo& info, const std::string& path) {
  torch::serialize::OutputArchive archive;
  try {
    torch::serialize::OutputArchive online;
    net->save(online);
    archive.write("online", online);
    archive.write("updates", torch::tensor(info.updates, torch::kInt64));
    archive.write("env_steps", torch::tensor(info.env_steps, torch::kInt64));
    archive.write("eval_return", torch::tensor(info.eval_return, torch::kFloat64));
  } catch (const c10::Error& e) {
    return Unavailable("cannot write policy " + path + ": " + e.what_without_backtrace());
  }
  return SaveAtomically(archive, path);
}

Status LoadPolicy(const std::string& path, models::QNetwork& net, PolicyInfo* info) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive online;
    archive.read("online", online);
    LoadSameShapes(*net, online);
    torch::Tensor updates, env_steps, eval_return;
    archive.read("updates", updates);
    archive.read("env_steps", env_steps);
    archive.read("eval_return", eval_return);
    info->updates = updates.item<int64_t>();
    info->env_steps = env_steps.item<int64_t>();
    info->eval_return = eval_return.item<double>();
  } catch (const c10::Error& e) {
    return DataLoss("policy " + path +
                    " is unreadable or from another model: " + e.what_without_backtrace());
  }
  return Status::Ok();
}

}  // namespace ferry::learner
