// QNetwork's forward pass without LibTorch, for actors that run small MLP
// policies at batch sizes of 1 to a few hundred, and for the learner's
// evaluations and target values. This file needs no LibTorch: ferry-actor, which
// links none, acts with it (models/q_network.h makes one of a QNetwork).
//
//   obs [B, in] -> per Linear layer: out = bias broadcast over the B rows,
//                  out += x W^T (one sgemm_, beta = 1), ReLU between layers
//               -> Q [B, num_actions]
//
// These are the calls LibTorch's CPU Linear makes (addmm copies the bias into
// the result, then calls the BLAS sgemm_ with the same transposes, leading
// dimensions and beta), into the very sgemm_ LibTorch calls, found at run time:
// libtorch_cpu links Debian's libblas.so.3, and ferry-actor links that same
// library. So the output is the same bits as QNetwork::forward, not merely
// close; ForwardMatchesLibTorch (models/q_network.h) checks it. When the process
// has no sgemm_ (a LibTorch built on MKL) FastMlp::Available() is false and
// callers keep to LibTorch.
//
// A FastMlp holds its weights (LoadBlob, or CopyWeights of a QNetwork) and
// scratch activations that grow to the largest batch seen, so Forward does not
// allocate once warm. Not thread-safe: one FastMlp per acting thread.
#ifndef FERRY_MODELS_FAST_MLP_H_
#define FERRY_MODELS_FAST_MLP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cache_aligned.h"
#include "core/status.h"

namespace ferry::models {

class FastMlp {
 public:
  // Whether this process can run a FastMlp (it has the BLAS sgemm_).
  static bool Available();

  // An MLP of Linear layers from sizes[0] inputs through sizes[1..] outputs each (obs_dim,
  // hidden widths..., num_actions), every weight 0. Requires Available().
  explicit FastMlp(const std::vector<int>& sizes);
  FastMlp(FastMlp&&) = default;
  FastMlp& operator=(FastMlp&&) = default;
  FastMlp(const FastMlp&) = delete;  // Weights are swapped between sets, never copied by accident.
  FastMlp& operator=(const FastMlp&) = delete;

  // Takes the weights in `data` (models::ToBlob's layout: per layer the weight [out, in]
  // row-major, then the bias [out]); InvalidArgument, weights unchanged, for a blob of another
  // size.
  Status LoadBlob(const uint8_t* data, size_t bytes);
  // Draws every weight and bias from U(-1/sqrt(in), 1/sqrt(in)), the distribution LibTorch's
  // Linear starts from, with the generator seeded by `seed`.
  void InitUniform(uint64_t seed);
  // Exchanges weights, not copies, with `other` (same sizes); keeps the activations.
  void SwapWeights(FastMlp& other);

  // Q-values of `batch` observations (row-major [batch, obs_dim]), row-major
  // [batch, num_actions]; valid until the next Forward.
  const float* Forward(const float* obs, int batch);

  int obs_dim() const { return layers_.front().in; }
  int num_actions() const { return layers_.back().out; }
  // Float32 values in a blob of this network.
  int64_t parameter_count() const;
  int num_layers() const { return static_cast<int>(layers_.size()); }
  int layer_in(int l) const { return layers_[l].in; }
  int layer_out(int l) const { return layers_[l].out; }
  float* weight(int l) { return &weights_[layers_[l].weight]; }  // [out, in], row-major.
  float* bias(int l) { return &weights_[layers_[l].bias]; }      // [out].

 private:
  // A layer's place in weights_, where each tensor starts on a 64-byte boundary.
  struct Layer {
    int in = 0;
    int out = 0;
    size_t weight = 0;
    size_t bias = 0;
  };

  std::vector<Layer> layers_;
  core::CacheAlignedVector<float> weights_;
  // Layer l writes activations_[l % 2]; grown, never shrunk.
  core::CacheAlignedVector<float> activations_[2];
};

// The Fortran BLAS sgemm_ that LibTorch's CPU kernels call, as LibTorch's cpublas declares it,
// found at run time; null when the process has none (a LibTorch built on MKL).
using SgemmFn = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                         const int* k, const float* alpha, const float* a, const int* lda,
                         const float* b, const int* ldb, const float* beta, float* c,
                         const int* ldc);
SgemmFn BlasSgemm();

// One layer of the forward pass as LibTorch's CPU Linear computes it, to the bit: y [batch, out]
// = x [batch, in] W^T + b for a row-major weight [out, in], then, with `relu`, max(0, y) by the
// instruction torch::relu uses. `y` must not overlap `x`.
void LinearForward(const float* weight, const float* bias, int in, int out, const float* x,
                   int batch, bool relu, float* y);

// InvalidArgument naming both sizes unless a weight blob of `bytes` holds `parameters` floats.
Status CheckBlobSize(size_t bytes, int64_t parameters);

// The index of the largest of `n` values as torch::argmax picks it: the first NaN, else the
// first of equal maxima.
int ArgMax(const float* values, int n);

}  // namespace ferry::models

#endif  // FERRY_MODELS_FAST_MLP_H_
