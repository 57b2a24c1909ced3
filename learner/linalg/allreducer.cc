#include "learner/linalg/allreducer.h"

#include <climits>

#include "core/status.h"
#include "learner/linalg/allreduce.h"

namespace ferry::learner::linalg {

Allreducer::Allreducer(MPI_Comm comm, Algorithm algorithm, size_t chunk_bytes,
                       size_t buffer_floats)
    : algorithm_(algorithm), buffer_floats_(buffer_floats) {
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
      shared_memory_ =
          std::make_unique<SharedMemoryAllreduce>(node_comm_, chunk_floats, buffer_floats);
      buffer_ = shared_memory_->buffer();
    } else {
      algorithm_ = Algorithm::kMpi;
    }
  }
  if (buffer_ == nullptr) {
    private_buffer_.resize(buffer_floats);
    buffer_ = private_buffer_.data();
  }
}

Allreducer::~Allreducer() {
  WaitAll();
  if (worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
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

void Allreducer::SumBuffer(size_t begin, size_t count) {
  FERRY_CHECK(begin + count <= buffer_floats_);
  WaitAll();
  if (shared_memory_) {
    shared_memory_->SumBuffer(begin, count);
  } else {
    AllreduceSum(buffer_ + begin, count, comm_);
  }
}

void Allreducer::StartSumBuffer(size_t begin, size_t count) {
  FERRY_CHECK(begin + count <= buffer_floats_);
  if (!shared_memory_) {
    FERRY_CHECK(count <= static_cast<size_t>(INT_MAX));
    requests_.emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, buffer_ + begin, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                   comm_, &requests_.back());
    return;
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({begin, count});
  }
  cv_.notify_all();
}

void Allreducer::WaitAll() {
  if (!requests_.empty()) {
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return pending_.empty(); });
}

void Allreducer::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return quit_ || !pending_.empty(); });
    if (pending_.empty()) return;
    const Range range = pending_.front();
    lock.unlock();
    shared_memory_->SumBuffer(range.begin, range.count);
    lock.lock();
    pending_.pop_front();
    cv_.notify_all();
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

std::optional<Allreducer::Algorithm> ParseAlgorithm(std::string_view name) {
  for (auto a : {Allreducer::Algorithm::kAuto, Allreducer::Algorithm::kMpi,
                 Allreducer::Algorithm::kSharedMemory}) {
    if (AlgorithmName(a) == name) return a;
  }
  return std::nullopt;
}

}  // namespace ferry::learner::linalg
