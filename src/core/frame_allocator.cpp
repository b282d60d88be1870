// Per-thread free lists of coroutine frames, one per size class.
#include "ringio/detail/frame_allocator.hpp"

#include <new>

namespace ringio::detail {
namespace {

// Classes: 64-byte steps up to 1 KiB, then powers of two up to 64 KiB.
constexpr std::size_t small_step = 64;
constexpr std::size_t small_limit = 1024;
constexpr std::size_t large_limit = 64 * 1024;
constexpr unsigned small_classes = small_limit / small_step;  // 16
constexpr unsigned large_classes = 6;                         // 2K .. 64K
constexpr unsigned max_cached_per_class = 1024;

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
  std::size_t size = 2048;
  unsigned c = small_classes;
  while (size < n) {
    size <<= 1;
    ++c;
  }
  rounded = size;
  return c;
}

struct frame_cache {
  free_block* head[small_classes + large_classes] = {};
  unsigned count[small_classes + large_classes] = {};
  ~frame_cache() {
    for (free_block*& h : head) {
      while (h != nullptr) {
        free_block* next = h->next;
        ::operator delete(h);
        h = next;
      }
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
  if (cache.count[c] >= max_cached_per_class) {
    ::operator delete(p);
    return;
  }
  auto* b = static_cast<free_block*>(p);
  b->next = cache.head[c];
  cache.head[c] = b;
  ++cache.count[c];
}

}  // namespace ringio::detail
