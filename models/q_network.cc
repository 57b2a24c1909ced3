#include "models/q_network.h"

#include <cstring>

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
  const size_t expected = ParameterCount(module) * sizeof(float);
  if (bytes != expected) {
    return InvalidArgument("weight blob has " + std::to_string(bytes) + " bytes, the model needs " +
                           std::to_string(expected) + " (different architecture?)");
  }
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

}  // namespace ferry::models
