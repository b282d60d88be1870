// SPDX-License-Identifier: Apache-2.0
// Per-thread free lists of coroutine frames, one per size class.
#include "ringio/detail/frame_allocator.hpp"

#include <new>

namespace ringio::detail {
namespace {

// Classes: 64-byte steps up to 1 KiB, 256-byte steps up to 4 KiB (where the frames of
// connection handlers lie: rounding them to a power of two wasted up to half), then
// powers of two up to 64 KiB.
constexpr std::size_t small_step = 64;
constexpr std::size_t small_limit = 1024;
constexpr std::size_t medium_step = 256;
constexpr std::size_t medium_limit = 4096;
constexpr std::size_t large_limit = 64 * 1024;
constexpr unsigned small_classes = small_limit / small_step;                     // 16
constexpr unsigned medium_classes = (medium_limit - small_limit) / medium_step;  // 12
constexpr unsigned large_classes = 4;                                            // 8K .. 64K
constexpr unsigned class_count = small_classes + medium_classes + large_classes;
constexpr unsigned max_cached_per_class = 1024;
// And at most this many bytes per class, so that large frames are not kept by the
// thousand (1,024 frames of 64 KiB would be 64 MiB held for the life of the thread).
constexpr std::size_t max_cached_bytes_per_class = 256 * 1024;

struct free_block {
  free_block* next;
};

unsigned class_of(std::size_t n, std::size_t& rounded) {
  if (n <= small_limit) {
    unsigned c = static_cast<unsigned>((n + small_step - 1) / small_step);
    if (c == 0) c = 1;
    rounded = c * small_step;
    return c - 1;
  }
  if (n <= medium_limit) {
    unsigned c = static_cast<unsigned>((n - small_limit + medium_step - 1) / medium_step);
    rounded = small_limit + c * medium_step;
    return small_classes + c - 1;
  }
  std::size_t size = 2 * medium_limit;
  unsigned c = small_classes + medium_classes;
  while (size < n) {
    size <<= 1;
    ++c;
  }
  rounded = size;
  return c;
}

struct frame_cache {
  free_block* head[class_count] = {};
  unsigned count[class_count] = {};
  ~frame_cache() { clear(); }
  void clear() noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
      while (head[c] != nullptr) {
        free_block* next = head[c]->next;
        ::operator delete(head[c]);
        head[c] = next;
      }
      count[c] = 0;
    }
  }
};

#if defined(RINGIO_SANITIZED) || defined(RINGIO_NO_FRAME_CACHE)
constexpr bool cache_enabled = false;
#else
constexpr bool cache_enabled = true;
#endif

thread_local frame_cache cache;

}  // namespace

void* frame_allocate(std::size_t n) {
  if (!cache_enabled || n > large_limit) return ::operator new(n);
  std::size_t rounded = 0;
  unsigned c = class_of(n, rounded);
  if (free_block* b = cache.head[c]) {
    cache.head[c] = b->next;
    --cache.count[c];
    return b;
  }
  return ::operator new(rounded);
}

void frame_deallocate(void* p, std::size_t n) noexcept {
  if (!cache_enabled || n > large_limit) {
    ::operator delete(p);
    return;
  }
  std::size_t rounded = 0;
  unsigned c = class_of(n, rounded);
  if (cache.count[c] >= max_cached_per_class || (cache.count[c] + 1) * rounded > max_cached_bytes_per_class) {
    ::operator delete(p);
    return;
  }
  auto* b = static_cast<free_block*>(p);
  b->next = cache.head[c];
  cache.head[c] = b;
  ++cache.count[c];
}

void frame_cache_trim() noexcept {
  if (cache_enabled) cache.clear();
}

}  // namespace ringio::detail
