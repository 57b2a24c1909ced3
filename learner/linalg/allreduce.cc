#include "learner/linalg/allreduce.h"

#include <climits>

namespace ferry::learner::linalg {
namespace {

// MPI counts are int: reduce in chunks so buffers over 2^31 elements work too.
template <typename T>
void AllreduceChunks(T* data, size_t count, MPI_Datatype type, MPI_Comm comm) {
  constexpr size_t kMaxChunk = 1u << 30;
  for (size_t offset = 0; offset < count; offset += kMaxChunk) {
    const size_t n = count - offset < kMaxChunk ? count - offset : kMaxChunk;
    MPI_Allreduce(MPI_IN_PLACE, data + offset, static_cast<int>(n), type, MPI_SUM, comm);
  }
}

}  // namespace

void AllreduceSum(float* data, size_t count, MPI_Comm comm) {
  AllreduceChunks(data, count, MPI_FLOAT, comm);
}

void AllreduceSum(double* data, size_t count, MPI_Comm comm) {
  AllreduceChunks(data, count, MPI_DOUBLE, comm);
}

}  // namespace ferry::learner::linalg
