// SPDX-License-Identifier: Apache-2.0
// ringio/metrics/prometheus_writer.hpp — builds a page in the Prometheus text
// exposition format (version 0.0.4): families of counters, gauges and histograms.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace ringio {

/// A label of a sample: name="value" (the value is escaped as the format requires).
struct metric_label {
  std::string_view name;   ///< a label name ([a-zA-Z_][a-zA-Z0-9_]*)
  std::string_view value;  ///< any text
};

/// Appends metric families to a text page in the Prometheus text format 0.0.4. Write
/// each family once, with all its samples right after family(): the format wants a
/// family's samples together. Names are not checked.
class prometheus_writer {
 public:
  /// The Content-Type of the page.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  /// Begins a family: its `# HELP` and `# TYPE` lines. `type`: "counter", "gauge",
  /// "histogram" (or "untyped"); a counter's name should end in `_total`.
  void family(std::string_view name, std::string_view type, std::string_view help);
  /// One sample line: `name{labels} value`.
  void sample(std::string_view name, std::span<const metric_label> labels, std::uint64_t value);
  /// One sample line with a fractional value (seconds).
  void sample(std::string_view name, std::span<const metric_label> labels, double value);
  /// The samples of one histogram: `counts[i]` observations fell at or below
  /// `bounds[i]` and above the bound before it; `counts` has one more entry, for what
  /// exceeded every bound. Writes the cumulative `name_bucket{le=...}` lines (+Inf
  /// last), `name_sum` and `name_count`.
  void histogram(std::string_view name, std::span<const metric_label> labels, std::span<const double> bounds,
                 std::span<const std::uint64_t> counts, double sum);

  /// The page so far.
  [[nodiscard]] const std::string& text() const noexcept { return out_; }
  /// Hands the page over and starts an empty one.
  [[nodiscard]] std::string take() noexcept { return std::exchange(out_, {}); }

 private:
  void begin_sample(std::string_view name, std::span<const metric_label> labels, std::string_view le = {});
  void append_double(double v);

  std::string out_;
};

}  // namespace ringio
