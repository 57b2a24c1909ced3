#include "core/malloc_tuning.h"

#include <malloc.h>

#include "core/log.h"

namespace ferry::core {

void KeepLargeBlocksInHeap() {
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapBlockLimit)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapKeepFree)) != 1) {
    Log("malloc refused the heap thresholds; large frames will be page-faulted in anew");
  }
}

}  // namespace ferry::core
