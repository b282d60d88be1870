// SPDX-License-Identifier: Apache-2.0
#include "top/top_view.hpp"

#include <algorithm>
#include <cmath>

namespace top {
namespace {

double increase(double before, double after) { return after >= before ? after - before : after; }

double cumulative_at(const std::vector<std::pair<double, double>>& buckets, double bound) {
  double count = 0;
  for (const auto& [le, n] : buckets) {
    if (le <= bound) count = n;
  }
  return count;
}

double bucket_increase(const loop_counters& b, const loop_counters& a, double bound) {
  return increase(cumulative_at(b.run_buckets, bound), cumulative_at(a.run_buckets, bound));
}

loop_row row_of(int index, const loop_counters& b, const loop_counters& a, double dt) {
  loop_row r;
  r.loop = index;
  r.ops_per_second = increase(b.completed, a.completed) / dt;
  r.in_flight = std::max(0.0, a.started - a.completed);
  r.cancelled_per_second = increase(b.cancelled, a.cancelled) / dt;
  r.failed_per_second = increase(b.failed, a.failed) / dt;
  r.tasks = a.tasks;
  r.bytes_in_per_second = increase(b.bytes_in, a.bytes_in) / dt;
  r.bytes_out_per_second = increase(b.bytes_out, a.bytes_out) / dt;
  const double runs = bucket_increase(b, a, HUGE_VAL);
  r.stalls = runs - bucket_increase(b, a, stall_threshold_seconds);
  for (const auto& [le, n] : a.run_buckets) {
    if (runs > 0 && bucket_increase(b, a, le) >= runs) {
      r.slowest_run_seconds = le;
      break;
    }
  }
  // Without loop timing (RINGIO_LOOP_TIMING=0) the loop iterates but its run
  // histogram stays still: no run figure. A run is counted when it ends.
  if (increase(b.iterations, a.iterations) == 0) {
    r.run_percent = 0.0;
  } else if (runs > 0) {
    r.run_percent = std::clamp(100.0 * increase(b.run_seconds, a.run_seconds) / dt, 0.0, 100.0);
  }
  return r;
}

void add_to(loop_row& total, const loop_row& r) {
  total.ops_per_second += r.ops_per_second;
  total.in_flight += r.in_flight;
  total.cancelled_per_second += r.cancelled_per_second;
  total.failed_per_second += r.failed_per_second;
  total.stalls += r.stalls;
  total.slowest_run_seconds = std::max(total.slowest_run_seconds, r.slowest_run_seconds);
  if (r.run_percent) total.run_percent = total.run_percent.value_or(0) + *r.run_percent;
  total.tasks += r.tasks;
  total.bytes_in_per_second += r.bytes_in_per_second;
  total.bytes_out_per_second += r.bytes_out_per_second;
}

}  // namespace

top_view compare(const scrape& before, const scrape& after) {
  top_view v;
  v.interval_seconds = std::max(after.at_seconds - before.at_seconds, 1e-6);
  const double dt = v.interval_seconds;
  static const loop_counters none;
  for (const auto& [i, a] : after.loops) {
    auto it = before.loops.find(i);
    v.loops.push_back(row_of(i, it == before.loops.end() ? none : it->second, a, dt));
    add_to(v.total, v.loops.back());
  }
  v.has_http = after.has_http;
  v.requests_per_second = increase(before.responses, after.responses) / dt;
  v.errors_5xx_per_second = increase(before.responses_5xx, after.responses_5xx) / dt;
  v.connections_active = after.connections_active;
  v.connections_idle = after.connections_idle;
  if (before.cpu_seconds && after.cpu_seconds)
    v.cpu_percent = 100.0 * increase(*before.cpu_seconds, *after.cpu_seconds) / dt;
  v.cpu_from_page = after.cpu_from_page;
  return v;
}

}  // namespace top
