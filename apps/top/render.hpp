// SPDX-License-Identifier: Apache-2.0
// render — a top_view as the lines of the screen (plain or with ANSI attributes) and as
// one JSON object.
#pragma once

#include <string>
#include <vector>

#include "top/column.hpp"
#include "top/top_view.hpp"

namespace top {

/// What the header and footer say beyond the view.
struct render_options {
  std::string target;  ///< the URL read
  column sort = column::ops;
  bool reversed = false;
  bool ansi = false;       ///< highlight the sort column and the headings
  bool keys = false;       ///< a last line naming the keys
  std::string cpu_source;  ///< where the CPU figure comes from, or why there is none
  std::string status;      ///< e.g. the last scrape error; empty: none
};

/// The screen: header lines, the table (sorted) with its total row, and the footer.
std::vector<std::string> render_lines(top_view view, const render_options& opts);

/// The view as one JSON object (rates per second, raw numbers; see docs/operations.md).
std::string render_json(const top_view& view, const render_options& opts);

}  // namespace top
