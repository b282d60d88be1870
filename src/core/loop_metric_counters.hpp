// SPDX-License-Identifier: Apache-2.0
// loop_metric_counters — the live counters behind loop_metrics. Only the loop's thread
// writes them (detail::loop_counter); any thread may read them, so a scrape needs no
// help from the loop.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "ringio/detail/loop_counter.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/loop_metrics.hpp"

namespace ringio::detail {

/// The counters of one loop (see loop_metrics for their meaning).
struct loop_metric_counters {
  loop_counter ops_started[loop_metrics::kinds];
  loop_counter ops_completed[loop_metrics::kinds];
  loop_counter ops_cancelled[loop_metrics::kinds];
  loop_counter ops_failed[loop_metrics::kinds];
  loop_counter bytes_in, bytes_out, cq_overflows, no_buffers, multishot_rearms, backlog_waits, missed_wakeup_sweeps,
      posts_received, wakeups, iterations, kernel_waits, asleep_ns;
  loop_counter stall[loop_metrics::stall_buckets];
  loop_counter stall_sum_ns, tasks_alive, fibers_alive;
  /// Every result noted, of any kind (the loop's thread only: busy polling's "found work").
  std::uint64_t results = 0;

  void note_stall(std::int64_t ns) noexcept {
    const double s = static_cast<double>(ns) * 1e-9;
    std::size_t b = 0;
    while (b < loop_metrics::stall_bounds.size() && s > loop_metrics::stall_bounds[b]) ++b;
    ++stall[b];
    stall_sum_ns.add(static_cast<std::uint64_t>(ns));
  }

  /// An operation (or one step of it) has its result in op.res.
  void note_result(const op_base& op) noexcept {
    const auto k = static_cast<std::size_t>(op.kind);
    ++results;
    ++ops_completed[k];
    if (op.res >= 0) {
      if (op.counts_bytes && op.res > 0)
        (op.want == interest::readable ? bytes_in : bytes_out).add(static_cast<std::uint64_t>(op.res));
    } else if (op.res == -ECANCELED && !op.timed_out) {
      ++ops_cancelled[k];
    } else {
      ++ops_failed[k];
    }
  }

  [[nodiscard]] loop_metrics snapshot() const noexcept {
    loop_metrics m;
    for (std::size_t k = 0; k < loop_metrics::kinds; ++k) {
      m.ops_started[k] = ops_started[k].get();
      m.ops_completed[k] = ops_completed[k].get();
      m.ops_cancelled[k] = ops_cancelled[k].get();
      m.ops_failed[k] = ops_failed[k].get();
    }
    for (std::size_t b = 0; b < loop_metrics::stall_buckets; ++b) m.stall_buckets_count[b] = stall[b].get();
    m.bytes_in = bytes_in.get();
    m.bytes_out = bytes_out.get();
    m.cq_overflows = cq_overflows.get();
    m.no_buffers = no_buffers.get();
    m.multishot_rearms = multishot_rearms.get();
    m.backlog_waits = backlog_waits.get();
    m.missed_wakeup_sweeps = missed_wakeup_sweeps.get();
    m.posts_received = posts_received.get();
    m.wakeups = wakeups.get();
    m.iterations = iterations.get();
    m.kernel_waits = kernel_waits.get();
    m.asleep_ns = asleep_ns.get();
    m.stall_sum_ns = stall_sum_ns.get();
    m.tasks_alive = tasks_alive.get();
    m.fibers_alive = fibers_alive.get();
    return m;
  }
};

}  // namespace ringio::detail
