// SPDX-License-Identifier: Apache-2.0
#include "top/scrape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace top {
namespace {

std::optional<int> loop_index(const metric_sample& s) {
  std::string_view v = s.label("loop");
  int i = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), i);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || i < 0) return std::nullopt;
  return i;
}

double bucket_bound(std::string_view le) {
  if (le == "+Inf") return HUGE_VAL;
  std::string text(le);
  return std::strtod(text.c_str(), nullptr);
}

// The loop metric `name` names, or nullptr for another one.
double* loop_field(loop_counters& l, std::string_view name) {
  if (name == "ringio_operations_started_total") return &l.started;
  if (name == "ringio_operations_completed_total") return &l.completed;
  if (name == "ringio_operations_cancelled_total") return &l.cancelled;
  if (name == "ringio_operations_failed_total") return &l.failed;
  if (name == "ringio_loop_run_seconds_sum") return &l.run_seconds;
  if (name == "ringio_loop_iterations_total") return &l.iterations;
  if (name == "ringio_loop_tasks_alive") return &l.tasks;
  if (name == "ringio_loop_bytes_received_total") return &l.bytes_in;
  if (name == "ringio_loop_bytes_sent_total") return &l.bytes_out;
  return nullptr;
}

}  // namespace

scrape read_scrape(const std::vector<metric_sample>& samples, double at_seconds) {
  scrape out;
  out.at_seconds = at_seconds;
  for (const metric_sample& s : samples) {
    if (s.name.starts_with("ringio_http_")) {
      out.has_http = true;
      if (s.name == "ringio_http_responses_total") {
        out.responses += s.value;
        if (s.label("class") == "5xx") out.responses_5xx += s.value;
      } else if (s.name == "ringio_http_connections_active") {
        out.connections_active += s.value;
      } else if (s.name == "ringio_http_connections_idle") {
        out.connections_idle += s.value;
      }
      continue;
    }
    if (s.name == "process_cpu_seconds_total") {
      out.cpu_seconds = s.value;
      out.cpu_from_page = true;
      continue;
    }
    auto index = loop_index(s);
    if (!index) continue;
    if (s.name == "ringio_loop_run_seconds_bucket") {
      out.loops[*index].run_buckets.emplace_back(bucket_bound(s.label("le")), s.value);
    } else if (double* f = loop_field(out.loops[*index], s.name)) {
      *f += s.value;
    }
  }
  for (auto& [i, l] : out.loops) std::sort(l.run_buckets.begin(), l.run_buckets.end());
  return out;
}

}  // namespace top
