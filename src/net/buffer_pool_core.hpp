// buffer_pool_core — the state behind a buffer_pool, kept alive (by a count of its
// users) until the pool, every receiver and every pooled_buffer of it are gone.
#pragma once

#include <cstddef>
#include <vector>

#include "net/missed_wakeup_sweep.hpp"
#include "ringio/io_context.hpp"

namespace ringio::detail {

class multishot_recv_state;

class buffer_pool_core {
 public:
  buffer_pool_core(io_context& ctx, unsigned count, std::size_t size);
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
  [[nodiscard]] std::byte* address(unsigned id) const noexcept { return memory_ + std::size_t{id} * size_; }

  /// The kernel picked buffer `id`: one fewer available.
  void taken() noexcept { --available_; }
  /// User-space mode: a free buffer id, or -1.
  int take_free() noexcept;
  /// Buffer `id` is free again; receivers that ran out of buffers are re-armed.
  void give_back(unsigned id) noexcept;
  /// `r` ran out of buffers: re-arm it when one comes back (once).
  void wait_for_buffer(multishot_recv_state& r);
  void forget(multishot_recv_state& r) noexcept;
  /// Receivers waiting on armed multishot requests (see missed_wakeup_sweep).
  missed_wakeup_sweep& sweep() noexcept { return sweep_; }

 private:
  io_context* ctx_;  // null once the pool is gone
  unsigned count_;
  std::size_t size_;
  std::byte* memory_ = nullptr;
  void* ring_ = nullptr;  // io_uring_buf_ring, kernel mode
  std::size_t ring_bytes_ = 0;
  int group_ = -1;
  bool kernel_selected_ = false;
  unsigned available_;
  unsigned users_ = 1;  // the pool itself
  std::vector<unsigned> free_;
  std::vector<multishot_recv_state*> starved_;
  missed_wakeup_sweep sweep_;
};

}  // namespace ringio::detail
