#include "learner/linalg/allreducer.h"

#include "learner/linalg/allreduce.h"

namespace ferry::learner::linalg {

Allreducer::Allreducer(MPI_Comm comm, Algorithm algorithm, size_t chunk_bytes)
    : algorithm_(algorithm) {
  MPI_Comm_dup(comm, &comm_);
  const size_t chunk_floats = chunk_bytes / sizeof(float);
  if (algorithm_ == Algorithm::kAuto || algorithm_ == Algorithm::kSharedMemory) {
    // A node's communicator holds every rank on only one node, and then on every rank.
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_comm_);
    int ranks = 0;
    int node_ranks = 0;
    MPI_Comm_size(comm_, &ranks);
    MPI_Comm_size(node_comm_, &node_ranks);
    if (node_ranks == ranks) {
      algorithm_ = Algorithm::kSharedMemory;
      shared_memory_ = std::make_unique<SharedMemoryAllreduce>(node_comm_, chunk_floats);
    } else {
      algorithm_ = Algorithm::kMpi;
    }
  }
}

Allreducer::~Allreducer() {
  shared_memory_.reset();
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  MPI_Comm_free(&comm_);
}

void Allreducer::Sum(float* data, size_t count) {
  switch (algorithm_) {
    case Algorithm::kSharedMemory:
      shared_memory_->Sum(data, count);
      return;
    case Algorithm::kAuto:
    case Algorithm::kMpi:
      AllreduceSum(data, count, comm_);
      return;
  }
}

std::string_view AlgorithmName(Allreducer::Algorithm algorithm) {
  switch (algorithm) {
    case Allreducer::Algorithm::kAuto:
      return "auto";
    case Allreducer::Algorithm::kMpi:
      return "mpi";
    case Allreducer::Algorithm::kSharedMemory:
      return "shared_memory";
  }
  return "unknown";
}

}  // namespace ferry::learner::linalg
