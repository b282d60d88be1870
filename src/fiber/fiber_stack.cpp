// SPDX-License-Identifier: Apache-2.0
// Fiber stacks: mmap'ed with a guard page below, recycled through a per-thread pool
// whose list lives inside the pooled stacks themselves (so pooling allocates nothing).
#include "ringio/fiber/fiber_stack.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "ringio/fiber/fiber_stack_pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define RINGIO_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RINGIO_FIBER_ASAN 1
#endif
#endif
#ifdef RINGIO_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace ringio {
namespace detail {
namespace {

std::size_t page_size() noexcept {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// A pooled stack: this header sits at its top, inside the usable bytes.
struct pooled_stack {
  pooled_stack* next;
  void* bottom;
  std::size_t size;
};

struct stack_pool {
  pooled_stack* head = nullptr;
  fiber_stack_pool_statistics stats;

  ~stack_pool() { trim(); }
  void trim() noexcept {
    while (head != nullptr) {
      pooled_stack* p = head;
      head = p->next;
      unmap(p->bottom, p->size);
    }
    stats.pooled = 0;
    stats.pooled_bytes = 0;
  }
  void unmap(void* bottom, std::size_t size) noexcept {
#ifdef RINGIO_FIBER_ASAN
    // The shadow of unmapped memory is not cleared: a later mapping at the same address
    // would inherit the redzones of this stack's last frames.
    ASAN_UNPOISON_MEMORY_REGION(bottom, size);
#endif
    ::munmap(static_cast<char*>(bottom) - page_size(), size + page_size());
    ++stats.unmapped;
  }
};

thread_local stack_pool pool;

pooled_stack* header_of(void* bottom, std::size_t size) noexcept {
  return reinterpret_cast<pooled_stack*>(static_cast<char*>(bottom) + size - sizeof(pooled_stack));
}

}  // namespace

fiber_stack fiber_stack::acquire(std::size_t usable) {
  const std::size_t page = page_size();
  std::size_t size = (usable + page - 1) / page * page;
  if (size < 2 * page) size = 2 * page;
  // Most pools hold one size: the first entries are the likely match.
  for (pooled_stack** link = &pool.head; *link != nullptr; link = &(*link)->next) {
    pooled_stack* p = *link;
    if (p->size != size) continue;
    *link = p->next;
    --pool.stats.pooled;
    pool.stats.pooled_bytes -= size;
    ++pool.stats.reused;
    void* bottom = p->bottom;
#ifdef RINGIO_FIBER_ASAN
    // Frames of the previous fiber that never returned (its entry) left poison behind.
    ASAN_UNPOISON_MEMORY_REGION(bottom, size);
#endif
    return fiber_stack(bottom, size);
  }
  void* base = ::mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "ringio: mmap of a fiber stack");
  if (::mprotect(base, page, PROT_NONE) != 0) {
    int e = errno;
    ::munmap(base, size + page);
    throw std::system_error(e, std::generic_category(), "ringio: mprotect of a fiber stack's guard page");
  }
  ++pool.stats.mapped;
  return fiber_stack(static_cast<char*>(base) + page, size);
}

fiber_stack::fiber_stack(fiber_stack&& o) noexcept
    : bottom_(std::exchange(o.bottom_, nullptr)), size_(std::exchange(o.size_, 0)) {}

fiber_stack& fiber_stack::operator=(fiber_stack&& o) noexcept {
  if (this != &o) {
    fiber_stack old(std::move(*this));
    bottom_ = std::exchange(o.bottom_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

fiber_stack::~fiber_stack() {
  if (bottom_ == nullptr) return;
  if (pool.stats.pooled >= fiber_stack_pool_max_stacks ||
      pool.stats.pooled_bytes + size_ > fiber_stack_pool_max_bytes) {
    pool.unmap(bottom_, size_);
    return;
  }
#ifdef RINGIO_FIBER_ASAN
  ASAN_UNPOISON_MEMORY_REGION(bottom_, size_);
#endif
  pooled_stack* p = header_of(bottom_, size_);
  p->next = pool.head;
  p->bottom = bottom_;
  p->size = size_;
  pool.head = p;
  ++pool.stats.pooled;
  pool.stats.pooled_bytes += size_;
}

}  // namespace detail

fiber_stack_pool_statistics fiber_stack_pool_stats() noexcept { return detail::pool.stats; }

void fiber_stack_pool_trim() noexcept { detail::pool.trim(); }

}  // namespace ringio
