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
// Threading: like an MPI communicator, an Allreducer is used by one thread per rank at a time,
// and every rank makes the same calls in the same order with the same counts.
#ifndef FERRY_LEARNER_LINALG_ALLREDUCER_H_
#define FERRY_LEARNER_LINALG_ALLREDUCER_H_

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "learner/linalg/shared_memory_allreduce.h"

namespace ferry::learner::linalg {

class Allreducer {
 public:
  enum class Algorithm { kAuto, kMpi, kSharedMemory };
  // The shared-memory algorithm's pipeline chunk, per rank.
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  // Collective over `comm`, which it duplicates: its messages never mix with the caller's.
  explicit Allreducer(MPI_Comm comm, Algorithm algorithm = Algorithm::kAuto,
                      size_t chunk_bytes = kDefaultChunkBytes);
  // Collective: every rank destroys its Allreducer, before MPI_Finalize.
  ~Allreducer();
  Allreducer(const Allreducer&) = delete;
  Allreducer& operator=(const Allreducer&) = delete;

  // In-place elementwise sum across the ranks; any count, 0 included.
  void Sum(float* data, size_t count);

  // The algorithm in effect: never kAuto.
  Algorithm algorithm() const { return algorithm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  Algorithm algorithm_;
  std::unique_ptr<SharedMemoryAllreduce> shared_memory_;
};

// "auto", "mpi", "shared_memory".
std::string_view AlgorithmName(Allreducer::Algorithm algorithm);

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_ALLREDUCER_H_
