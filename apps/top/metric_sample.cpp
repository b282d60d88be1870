// SPDX-License-Identifier: Apache-2.0
#include "top/metric_sample.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

namespace top {
namespace {

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
}

void skip_blanks(std::string_view line, std::size_t& i) noexcept {
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
}

// `{a="x",b="y"}` from line[i] (at '{'); i ends after '}'.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_labels(std::string_view line, std::size_t& i) {
  std::vector<std::pair<std::string, std::string>> labels;
  ++i;  // '{'
  for (;;) {
    skip_blanks(line, i);
    if (i < line.size() && line[i] == '}') {
      ++i;
      return labels;
    }
    std::size_t start = i;
    while (i < line.size() && is_name_char(line[i])) ++i;
    std::string key(line.substr(start, i - start));
    skip_blanks(line, i);
    if (key.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return std::nullopt;
    i += 2;
    std::string value;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\' && i + 1 < line.size()) {
        ++i;
        value += line[i] == 'n' ? '\n' : line[i];
      } else {
        value += line[i];
      }
      ++i;
    }
    if (i >= line.size()) return std::nullopt;
    ++i;  // closing quote
    labels.emplace_back(std::move(key), std::move(value));
    skip_blanks(line, i);
    if (i < line.size() && line[i] == ',') ++i;
  }
}

std::optional<double> parse_value(std::string_view text) {
  if (text == "+Inf" || text == "Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') return std::nullopt;
  return v;
}

std::optional<metric_sample> parse_line(std::string_view line) {
  std::size_t i = 0;
  skip_blanks(line, i);
  std::size_t start = i;
  while (i < line.size() && is_name_char(line[i])) ++i;
  if (i == start) return std::nullopt;
  metric_sample s;
  s.name = std::string(line.substr(start, i - start));
  if (i < line.size() && line[i] == '{') {
    auto labels = parse_labels(line, i);
    if (!labels) return std::nullopt;
    s.labels = std::move(*labels);
  }
  skip_blanks(line, i);
  std::size_t vstart = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  auto v = parse_value(line.substr(vstart, i - vstart));
  if (!v) return std::nullopt;
  s.value = *v;
  return s;
}

}  // namespace

std::string_view metric_sample::label(std::string_view key) const noexcept {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

std::vector<metric_sample> parse_prometheus_text(std::string_view page) {
  std::vector<metric_sample> out;
  while (!page.empty()) {
    std::size_t nl = page.find('\n');
    std::string_view line = page.substr(0, nl);
    page = nl == std::string_view::npos ? std::string_view{} : page.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (auto s = parse_line(line)) out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace top
