// SPDX-License-Identifier: Apache-2.0
// ringio/blocking/blocking_pool.hpp — a bounded pool of threads that runs blocking
// functions for spawn_blocking and sends each result back to the loop that asked.
#pragma once

#include <cstddef>
#include <memory>

#include "ringio/blocking/blocking_pool_options.hpp"

namespace ringio {

class io_context;

namespace detail {
struct blocking_job;
}

/// Threads that run blocking functions (spawn_blocking) off the loops. One pool may
/// serve any number of loops: each result goes back to the loop whose task awaited it,
/// through that loop's lock-free inbox.
///
/// Every io_context has a default pool, made on its first spawn_blocking() with
/// io_context_options::blocking and destroyed with the context; a pool of your own is
/// passed to spawn_blocking(pool, fn). Such a pool must outlive every task awaiting
/// work on it (destroy it after those tasks finished, e.g. after the loops).
///
/// Destroying a pool: functions still queued never run (their awaiters, if any, see
/// operation_canceled); the destructor waits for the functions already running.
class blocking_pool {
 public:
  /// A pool that starts up to `opts.threads` threads, on demand.
  explicit blocking_pool(blocking_pool_options opts = {});
  /// Cancels the queued functions and waits for the running ones (see the class).
  ~blocking_pool();
  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  /// The limits it was made with (zeros raised to 1).
  [[nodiscard]] const blocking_pool_options& options() const noexcept;
  /// Functions waiting for a thread, now (any thread).
  [[nodiscard]] std::size_t queued() const noexcept;
  /// Functions running, now (any thread).
  [[nodiscard]] std::size_t running() const noexcept;
  /// Threads started so far (never more than options().threads).
  [[nodiscard]] std::size_t threads() const noexcept;

  /// The default pool of `ctx`, made on first use with io_context_options::blocking
  /// (on the loop's thread).
  [[nodiscard]] static blocking_pool& default_of(io_context& ctx);

  /// @cond INTERNAL
  /// Queues `job`; false when the queue is full (the job is untouched).
  bool submit(detail::blocking_job& job);
  /// Takes `job` out of the queue if it has not started; true if it was taken.
  bool withdraw(detail::blocking_job& job) noexcept;
  /// @endcond

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace ringio
