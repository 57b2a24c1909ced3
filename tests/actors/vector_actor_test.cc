#include "actors/vector_actor.h"

#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/experience.h"
#include "models/q_network.h"

// Counts this test binary's heap allocations, to check that acting does not
// allocate per transition.
namespace {
std::atomic<int64_t> g_allocations{0};
// Called through a pointer: GCC would take free() in a replaced operator
// delete for a mismatch with operator new (-Wmismatched-new-delete).
void (*volatile g_free)(void*) = std::free;
}  // namespace

void* operator new(std::size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { g_free(p); }
void operator delete(void* p, std::size_t) noexcept { g_free(p); }
// The actor's network (models::FastMlp) allocates on 64-byte boundaries.
void* operator new(std::size_t bytes, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t alignment = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(alignment, (bytes + alignment) / alignment * alignment)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { g_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { g_free(p); }

namespace ferry::actors {
namespace {

constexpr int kHiddenWidth = 64;

VectorActorOptions CartPoleOptions(int num_envs) {
  VectorActorOptions o;
  o.env_id = "CartPole-v1";
  for (int e = 0; e < num_envs; ++e) {
    o.env_seeds.push_back(100 + e);
    o.epsilon.push_back(e % 2 ? 0.05 : 0.3);
  }
  o.seed = 7;
  o.hidden = {kHiddenWidth, kHiddenWidth};
  o.n_step = 3;
  o.gamma = 0.99;
  o.insert_batch = 32;
  o.priority_epsilon = 1e-3;
  return o;
}

std::unique_ptr<VectorActor> MakeActor(const VectorActorOptions& options) {
  auto made = VectorActor::Create(options);
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  return std::move(made).value();
}

models::QNetwork SeededNetwork(int obs_dim, int num_actions, uint64_t seed) {
  torch::manual_seed(seed);
  models::QNetwork net(obs_dim, num_actions, std::vector<int>{kHiddenWidth, kHiddenWidth});
  net->eval();
  return net;
}

// Weights of a seeded CartPole network, as the paramserver delivers them.
std::vector<uint8_t> CartPoleWeights(uint64_t seed) {
  return models::ToBlob(*SeededNetwork(4, 2, seed));
}

template <typename T>
std::vector<T> Column(const InsertBatch& batch, core::TransitionColumn column) {
  std::vector<T> values(batch.columns[column].size() / sizeof(T));
  std::memcpy(values.data(), batch.columns[column].data(), batch.columns[column].size());
  return values;
}

// Checks that `batch`'s priorities are |r + discount * max_a Q(next obs) -
// Q(obs, a)| + priority_epsilon, recomputed from its columns through LibTorch.
// Close, not equal: a batch size of its own may round differently.
void CheckPriorities(const InsertBatch& batch, models::QNetwork& net, int obs_dim,
                     float priority_epsilon) {
  std::vector<float> obs = Column<float>(batch, core::kObs);
  std::vector<float> next_obs = Column<float>(batch, core::kNextObs);
  const std::vector<int32_t> action = Column<int32_t>(batch, core::kAction);
  const std::vector<float> reward = Column<float>(batch, core::kReward);
  const std::vector<float> discount = Column<float>(batch, core::kDiscount);
  torch::NoGradGuard no_grad;
  const torch::Tensor q = net->forward(torch::from_blob(obs.data(), {batch.count, obs_dim}));
  const torch::Tensor next_q =
      net->forward(torch::from_blob(next_obs.data(), {batch.count, obs_dim}));
  const torch::Tensor taken =
      q.gather(
           1,
           torch::tensor(std::vector<int64_t>(action.begin(), action.end())).view({batch.count, 1}))
          .view({batch.count});
  const torch::Tensor best = std::get<0>(next_q.max(1));
  REQUIRE(batch.priorities.size() == static_cast<size_t>(batch.count));
  for (int i = 0; i < batch.count; ++i) {
    CAPTURE(i);
    const double expected =
        std::abs(reward[i] + discount[i] * best[i].item<float>() - taken[i].item<float>()) +
        priority_epsilon;
    CHECK(batch.priorities[i] == doctest::Approx(expected).epsilon(1e-5));
  }
}

TEST_CASE("Before its first version an actor acts with initial weights drawn from its seed") {
  auto first_batch = [](uint64_t seed) {
    VectorActorOptions options = CartPoleOptions(8);
    options.seed = seed;
    options.epsilon.assign(8, 0.0);  // Greedy: the actions are the network's.
    auto actor = MakeActor(options);
    for (int step = 0; step < 100 && !actor->batch_ready(); ++step) actor->Step();
    REQUIRE(actor->batch_ready());
    CHECK(actor->policy_version() == -1);
    return actor->TakeBatch();
  };
  const InsertBatch a = first_batch(7);
  const InsertBatch b = first_batch(7);
  const InsertBatch other = first_batch(8);
  CHECK(a.columns == b.columns);
  CHECK(a.priorities == b.priorities);
  // The env seeds are the same: only the networks differ.
  CHECK(a.columns[core::kObs] != other.columns[core::kObs]);
  CHECK(a.priorities != other.priorities);
}

TEST_CASE("TakeBatch hands over n-step transitions with the policy version and priorities") {
  auto actor = MakeActor(CartPoleOptions(8));
  const std::vector<uint8_t> blob = CartPoleWeights(1);
  REQUIRE(actor->LoadWeights(42, blob.data(), blob.size()).ok());
  CHECK(actor->policy_version() == 42);
  for (int step = 0; step < 100 && !actor->batch_ready(); ++step) actor->Step();
  REQUIRE(actor->batch_ready());
  CHECK(actor->steps() % 8 == 0);
  const InsertBatch batch = actor->TakeBatch();
  CHECK_FALSE(actor->batch_ready());
  CHECK(actor->TakeBatch().count == 0);
  REQUIRE(batch.count >= 32);
  const core::Schema schema = core::TransitionSchema(4, true, 1);
  REQUIRE(batch.columns.size() == static_cast<size_t>(core::kNumTransitionColumns));
  for (int c = 0; c < core::kNumTransitionColumns; ++c) {
    CAPTURE(c);
    CHECK(batch.columns[c].size() == batch.count * schema.columns[c].row_bytes());
  }
  std::vector<int64_t> versions(batch.count);
  std::memcpy(versions.data(), batch.columns[core::kPolicyVersion].data(),
              versions.size() * sizeof(int64_t));
  for (int64_t v : versions) CHECK(v == 42);
  REQUIRE(batch.priorities.size() == static_cast<size_t>(batch.count));
  for (float p : batch.priorities) CHECK(p >= 1e-3f);
}

TEST_CASE("Priorities are the n-step TD errors under the acting network, at terminations too") {
  VectorActorOptions options = CartPoleOptions(8);
  auto actor = MakeActor(options);
  models::QNetwork net = SeededNetwork(4, 2, /*seed=*/3);
  const std::vector<uint8_t> blob = models::ToBlob(*net);
  REQUIRE(actor->LoadWeights(1, blob.data(), blob.size()).ok());
  int terminal = 0;
  int bootstrapped = 0;
  for (int step = 0; step < 400; ++step) {
    actor->Step();
    if (!actor->batch_ready()) continue;
    const InsertBatch batch = actor->TakeBatch();
    CheckPriorities(batch, net, 4, static_cast<float>(options.priority_epsilon));
    for (float d : Column<float>(batch, core::kDiscount)) (d == 0.f ? terminal : bootstrapped)++;
  }
  CHECK(terminal >= 50);
  CHECK(bootstrapped >= 1000);
}

TEST_CASE("Transitions cut by a time limit bootstrap from the final observation") {
  // MountainCar truncates after 200 steps; a random network rarely reaches the goal first.
  VectorActorOptions options = CartPoleOptions(4);
  options.env_id = "MountainCar-v0";
  auto actor = MakeActor(options);
  models::QNetwork net = SeededNetwork(2, 3, /*seed=*/4);
  const std::vector<uint8_t> blob = models::ToBlob(*net);
  REQUIRE(actor->LoadWeights(1, blob.data(), blob.size()).ok());
  int truncated = 0;
  for (int step = 0; step < 450; ++step) {
    actor->Step();
    if (!actor->batch_ready()) continue;
    const InsertBatch batch = actor->TakeBatch();
    CheckPriorities(batch, net, 2, static_cast<float>(options.priority_epsilon));
    // Discounts gamma and gamma^2 (of 3 steps) come only from truncation flushes.
    for (float d : Column<float>(batch, core::kDiscount)) truncated += d > 0.975f;
  }
  // Every env truncated twice: two flushes of two such rows each.
  CHECK(truncated >= 2 * 2 * static_cast<int>(options.env_seeds.size()) - 4);
}

TEST_CASE("Every env step is handed over once, in order, with its priority") {
  for (int num_envs : {1, 8}) {
    CAPTURE(num_envs);
    VectorActorOptions options = CartPoleOptions(num_envs);
    auto actor = MakeActor(options);
    models::QNetwork net = SeededNetwork(4, 2, /*seed=*/5);
    const std::vector<uint8_t> blob = models::ToBlob(*net);
    REQUIRE(actor->LoadWeights(1, blob.data(), blob.size()).ok());
    std::vector<float> obs, next_obs, discount;
    int64_t handed = 0;
    for (int step = 0; step < 2400 / num_envs; ++step) {
      actor->Step();
      CHECK(handed + actor->transitions_waiting() == actor->steps());
      if (!actor->batch_ready()) continue;
      const InsertBatch batch = actor->TakeBatch();
      CheckPriorities(batch, net, 4, static_cast<float>(options.priority_epsilon));
      handed += batch.count;
      for (float x : Column<float>(batch, core::kObs)) obs.push_back(x);
      for (float x : Column<float>(batch, core::kNextObs)) next_obs.push_back(x);
      for (float x : Column<float>(batch, core::kDiscount)) discount.push_back(x);
    }
    CHECK(handed + actor->transitions_waiting() == actor->steps());
    CHECK(handed >= actor->steps() - num_envs * 2 * options.n_step - options.insert_batch);
    // No observation twice: CartPole's states are continuous, so none repeats.
    std::set<std::string> seen;
    for (int64_t i = 0; i < handed; ++i) {
      seen.emplace(reinterpret_cast<const char*>(&obs[i * 4]), 4 * sizeof(float));
    }
    CHECK(seen.size() == static_cast<size_t>(handed));
    if (num_envs > 1) continue;
    // One env's rows are its steps in order: a mid-episode row's next obs is
    // the obs of the row n_step later.
    int chained = 0;
    for (int64_t i = 0; i + options.n_step < handed; ++i) {
      if (discount[i] == 0.f) continue;
      CAPTURE(i);
      CHECK(std::equal(&next_obs[i * 4], &next_obs[i * 4] + 4, &obs[(i + options.n_step) * 4]));
      ++chained;
    }
    CHECK(chained >= handed / 2);
  }
}

TEST_CASE("Weights of another architecture are refused and the actor keeps its version") {
  auto actor = MakeActor(CartPoleOptions(4));
  const std::vector<uint8_t> blob = CartPoleWeights(1);
  REQUIRE(actor->LoadWeights(5, blob.data(), blob.size()).ok());
  CHECK_FALSE(actor->LoadWeights(6, blob.data(), blob.size() - 4).ok());
  CHECK(actor->policy_version() == 5);
}

TEST_CASE("Weights prepared on another thread and swapped in act as loaded ones do") {
  auto loading = MakeActor(CartPoleOptions(8));
  auto adopting = MakeActor(CartPoleOptions(8));
  const std::vector<uint8_t> initial = CartPoleWeights(100);  // Both start alike.
  REQUIRE(loading->LoadWeights(0, initial.data(), initial.size()).ok());
  REQUIRE(adopting->LoadWeights(0, initial.data(), initial.size()).ok());
  auto step_both = [&] {
    adopting->Step();
    loading->Step();
    REQUIRE(adopting->batch_ready() == loading->batch_ready());
    if (!adopting->batch_ready()) return;
    const InsertBatch a = adopting->TakeBatch();
    const InsertBatch b = loading->TakeBatch();
    REQUIRE(a.columns == b.columns);
    REQUIRE(a.priorities == b.priorities);
  };
  PreparedWeights weights;  // Empty at first, then the weights each adoption replaced.
  for (int version = 1; version <= 3; ++version) {
    const std::vector<uint8_t> blob = CartPoleWeights(version);
    Status prepared;
    std::thread follower([&] {  // While `adopting` steps, as a WeightsFollower runs.
      prepared = adopting->PrepareWeights(version, blob.data(), blob.size(), &weights);
    });
    for (int step = 0; step < 5; ++step) step_both();
    follower.join();
    REQUIRE(prepared.ok());
    REQUIRE(loading->LoadWeights(version, blob.data(), blob.size()).ok());
    adopting->AdoptWeights(weights);
    CHECK(adopting->policy_version() == version);
    CHECK(weights.version == version - 1);
    for (int step = 0; step < 60; ++step) step_both();
  }
  const std::vector<uint8_t> blob = CartPoleWeights(4);
  CHECK_FALSE(adopting->PrepareWeights(4, blob.data(), blob.size() - 4, &weights).ok());
}

TEST_CASE("Swapping prepared weights in allocates nothing on the acting thread") {
  auto actor = MakeActor(CartPoleOptions(32));
  PreparedWeights weights;
  for (int version = 1; version <= 2; ++version) {  // Both sets of storage exist after this.
    const std::vector<uint8_t> blob = CartPoleWeights(version);
    REQUIRE(actor->PrepareWeights(version, blob.data(), blob.size(), &weights).ok());
    actor->AdoptWeights(weights);
    for (int i = 0; i < 20; ++i) {
      actor->Step();
      if (actor->batch_ready()) actor->TakeBatch();
    }
  }
  const std::vector<uint8_t> blob = CartPoleWeights(3);
  REQUIRE(actor->PrepareWeights(3, blob.data(), blob.size(), &weights).ok());
  const int64_t before = g_allocations.load();
  actor->AdoptWeights(weights);
  actor->Step();
  CHECK(g_allocations.load() - before == 0);
  CHECK(actor->policy_version() == 3);
}

TEST_CASE("VectorActor refuses continuous actions and mismatched exploration rates") {
  VectorActorOptions pendulum = CartPoleOptions(2);
  pendulum.env_id = "Pendulum-v1";
  const auto refused = VectorActor::Create(pendulum);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("env.id") != std::string::npos);

  VectorActorOptions short_epsilon = CartPoleOptions(4);
  short_epsilon.epsilon.pop_back();
  CHECK_FALSE(VectorActor::Create(short_epsilon).ok());
}

TEST_CASE("Fast-path acting allocates nothing per step and a fixed count per batch") {
  for (int insert_batch : {16, 256}) {
    CAPTURE(insert_batch);
    VectorActorOptions options = CartPoleOptions(32);
    options.insert_batch = insert_batch;
    auto actor = MakeActor(options);
    for (int i = 0; i < 20; ++i) {  // Warm: every scratch buffer at its size.
      actor->Step();
      if (actor->batch_ready()) actor->TakeBatch();
    }
    int64_t batches = 0;
    int64_t step_allocations = 0;
    int64_t batch_allocations = 0;
    for (int i = 0; i < 400; ++i) {
      const int64_t before = g_allocations.load();
      actor->Step();
      step_allocations += g_allocations.load() - before;
      if (actor->batch_ready()) {
        const int64_t before_batch = g_allocations.load();
        const InsertBatch batch = actor->TakeBatch();
        batch_allocations += g_allocations.load() - before_batch;
        ++batches;
      }
    }
    CHECK(step_allocations == 0);
    REQUIRE(batches > 0);
    // The outer column vector, six columns and the priorities.
    CHECK(batch_allocations == 8 * batches);
  }
}

}  // namespace
}  // namespace ferry::actors
