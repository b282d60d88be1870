// SPDX-License-Identifier: Apache-2.0
// connection_set — one accept loop's connections: the scope that owns their tasks, how
// many are open (for max_connections), the wait for a free slot, and the drain.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stop_token>

#include "ringio/net/stream_socket.hpp"
#include "ringio/scope.hpp"
#include "ringio/serve.hpp"
#include "ringio/task.hpp"
#include "serve/rate_limited_log.hpp"

namespace ringio::detail {

/// Counters shared with other threads (acceptor dispatch, the program's summary).
struct loop_counters {
  std::atomic<int> open{0};
  std::atomic<std::uint64_t> served{0};
};

class connection_set {
 public:
  /// `parent`: the token whose stop cancels every connection at once.
  connection_set(std::stop_token parent, std::size_t limit, loop_counters* counters);

  /// Starts handler(s) as a child task (loop thread of the set).
  void start(const connection_handler& handler, stream_socket s);

  [[nodiscard]] bool full() const noexcept { return open_ >= limit_; }
  [[nodiscard]] std::size_t open() const noexcept { return open_; }

  /// Completes once a connection closes and there is room again, on `stop`, or when
  /// its sleep is cancelled from outside (the loop shutting down).
  task<void> wait_for_room(std::stop_token stop);

  /// Gives the open connections `grace` to finish, then requests their stop, and
  /// completes once all have ended.
  task<void> drain(std::chrono::milliseconds grace);

 private:
  task<void> run(task<void> handler_task);
  void closed() noexcept;
  void report(const std::exception_ptr& error) noexcept;

  scope conns_;
  std::size_t limit_;
  std::size_t open_ = 0;
  loop_counters* counters_;
  std::stop_source* room_waiter_ = nullptr;
  rate_limited_log handler_errors_{std::chrono::seconds(1)};
};

}  // namespace ringio::detail
