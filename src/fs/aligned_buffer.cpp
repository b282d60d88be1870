// SPDX-License-Identifier: Apache-2.0
#include "ringio/fs/aligned_buffer.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "ringio/fs/file.hpp"

namespace ringio {

aligned_buffer::aligned_buffer(std::size_t size, std::size_t alignment) {
  // The alignment rounded up to a power of two, and the size to a multiple of it
  // (aligned_alloc wants both); what cannot be represented is bad_alloc.
  constexpr std::size_t top = std::size_t{1} << (8 * sizeof(std::size_t) - 1);
  if (alignment > top) throw std::bad_alloc();
  std::size_t a = alignof(std::max_align_t);
  while (a < alignment) a <<= 1;
  if (size > SIZE_MAX - (a - 1)) throw std::bad_alloc();
  const std::size_t rounded = (size + a - 1) / a * a;
  void* p = std::aligned_alloc(a, rounded == 0 ? a : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? a : rounded);
  data_ = static_cast<std::byte*>(p);
  size_ = size;
  alignment_ = a;
}

aligned_buffer::aligned_buffer(aligned_buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), alignment_(o.alignment_) {}

aligned_buffer& aligned_buffer::operator=(aligned_buffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    alignment_ = o.alignment_;
  }
  return *this;
}

aligned_buffer::~aligned_buffer() { std::free(data_); }

std::size_t aligned_buffer::direct_io_alignment(const file& f) noexcept {
  struct statx st {};
  if (::statx(f.native_handle(), "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) != 0 || (st.stx_mask & STATX_DIOALIGN) == 0)
    return default_alignment;
  const std::size_t a = st.stx_dio_mem_align > st.stx_dio_offset_align ? st.stx_dio_mem_align : st.stx_dio_offset_align;
  return a == 0 ? default_alignment : a;
}

}  // namespace ringio
