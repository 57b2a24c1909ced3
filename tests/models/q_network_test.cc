#include "models/q_network.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ferry::models {
namespace {

// obs 4 -> 8 -> 16 -> 2: (4*8 + 8) + (8*16 + 16) + (16*2 + 2) = 40 + 144 + 34.
constexpr int kObsDim = 4;
constexpr int kActions = 2;
const std::vector<int> kHidden = {8, 16};
constexpr int64_t kParameters = 218;

QNetwork MakeNetwork(uint64_t seed) {
  torch::manual_seed(seed);
  return QNetwork(kObsDim, kActions, kHidden);
}

torch::Tensor Observations() {
  torch::manual_seed(99);
  return torch::randn({5, kObsDim});
}

TEST_CASE("QNetwork maps a batch of observations to one Q-value per action") {
  QNetwork net = MakeNetwork(1);
  const torch::Tensor obs = Observations();
  const torch::Tensor q = net->forward(obs);
  CHECK(q.sizes() == torch::IntArrayRef({5, kActions}));
  CHECK(q.dtype() == torch::kFloat32);
  CHECK(net->Features(obs).sizes() == torch::IntArrayRef({5, 16}));
  CHECK(net->num_actions() == kActions);
  CHECK(net->forward(torch::zeros({1, kObsDim})).sizes() == torch::IntArrayRef({1, kActions}));
  // The head reads the features: Q = features W^T + b.
  const torch::Tensor by_hand =
      torch::addmm(net->head()->bias, net->Features(obs), net->head()->weight.t());
  CHECK(torch::allclose(q, by_hand));
}

TEST_CASE("ParameterCount matches the architecture") {
  QNetwork net = MakeNetwork(1);
  CHECK(ParameterCount(*net) == kParameters);
  QNetwork single(3, 5, std::vector<int>{7});
  CHECK(ParameterCount(*single) == (3 * 7 + 7) + (7 * 5 + 5));
}

TEST_CASE("ToBlob lays out every parameter in registration order as float32") {
  QNetwork net = MakeNetwork(1);
  const std::vector<uint8_t> blob = ToBlob(*net);
  REQUIRE(blob.size() == kParameters * sizeof(float));
  std::vector<float> values(kParameters);
  std::memcpy(values.data(), blob.data(), blob.size());
  size_t offset = 0;
  for (const auto& p : net->parameters()) {
    const torch::Tensor flat = p.detach().reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      REQUIRE(values[offset + i] == flat[i].item<float>());
    }
    offset += flat.numel();
  }
  CHECK(offset == static_cast<size_t>(kParameters));
  // The head's bias is registered last.
  CHECK(values[kParameters - 1] == net->head()->bias[kActions - 1].item<float>());
}

TEST_CASE("FromBlob of another network's blob reproduces its outputs exactly") {
  QNetwork source = MakeNetwork(1);
  QNetwork copy = MakeNetwork(2);
  const torch::Tensor obs = Observations();
  REQUIRE_FALSE(torch::equal(source->forward(obs), copy->forward(obs)));

  const std::vector<uint8_t> blob = ToBlob(*source);
  const Status status = FromBlob(*copy, blob.data(), blob.size());
  REQUIRE_MESSAGE(status.ok(), status.ToString());
  CHECK(torch::equal(source->forward(obs), copy->forward(obs)));
  CHECK(ToBlob(*copy) == blob);
}

TEST_CASE("FromBlob refuses a blob of the wrong size and leaves the network alone") {
  QNetwork net = MakeNetwork(1);
  const std::vector<uint8_t> before = ToBlob(*net);
  const std::vector<uint8_t> other = ToBlob(*MakeNetwork(2));

  Status status = FromBlob(*net, other.data(), other.size() - sizeof(float));
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(status.message().find("868 bytes, the model needs 872") != std::string::npos,
                status.message());
  CHECK(status.message().find("architecture") != std::string::npos);

  std::vector<uint8_t> longer = other;
  longer.resize(other.size() + 1);
  CHECK(FromBlob(*net, longer.data(), longer.size()).code() == StatusCode::kInvalidArgument);
  CHECK(FromBlob(*net, nullptr, 0).code() == StatusCode::kInvalidArgument);

  QNetwork wider(kObsDim, kActions, std::vector<int>{16, 8});  // 234 parameters.
  const std::vector<uint8_t> wrong_architecture = ToBlob(*wider);
  CHECK(FromBlob(*net, wrong_architecture.data(), wrong_architecture.size()).code() ==
        StatusCode::kInvalidArgument);
  CHECK(ToBlob(*net) == before);
}

TEST_CASE("CopyParameters makes two networks compute the same function") {
  QNetwork online = MakeNetwork(1);
  QNetwork target = MakeNetwork(2);
  const torch::Tensor obs = Observations();
  REQUIRE_FALSE(torch::equal(online->forward(obs), target->forward(obs)));

  CopyParameters(*online, *target);
  CHECK(torch::equal(online->forward(obs), target->forward(obs)));

  // A copy, not shared storage: changing the source later leaves the target as it was.
  const torch::Tensor frozen = target->forward(obs).detach().clone();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : online->parameters()) p.add_(1.0);
  }
  CHECK_FALSE(torch::equal(online->forward(obs), target->forward(obs)));
  CHECK(torch::equal(target->forward(obs), frozen));
}

}  // namespace
}  // namespace ferry::models
