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

}  // namespace

range_kind parse_range(std::string_view value, std::uint64_t size, byte_range& range) noexcept {
  value = trim_ows(value);
  if (value.size() < 6 || !iequals(value.substr(0, 6), "bytes=")) return range_kind::ignore;
  std::string_view spec = trim_ows(value.substr(6));
  // Several ranges would need multipart/byteranges; RFC 9110 lets us send the whole.
  if (spec.find(',') != std::string_view::npos) return range_kind::ignore;
  auto dash = spec.find('-');
  if (dash == std::string_view::npos) return range_kind::ignore;
  std::string_view a = spec.substr(0, dash), b = spec.substr(dash + 1);
  if (a.empty()) {  // "-N": the last N bytes
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

}  // namespace ringio::http::detail
