// Keeps large freed blocks in the heap, for processes that move large ZeroMQ frames.
//
// ZeroMQ allocates every frame it receives, and senders build fresh ones: a
// sample reply of 32 Atari rows is two 0.9 MB frames. glibc serves blocks that
// size with mmap (or trims them off the heap when freed), so each new frame is
// page-faulted in again, at about 1.6 us per 4 KiB page on a paravirtualised
// VM. Measured with replay_bench's 28 KB rows: ten times the page faults, and
// the raw ZeroMQ baseline's CPU per transition varying fivefold between runs,
// depending on where glibc's moving thresholds stood. Fixed thresholds make a
// freed frame's memory the next frame's. Reverb links tcmalloc for the same reason.
#ifndef FERRY_CORE_MALLOC_TUNING_H_
#define FERRY_CORE_MALLOC_TUNING_H_

#include <cstddef>

namespace ferry::core {

// Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap, and
// a heap keeps up to 256 MiB of free memory at its top before giving it back.
// Call once at the start of main, before other threads exist.
inline constexpr size_t kHeapBlockLimit = size_t{32} << 20;
inline constexpr size_t kHeapKeepFree = size_t{256} << 20;
void KeepLargeBlocksInHeap();

}  // namespace ferry::core

#endif  // FERRY_CORE_MALLOC_TUNING_H_
