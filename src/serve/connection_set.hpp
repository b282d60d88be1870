// SPDX-License-Identifier: Apache-2.0
// connection_set — one accept loop's connections: it owns their tasks (as a scope does,
// receiving each finished task itself, so that a connection costs no wrapper frame), how
// many are open (for max_connections), the wait for a free slot, and the drain.
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stop_token>

#include "ringio/detail/promise_base.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/serve.hpp"
#include "ringio/task.hpp"
#include "serve/rate_limited_log.hpp"

namespace ringio::detail {

/// Counters shared with other threads (acceptor dispatch, the program's summary).
struct loop_counters {
  std::atomic<int> open{0};
  std::atomic<std::uint64_t> served{0};
};

class connection_set final : private completion_sink {
 public:
  /// `parent`: the token whose stop cancels every connection at once.
  connection_set(std::stop_token parent, std::size_t limit, loop_counters* counters);
  connection_set(const connection_set&) = delete;
  connection_set& operator=(const connection_set&) = delete;
  /// Terminates if a connection still runs (drain() first).
  ~connection_set();

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
  struct forward_stop {
    std::stop_source* target;
    void operator()() const noexcept { target->request_stop(); }
  };
  struct join_awaiter {
    connection_set& s;
    bool await_ready() const noexcept { return s.open_ == 0; }
    void await_suspend(std::coroutine_handle<> h) noexcept { s.joiner_ = h; }
    void await_resume() const noexcept {}
  };

  /// A connection's task finished: report its exception, free its frame, count it.
  std::coroutine_handle<> on_task_done(std::coroutine_handle<> h, promise_base& p) noexcept override;
  /// Completes once every connection has ended.
  join_awaiter join() noexcept { return {*this}; }
  void closed() noexcept;
  void report(const std::exception_ptr& error) noexcept;

  std::stop_source stop_;  // stops every connection (the drain's deadline, or `parent`)
  std::stop_token token_ = stop_.get_token();
  std::optional<std::stop_callback<forward_stop>> parent_link_;
  std::coroutine_handle<> joiner_;
  std::size_t limit_;
  std::size_t open_ = 0;
  loop_counters* counters_;
  std::stop_source* room_waiter_ = nullptr;
  rate_limited_log handler_errors_{std::chrono::seconds(1)};
};

}  // namespace ringio::detail
