// SPDX-License-Identifier: Apache-2.0
// loop_state — the io_context's own bookkeeping, shared with its backend.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "core/loop_metric_counters.hpp"
#include "core/ready_queue.hpp"
#include "ringio/detail/promise_base.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"

namespace ringio::detail {

/// Owns tasks started with io_context::spawn: frees each frame when it finishes.
class detached_sink final : public completion_sink {
 public:
  detached_sink(std::size_t& live, loop_counter& alive) noexcept : live_(live), alive_(alive) {}
  std::coroutine_handle<> on_task_done(std::coroutine_handle<> h, promise_base& p) noexcept override {
    if (p.failed()) {
      try {
        p.rethrow_if_failed();
      } catch (const std::exception& e) {
        log(log_level::error, "exception escaped a spawned task: %s", e.what());
      } catch (...) {
        log(log_level::error, "exception escaped a spawned task");
      }
      std::terminate();
    }
    h.destroy();
    --live_;
    --alive_;
    return std::noop_coroutine();
  }

 private:
  std::size_t& live_;
  loop_counter& alive_;
};

class loop_state {
 public:
  ready_queue ready;
  /// Lock-free inbox (a Treiber stack) filled by other threads.
  std::atomic<remote_item*> inbox{nullptr};
  /// True while the loop is (about to be) blocked in the kernel: wakers must wake it.
  std::atomic<bool> sleeping{false};
  /// Calls from other threads (stop, post) still touching the context: its
  /// destructor waits for them, since such a call may be what made the loop return.
  std::atomic<int> foreign_calls{0};
  /// Synchronous completions left before a readiness backend must yield to the loop.
  unsigned sync_budget = 0;
  static constexpr unsigned sync_budget_per_iteration = 64;
  /// Set while the context shuts down: new operations fail with operation_canceled.
  bool shutting_down = false;
  /// Tasks started with io_context::spawn that have not finished.
  std::size_t detached_tasks = 0;
  /// The loop's metrics (io_context::metrics()); readable from any thread.
  loop_metric_counters counters;
  detached_sink detached{detached_tasks, counters.tasks_alive};
  /// Time the loop and the stall histogram (io_context_options::loop_timing).
  bool timing = true;
  /// io_context_options::busy_poll in ns (0: off), and when the loop last found a
  /// completion: within that much of it the loop asks the kernel without sleeping.
  std::int64_t busy_poll_ns = 0;
  std::int64_t busy_since_ns = 0;
  /// When the current run started: the loop's last return from the kernel, or its
  /// entry (ns, CLOCK_MONOTONIC; 0: the loop is not running).
  std::int64_t last_return_ns = 0;
  /// Set by the backend, when timing, as its wait in the kernel returns: what follows
  /// (dispatching the completions, which resumes tasks) is the loop running, not asleep.
  /// 0: the backend did not set it (the end of its poll counts instead).
  std::int64_t kernel_return_ns = 0;
  loop_statistics stats;
  /// How many times stream_socket::cancel() was asked for each fd number (and each
  /// slot of the direct table): a multi-step operation whose next step would start
  /// after a cancel of its fd ends instead (the cancel request cannot reach a step
  /// submitted behind it). Grown only by a cancel.
  std::vector<std::uint32_t> fd_cancels;
  std::vector<std::uint32_t> direct_cancels;

  [[nodiscard]] std::uint32_t cancel_mark(int fd, bool direct) const noexcept {
    const auto& v = direct ? direct_cancels : fd_cancels;
    return fd >= 0 && static_cast<std::size_t>(fd) < v.size() ? v[static_cast<std::size_t>(fd)] + 1 : 1;
  }
  void note_cancel(int fd, bool direct) {
    if (fd < 0) return;
    auto& v = direct ? direct_cancels : fd_cancels;
    if (static_cast<std::size_t>(fd) >= v.size()) v.resize(static_cast<std::size_t>(fd) + 1, 0);
    ++v[static_cast<std::size_t>(fd)];
  }
};

}  // namespace ringio::detail
