// SPDX-License-Identifier: Apache-2.0
// prometheus_writer: the text format's lines, escapes and number spellings.
#include "ringio/metrics/prometheus_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>

namespace ringio {
namespace {

// HELP text escapes backslash and newline; label values also the double quote.
void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

void prometheus_writer::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  append_escaped(out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void prometheus_writer::begin_sample(std::string_view name, std::span<const metric_label> labels, std::string_view le) {
  out_ += name;
  if (labels.empty() && le.empty()) {
    out_ += ' ';
    return;
  }
  out_ += '{';
  const char* sep = "";
  for (const metric_label& l : labels) {
    out_ += sep;
    out_ += l.name;
    out_ += "=\"";
    append_escaped(out_, l.value, true);
    out_ += '"';
    sep = ",";
  }
  if (!le.empty()) {
    out_ += sep;
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += "} ";
}

void prometheus_writer::append_double(double v) {
  if (std::isnan(v)) {
    out_ += "NaN";
  } else if (std::isinf(v)) {
    out_ += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact spelling
    out_.append(buf, static_cast<std::size_t>(end - buf));
  }
}

void prometheus_writer::sample(std::string_view name, std::span<const metric_label> labels, std::uint64_t value) {
  begin_sample(name, labels);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, static_cast<std::size_t>(end - buf));
  out_ += '\n';
}

void prometheus_writer::sample(std::string_view name, std::span<const metric_label> labels, double value) {
  begin_sample(name, labels);
  append_double(value);
  out_ += '\n';
}

void prometheus_writer::histogram(std::string_view name, std::span<const metric_label> labels,
                                  std::span<const double> bounds, std::span<const std::uint64_t> counts, double sum) {
  std::string metric(name);
  const std::size_t base = metric.size();
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    char le[32];
    std::string_view le_text = "+Inf";
    if (i < bounds.size()) {
      auto [end, ec] = std::to_chars(le, le + sizeof le, bounds[i]);
      le_text = std::string_view(le, static_cast<std::size_t>(end - le));
    }
    metric.resize(base);
    metric += "_bucket";
    begin_sample(metric, labels, le_text);
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, cumulative);
    out_.append(buf, static_cast<std::size_t>(end - buf));
    out_ += '\n';
  }
  metric.resize(base);
  metric += "_sum";
  sample(metric, labels, sum);
  metric.resize(base);
  metric += "_count";
  sample(metric, labels, cumulative);
}

}  // namespace ringio
