// SPDX-License-Identifier: Apache-2.0
// top_view — what ringio-top shows: rates and levels per loop between two scrapes,
// their totals, and the process and HTTP server figures.
#pragma once

#include <optional>
#include <vector>

#include "top/scrape.hpp"

namespace top {

/// Runs of the loop longer than this count as stalls.
inline constexpr double stall_threshold_seconds = 0.01;

/// One row of the table: a loop, or the total of them all.
struct loop_row {
  int loop = -1;  ///< -1 for the total row
  double ops_per_second = 0;
  double in_flight = 0;
  double cancelled_per_second = 0;
  double failed_per_second = 0;
  double stalls = 0;  ///< runs longer than stall_threshold_seconds in the interval
  /// Upper bound of the slowest run of the interval (its histogram bucket); 0: no run;
  /// infinity: above the last bound (1 s).
  double slowest_run_seconds = 0;
  /// Share of the interval the loop ran (tasks and completions, outside the kernel);
  /// none without loop timing.
  std::optional<double> run_percent;
  double tasks = 0;
  double bytes_in_per_second = 0;
  double bytes_out_per_second = 0;
};

/// The view of the interval between two scrapes.
struct top_view {
  double interval_seconds = 0;
  std::vector<loop_row> loops;
  loop_row total;
  bool has_http = false;
  double requests_per_second = 0;
  double errors_5xx_per_second = 0;
  double connections_active = 0;
  double connections_idle = 0;
  std::optional<double> cpu_percent;  ///< of one CPU (above 100 with several threads)
  bool cpu_from_page = false;
};

/// The view between `before` and `after` (a counter that went down, a restarted
/// process, counts from zero).
top_view compare(const scrape& before, const scrape& after);

}  // namespace top
