// SPDX-License-Identifier: Apache-2.0
// ringio/loop_metrics.hpp — a snapshot of one loop's metrics (io_context::metrics()),
// which snapshots of other loops can be added to (runtime::metrics()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringio {

/// What one event loop counted since it was created: a copy taken at one moment, safe
/// to take from any thread (io_context::metrics()). Counters only grow; the gauges
/// (tasks_alive, fibers_alive) are the values at the moment of the copy. Adding two
/// snapshots sums every field (runtime::metrics() sums its loops). docs/operations.md
/// ("Metrics") says what each one means.
struct loop_metrics {
  /// Number of operation kinds: io (socket and file operations), timer (sleeps), nop
  /// (yields through the kernel), event (waits completed by other ringio code).
  static constexpr std::size_t kinds = 4;
  /// The names of the kinds, indexed like the per-kind arrays.
  static constexpr std::array<std::string_view, kinds> kind_names{"io", "timer", "nop", "event"};
  /// Upper bounds in seconds of the stall histogram's buckets; one more bucket counts
  /// what is longer than the last bound (+Inf).
  static constexpr std::array<double, 12> stall_bounds{0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                       0.0025,  0.005,   0.01,   0.05,    0.1,    1.0};
  /// Buckets of the stall histogram: one per bound, and +Inf.
  static constexpr std::size_t stall_buckets = stall_bounds.size() + 1;

  /// Operations (and steps of multi-step operations) handed to the loop, by kind.
  std::array<std::uint64_t, kinds> ops_started{};
  /// Of those, the ones that have their result, by kind (cancelled and failed ones too).
  std::array<std::uint64_t, kinds> ops_completed{};
  /// Completed with operation_canceled (a stop, a cancel, the loop shutting down).
  std::array<std::uint64_t, kinds> ops_cancelled{};
  /// Completed with another error, a with_timeout deadline included.
  std::array<std::uint64_t, kinds> ops_failed{};
  std::uint64_t bytes_in = 0;              ///< bytes received by socket reads
  std::uint64_t bytes_out = 0;             ///< bytes sent by socket writes
  std::uint64_t cq_overflows = 0;          ///< io_uring waits that reported dropped completions
  std::uint64_t no_buffers = 0;            ///< multishot receives ended by ENOBUFS (pool empty)
  std::uint64_t multishot_rearms = 0;      ///< multishot receive requests submitted again
  std::uint64_t backlog_waits = 0;         ///< operations that waited behind max_in_flight
  std::uint64_t missed_wakeup_sweeps = 0;  ///< sweeps that found a receiver to re-arm
  std::uint64_t posts_received = 0;        ///< items posted to the loop from other threads
  std::uint64_t wakeups = 0;               ///< wake-ups received (ring messages, futex or eventfd)
  std::uint64_t iterations = 0;            ///< loop iterations
  std::uint64_t kernel_waits = 0;          ///< calls into the kernel to submit or wait
  std::uint64_t asleep_ns = 0;             ///< time blocked in the kernel waiting for work
  /// How long the loop ran between two calls into the kernel: counts per bucket (not
  /// cumulative; see stall_bounds).
  std::array<std::uint64_t, stall_buckets> stall_buckets_count{};
  std::uint64_t stall_sum_ns = 0;  ///< the sum of those durations
  std::uint64_t tasks_alive = 0;   ///< tasks started with io_context::spawn, not finished
  std::uint64_t fibers_alive = 0;  ///< fibers of the loop not finished (ringio::fiber)

  /// The number of stall observations (the sum of the buckets).
  [[nodiscard]] std::uint64_t stall_count() const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t c : stall_buckets_count) n += c;
    return n;
  }

  /// Adds every field of `o` to this one.
  loop_metrics& operator+=(const loop_metrics& o) noexcept {
    for (std::size_t k = 0; k < kinds; ++k) {
      ops_started[k] += o.ops_started[k];
      ops_completed[k] += o.ops_completed[k];
      ops_cancelled[k] += o.ops_cancelled[k];
      ops_failed[k] += o.ops_failed[k];
    }
    for (std::size_t b = 0; b < stall_buckets; ++b) stall_buckets_count[b] += o.stall_buckets_count[b];
    bytes_in += o.bytes_in;
    bytes_out += o.bytes_out;
    cq_overflows += o.cq_overflows;
    no_buffers += o.no_buffers;
    multishot_rearms += o.multishot_rearms;
    backlog_waits += o.backlog_waits;
    missed_wakeup_sweeps += o.missed_wakeup_sweeps;
    posts_received += o.posts_received;
    wakeups += o.wakeups;
    iterations += o.iterations;
    kernel_waits += o.kernel_waits;
    asleep_ns += o.asleep_ns;
    stall_sum_ns += o.stall_sum_ns;
    tasks_alive += o.tasks_alive;
    fibers_alive += o.fibers_alive;
    return *this;
  }
};

}  // namespace ringio
