#include "models/fast_mlp.h"

#include <dlfcn.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

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

// `floats` rounded up to a whole number of cache lines.
size_t Padded(size_t floats) {
  constexpr size_t kLine = core::kCacheLine / sizeof(float);
  return (floats + kLine - 1) / kLine * kLine;
}

}  // namespace

// Looked up in the global scope rather than called by name: in a process with LibTorch that
// is where libtorch_cpu's own reference to sgemm_ was bound; ferry-actor links the BLAS itself.
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

FastMlp::FastMlp(const std::vector<int>& sizes) {
  FERRY_CHECK(Available());
  FERRY_CHECK(sizes.size() >= 2);
  size_t end = 0;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    FERRY_CHECK(sizes[l] > 0 && sizes[l + 1] > 0);
    Layer layer;
    layer.in = sizes[l];
    layer.out = sizes[l + 1];
    layer.weight = end;
    layer.bias = end + Padded(static_cast<size_t>(layer.out) * layer.in);
    end = layer.bias + Padded(layer.out);
    layers_.push_back(layer);
  }
  weights_.assign(end, 0.f);
}

int64_t FastMlp::parameter_count() const {
  int64_t n = 0;
  for (const Layer& layer : layers_) n += static_cast<int64_t>(layer.out) * (layer.in + 1);
  return n;
}

Status CheckBlobSize(size_t bytes, int64_t parameters) {
  const size_t expected = static_cast<size_t>(parameters) * sizeof(float);
  if (bytes == expected) return Status::Ok();
  return InvalidArgument("weight blob has " + std::to_string(bytes) + " bytes, the model needs " +
                         std::to_string(expected) + " (different architecture?)");
}

Status FastMlp::LoadBlob(const uint8_t* data, size_t bytes) {
  FERRY_RETURN_IF_ERROR(CheckBlobSize(bytes, parameter_count()));
  for (const Layer& layer : layers_) {
    const size_t weight_bytes = static_cast<size_t>(layer.out) * layer.in * sizeof(float);
    std::memcpy(&weights_[layer.weight], data, weight_bytes);
    data += weight_bytes;
    std::memcpy(&weights_[layer.bias], data, layer.out * sizeof(float));
    data += layer.out * sizeof(float);
  }
  return Status::Ok();
}

void FastMlp::InitUniform(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const Layer& layer : layers_) {
    const float bound = 1.f / std::sqrt(static_cast<float>(layer.in));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    float* w = &weights_[layer.weight];
    for (size_t i = 0; i < static_cast<size_t>(layer.out) * layer.in; ++i) w[i] = uniform(rng);
    float* b = &weights_[layer.bias];
    for (int i = 0; i < layer.out; ++i) b[i] = uniform(rng);
  }
}

void FastMlp::SwapWeights(FastMlp& other) {
  FERRY_CHECK(other.layers_.size() == layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    FERRY_CHECK(other.layers_[l].in == layers_[l].in && other.layers_[l].out == layers_[l].out);
  }
  std::swap(weights_, other.weights_);
}

const float* FastMlp::Forward(const float* obs, int batch) {
  FERRY_CHECK(batch >= 1);
  const float* x = obs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    core::CacheAlignedVector<float>& activations = activations_[l % 2];
    const size_t size = static_cast<size_t>(batch) * layer.out;
    if (activations.size() < size) activations.resize(size);
    float* y = activations.data();
    LinearForward(&weights_[layer.weight], &weights_[layer.bias], layer.in, layer.out, x, batch,
                  /*relu=*/l + 1 < layers_.size(), y);
    x = y;
  }
  return x;
}

int ArgMax(const float* values, int n) {
  int best = 0;
  for (int a = 0; a < n; ++a) {
    if (std::isnan(values[a])) return a;
    if (values[a] > values[best]) best = a;
  }
  return best;
}

}  // namespace ferry::models
