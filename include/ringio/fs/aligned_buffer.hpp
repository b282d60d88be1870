// SPDX-License-Identifier: Apache-2.0
// ringio/fs/aligned_buffer.hpp — memory aligned for O_DIRECT I/O.
#pragma once

#include <cstddef>
#include <span>

#include "ringio/buffer.hpp"

namespace ringio {

class file;

/// A heap buffer whose address is a multiple of an alignment, as O_DIRECT reads and
/// writes require (with offsets and lengths that are multiples of the device's logical
/// block size). Move-only; frees itself.
class aligned_buffer {
 public:
  /// The alignment used when the filesystem does not report one.
  static constexpr std::size_t default_alignment = 4096;

  aligned_buffer() noexcept = default;
  /// `size` bytes (zeroed) at a multiple of `alignment` (a power of two; others are
  /// rounded up to one). Throws std::bad_alloc.
  explicit aligned_buffer(std::size_t size, std::size_t alignment = default_alignment);
  /// Takes `o`'s memory; `o` is left empty.
  aligned_buffer(aligned_buffer&& o) noexcept;
  /// Frees this buffer's memory and takes `o`'s; `o` is left empty.
  aligned_buffer& operator=(aligned_buffer&& o) noexcept;
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  /// Frees the memory.
  ~aligned_buffer();

  /// The alignment O_DIRECT needs on `f`: the larger of statx's STATX_DIOALIGN memory and
  /// offset alignments where the kernel and filesystem report them, else
  /// default_alignment. Synchronous (one statx).
  [[nodiscard]] static std::size_t direct_io_alignment(const file& f) noexcept;

  /// The first byte.
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// The length in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The alignment of data().
  [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
  /// All of it, writable.
  [[nodiscard]] mutable_buffer buffer() const noexcept { return {data_, size_}; }
  /// The bytes as a span.
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t alignment_ = 0;
};

}  // namespace ringio
