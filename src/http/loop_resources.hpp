// SPDX-License-Identifier: Apache-2.0
// loop_resources — what the HTTP connections of one io_context share (a service of the
// context, so it ends before the ring closes): the small buffer pool that idle
// connections receive into, and a cache of request_states. The cache makes a busy
// server allocation-free; a check each second frees the states that sat unused for a
// whole interval, so memory taken by a storm of connections goes back soon after.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <vector>

#include "request_state.hpp"
#include "ringio/detail/context_service.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/net/buffer_pool.hpp"

namespace ringio {
class io_context;
}

namespace ringio::http::detail {

class connection;

/// A connection's place in its loop's timeout sweep (intrusive list).
struct sweep_hook {
  sweep_hook* prev = nullptr;
  sweep_hook* next = nullptr;
};
/// The sweep's visit of a connection (connection.cpp).
void connection_tick(sweep_hook& h, std::chrono::milliseconds elapsed) noexcept;

class loop_resources : public ringio::detail::context_service {
 public:
  // 1,024 arrivals per loop iteration fit; a later one, or a head larger than a
  // buffer, is received the ordinary way into the connection's request_state.
  static constexpr unsigned pool_buffers = 1024;
  static constexpr std::size_t pool_buffer_size = 1024;
  // The kernel's ring offers this many of them at first (doubling whenever it ran dry):
  // a loop whose connections mostly idle touches 64 KiB of the pool, not all of it.
  static constexpr unsigned initial_ring_buffers = 64;
  static constexpr std::int64_t trim_interval_ns = 250'000'000;

  explicit loop_resources(io_context& ctx);
  ~loop_resources() override;

  buffer_pool& pool() noexcept { return pool_; }
  /// A request_state ready for a connection's first bytes.
  request_state* acquire(std::size_t max_head_bytes);
  void release(request_state* s) noexcept;
  /// A stop source no one has stopped, for a connection's sends while it serves
  /// requests: idle connections hold none (its shared state is a heap chunk).
  std::stop_source take_stop_source();
  /// Takes `s` back for another connection unless it was stopped; leaves `s` empty.
  void give_back(std::stop_source& s) noexcept;

  /// Counts the loop's connections; when many close (a storm ends), the next check
  /// returns the memory they used (cached states, frames, free heap pages).
  void connection_opened() noexcept;
  void connection_closed() noexcept;

  /// Timeouts of the hot path: every `tick_ms` (the smallest any connection asked
  /// for) each watched connection's on_tick() runs, from one timer for the whole loop
  /// rather than one per connection.
  void watch(sweep_hook& h, std::int64_t tick_ms) noexcept;
  void unwatch(sweep_hook& h) noexcept;

  [[nodiscard]] std::size_t cached() const noexcept { return cached_; }
  /// request_states held by connections now (acquired, not yet released).
  [[nodiscard]] std::size_t lent() const noexcept { return lent_; }

 private:
  struct trim_check : ringio::detail::op_base {
    loop_resources* self = nullptr;
  };
  struct sweep_check : ringio::detail::op_base {
    loop_resources* self = nullptr;
  };
  static void on_trim(ringio::detail::op_base& op) noexcept;
  static void on_sweep(ringio::detail::op_base& op) noexcept;
  void schedule_trim() noexcept;
  static void release_free_heap() noexcept;
  void schedule_sweep() noexcept;
  static constexpr std::size_t storm_size = 256;

  io_context& ctx_;
  buffer_pool pool_;
  request_state* free_ = nullptr;
  std::size_t cached_ = 0;
  std::size_t lent_ = 0;
  std::size_t low_water_ = 0;  // the fewest cached since the last check
  std::vector<std::stop_source> spare_stops_;
  std::size_t spare_stops_low_ = 0;  // the fewest spare since the last check
  std::size_t open_ = 0, open_high_ = 0;
  bool storm_ended_ = false;
  trim_check check_;
  bool scheduled_ = false;
  sweep_hook watched_;            // list head
  sweep_hook* cursor_ = nullptr;  // the next to visit during a sweep
  sweep_check sweep_;
  std::int64_t tick_ms_ = 1000;
  bool sweeping_ = false;
};

}  // namespace ringio::http::detail
