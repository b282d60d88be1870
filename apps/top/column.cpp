// SPDX-License-Identifier: Apache-2.0
#include "top/column.hpp"

#include <algorithm>

namespace top {

const std::array<column_info, 9> columns{{
    {column::loop, "LOOP", "loop", 'l', 5},
    {column::ops, "OPS/S", "ops", 'o', 9},
    {column::in_flight, "INFLIGHT", "inflight", 'i', 9},
    {column::cancelled, "CANCEL/S", "cancel", 'c', 9},
    {column::failed, "FAIL/S", "fail", 'f', 8},
    {column::stalls, "STALLS", "stalls", 's', 7},
    {column::slowest, "SLOWEST", "slowest", 'w', 8},
    {column::run, "RUN%", "run", 'u', 6},
    {column::tasks, "TASKS", "tasks", 't', 7},
}};

std::optional<column> column_named(std::string_view name) {
  for (const column_info& c : columns) {
    if (c.name == name) return c.id;
  }
  return std::nullopt;
}

std::optional<column> column_for_key(char key) {
  for (const column_info& c : columns) {
    if (c.key == key) return c.id;
  }
  return std::nullopt;
}

const column_info& info(column c) { return columns[static_cast<std::size_t>(c)]; }

namespace {

double sort_value(const loop_row& r, column by) {
  switch (by) {
    case column::loop:
      return r.loop;
    case column::ops:
      return r.ops_per_second;
    case column::in_flight:
      return r.in_flight;
    case column::cancelled:
      return r.cancelled_per_second;
    case column::failed:
      return r.failed_per_second;
    case column::stalls:
      return r.stalls;
    case column::slowest:
      return r.slowest_run_seconds;
    case column::run:
      return r.run_percent.value_or(-1);
    case column::tasks:
      return r.tasks;
  }
  return 0;
}

}  // namespace

void sort_rows(std::vector<loop_row>& rows, column by, bool reversed) {
  const bool descending = (by != column::loop) != reversed;
  std::stable_sort(rows.begin(), rows.end(), [&](const loop_row& a, const loop_row& b) {
    const double x = sort_value(a, by), y = sort_value(b, by);
    if (x != y) return descending ? x > y : x < y;
    return a.loop < b.loop;
  });
}

}  // namespace top
