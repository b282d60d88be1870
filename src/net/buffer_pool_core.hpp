// SPDX-License-Identifier: Apache-2.0
// buffer_pool_core — the state behind a buffer_pool, kept alive (by a count of its
// users) until the pool, every receiver and every pooled_buffer of it are gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/missed_wakeup_sweep.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/buffer_pool_options.hpp"

namespace ringio::detail {

class multishot_recv_state;

class buffer_pool_core {
 public:
  buffer_pool_core(io_context& ctx, unsigned count, std::size_t size, buffer_pool_options opts);
  ~buffer_pool_core();

  /// The buffer_pool itself is being destroyed (on its loop, before the io_context):
  /// removes the buffer ring from the kernel and forgets the context. The receivers and
  /// pooled_buffers that keep this object alive never touch the context again.
  void detach_from_context() noexcept;
  [[nodiscard]] bool detached() const noexcept { return ctx_ == nullptr; }

  void acquire() noexcept { ++users_; }
  /// Drops one user; frees everything with the last one.
  void release() noexcept {
    if (--users_ == 0) delete this;
  }

  [[nodiscard]] unsigned count() const noexcept { return count_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] unsigned available() const noexcept { return available_; }
  /// The kernel's buffer group, or -1 (readiness backends, or the pool is gone).
  [[nodiscard]] int group() const noexcept { return group_; }
  /// The kernel selected the buffers (io_uring) while the pool lived.
  [[nodiscard]] bool kernel_selected() const noexcept { return kernel_selected_; }
  /// Receives ask for bundles (IORING_RECVSEND_BUNDLE).
  [[nodiscard]] bool bundles() const noexcept { return bundle_; }
  /// The ring was registered with IOU_PBUF_RING_INC.
  [[nodiscard]] bool incremental() const noexcept { return incremental_; }
  [[nodiscard]] std::byte* address(unsigned id) const noexcept { return memory_ + std::size_t{id} * size_; }

  /// A receive that selected from the ring got `bytes` (> 0) starting in buffer `id`:
  /// calls piece(id, offset, length) for each buffer the bytes lie in, in order (a
  /// bundle continues in ring order; an incremental buffer continues where its last
  /// piece ended). Every piece counts one user of its buffer, dropped by give_back().
  template <class F>
  void received(unsigned id, std::size_t bytes, F&& piece) noexcept {
    std::uint16_t pos = pos_of_[id];
    for (;;) {
      slot& s = slots_[id];
      if (!s.busy) {
        s.busy = true;
        --available_;
        if (!stack_.empty()) top_up();  // the ring is smaller than the pool: keep it full
      }
      const std::size_t room = size_ - s.offset;
      const std::size_t n = bytes < room ? bytes : room;
      const std::size_t offset = s.offset;
      if (incremental_) {
        s.offset += static_cast<std::uint32_t>(n);
        s.kernel_keeps = n < room;  // the kernel goes on filling the rest
      }
      ++s.refs;
      piece(id, offset, n);
      bytes -= n;
      if (bytes == 0) return;
      id = next_in_ring(++pos);
    }
  }
  /// A receive that selected buffer `id` ended without data (end of stream, error):
  /// the buffer goes back unless the kernel kept it (`bundle`: the request was a
  /// bundle, which consumes no buffer for no data; incremental rings likewise).
  void received_nothing(unsigned id, bool bundle) noexcept;
  /// User-space mode: a free buffer id, or -1.
  int take_free() noexcept;
  /// One user of buffer `id` is done with it (a piece released); with the last one, and
  /// once the kernel no longer fills it, the buffer is free again and receivers that
  /// ran out of buffers are re-armed.
  void give_back(unsigned id) noexcept;
  /// A receive found the ring empty: when buffers wait on the stack (the ring offers
  /// fewer than the pool holds: buffer_pool_options::initial_ring_buffers), the ring
  /// doubles and is refilled from the stack.
  void ran_dry() noexcept;
  /// Buffers the ring may offer the kernel at once.
  [[nodiscard]] unsigned ring_size() const noexcept { return ring_size_; }
  /// `r` ran out of buffers: re-arm it when one comes back (once).
  void wait_for_buffer(multishot_recv_state& r);
  void forget(multishot_recv_state& r) noexcept;
  /// Receivers waiting on armed multishot requests (see missed_wakeup_sweep).
  missed_wakeup_sweep& sweep() noexcept { return sweep_; }

 private:
  // Kernel mode: what the kernel and the pieces handed out do with each buffer.
  struct slot {
    std::uint32_t offset = 0;   // bytes the kernel has filled (incremental)
    std::uint32_t refs = 0;     // pieces not yet given back
    bool busy = false;          // counted out of available_
    bool kernel_keeps = false;  // incremental: the kernel fills the rest later
  };
  /// The buffer id the ring holds at position `pos`.
  [[nodiscard]] unsigned next_in_ring(std::uint16_t pos) const noexcept;
  /// Appends buffer `id`, whole, at the ring's tail.
  void refill(unsigned id) noexcept;
  /// Moves buffers from the stack into the ring until it holds ring_size_.
  void top_up() noexcept;
  /// Buffers in the ring now (kernel mode): the available ones not on the stack.
  [[nodiscard]] unsigned in_ring() const noexcept { return available_ - static_cast<unsigned>(stack_.size()); }
  void wake_starved() noexcept;

  io_context* ctx_;  // null once the pool is gone
  unsigned count_;
  std::size_t size_;
  std::byte* memory_ = nullptr;
  void* ring_ = nullptr;  // io_uring_buf_ring, kernel mode
  std::size_t ring_bytes_ = 0;
  int group_ = -1;
  bool kernel_selected_ = false;
  bool bundle_ = false;
  bool incremental_ = false;
  unsigned available_;
  unsigned users_ = 1;  // the pool itself
  std::vector<unsigned> free_;
  unsigned ring_size_ = 0;             // kernel mode: the most buffers the ring offers at once
  std::vector<unsigned> stack_;        // kernel mode: free buffers beyond ring_size_, last returned on top
  std::vector<slot> slots_;            // kernel mode, per buffer id
  std::vector<std::uint16_t> pos_of_;  // kernel mode: ring position of each id's last refill
  std::vector<multishot_recv_state*> starved_;
  missed_wakeup_sweep sweep_;
};

}  // namespace ringio::detail
