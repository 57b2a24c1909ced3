#include "learner/fast_dqn_gradients.h"

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/fast_mlp.h"

namespace ferry::learner {
namespace {

struct Layer {
  const float* weight;  // Row-major [out, in], as torch::nn::Linear stores it.
  const float* bias;
  int in;
  int out;
};

std::vector<Layer> Layers(const std::vector<torch::Tensor>& params) {
  TORCH_CHECK(!params.empty() && params.size() % 2 == 0, "not an MLP: ", params.size(),
              " parameter tensors");
  std::vector<Layer> layers;
  for (size_t i = 0; i < params.size(); i += 2) {
    const torch::Tensor& w = params[i];
    const torch::Tensor& b = params[i + 1];
    TORCH_CHECK(w.dim() == 2 && b.dim() == 1 && b.size(0) == w.size(0) && w.is_contiguous() &&
                    w.is_cpu() && b.is_cpu() && w.scalar_type() == torch::kFloat32 &&
                    b.scalar_type() == torch::kFloat32,
                "layer ", i / 2, " is not a float32 CPU Linear layer");
    layers.push_back({w.data_ptr<float>(), b.data_ptr<float>(), static_cast<int>(w.size(1)),
                      static_cast<int>(w.size(0))});
  }
  return layers;
}

float* Grow(torch::Tensor& scratch, int64_t size) {
  if (!scratch.defined() || scratch.numel() < size) {
    scratch = torch::empty({size}, torch::kFloat32);
  }
  return scratch.data_ptr<float>();
}

// The network's output [batch, out of the last layer] on x; layer l writes its output into
// buffer(l).
template <typename Buffer>
const float* Forward(const std::vector<Layer>& layers, const float* x, int batch, Buffer buffer) {
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    float* y = Grow(buffer(l), static_cast<int64_t>(batch) * layer.out);
    models::LinearForward(layer.weight, layer.bias, layer.in, layer.out, x, batch,
                          /*relu=*/l + 1 < layers.size(), y);
    x = y;
  }
  return x;
}

// The parameter's gradient tensor, zeros if it had none.
float* GradientOf(torch::Tensor param) {
  torch::Tensor& grad = param.mutable_grad();
  if (!grad.defined()) grad = torch::zeros_like(param);
  TORCH_CHECK(grad.is_contiguous(), "a parameter's gradient is not contiguous");
  return grad.data_ptr<float>();
}

// sums[j] = sum over the rows of x[i, j], for a row-major [rows, cols] x.
void SumRows(const float* x, int rows, int cols, float* sums) {
  std::memset(sums, 0, sizeof(float) * cols);
  for (int i = 0; i < rows; ++i) {
    const float* row = x + static_cast<size_t>(i) * cols;
    int j = 0;
    for (; j + 4 <= cols; j += 4) {
      _mm_storeu_ps(sums + j, _mm_add_ps(_mm_loadu_ps(sums + j), _mm_loadu_ps(row + j)));
    }
    for (; j < cols; ++j) sums[j] += row[j];
  }
}

// grad = 0 where the ReLU's output is <= 0, as LibTorch's threshold_backward; branch-free,
// since about half the outputs of a layer are 0 in no pattern a branch predictor learns.
void ReluMask(const float* output, size_t size, float* grad) {
  const __m128 zero = _mm_setzero_ps();
  size_t k = 0;
  for (; k + 4 <= size; k += 4) {
    const __m128 off = _mm_cmple_ps(_mm_loadu_ps(output + k), zero);
    _mm_storeu_ps(grad + k, _mm_andnot_ps(off, _mm_loadu_ps(grad + k)));
  }
  for (; k < size; ++k) grad[k] = output[k] <= 0.f ? 0.f : grad[k];
}

}  // namespace

bool FastDqnGradients::Available() { return models::FastMlp::Available(); }

DqnLoss FastDqnGradients::Compute(models::QNetworkImpl& online, models::QNetworkImpl& target,
                                  const DqnBatch& batch, bool double_dqn, double huber_delta,
                                  double normaliser, const float* target_next_q) {
  const std::vector<torch::Tensor> params = online.parameters();
  const std::vector<Layer> layers = Layers(params);
  const std::vector<Layer> target_layers = Layers(target.parameters());
  const size_t depth = layers.size();
  const int actions = layers.back().out;
  const torch::Tensor obs = batch.obs.contiguous();
  const torch::Tensor next_obs = batch.next_obs.contiguous();
  TORCH_CHECK(obs.dim() == 2 && obs.size(1) == layers.front().in && next_obs.sizes() == obs.sizes(),
              "observations of shape ", obs.sizes(), " for a network with ", layers.front().in,
              " inputs");
  const int rows = static_cast<int>(obs.size(0));
  const torch::Tensor action = batch.action.to(torch::kInt64).contiguous();
  const torch::Tensor reward = batch.reward.contiguous();
  const torch::Tensor discount = batch.discount.contiguous();
  const torch::Tensor weights = batch.weights.contiguous();
  for (const torch::Tensor* t : {&action, &reward, &discount, &weights}) {
    TORCH_CHECK(t->numel() == rows, "a batch column of ", t->numel(), " values for ", rows,
                " observations");
  }

  // Forward: the online network on obs keeping every layer's output, then next_obs.
  outputs_.resize(depth);
  const float* q_all = Forward(layers, obs.data_ptr<float>(), rows,
                               [this](size_t l) -> torch::Tensor& { return outputs_[l]; });
  const float* q_target =
      target_next_q != nullptr
          ? target_next_q
          : Forward(target_layers, next_obs.data_ptr<float>(), rows,
                    [this](size_t l) -> torch::Tensor& { return target_next_[l % 2]; });
  const float* q_online_next =
      double_dqn ? Forward(layers, next_obs.data_ptr<float>(), rows,
                           [this](size_t l) -> torch::Tensor& { return online_next_[l % 2]; })
                 : nullptr;

  // Loss, TD errors and d loss / d Q, which is nonzero only at each row's action.
  torch::Tensor td = torch::empty({rows}, torch::kFloat32);
  float* td_out = td.data_ptr<float>();
  float* grad = Grow(grad_[(depth - 1) % 2], static_cast<int64_t>(rows) * actions);
  std::memset(grad, 0, sizeof(float) * rows * actions);
  const int64_t* a = action.data_ptr<int64_t>();
  const float* r = reward.data_ptr<float>();
  const float* d = discount.data_ptr<float>();
  const float* w = weights.data_ptr<float>();
  const float delta = static_cast<float>(huber_delta);
  const float per_row = static_cast<float>(1.0 / normaliser);
  double loss = 0;
  for (int i = 0; i < rows; ++i) {
    TORCH_CHECK(a[i] >= 0 && a[i] < actions, "action ", a[i], " of transition ", i,
                " is outside [0, ", actions, ")");
    const float* next_row = q_target + static_cast<size_t>(i) * actions;
    const float q_next =
        double_dqn
            ? next_row[models::ArgMax(q_online_next + static_cast<size_t>(i) * actions, actions)]
            : next_row[models::ArgMax(next_row, actions)];
    const float y = r[i] + d[i] * q_next;
    const float q = q_all[static_cast<size_t>(i) * actions + a[i]];
    td_out[i] = y - q;
    const float z = q - y;
    const float huber = std::abs(z) < delta ? 0.5f * z * z : delta * (std::abs(z) - 0.5f * delta);
    loss += static_cast<double>(w[i]) * huber;
    grad[static_cast<size_t>(i) * actions + a[i]] = w[i] * per_row * std::clamp(z, -delta, delta);
  }

  // Backward, last layer first. In BLAS's column-major terms a row-major [rows, n] matrix is
  // [n, rows] with leading dimension n.
  const char transpose = 'T', no_transpose = 'N';
  const float one = 1.f, zero = 0.f;
  for (size_t l = depth; l-- > 0;) {
    const Layer& layer = layers[l];
    const float* input = l == 0 ? obs.data_ptr<float>() : outputs_[l - 1].data_ptr<float>();
    // dW^T [in, out] = input^T [in, rows] grad [rows, out].
    models::BlasSgemm()(&no_transpose, &transpose, &layer.in, &layer.out, &rows, &one, input,
                        &layer.in, grad, &layer.out, &zero, GradientOf(params[2 * l]), &layer.in);
    SumRows(grad, rows, layer.out, GradientOf(params[2 * l + 1]));
    if (l == 0) break;
    // d input^T [in, rows] = W^T [in, out] grad^T [out, rows], then ReLU's mask: LibTorch's
    // threshold_backward zeroes where the ReLU's output is <= 0.
    float* input_grad = Grow(grad_[(l - 1) % 2], static_cast<int64_t>(rows) * layer.in);
    models::BlasSgemm()(&no_transpose, &no_transpose, &layer.in, &rows, &layer.out, &one,
                        layer.weight, &layer.in, grad, &layer.out, &zero, input_grad, &layer.in);
    ReluMask(input, static_cast<size_t>(rows) * layer.in, input_grad);
    grad = input_grad;
  }
  return {torch::tensor(static_cast<float>(loss / normaliser)), td};
}

}  // namespace ferry::learner
