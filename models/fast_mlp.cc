#include "models/fast_mlp.h"

#include <dlfcn.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/status.h"

namespace ferry::models {
namespace {

// torch::relu is clamp_min(x, 0), whose vector kernel is max_ps(0, x): x when
// 0 > x is false, so -0 and NaN pass unchanged. The same instruction here.
void Relu(float* x, size_t size) {
  const __m128 zero = _mm_setzero_ps();
  size_t i = 0;
  for (; i + 4 <= size; i += 4) _mm_storeu_ps(x + i, _mm_max_ps(zero, _mm_loadu_ps(x + i)));
  for (; i < size; ++i) _mm_store_ss(x + i, _mm_max_ss(zero, _mm_load_ss(x + i)));
}

}  // namespace

// Looked up in the global scope, where libtorch_cpu's own reference to sgemm_
// was bound, rather than linked: the build links LibTorch, not a BLAS.
SgemmFn BlasSgemm() {
  static const SgemmFn sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return sgemm;
}

void LinearForward(const float* weight, const float* bias, int in, int out, const float* x,
                   int batch, bool relu, float* y) {
  for (int row = 0; row < batch; ++row) {
    std::memcpy(y + static_cast<size_t>(row) * out, bias, out * sizeof(float));
  }
  // In BLAS's column-major terms y^T [out, B] += W [out, in] x^T [in, B]: the
  // row-major weight reads as [in, out], hence 'T'; the row-major input as
  // [in, B]. LibTorch's addmm reaches this call by swapping its operands to
  // write a row-major result.
  const char transpose = 'T', no_transpose = 'N';
  const float one = 1.f;
  BlasSgemm()(&transpose, &no_transpose, &out, &batch, &in, &one, weight, &in, x, &in, &one, y,
              &out);
  if (relu) Relu(y, static_cast<size_t>(batch) * out);
}

bool FastMlp::Available() { return BlasSgemm() != nullptr; }

FastMlp::FastMlp(QNetworkImpl& net) {
  FERRY_CHECK(Available());
  const std::vector<torch::Tensor> params = net.parameters();
  FERRY_CHECK(!params.empty() && params.size() % 2 == 0);
  for (size_t i = 0; i < params.size(); i += 2) {
    FERRY_CHECK(params[i].dim() == 2 && params[i + 1].dim() == 1);
    Layer layer;
    layer.out = static_cast<int>(params[i].size(0));
    layer.in = static_cast<int>(params[i].size(1));
    FERRY_CHECK(params[i + 1].size(0) == layer.out);
    FERRY_CHECK(layers_.empty() || layers_.back().out == layer.in);
    layer.weight = torch::empty({layer.out, layer.in}, torch::kFloat32);
    layer.bias = torch::empty({layer.out}, torch::kFloat32);
    layers_.push_back(std::move(layer));
  }
  CopyWeights(net);
}

void FastMlp::CopyWeights(QNetworkImpl& net) {
  const std::vector<torch::Tensor> params = net.parameters();
  FERRY_CHECK(params.size() == 2 * layers_.size());
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].weight.copy_(params[2 * l].detach());
    layers_[l].bias.copy_(params[2 * l + 1].detach());
  }
}

void FastMlp::SwapWeights(FastMlp& other) {
  FERRY_CHECK(other.layers_.size() == layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    FERRY_CHECK(other.layers_[l].in == layers_[l].in && other.layers_[l].out == layers_[l].out);
    std::swap(layers_[l].weight, other.layers_[l].weight);
    std::swap(layers_[l].bias, other.layers_[l].bias);
  }
}

const float* FastMlp::Forward(const float* obs, int batch) {
  FERRY_CHECK(batch >= 1);
  const float* x = obs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    torch::Tensor& activations = activations_[l % 2];
    const int64_t size = static_cast<int64_t>(batch) * layer.out;
    if (!activations.defined() || activations.numel() < size) {
      activations = torch::empty({size}, torch::kFloat32);
    }
    float* y = activations.data_ptr<float>();
    LinearForward(layer.weight.data_ptr<float>(), layer.bias.data_ptr<float>(), layer.in, layer.out,
                  x, batch, /*relu=*/l + 1 < layers_.size(), y);
    x = y;
  }
  return x;
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
  FastMlp fast(net);
  for (int batch : batches) {
    if (!ForwardMatchesLibTorch(net, fast, batch, /*seed=*/batch)) return std::nullopt;
  }
  return fast;
}

int ArgMax(const float* values, int n) {
  int best = 0;
  for (int a = 0; a < n; ++a) {
    if (std::isnan(values[a])) return a;
    if (values[a] > values[best]) best = a;
  }
  return best;
}

void UseOneInferenceThread() { torch::set_num_threads(1); }

}  // namespace ferry::models
