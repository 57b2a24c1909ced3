// Allreduce through one shared-memory window, for ranks on the same node.
//
// Buffers go through in chunks; slice j of a chunk is the 1/R of it that rank j reduces. Rank r,
// for chunk k:
//   copy in   chunk k, less slice r, -> r's slot of slot set k % 3
//   barrier   (also publishes the copy-in of chunk k + 1 below)
//   reduce    slice r = sum over ranks j in order 0..R-1 (its own from `data`, the others from
//             their slots) -> `data` and slice r of r's slot
//   copy in   chunk k + 1 into slot set (k + 1) % 3
//   barrier
//   copy out  slice j of rank j's slot -> `data`, for every j != r
// One barrier per chunk: three slot sets let the copy-in of chunk k + 1 overlap the copy-out of
// chunk k - 1 on a slower rank. Each rank moves about what one memcpy of its buffer moves
// through memory; the slots stay in cache while a chunk is small.
//
// Only rank r computes slice r and every rank copies it, so all ranks get the same bits.
//
// Zero-copy: the window can also hold one buffer per rank (`buffer_floats`). A caller that
// writes its data there (the learner packs its gradients straight into it) is reduced by
// SumBuffer without the copy in and out: rank r sums slice r of every rank's buffer block by
// block in L1 and stores the block into every rank's buffer, between two barriers. Each rank
// then moves what one memcpy of its buffer moves.
//
// Threading: one thread per rank calls Sum; ranks call it in the same order with the same
// count, like an MPI collective. A rank waiting at a barrier polls, then yields its core, then
// sleeps on a futex in the window until the last rank arrives (Linux only), so ranks that share
// cores with each other or with other work give the cores up.
#ifndef FERRY_LEARNER_LINALG_SHARED_MEMORY_ALLREDUCE_H_
#define FERRY_LEARNER_LINALG_SHARED_MEMORY_ALLREDUCE_H_

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::learner::linalg {

class SharedMemoryAllreduce {
 public:
  // Collective over `node_comm`, whose ranks must all share memory (MPI_COMM_TYPE_SHARED);
  // `node_comm` must outlive this object. The window holds 3 x ranks chunks of `chunk_floats`
  // (rounded up to a cache line) and a buffer of `buffer_floats` per rank.
  SharedMemoryAllreduce(MPI_Comm node_comm, size_t chunk_floats, size_t buffer_floats = 0);
  // Collective: every rank destroys its instance, before MPI_Finalize.
  ~SharedMemoryAllreduce();
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  // In-place elementwise sum across the ranks of `node_comm`. A count that differs between
  // ranks is a caller bug and aborts.
  void Sum(float* data, size_t count);

  // This rank's buffer in the window: buffer_floats() floats, zeroed at construction.
  float* buffer() const { return Buffer(rank_); }
  size_t buffer_floats() const { return buffer_floats_; }
  // In-place sum of elements [begin, begin + count) of every rank's buffer(); afterwards every
  // rank's buffer holds the same sums there. Same calling rules as Sum.
  void SumBuffer(size_t begin, size_t count);

 private:
  struct Slice {
    size_t begin;
    size_t size;
  };
  Slice SliceOf(int rank, size_t chunk_size) const;
  float* Slot(uint64_t step, int rank) const;
  float* Buffer(int rank) const;
  uint32_t* Flag(int rank) const;
  uint32_t* Sleepers(int rank) const;
  uint64_t* Count(int rank) const;
  bool Reached(uint32_t flag) const;

  void CopyIn(const float* chunk, size_t chunk_size, uint64_t step);
  void Reduce(float* chunk, size_t chunk_size, uint64_t step);
  void CopyOut(float* chunk, size_t chunk_size, uint64_t step);
  void Barrier();
  void WaitFor(int rank);

  MPI_Win window_ = MPI_WIN_NULL;
  char* base_ = nullptr;  // Header (a line per rank), kSlotSets x ranks slots, ranks buffers.
  size_t header_bytes_ = 0;
  int rank_ = 0;
  int ranks_ = 1;
  size_t chunk_floats_ = 0;
  size_t buffer_floats_ = 0;
  size_t buffer_stride_ = 0;  // buffer_floats_ rounded up to a cache line.
  uint32_t epoch_ = 0;  // Barriers passed, modulo 2^32; the same on every rank between calls.
  uint64_t step_ = 0;   // Chunks reduced; picks the slot set.
  std::vector<const float*> sources_;  // Reduce's inputs, one per rank.
  std::vector<float> block_;           // SumBuffer's sums of one block, before they are stored.
};

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_SHARED_MEMORY_ALLREDUCE_H_
