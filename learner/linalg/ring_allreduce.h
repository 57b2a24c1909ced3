// Ring allreduce over MPI_Sendrecv: a reduce-scatter, then an allgather.
//
//   the buffer = blocks 0..R-1; rank r sends to r + 1 and receives from r - 1 (mod R)
//   reduce-scatter, step s = 0..R-2: send block r - s, receive block r - s - 1, add it in
//                                    -> rank r holds the sum of block r + 1
//   allgather,      step s = 0..R-2: send block r + 1 - s, receive block r - s in place
//
// Each rank sends and receives 2 (R - 1) / R of the buffer, the least any allreduce moves
// (Patarasuk and Yuan; Baidu's and Horovod's ring). Blocks travel in segments of the scratch
// buffer's size. Each block's sum is computed on one rank and copied to the others, so all ranks
// get the same bits.
//
// Threading: one thread per rank calls Sum; ranks call it in the same order with the same
// count, like an MPI collective.
#ifndef FERRY_LEARNER_LINALG_RING_ALLREDUCE_H_
#define FERRY_LEARNER_LINALG_RING_ALLREDUCE_H_

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ferry::learner::linalg {

class RingAllreduce {
 public:
  // `comm` must outlive this object, and carry no other point-to-point traffic during Sum.
  RingAllreduce(MPI_Comm comm, size_t segment_floats);

  // In-place elementwise sum across the ranks of `comm`.
  void Sum(float* data, size_t count);

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int ranks_ = 1;
  std::vector<float> scratch_;  // One received segment.
};

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_RING_ALLREDUCE_H_
