#include "learner/linalg/shared_memory_allreduce.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>

#include "core/status.h"

namespace ferry::learner::linalg {
namespace {

// Per rank, one line of the window's header: its barrier flag (the last barrier it reached),
// how many ranks sleep waiting on that flag, and the count of its current Sum.
constexpr size_t kLineBytes = 128;
// Slices and slots start on a cache line: 16 floats.
constexpr size_t kLineFloats = 64 / sizeof(float);
constexpr int kSlotSets = 3;
// A barrier's waiter polls, then yields its core, then sleeps. Polling catches a peer on another
// core within a few microseconds. Yielding lets a peer that shares the core run (MPI's own
// busy-polling collapses to milliseconds per call there) and keeps the waiter from sleeping
// through short waits: a futex wake-up costs tens of microseconds in a VM, and once the ranks
// fall out of step each barrier would pay it. Waits longer than that (a peer still computing)
// sleep on the futex.
constexpr auto kPollTime = std::chrono::microseconds(20);
constexpr auto kYieldTime = std::chrono::milliseconds(1);

size_t RoundUp(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A futex on a word of the shared window: not FUTEX_PRIVATE, since the waiters are processes.
void FutexWait(uint32_t* word, uint32_t expected) {
  syscall(SYS_futex, word, FUTEX_WAIT, expected, nullptr, nullptr, 0);
}

void FutexWakeAll(uint32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// out = a + b. Blocks of a fixed 16 lanes let GCC's -O2 cost model vectorise the loop.
void Add(const float* __restrict a, const float* __restrict b, float* __restrict out, size_t n) {
  size_t i = 0;
  for (; i + kLineFloats <= n; i += kLineFloats) {
    for (size_t l = 0; l < kLineFloats; ++l) out[i + l] = a[i + l] + b[i + l];
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// out += a.
void AddTo(const float* __restrict a, float* __restrict out, size_t n) {
  size_t i = 0;
  for (; i + kLineFloats <= n; i += kLineFloats) {
    for (size_t l = 0; l < kLineFloats; ++l) out[i + l] += a[i + l];
  }
  for (; i < n; ++i) out[i] += a[i];
}

constexpr size_t kBlockFloats = 1024;

// out_slot[i] = out_data[i] = sources[0][i] + ... + sources[n - 1][i], summed in that order, for
// n >= 2. out_slot aliases no source; out_data may be a source. Block by block, the sum goes to
// out_slot, then is copied to out_data from L1: 2.5x faster than one pass keeping a
// 16-lane accumulator, which GCC spills to the stack.
void SumInto(const float* const* sources, int n, size_t size, float* out_slot, float* out_data) {
  for (size_t begin = 0; begin < size; begin += kBlockFloats) {
    const size_t m = std::min(kBlockFloats, size - begin);
    float* block = out_slot + begin;
    Add(sources[0] + begin, sources[1] + begin, block, m);
    for (int j = 2; j < n; ++j) AddTo(sources[j] + begin, block, m);
    std::memcpy(out_data + begin, block, m * sizeof(float));
  }
}

}  // namespace

SharedMemoryAllreduce::SharedMemoryAllreduce(MPI_Comm node_comm, size_t chunk_floats,
                                             size_t buffer_floats)
    : chunk_floats_(RoundUp(std::max<size_t>(chunk_floats, 1), kLineFloats)),
      buffer_floats_(buffer_floats),
      buffer_stride_(RoundUp(buffer_floats, kLineFloats)),
      block_(kBlockFloats) {
  MPI_Comm_rank(node_comm, &rank_);
  MPI_Comm_size(node_comm, &ranks_);
  sources_.resize(static_cast<size_t>(ranks_));
  header_bytes_ = RoundUp(kLineBytes * static_cast<size_t>(ranks_), kLineBytes);
  const size_t bytes =
      header_bytes_ +
      (kSlotSets * chunk_floats_ + buffer_stride_) * static_cast<size_t>(ranks_) * sizeof(float);
  // Rank 0 allocates the whole window, so every rank sees one contiguous segment.
  void* base = nullptr;
  FERRY_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(rank_ == 0 ? bytes : 0), 1,
                                      MPI_INFO_NULL, node_comm, &base, &window_) == MPI_SUCCESS);
  MPI_Aint size = 0;
  int displacement_unit = 0;
  FERRY_CHECK(MPI_Win_shared_query(window_, 0, &size, &displacement_unit, &base) == MPI_SUCCESS);
  FERRY_CHECK(static_cast<size_t>(size) == bytes);
  base_ = static_cast<char*>(base);
  if (rank_ == 0) std::memset(base_, 0, bytes);
  MPI_Barrier(node_comm);
}

SharedMemoryAllreduce::~SharedMemoryAllreduce() { MPI_Win_free(&window_); }

SharedMemoryAllreduce::Slice SharedMemoryAllreduce::SliceOf(int rank, size_t chunk_size) const {
  const size_t per_rank = RoundUp((chunk_size + ranks_ - 1) / ranks_, kLineFloats);
  const size_t begin = std::min(chunk_size, per_rank * static_cast<size_t>(rank));
  return {begin, std::min(chunk_size, begin + per_rank) - begin};
}

float* SharedMemoryAllreduce::Slot(uint64_t step, int rank) const {
  const size_t slot = static_cast<size_t>(step % kSlotSets) * ranks_ + rank;
  return reinterpret_cast<float*>(base_ + header_bytes_) + slot * chunk_floats_;
}

float* SharedMemoryAllreduce::Buffer(int rank) const {
  float* buffers = reinterpret_cast<float*>(base_ + header_bytes_) +
                   kSlotSets * static_cast<size_t>(ranks_) * chunk_floats_;
  return buffers + static_cast<size_t>(rank) * buffer_stride_;
}

uint32_t* SharedMemoryAllreduce::Flag(int rank) const {
  return reinterpret_cast<uint32_t*>(base_ + kLineBytes * rank);
}

uint32_t* SharedMemoryAllreduce::Sleepers(int rank) const { return Flag(rank) + 1; }

uint64_t* SharedMemoryAllreduce::Count(int rank) const {
  return reinterpret_cast<uint64_t*>(base_ + kLineBytes * rank + sizeof(uint64_t));
}

bool SharedMemoryAllreduce::Reached(uint32_t flag) const {
  // Another rank's flag is within one barrier of ours, so this survives wrapping around.
  return static_cast<int32_t>(flag - epoch_) >= 0;
}

void SharedMemoryAllreduce::Barrier() {
  ++epoch_;
  // Sequentially consistent with the waiters' side (Dekker): either a waiter sees the new flag,
  // or this rank sees it counted among the sleepers and wakes it.
  std::atomic_ref<uint32_t>(*Flag(rank_)).store(epoch_);
  if (std::atomic_ref<uint32_t>(*Sleepers(rank_)).load() > 0) FutexWakeAll(Flag(rank_));
  for (int j = 0; j < ranks_; ++j) {
    if (j != rank_) WaitFor(j);
  }
}

void SharedMemoryAllreduce::WaitFor(int rank) {
  std::atomic_ref<uint32_t> flag(*Flag(rank));
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 1; !Reached(flag.load(std::memory_order_acquire)); ++polls) {
    if (polls % 64 != 0) {
      CpuRelax();
      continue;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited < kPollTime) continue;
    if (waited < kPollTime + kYieldTime) {
      sched_yield();
      continue;
    }
    std::atomic_ref<uint32_t> sleepers(*Sleepers(rank));
    sleepers.fetch_add(1);
    // The kernel sleeps only while the flag still holds `seen`.
    for (uint32_t seen = flag.load(); !Reached(seen); seen = flag.load()) {
      FutexWait(Flag(rank), seen);
    }
    sleepers.fetch_sub(1);
    return;
  }
}

void SharedMemoryAllreduce::CopyIn(const float* chunk, size_t chunk_size, uint64_t step) {
  const Slice own = SliceOf(rank_, chunk_size);
  float* slot = Slot(step, rank_);
  std::memcpy(slot, chunk, own.begin * sizeof(float));
  const size_t after = own.begin + own.size;
  std::memcpy(slot + after, chunk + after, (chunk_size - after) * sizeof(float));
}

void SharedMemoryAllreduce::Reduce(float* chunk, size_t chunk_size, uint64_t step) {
  const Slice own = SliceOf(rank_, chunk_size);
  if (own.size == 0) return;
  for (int j = 0; j < ranks_; ++j) {
    sources_[j] = (j == rank_ ? chunk : Slot(step, j)) + own.begin;
  }
  SumInto(sources_.data(), ranks_, own.size, Slot(step, rank_) + own.begin, chunk + own.begin);
}

void SharedMemoryAllreduce::CopyOut(float* chunk, size_t chunk_size, uint64_t step) {
  for (int j = 0; j < ranks_; ++j) {
    if (j == rank_) continue;
    const Slice slice = SliceOf(j, chunk_size);
    std::memcpy(chunk + slice.begin, Slot(step, j) + slice.begin, slice.size * sizeof(float));
  }
}

void SharedMemoryAllreduce::Sum(float* data, size_t count) {
  if (ranks_ == 1 || count == 0) return;
  const size_t chunks = (count + chunk_floats_ - 1) / chunk_floats_;
  auto chunk_size = [&](size_t k) { return std::min(chunk_floats_, count - k * chunk_floats_); };
  CopyIn(data, chunk_size(0), step_);
  *Count(rank_) = count;
  Barrier();
  for (int j = 0; j < ranks_; ++j) FERRY_CHECK(*Count(j) == count);
  for (size_t k = 0; k < chunks; ++k) {
    float* chunk = data + k * chunk_floats_;
    Reduce(chunk, chunk_size(k), step_ + k);
    if (k + 1 < chunks) CopyIn(chunk + chunk_floats_, chunk_size(k + 1), step_ + k + 1);
    Barrier();
    CopyOut(chunk, chunk_size(k), step_ + k);
  }
  step_ += chunks;
}

void SharedMemoryAllreduce::SumBuffer(size_t begin, size_t count) {
  FERRY_CHECK(begin + count <= buffer_floats_);
  if (ranks_ == 1 || count == 0) return;
  *Count(rank_) = count;
  Barrier();  // Every rank's data is in its buffer.
  for (int j = 0; j < ranks_; ++j) FERRY_CHECK(*Count(j) == count);
  const Slice own = SliceOf(rank_, count);
  for (size_t done = 0; done < own.size; done += kBlockFloats) {
    const size_t offset = begin + own.begin + done;
    const size_t m = std::min(kBlockFloats, own.size - done);
    Add(Buffer(0) + offset, Buffer(1) + offset, block_.data(), m);
    for (int j = 2; j < ranks_; ++j) AddTo(Buffer(j) + offset, block_.data(), m);
    for (int j = 0; j < ranks_; ++j) {
      std::memcpy(Buffer(j) + offset, block_.data(), m * sizeof(float));
    }
  }
  Barrier();  // Every slice is stored in every buffer.
}

}  // namespace ferry::learner::linalg
