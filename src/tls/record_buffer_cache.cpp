// SPDX-License-Identifier: Apache-2.0
#include "record_buffer_cache.hpp"

#include <array>
#include <new>

namespace ringio::tls::detail {
namespace {

struct cache {
  std::array<std::byte*, 32> buffers{};
  std::size_t count = 0;
  ~cache() {
    for (std::size_t i = 0; i < count; ++i) ::operator delete(buffers[i]);
  }
};

cache& thread_cache() {
  thread_local cache c;
  return c;
}

}  // namespace

std::byte* borrow_record_buffer() {
  cache& c = thread_cache();
  if (c.count > 0) return c.buffers[--c.count];
  return static_cast<std::byte*>(::operator new(record_buffer_size));
}

void return_record_buffer(std::byte* b) noexcept {
  cache& c = thread_cache();
  if (c.count < c.buffers.size()) c.buffers[c.count++] = b;
  else ::operator delete(b);
}

}  // namespace ringio::tls::detail
