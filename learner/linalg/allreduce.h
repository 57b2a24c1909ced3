// Allreduce over one contiguous float buffer: the learner's gradient kernel.
//
// Gradients are fused into a single buffer (Horovod's tensor fusion) so each
// step pays one collective's latency instead of one per parameter tensor.
// Every rank of `comm` must call with the same size. This is the plain MPI_Allreduce baseline;
// learner/linalg/allreducer.h has faster algorithms and picks among them.
#ifndef FERRY_LEARNER_LINALG_ALLREDUCE_H_
#define FERRY_LEARNER_LINALG_ALLREDUCE_H_

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace ferry::learner::linalg {

// In-place elementwise sum across ranks.
void AllreduceSum(float* data, size_t count, MPI_Comm comm);
void AllreduceSum(double* data, size_t count, MPI_Comm comm);

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_ALLREDUCE_H_
