// SPDX-License-Identifier: Apache-2.0
// column — the columns of ringio-top's table: heading, sort key, width, and the value
// a row is sorted by.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "top/top_view.hpp"

namespace top {

/// A column of the table, in display order.
enum class column { loop, ops, in_flight, cancelled, failed, stalls, slowest, run, tasks };

/// How a column looks and sorts.
struct column_info {
  column id;
  std::string_view heading;
  std::string_view name;  ///< for --sort
  char key;               ///< the key that sorts by it
  int width;
};

/// Every column, in display order.
extern const std::array<column_info, 9> columns;

/// The column `name` (a column_info::name) names, if any.
std::optional<column> column_named(std::string_view name);
/// The column key `key` sorts by, if any.
std::optional<column> column_for_key(char key);
/// The info of `c`.
const column_info& info(column c);

/// Sorts `rows` by `by`: descending (the busiest first) unless `ascending`; the loop
/// index breaks ties. Loops sort by index, ascending unless reversed.
void sort_rows(std::vector<loop_row>& rows, column by, bool reversed);

}  // namespace top
