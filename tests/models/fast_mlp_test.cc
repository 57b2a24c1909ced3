#include "models/fast_mlp.h"

#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "models/q_network.h"

namespace ferry::models {
namespace {

struct Shape {
  const char* name;
  int obs_dim;
  int num_actions;
  std::vector<int> hidden;
};

// CartPole's policy, a bsuite Catch (10x5 pixels) policy, one hidden layer,
// and a wide, deep one whose layers need several of the BLAS's blocks.
const std::vector<Shape> kShapes = {
    {"cartpole 4-64-64-2", 4, 2, {64, 64}},
    {"catch 50-64-64-3", 50, 3, {64, 64}},
    {"one layer 8-32-4", 8, 4, {32}},
    {"wide 128-512-512-256-18", 128, 18, {512, 512, 256}},
};
const std::vector<int> kBatches = {1, 8, 32, 128, 3, 61};

QNetwork MakeNetwork(const Shape& shape, uint64_t seed) {
  torch::manual_seed(seed);
  QNetwork net(shape.obs_dim, shape.num_actions, shape.hidden);
  net->eval();
  return net;
}

TEST_CASE("FastMlp is available where LibTorch runs on a BLAS") {
  // Debian's LibTorch calls OpenBLAS; every test below needs it.
  REQUIRE(FastMlp::Available());
}

TEST_CASE("FastMlp reproduces QNetwork::forward bit for bit") {
  for (const Shape& shape : kShapes) {
    QNetwork net = MakeNetwork(shape, 1);
    FastMlp fast = FastMlpOf(*net);
    CHECK(fast.obs_dim() == shape.obs_dim);
    CHECK(fast.num_actions() == shape.num_actions);
    for (int batch : kBatches) {
      CAPTURE(shape.name);
      CAPTURE(batch);
      CHECK(ForwardMatchesLibTorch(*net, fast, batch, /*seed=*/batch));
    }
  }
}

TEST_CASE("FastMlp stays exact from a large batch to a small one and back") {
  QNetwork net = MakeNetwork(kShapes[0], 2);
  FastMlp fast = FastMlpOf(*net);
  for (int batch : {128, 1, 32, 256, 8}) {
    CAPTURE(batch);
    CHECK(ForwardMatchesLibTorch(*net, fast, batch, /*seed=*/7 + batch));
  }
}

TEST_CASE("FastMlp computes Q-values, not just LibTorch's bits: the head reads the features") {
  const Shape& shape = kShapes[0];
  QNetwork net = MakeNetwork(shape, 3);
  FastMlp fast = FastMlpOf(*net);
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const torch::Tensor obs = torch::randn({5, shape.obs_dim});
  const float* q = fast.Forward(obs.data_ptr<float>(), 5);
  const torch::Tensor expected =
      torch::addmm(net->head()->bias, net->Features(obs), net->head()->weight.t());
  const torch::Tensor got = torch::from_blob(const_cast<float*>(q), {5, shape.num_actions});
  CHECK(torch::allclose(got, expected));
}

TEST_CASE("FastMlp follows new weights only once CopyWeights is called") {
  const Shape& shape = kShapes[0];
  QNetwork net = MakeNetwork(shape, 5);
  QNetwork newer = MakeNetwork(shape, 6);
  FastMlp fast = FastMlpOf(*net);
  std::vector<float> obs(32 * shape.obs_dim, 0.5f);
  const float* q = fast.Forward(obs.data(), 32);
  const std::vector<float> before(q, q + 32 * shape.num_actions);

  const std::vector<uint8_t> blob = ToBlob(*newer);
  REQUIRE(FromBlob(*net, blob.data(), blob.size()).ok());
  q = fast.Forward(obs.data(), 32);
  CHECK(std::memcmp(q, before.data(), before.size() * sizeof(float)) == 0);
  CHECK_FALSE(ForwardMatchesLibTorch(*net, fast, 32, /*seed=*/8));

  CopyWeights(*net, fast);
  q = fast.Forward(obs.data(), 32);
  CHECK(std::memcmp(q, before.data(), before.size() * sizeof(float)) != 0);
  for (int batch : kBatches) {
    CAPTURE(batch);
    CHECK(ForwardMatchesLibTorch(*net, fast, batch, /*seed=*/9));
  }
}

TEST_CASE("FastMlp takes a QNetwork's weights from its blob, as an actor without LibTorch does") {
  for (const Shape& shape : kShapes) {
    CAPTURE(shape.name);
    QNetwork net = MakeNetwork(shape, 12);
    std::vector<int> sizes = {shape.obs_dim};
    sizes.insert(sizes.end(), shape.hidden.begin(), shape.hidden.end());
    sizes.push_back(shape.num_actions);
    FastMlp fast(sizes);
    CHECK(fast.parameter_count() == ParameterCount(*net));
    CHECK_FALSE(ForwardMatchesLibTorch(*net, fast, 8, /*seed=*/13));  // Still all zeros.
    const std::vector<uint8_t> blob = ToBlob(*net);
    const Status short_blob = fast.LoadBlob(blob.data(), blob.size() - sizeof(float));
    CHECK(short_blob.message().find("weight blob has") != std::string::npos);
    REQUIRE(fast.LoadBlob(blob.data(), blob.size()).ok());
    for (int batch : kBatches) {
      CAPTURE(batch);
      CHECK(ForwardMatchesLibTorch(*net, fast, batch, /*seed=*/14));
    }
  }
}

TEST_CASE("FastMlp's initial weights are LibTorch's distribution, drawn from the seed") {
  FastMlp a({4, 64, 2}), b({4, 64, 2}), c({4, 64, 2});
  a.InitUniform(1);
  b.InitUniform(1);
  c.InitUniform(2);
  const std::vector<float> obs(4 * 3, 0.25f);
  const float* qa = a.Forward(obs.data(), 3);
  const std::vector<float> first(qa, qa + 6);
  CHECK(std::memcmp(b.Forward(obs.data(), 3), first.data(), sizeof(float) * 6) == 0);
  CHECK(std::memcmp(c.Forward(obs.data(), 3), first.data(), sizeof(float) * 6) != 0);
  // U(-1/sqrt(in), 1/sqrt(in)): bounds 0.5 (4 inputs) and 0.125 (64), spread over them.
  for (int l = 0; l < 2; ++l) {
    CAPTURE(l);
    const float bound = l == 0 ? 0.5f : 0.125f;
    const int n = a.layer_in(l) * a.layer_out(l);
    const auto [low, high] = std::minmax_element(a.weight(l), a.weight(l) + n);
    CHECK(*low >= -bound);
    CHECK(*high <= bound);
    CHECK(*high - *low > bound);
    for (int i = 0; i < a.layer_out(l); ++i) CHECK(std::abs(a.bias(l)[i]) <= bound);
  }
}

TEST_CASE("FastMlp stays exact with LibTorch held to one thread, as actors run it") {
  UseOneInferenceThread();
  for (const Shape& shape : kShapes) {
    QNetwork net = MakeNetwork(shape, 10);
    FastMlp fast = FastMlpOf(*net);
    for (int batch : kBatches) {
      CAPTURE(shape.name);
      CAPTURE(batch);
      CHECK(ForwardMatchesLibTorch(*net, fast, batch, /*seed=*/11));
    }
  }
}

}  // namespace
}  // namespace ferry::models
