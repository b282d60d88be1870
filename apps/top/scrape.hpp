// SPDX-License-Identifier: Apache-2.0
// scrape — what one read of a ringio /metrics page says, per loop and for the HTTP
// server, at one moment.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "top/metric_sample.hpp"

namespace top {

/// One loop's counters and gauges (operation counters summed over their kinds).
struct loop_counters {
  double started = 0;
  double completed = 0;
  double cancelled = 0;
  double failed = 0;
  double run_seconds = 0;  ///< ringio_loop_run_seconds_sum
  double iterations = 0;
  double tasks = 0;
  double bytes_in = 0;
  double bytes_out = 0;
  /// ringio_loop_run_seconds: (upper bound, cumulative count), +Inf last.
  std::vector<std::pair<double, double>> run_buckets;
};

/// One read of the page.
struct scrape {
  double at_seconds = 0;  ///< when it was read (steady clock)
  std::map<int, loop_counters> loops;
  bool has_http = false;  ///< the page has ringio_http_* metrics
  double responses = 0;
  double responses_5xx = 0;
  double connections_active = 0;
  double connections_idle = 0;
  /// process_cpu_seconds_total when the page has it, else the /proc reading.
  std::optional<double> cpu_seconds;
  bool cpu_from_page = false;
};

/// The scrape that `samples` (read at `at_seconds`) describe.
scrape read_scrape(const std::vector<metric_sample>& samples, double at_seconds);

}  // namespace top
