// Every Allreducer algorithm gives the serial sum, the same bits on every rank, for any count.
#include "learner/linalg/allreducer.h"

#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/mpi/world.h"

namespace ferry::learner::linalg {
namespace {

using Algorithm = Allreducer::Algorithm;

constexpr Algorithm kAlgorithms[] = {Algorithm::kMpi, Algorithm::kSharedMemory, Algorithm::kAuto};

using testing::Rank;
using testing::Ranks;

// Rank r's element i: reproducible on every rank, of both signs and magnitudes from 2^-8 to 2^8,
// so that the order of summation changes the rounded sum.
float Value(int rank, size_t i) {
  uint64_t h =
      (i + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(rank) + 1) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  const uint32_t sign = static_cast<uint32_t>(h >> 63) << 31;
  const uint32_t exponent = static_cast<uint32_t>(127 - 8 + (h >> 32) % 17) << 23;
  const uint32_t bits = sign | exponent | static_cast<uint32_t>(h & 0x7fffff);
  float value = 0;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Elements farther from the float64 sum of the ranks' values than three roundings of the sum of
// their magnitudes.
size_t Mismatches(const float* reduced, size_t count) {
  size_t mismatches = 0;
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    double magnitude = 0;
    for (int r = 0; r < Ranks(); ++r) {
      const float value = Value(r, i);
      sum += value;
      magnitude += std::abs(value);
    }
    mismatches += !(std::abs(reduced[i] - sum) <= 3 * FLT_EPSILON * magnitude);
  }
  return mismatches;
}

// True when every rank holds the same bits.
bool SameOnEveryRank(const float* reduced, size_t count) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &reduced[i], sizeof(bits));
    hash = (hash ^ bits) * 0x100000001b3ull;
  }
  uint64_t low = hash;
  uint64_t high = hash;
  MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return low == high;
}

// Runs every allreducer of `allreducers`, in turn, on this rank's values for each count. One
// buffer serves every count: first touches of fresh memory are slow on some machines.
void CheckSums(const std::vector<Allreducer*>& allreducers, const std::vector<size_t>& counts) {
  std::vector<float> data(*std::max_element(counts.begin(), counts.end()));
  for (size_t count : counts) {
    CAPTURE(count);
    for (Allreducer* allreducer : allreducers) {
      CAPTURE(AlgorithmName(allreducer->algorithm()));
      for (size_t i = 0; i < count; ++i) data[i] = Value(Rank(), i);
      allreducer->Sum(data.data(), count);
      CHECK(Mismatches(data.data(), count) == 0);
      CHECK(SameOnEveryRank(data.data(), count));
    }
  }
}

TEST_CASE("every algorithm equals the serial sum on every rank, bit for bit, for 1 to 10M") {
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory);
  CheckSums({&mpi, &shared_memory}, {1, 7, 1000, 65537, size_t{1} << 20, 10'000'000});
}

TEST_CASE("small chunks: many pipeline steps, chunks that split unevenly, short last chunks") {
  // 1000 bytes: 250 floats, which the shared-memory slots round up to 256.
  Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory, /*chunk_bytes=*/1000);
  CheckSums({&shared_memory}, {1, 7, 250, 256, 257, 1000, 65537, 300'001});
}

TEST_CASE("repeated calls with changing counts, on allreducers used in turn") {
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory);
  Allreducer small_chunks(MPI_COMM_WORLD, Algorithm::kSharedMemory, /*chunk_bytes=*/4096);
  CheckSums({&mpi, &shared_memory, &small_chunks}, {65537, 1, 0, 3000, 1024, 1025, 7, 100'000, 2});
}

TEST_CASE("auto picks shared memory on one node; no algorithm in effect is auto") {
  for (Algorithm algorithm : kAlgorithms) {
    Allreducer allreducer(MPI_COMM_WORLD, algorithm);
    CHECK(allreducer.algorithm() != Algorithm::kAuto);
    if (algorithm != Algorithm::kAuto) CHECK(allreducer.algorithm() == algorithm);
  }
  Allreducer automatic(MPI_COMM_WORLD);
  CHECK(automatic.algorithm() == Algorithm::kSharedMemory);
}

TEST_CASE("ranks of a split communicator reduce among themselves") {
  // Even and odd ranks form two groups; each group's sum must hold only its own ranks' values.
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, Rank() % 2, Rank(), &half);
  for (Algorithm algorithm : kAlgorithms) {
    CAPTURE(AlgorithmName(algorithm));
    Allreducer allreducer(half, algorithm, /*chunk_bytes=*/4096);
    std::vector<float> data(5000, static_cast<float>(Rank() + 1));
    allreducer.Sum(data.data(), data.size());
    float expected = 0;
    for (int r = Rank() % 2; r < Ranks(); r += 2) expected += static_cast<float>(r + 1);
    size_t wrong = 0;
    for (float v : data) wrong += v != expected;
    CHECK(wrong == 0);
  }
  MPI_Comm_free(&half);
}

}  // namespace
TEST_CASE("the zero-copy buffer: ranges summed in place, blocking and in the background") {
  // Uneven ranges, ranges of one float and of more than one block, 3 in flight at once.
  const std::vector<std::pair<size_t, size_t>> ranges = {
      {0, 1}, {1, 4095}, {4096, 1}, {4097, 70'000}, {74'097, 5903}};
  const size_t floats = 80'000;
  for (Algorithm algorithm : kAlgorithms) {
    CAPTURE(AlgorithmName(algorithm));
    Allreducer allreducer(MPI_COMM_WORLD, algorithm, Allreducer::kDefaultChunkBytes, floats);
    REQUIRE(allreducer.buffer_floats() == floats);
    float* buffer = allreducer.buffer();
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      for (size_t i = 0; i < floats; ++i) buffer[i] = Value(Rank(), i);
      if (round == 0) {
        allreducer.SumBuffer(0, floats);
      } else {
        for (const auto& [begin, count] : ranges) allreducer.StartSumBuffer(begin, count);
        if (round == 2) allreducer.SumBuffer(0, 0);  // Waits for the started ranges first.
        allreducer.WaitAll();
      }
      CHECK(Mismatches(buffer, floats) == 0);
      CHECK(SameOnEveryRank(buffer, floats));
    }
  }
}

TEST_CASE("shared memory gives the same bits whether a buffer is summed whole or in ranges") {
  const size_t floats = 30'000;
  Allreducer allreducer(MPI_COMM_WORLD, Algorithm::kSharedMemory, Allreducer::kDefaultChunkBytes,
                        floats);
  float* buffer = allreducer.buffer();
  for (size_t i = 0; i < floats; ++i) buffer[i] = Value(Rank(), i);
  allreducer.SumBuffer(0, floats);
  const std::vector<float> whole(buffer, buffer + floats);
  for (size_t i = 0; i < floats; ++i) buffer[i] = Value(Rank(), i);
  for (size_t begin = 0; begin < floats; begin += 7001) {
    allreducer.StartSumBuffer(begin, std::min<size_t>(7001, floats - begin));
  }
  allreducer.WaitAll();
  CHECK(std::memcmp(whole.data(), buffer, floats * sizeof(float)) == 0);
}

}  // namespace ferry::learner::linalg
