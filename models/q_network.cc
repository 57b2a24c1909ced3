#include "models/q_network.h"

#include <cstring>
#include <random>

namespace ferry::models {

QNetworkImpl::QNetworkImpl(int obs_dim, int num_actions, const std::vector<int>& hidden)
    : num_actions_(num_actions) {
  int in = obs_dim;
  for (int width : hidden) {
    body_->push_back(torch::nn::Linear(in, width));
    body_->push_back(torch::nn::ReLU());
    in = width;
  }
  register_module("body", body_);
  head_ = register_module("head", torch::nn::Linear(in, num_actions));
}

torch::Tensor QNetworkImpl::Features(const torch::Tensor& obs) { return body_->forward(obs); }

torch::Tensor QNetworkImpl::forward(const torch::Tensor& obs) { return head_(Features(obs)); }

int64_t ParameterCount(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

std::vector<uint8_t> ToBlob(torch::nn::Module& module) {
  std::vector<uint8_t> blob(ParameterCount(module) * sizeof(float));
  uint8_t* out = blob.data();
  for (const auto& p : module.parameters()) {
    const torch::Tensor cpu = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    std::memcpy(out, cpu.data_ptr<float>(), cpu.numel() * sizeof(float));
    out += cpu.numel() * sizeof(float);
  }
  return blob;
}

Status FromBlob(torch::nn::Module& module, const uint8_t* data, size_t bytes) {
  FERRY_RETURN_IF_ERROR(CheckBlobSize(bytes, ParameterCount(module)));
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    const auto n = p.numel();
    torch::Tensor src = torch::from_blob(const_cast<uint8_t*>(data), {n}, torch::kFloat32);
    p.view({n}).copy_(src.to(p.device()));
    data += n * sizeof(float);
  }
  return Status::Ok();
}

void CopyParameters(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto src = from.parameters();
  auto dst = to.parameters();
  FERRY_CHECK(src.size() == dst.size());
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

FastMlp FastMlpOf(QNetworkImpl& net) {
  const std::vector<torch::Tensor> params = net.parameters();
  FERRY_CHECK(!params.empty() && params.size() % 2 == 0);
  std::vector<int> sizes = {static_cast<int>(params[0].size(1))};
  for (size_t i = 0; i < params.size(); i += 2) {
    FERRY_CHECK(params[i].dim() == 2 && params[i + 1].dim() == 1);
    sizes.push_back(static_cast<int>(params[i].size(0)));
  }
  FastMlp fast(sizes);
  CopyWeights(net, fast);
  return fast;
}

void CopyWeights(QNetworkImpl& net, FastMlp& fast) {
  const std::vector<torch::Tensor> params = net.parameters();
  FERRY_CHECK(params.size() == 2 * static_cast<size_t>(fast.num_layers()));
  for (int l = 0; l < fast.num_layers(); ++l) {
    const torch::Tensor weight = params[2 * l].detach().to(torch::kCPU).contiguous();
    const torch::Tensor bias = params[2 * l + 1].detach().to(torch::kCPU).contiguous();
    FERRY_CHECK(weight.size(0) == fast.layer_out(l) && weight.size(1) == fast.layer_in(l) &&
                bias.numel() == fast.layer_out(l));
    std::memcpy(fast.weight(l), weight.data_ptr<float>(), weight.numel() * sizeof(float));
    std::memcpy(fast.bias(l), bias.data_ptr<float>(), bias.numel() * sizeof(float));
  }
}

bool ForwardMatchesLibTorch(QNetworkImpl& net, FastMlp& fast, int batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> obs(static_cast<size_t>(batch) * fast.obs_dim());
  for (float& x : obs) x = normal(rng);
  obs[0] = 0.f;
  obs[obs.size() - 1] = -0.f;
  torch::NoGradGuard no_grad;
  const torch::Tensor q =
      net.forward(torch::from_blob(obs.data(), {batch, fast.obs_dim()})).contiguous();
  const float* mine = fast.Forward(obs.data(), batch);
  return q.numel() == static_cast<int64_t>(batch) * fast.num_actions() &&
         std::memcmp(q.data_ptr<float>(), mine, q.numel() * sizeof(float)) == 0;
}

std::optional<FastMlp> ExactFastMlp(QNetworkImpl& net, std::initializer_list<int> batches) {
  if (!FastMlp::Available()) return std::nullopt;
  FastMlp fast = FastMlpOf(net);
  for (int batch : batches) {
    if (!ForwardMatchesLibTorch(net, fast, batch, /*seed=*/batch)) return std::nullopt;
  }
  return fast;
}

void UseOneInferenceThread() { torch::set_num_threads(1); }

}  // namespace ferry::models
