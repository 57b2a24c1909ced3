// The learner's in-place float allreduce (the fused gradient buffer), with a choice of algorithm.
//
//   kMpi           MPI_Allreduce (AllreduceSum): the baseline, any topology
//   kSharedMemory  SharedMemoryAllreduce through one MPI shared-memory window; needs every rank
//                  on one node, else it falls back to kMpi
//   kAuto          kSharedMemory where every rank is on one node, else kMpi
//
// Every algorithm gives all ranks the same bits. docs/BENCHMARKS.md ("Learner") has the
// measurements behind kAuto; a ring (reduce-scatter + allgather over MPI_Sendrecv) measured there
// was never the fastest and is gone.
//
// Zero-copy and overlap: an Allreducer made with `buffer_floats` owns a buffer that the caller
// fills in place (with kSharedMemory it lives in the shared window, so SumBuffer skips the copy
// in and out). StartSumBuffer reduces a range of it in the background, so a learner can reduce
// one bucket of gradients while backward still produces the next: with kMpi as a non-blocking
// MPI_Iallreduce, with kSharedMemory on a worker thread of this Allreducer. WaitAll finishes
// every started range.
//
// Threading: like an MPI communicator, an Allreducer is used by one thread per rank at a time,
// and every rank makes the same calls in the same order with the same counts. The thread that
// calls it must be the one that may call MPI (MPI_THREAD_FUNNELED is enough).
#ifndef FERRY_LEARNER_LINALG_ALLREDUCER_H_
#define FERRY_LEARNER_LINALG_ALLREDUCER_H_

#include <mpi.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "learner/linalg/shared_memory_allreduce.h"

namespace ferry::learner::linalg {

class Allreducer {
 public:
  enum class Algorithm { kAuto, kMpi, kSharedMemory };
  // The shared-memory algorithm's pipeline chunk, per rank.
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  // Collective over `comm`, which it duplicates: its messages never mix with the caller's.
  explicit Allreducer(MPI_Comm comm, Algorithm algorithm = Algorithm::kAuto,
                      size_t chunk_bytes = kDefaultChunkBytes, size_t buffer_floats = 0);
  // Collective: every rank destroys its Allreducer, before MPI_Finalize.
  ~Allreducer();
  Allreducer(const Allreducer&) = delete;
  Allreducer& operator=(const Allreducer&) = delete;

  // In-place elementwise sum across the ranks; any count, 0 included.
  void Sum(float* data, size_t count);

  // This rank's buffer of buffer_floats floats, zeroed at construction.
  float* buffer() { return buffer_; }
  size_t buffer_floats() const { return buffer_floats_; }
  // In-place sum of buffer()[begin, begin + count) across the ranks, after WaitAll.
  void SumBuffer(size_t begin, size_t count);
  // Starts the same sum in the background; the range must not be touched until WaitAll.
  void StartSumBuffer(size_t begin, size_t count);
  // Returns once every started range is summed.
  void WaitAll();

  // The algorithm in effect: never kAuto.
  Algorithm algorithm() const { return algorithm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  Algorithm algorithm_;
  std::unique_ptr<SharedMemoryAllreduce> shared_memory_;
  size_t buffer_floats_ = 0;
  float* buffer_ = nullptr;          // In the window, or private_buffer_.
  std::vector<float> private_buffer_;

  // kMpi: the started MPI_Iallreduce requests.
  std::vector<MPI_Request> requests_;
  // kSharedMemory: ranges for the worker thread, in the order they were started.
  struct Range {
    size_t begin;
    size_t count;
  };
  void Work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Range> pending_;  // Started and not yet summed, the one being summed first.
  bool quit_ = false;
  std::thread worker_;  // Started by the first StartSumBuffer.
};

// "auto", "mpi", "shared_memory".
std::string_view AlgorithmName(Allreducer::Algorithm algorithm);
// The algorithm with that name; nullopt for any other string.
std::optional<Allreducer::Algorithm> ParseAlgorithm(std::string_view name);

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_ALLREDUCER_H_
