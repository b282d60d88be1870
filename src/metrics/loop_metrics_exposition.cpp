// SPDX-License-Identifier: Apache-2.0
// write_loop_metrics: one family per loop_metrics field.
#include "ringio/metrics/loop_metrics_exposition.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ringio {
namespace {

using field = std::uint64_t loop_metrics::*;
using kind_field = std::array<std::uint64_t, loop_metrics::kinds> loop_metrics::*;

struct scalar_family {
  const char* name;
  const char* type;
  const char* help;
  field value;
};

constexpr std::array<scalar_family, 13> scalars{{
    {"ringio_loop_bytes_received_total", "counter", "Bytes received by socket reads.", &loop_metrics::bytes_in},
    {"ringio_loop_bytes_sent_total", "counter", "Bytes sent by socket writes.", &loop_metrics::bytes_out},
    {"ringio_loop_cq_overflows_total", "counter", "io_uring waits that reported completions dropped on CQ overflow.",
     &loop_metrics::cq_overflows},
    {"ringio_loop_no_buffers_total", "counter", "Multishot receives ended by ENOBUFS (buffer pool empty).",
     &loop_metrics::no_buffers},
    {"ringio_loop_multishot_rearms_total", "counter", "Multishot receive requests submitted again.",
     &loop_metrics::multishot_rearms},
    {"ringio_loop_backlog_waits_total", "counter", "Operations that waited behind the in-flight cap.",
     &loop_metrics::backlog_waits},
    {"ringio_loop_missed_wakeup_sweeps_total", "counter", "Missed-wakeup sweeps that found a receiver to re-arm.",
     &loop_metrics::missed_wakeup_sweeps},
    {"ringio_loop_posts_received_total", "counter", "Items posted to the loop from other threads.",
     &loop_metrics::posts_received},
    {"ringio_loop_wakeups_total", "counter", "Wake-ups received from other threads or loops.", &loop_metrics::wakeups},
    {"ringio_loop_iterations_total", "counter", "Loop iterations.", &loop_metrics::iterations},
    {"ringio_loop_kernel_waits_total", "counter", "Calls into the kernel to submit or wait.",
     &loop_metrics::kernel_waits},
    {"ringio_loop_tasks_alive", "gauge", "Tasks started with io_context::spawn that have not finished.",
     &loop_metrics::tasks_alive},
    {"ringio_loop_fibers_alive", "gauge", "Fibers of the loop that have not finished.", &loop_metrics::fibers_alive},
}};

struct kind_family {
  const char* name;
  const char* help;
  kind_field value;
};

constexpr std::array<kind_family, 4> per_kind{{
    {"ringio_operations_started_total", "Operations (and steps of multi-step ones) started, by kind.",
     &loop_metrics::ops_started},
    {"ringio_operations_completed_total", "Operations (and steps) that have their result, by kind.",
     &loop_metrics::ops_completed},
    {"ringio_operations_cancelled_total", "Operations completed with operation_canceled, by kind.",
     &loop_metrics::ops_cancelled},
    {"ringio_operations_failed_total", "Operations completed with another error (timeouts included), by kind.",
     &loop_metrics::ops_failed},
}};

constexpr double ns_to_s = 1e-9;

}  // namespace

void write_loop_metrics(prometheus_writer& out, std::span<const loop_metrics> loops) {
  std::string index;
  auto loop_label = [&](std::size_t i) {
    index = std::to_string(i);
    return metric_label{"loop", index};
  };
  for (const kind_family& f : per_kind) {
    out.family(f.name, "counter", f.help);
    for (std::size_t i = 0; i < loops.size(); ++i) {
      for (std::size_t k = 0; k < loop_metrics::kinds; ++k) {
        const metric_label labels[] = {loop_label(i), {"kind", loop_metrics::kind_names[k]}};
        out.sample(f.name, labels, (loops[i].*f.value)[k]);
      }
    }
  }
  for (const scalar_family& f : scalars) {
    out.family(f.name, f.type, f.help);
    for (std::size_t i = 0; i < loops.size(); ++i) {
      const metric_label labels[] = {loop_label(i)};
      out.sample(f.name, labels, loops[i].*f.value);
    }
  }
  out.family("ringio_loop_asleep_seconds_total", "counter",
             "Time the loop was blocked in the kernel waiting for work.");
  for (std::size_t i = 0; i < loops.size(); ++i) {
    const metric_label labels[] = {loop_label(i)};
    out.sample("ringio_loop_asleep_seconds_total", labels, static_cast<double>(loops[i].asleep_ns) * ns_to_s);
  }
  out.family("ringio_loop_run_seconds", "histogram",
             "How long the loop ran between two calls into the kernel (long runs stall every task of the loop).");
  for (std::size_t i = 0; i < loops.size(); ++i) {
    const metric_label labels[] = {loop_label(i)};
    out.histogram("ringio_loop_run_seconds", labels, loop_metrics::stall_bounds, loops[i].stall_buckets_count,
                  static_cast<double>(loops[i].stall_sum_ns) * ns_to_s);
  }
}

}  // namespace ringio
