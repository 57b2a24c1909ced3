#include "learner/fused_adam.h"

#include <xmmintrin.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

namespace ferry::learner {
namespace {

// The state Adam::step keeps for `param`, created as Adam::step creates it on first use.
torch::optim::AdamParamState& StateOf(torch::optim::Adam& optimizer, const torch::Tensor& param) {
  auto& states = optimizer.state();
  const auto key = OptimizerStateKey(optimizer, param);
  auto found = states.find(key);
  if (found == states.end()) {
    auto state = std::make_unique<torch::optim::AdamParamState>();
    state->step(0);
    state->exp_avg(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    found = states.emplace(key, std::move(state)).first;
  }
  return static_cast<torch::optim::AdamParamState&>(*found->second);
}

// Eight float partial sums, so the adds do not wait on each other, added up in double.
double SumOfSquares(const float* x, int64_t n) {
  __m128 a = _mm_setzero_ps(), b = _mm_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
    a = _mm_add_ps(a, _mm_mul_ps(x0, x0));
    b = _mm_add_ps(b, _mm_mul_ps(x1, x1));
  }
  alignas(16) float lanes[8];
  _mm_store_ps(lanes, a);
  _mm_store_ps(lanes + 4, b);
  double sum = 0;
  for (const float lane : lanes) sum += lane;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

// Sets the calling thread's SSE unit to flush subnormal results and inputs to zero for its
// lifetime, then restores the mode that was there. A ReLU unit that stopped firing has zero
// gradients, so its first moments shrink by beta1 every step down through the subnormal range
// (under 1.2e-38), where this machine's multiplies take a slow path: over such moments the step
// takes 2.0-2.4x as long (`learner_bench --only=adam`), and in a CartPole run of the tuned config
// it was 40% of the update thread's perf samples, 6% with the flush.
// Values that small move no parameter by anything a float can hold.
class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
  }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  static constexpr unsigned int kFlushToZero = 0x8000;
  static constexpr unsigned int kDenormalsAreZero = 0x0040;
  const unsigned int saved_;
};

void CheckFloatCpu(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(), what,
              " is not a contiguous float32 CPU tensor");
}

}  // namespace

void ClipAndStep(torch::optim::Adam& optimizer, double max_grad_norm, Subnormals subnormals) {
  std::optional<FlushSubnormals> flush;
  if (subnormals == Subnormals::kFlush) flush.emplace();
  double squares = 0;
  for (auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      CheckFloatCpu(p.grad(), "a gradient");
      squares += SumOfSquares(p.grad().data_ptr<float>(), p.numel());
    }
  }
  const double coef = max_grad_norm / (std::sqrt(squares) + 1e-6);
  const __m128 scale = _mm_set1_ps(coef < 1 ? static_cast<float>(coef) : 1.f);

  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    TORCH_CHECK(options.weight_decay() == 0 && !options.amsgrad(),
                "ClipAndStep: Adam with weight decay or AMSGrad");
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      CheckFloatCpu(p, "a parameter");
      torch::optim::AdamParamState& state = StateOf(optimizer, p);
      state.step(state.step() + 1);
      const double t = static_cast<double>(state.step());
      const __m128 b1 = _mm_set1_ps(static_cast<float>(beta1));
      const __m128 b1c = _mm_set1_ps(static_cast<float>(1 - beta1));
      const __m128 b2 = _mm_set1_ps(static_cast<float>(beta2));
      const __m128 b2c = _mm_set1_ps(static_cast<float>(1 - beta2));
      const __m128 unbias2 = _mm_set1_ps(static_cast<float>(1 / std::sqrt(1 - std::pow(beta2, t))));
      const __m128 eps = _mm_set1_ps(static_cast<float>(options.eps()));
      const __m128 step = _mm_set1_ps(static_cast<float>(options.lr() / (1 - std::pow(beta1, t))));
      float* w = p.data_ptr<float>();
      float* g = p.mutable_grad().data_ptr<float>();
      float* m = state.exp_avg().data_ptr<float>();
      float* v = state.exp_avg_sq().data_ptr<float>();
      const int64_t n = p.numel();
      // Four values a turn, then the rest one at a time through the same instructions.
      const auto update = [&](int64_t i, auto load, auto store) {
        const __m128 gi = _mm_mul_ps(load(g + i), scale);
        const __m128 mi = _mm_add_ps(_mm_mul_ps(load(m + i), b1), _mm_mul_ps(gi, b1c));
        const __m128 vi =
            _mm_add_ps(_mm_mul_ps(load(v + i), b2), _mm_mul_ps(_mm_mul_ps(gi, gi), b2c));
        const __m128 denom = _mm_add_ps(_mm_mul_ps(_mm_sqrt_ps(vi), unbias2), eps);
        store(w + i, _mm_sub_ps(load(w + i), _mm_div_ps(_mm_mul_ps(mi, step), denom)));
        store(g + i, gi);
        store(m + i, mi);
        store(v + i, vi);
      };
      const auto load4 = [](const float* x) { return _mm_loadu_ps(x); };
      const auto store4 = [](float* x, __m128 y) { _mm_storeu_ps(x, y); };
      const auto load1 = [](const float* x) { return _mm_load_ss(x); };
      const auto store1 = [](float* x, __m128 y) { _mm_store_ss(x, y); };
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) update(i, load4, store4);
      for (; i < n; ++i) update(i, load1, store1);
    }
  }
}

}  // namespace ferry::learner
