// SPDX-License-Identifier: Apache-2.0
// metric_sample — one sample line of a Prometheus text page (format 0.0.4), and the
// parser that reads a page into them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace top {

/// `name{label="value",...} value`: one line of a Prometheus text page.
struct metric_sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;

  /// The value of label `key`, or "" when the sample has none.
  [[nodiscard]] std::string_view label(std::string_view key) const noexcept;
};

/// The samples of a Prometheus text page: comments and blank lines are skipped, and
/// so are lines that do not parse (a timestamp after the value is ignored).
std::vector<metric_sample> parse_prometheus_text(std::string_view page);

}  // namespace top
