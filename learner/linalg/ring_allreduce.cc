#include "learner/linalg/ring_allreduce.h"

#include <algorithm>

namespace ferry::learner::linalg {
namespace {

struct Block {
  size_t begin;
  size_t size;
};

// Block b of R, balanced to within one element.
Block BlockOf(size_t count, int ranks, int b) {
  const size_t begin = count * static_cast<size_t>(b) / static_cast<size_t>(ranks);
  const size_t end = count * static_cast<size_t>(b + 1) / static_cast<size_t>(ranks);
  return {begin, end - begin};
}

int Mod(int a, int n) { return ((a % n) + n) % n; }

// target[i] += addend[i]. Blocks of a fixed 16 lanes let GCC's -O2 cost model vectorise it.
void AddInto(float* __restrict target, const float* __restrict addend, size_t size) {
  constexpr size_t kLanes = 16;
  size_t i = 0;
  for (; i + kLanes <= size; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) target[i + l] += addend[i + l];
  }
  for (; i < size; ++i) target[i] += addend[i];
}

}  // namespace

RingAllreduce::RingAllreduce(MPI_Comm comm, size_t segment_floats)
    : comm_(comm), scratch_(std::max<size_t>(segment_floats, 1)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
}

void RingAllreduce::Sum(float* data, size_t count) {
  if (ranks_ == 1 || count == 0) return;
  const int right = Mod(rank_ + 1, ranks_);
  const int left = Mod(rank_ - 1, ranks_);
  const size_t segment = scratch_.size();
  // Blocks differ in size by one element at most. Every rank walks the largest one's segments,
  // so each send meets a receive; a shorter block sends or receives nothing at its end.
  const size_t largest = BlockOf(count, ranks_, ranks_ - 1).size;
  // Sends block `send` to the right while receiving block `receive` from the left, a segment
  // at a time; `add` sums the received segment in, else it lands in place.
  auto exchange = [&](int send, int receive, bool add) {
    const Block out = BlockOf(count, ranks_, send);
    const Block in = BlockOf(count, ranks_, receive);
    for (size_t offset = 0; offset < largest; offset += segment) {
      const size_t n_out = offset < out.size ? std::min(segment, out.size - offset) : 0;
      const size_t n_in = offset < in.size ? std::min(segment, in.size - offset) : 0;
      float* target = data + in.begin + std::min(offset, in.size);
      MPI_Sendrecv(data + out.begin + std::min(offset, out.size), static_cast<int>(n_out),
                   MPI_FLOAT, right, 0, add ? scratch_.data() : target, static_cast<int>(n_in),
                   MPI_FLOAT, left, 0, comm_, MPI_STATUS_IGNORE);
      if (add) AddInto(target, scratch_.data(), n_in);
    }
  };
  for (int s = 0; s < ranks_ - 1; ++s) {
    exchange(Mod(rank_ - s, ranks_), Mod(rank_ - s - 1, ranks_), /*add=*/true);
  }
  for (int s = 0; s < ranks_ - 1; ++s) {
    exchange(Mod(rank_ + 1 - s, ranks_), Mod(rank_ - s, ranks_), /*add=*/false);
  }
}

}  // namespace ferry::learner::linalg
