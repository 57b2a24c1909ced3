// QNetwork's forward pass without LibTorch's per-call dispatch, for actors
// that run small MLP policies at batch sizes of 1 to a few hundred.
//
//   obs [B, in] -> per Linear layer: out = bias broadcast over the B rows,
//                  out += x W^T (one sgemm_, beta = 1), ReLU between layers
//               -> Q [B, num_actions]
//
// These are the calls LibTorch's CPU Linear makes (addmm copies the bias into
// the result, then calls the BLAS sgemm_ with the same transposes, leading
// dimensions and beta), into the very sgemm_ LibTorch calls: the one the
// dynamic linker resolved for libtorch_cpu, found at run time. So the output is
// the same bits as QNetwork::forward, not merely close; ForwardMatchesLibTorch
// checks it. When the process has no sgemm_ (a LibTorch built on MKL)
// FastMlp::Available() is false and callers keep to LibTorch.
//
// A FastMlp holds a copy of the weights (CopyWeights after every FromBlob) and
// scratch activations that grow to the largest batch seen, so Forward does not
// allocate once warm. Not thread-safe: one FastMlp per acting thread.
#ifndef FERRY_MODELS_FAST_MLP_H_
#define FERRY_MODELS_FAST_MLP_H_

#include <torch/torch.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "models/q_network.h"

namespace ferry::models {

// Which forward pass a caller runs its policy with.
enum class Inference {
  kAuto,  // FastMlp where it is bit-exact with LibTorch, LibTorch otherwise.
  kLibTorch,
  kFastMlp,  // Refused (InvalidArgument) where it is not bit-exact.
};

class FastMlp {
 public:
  // Whether this process can run a FastMlp (it has the BLAS sgemm_).
  static bool Available();

  // The shapes and current weights of `net`. Requires Available().
  explicit FastMlp(QNetworkImpl& net);
  FastMlp(FastMlp&&) = default;
  FastMlp& operator=(FastMlp&&) = default;
  FastMlp(const FastMlp&) = delete;  // Its tensors would be shared, not copied.
  FastMlp& operator=(const FastMlp&) = delete;

  // Takes `net`'s current weights; `net` has the architecture this was built from.
  void CopyWeights(QNetworkImpl& net);
  // Exchanges weights, not copies, with `other` (same architecture); keeps the activations.
  void SwapWeights(FastMlp& other);

  // Q-values of `batch` observations (row-major [batch, obs_dim]), row-major
  // [batch, num_actions]; valid until the next Forward.
  const float* Forward(const float* obs, int batch);

  int obs_dim() const { return layers_.front().in; }
  int num_actions() const { return layers_.back().out; }

 private:
  // Storage is LibTorch's, for its 64-byte alignment, which the BLAS kernels
  // run measurably faster on than on malloc's 16 bytes.
  struct Layer {
    int in = 0;
    int out = 0;
    torch::Tensor weight;  // [out, in] float32, as torch::nn::Linear stores it.
    torch::Tensor bias;    // [out].
  };

  std::vector<Layer> layers_;
  torch::Tensor activations_[2];  // Layer l writes activations_[l % 2]; grown, never shrunk.
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

// Whether fast.Forward gives exactly the bits of net->forward on `batch`
// observations drawn from N(0, 1) with `seed` (and a few set to 0 and -0).
bool ForwardMatchesLibTorch(QNetworkImpl& net, FastMlp& fast, int batch, uint64_t seed);

// A FastMlp of `net` (on the CPU) where its forward gives net->forward's bits at every batch
// size in `batches` (ForwardMatchesLibTorch, seeded with the size); nothing without the BLAS
// sgemm_ or where the bits differ.
std::optional<FastMlp> ExactFastMlp(QNetworkImpl& net, std::initializer_list<int> batches);

// The index of the largest of `n` values as torch::argmax picks it: the first NaN, else the
// first of equal maxima.
int ArgMax(const float* values, int n);

// Keeps LibTorch's intra-op pool at one thread: an actor is one process per
// core. The BLAS's own threads cannot be set from here: Debian's libblas.so.3
// (the OpenBLAS that LibTorch and FastMlp call) reads OPENBLAS_NUM_THREADS when
// it loads and exports no call to change it, so a process that must stay on
// one core is started with OPENBLAS_NUM_THREADS=1. Without it OpenBLAS splits
// a layer with batch x in x out above 2^18 (batch 128 of a 64-wide MLP) over
// every core; that changes no bits.
void UseOneInferenceThread();

}  // namespace ferry::models

#endif  // FERRY_MODELS_FAST_MLP_H_
