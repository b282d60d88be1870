// SPDX-License-Identifier: Apache-2.0
#include "byte_range.hpp"

#include "char_class.hpp"
#include "ringio/http/header_list.hpp"

namespace ringio::http::detail {
namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) noexcept {
  if (s.empty() || s.size() > 18) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<unsigned>(c - '0');
  }
  return true;
}

// One range-spec: "a-b", "a-" or "-n" (the last n bytes).
range_kind parse_spec(std::string_view spec, std::uint64_t size, byte_range& range) noexcept {
  auto dash = spec.find('-');
  if (dash == std::string_view::npos) return range_kind::ignore;
  std::string_view a = spec.substr(0, dash), b = spec.substr(dash + 1);
  if (a.empty()) {
    std::uint64_t n = 0;
    if (!parse_u64(b, n)) return range_kind::ignore;
    if (n == 0 || size == 0) return range_kind::unsatisfiable;
    range = {n < size ? size - n : 0, size - 1};
    return range_kind::satisfiable;
  }
  std::uint64_t first = 0, last = 0;
  if (!parse_u64(a, first)) return range_kind::ignore;
  if (b.empty()) {
    last = size == 0 ? 0 : size - 1;
  } else if (!parse_u64(b, last) || last < first) {
    return range_kind::ignore;
  }
  if (first >= size) return range_kind::unsatisfiable;
  range = {first, last < size ? last : size - 1};
  return range_kind::satisfiable;
}

}  // namespace

range_kind parse_range(std::string_view value, std::uint64_t size, byte_range_list& ranges,
                       std::size_t& count) noexcept {
  count = 0;
  value = trim_ows(value);
  if (value.size() < 6 || !iequals(value.substr(0, 6), "bytes=")) return range_kind::ignore;
  std::size_t specs = 0;
  bool ignore = false;
  for_each_list_element(value.substr(6), [&](std::string_view spec) {
    if (ignore || ++specs > max_byte_ranges) {
      ignore = true;
      return;
    }
    byte_range r;
    range_kind kind = parse_spec(spec, size, r);
    if (kind == range_kind::ignore) ignore = true;
    if (kind == range_kind::satisfiable) ranges[count++] = r;
  });
  // RFC 9110 14.2 lets a server ignore many or overlapping ranges: overlaps would let a
  // short request ask for the same bytes again and again.
  for (std::size_t i = 0; i < count && !ignore; ++i)
    for (std::size_t j = i + 1; j < count && !ignore; ++j)
      ignore = ranges[i].first <= ranges[j].last && ranges[j].first <= ranges[i].last;
  if (ignore || specs == 0) {
    count = 0;
    return range_kind::ignore;
  }
  return count == 0 ? range_kind::unsatisfiable : range_kind::satisfiable;
}

}  // namespace ringio::http::detail
