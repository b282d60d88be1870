// SPDX-License-Identifier: Apache-2.0
// ringio/net/buffer_pool.hpp — equal-sized receive buffers that the kernel picks from
// (an io_uring provided-buffer ring), so a connection holds a buffer only while data
// waits in it, not for its whole life. Used by multishot_receiver.
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "ringio/net/buffer_pool_options.hpp"

namespace ringio {

class io_context;

namespace detail {
class buffer_pool_core;  // shared by the pool, its receivers and its buffers
}

/// One buffer of a pool, holding received bytes; goes back to the pool when destroyed.
/// With buffer_pool_options::incremental it is a slice of a pool buffer, which goes back
/// once the kernel has filled it and all its slices are released.
/// Move-only. Destroy it on the loop thread that owns the pool (it may outlive the pool
/// and the io_context: see buffer_pool). An empty one (size 0) marks the end of the
/// stream.
class pooled_buffer {
 public:
  pooled_buffer() noexcept = default;
  /// Made by the receive operations: `size` bytes at `offset` in buffer `id` of the pool.
  pooled_buffer(detail::buffer_pool_core* core, unsigned id, std::size_t offset, std::size_t size) noexcept;
  /// Moves the buffer; the source becomes empty.
  /// @{
  pooled_buffer(pooled_buffer&& o) noexcept
      : core_(std::exchange(o.core_, nullptr)), data_(o.data_), id_(o.id_), size_(std::exchange(o.size_, 0)) {}
  pooled_buffer& operator=(pooled_buffer&& o) noexcept {
    if (this != &o) {
      release();
      core_ = std::exchange(o.core_, nullptr);
      data_ = o.data_;
      id_ = o.id_;
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  /// @}
  pooled_buffer(const pooled_buffer&) = delete;
  pooled_buffer& operator=(const pooled_buffer&) = delete;
  ~pooled_buffer() { release(); }

  /// The received bytes.
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
  /// The first received byte.
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// The number of received bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Whether it holds nothing (the end of the stream).
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Returns the buffer to the pool now.
  void release() noexcept;

 private:
  detail::buffer_pool_core* core_ = nullptr;
  std::byte* data_ = nullptr;
  unsigned id_ = 0;
  std::size_t size_ = 0;
};

/// `count` buffers (rounded up to a power of two, at most 32768) of `size` bytes for
/// the io_context `ctx`. On io_uring they form a provided-buffer ring
/// (IORING_REGISTER_PBUF_RING) the kernel receives into; on the readiness backends a
/// free list. Create it, and the receivers and buffers that use it, on the loop's
/// thread.
///
/// Lifetime: the pool must be destroyed before its io_context (destroying it removes
/// its buffer ring from the context; a pool that outlives its context is an error).
/// Its pooled_buffers and multishot_receivers may outlive the pool, and the context
/// too: the memory lives until the last of them goes, and they never touch the
/// context once the pool is gone. A receiver whose pool is gone still delivers what it
/// had already received, then its next() fails with no_buffer_space (io_uring); on the
/// readiness backends it keeps working with the buffers that come back.
/// `opts` turns on receive bundles and incremental consumption where the kernel offers
/// them (see buffer_pool_options; bundles() and incremental() say what is in effect).
/// Throws std::invalid_argument for a zero or oversized count or size,
/// std::system_error if memory cannot be mapped.
class buffer_pool {
 public:
  /// See the class.
  buffer_pool(io_context& ctx, unsigned count, std::size_t size, buffer_pool_options opts = {});
  ~buffer_pool();
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;

  /// The number of buffers (after rounding).
  [[nodiscard]] unsigned count() const noexcept;
  /// The size of each buffer.
  [[nodiscard]] std::size_t buffer_size() const noexcept;
  /// Buffers neither held by a pooled_buffer nor queued in a receiver.
  [[nodiscard]] unsigned available() const noexcept;
  /// True when the kernel selects the buffers (io_uring).
  [[nodiscard]] bool in_kernel() const noexcept;
  /// True when receives through this pool ask for bundles (asked for, and the kernel
  /// offers them).
  [[nodiscard]] bool bundles() const noexcept;
  /// True when the kernel consumes the buffers incrementally (asked for, and offered).
  [[nodiscard]] bool incremental() const noexcept;

  /// @cond INTERNAL
  detail::buffer_pool_core& core() noexcept { return *core_; }
  /// @endcond

 private:
  detail::buffer_pool_core* core_;
};

}  // namespace ringio
