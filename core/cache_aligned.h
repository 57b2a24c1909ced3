// Vectors whose storage starts on a 64-byte cache line: the replay trees' sibling groups (one
// line per level of a walk) and FastMlp's weights and activations (the BLAS kernels run
// measurably faster on them than on malloc's 16 bytes; LibTorch aligns its tensors so).
#ifndef FERRY_CORE_CACHE_ALIGNED_H_
#define FERRY_CORE_CACHE_ALIGNED_H_

#include <cstddef>
#include <new>
#include <vector>

namespace ferry::core {

inline constexpr std::size_t kCacheLine = 64;

template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;
  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}  // NOLINT: rebind
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kCacheLine}); }
  template <typename U>
  bool operator==(const CacheAlignedAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace ferry::core

#endif  // FERRY_CORE_CACHE_ALIGNED_H_
