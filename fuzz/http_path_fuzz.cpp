// SPDX-License-Identifier: Apache-2.0
// Fuzzes what static files make of request paths, Range values and HTTP dates: a
// decoded path never holds a ".." segment, an absolute start or a NUL; served ranges
// lie inside the file and never overlap; a parsed date formats back to the same time.
// Also the percent decoders: a router capture judged clean decodes strictly without
// NUL or a hidden '/', and query pairs stay inside their scratch buffer, each part at
// its own offset, flagged malformed exactly when strict decoding of it fails.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "byte_range.hpp"
#include "file_path.hpp"
#include "http_date.hpp"
#include "percent_coding.hpp"
#include "ringio/http/percent_decode.hpp"
#include "ringio/http/query_params.hpp"

using namespace ringio::http::detail;

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  char out[256];
  std::size_t len = 0;
  if (decode_relative_path(in, out, sizeof out, len) == 0) {
    std::string_view path(out, len);
    require(len < sizeof out && out[len] == '\0' && path.find('\0') == std::string_view::npos);
    require(!path.starts_with('/') && !path.ends_with('/') && path.find("//") == std::string_view::npos);
    std::size_t from = 0;
    while (from <= path.size()) {
      auto slash = path.find('/', from);
      std::string_view seg = path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from);
      require(seg != ".." && seg != "." && (seg.size() > 0 || path.empty()));
      if (slash == std::string_view::npos) break;
      from = slash + 1;
    }
  }

  std::uint64_t file_size = size == 0 ? 0 : data[0] * 1000u + size;
  byte_range_list ranges;
  std::size_t count = 0;
  if (parse_range(in, file_size, ranges, count) == range_kind::satisfiable) {
    require(count >= 1 && count <= max_byte_ranges);
    for (std::size_t i = 0; i < count; ++i) {
      require(ranges[i].first <= ranges[i].last && ranges[i].last < file_size);
      for (std::size_t j = 0; j < i; ++j) require(ranges[i].last < ranges[j].first || ranges[j].last < ranges[i].first);
    }
  } else {
    require(count == 0);
  }

  if (auto t = parse_http_date(in)) {
    char text[http_date_size];
    format_http_date(*t, text);
    auto again = parse_http_date(std::string_view(text, http_date_size));
    require(again && *again == *t);
  }
  auto strict = ringio::http::percent_decode(in);
  if (clean_capture(in)) {
    // Raw NUL and '/' never reach a capture (the parser refuses the one, segments end
    // at the other); escapes must not bring them in.
    require(strict.has_value());
    require(strict->find('\0') == std::string::npos || in.find('\0') != std::string_view::npos);
    require(strict->find('/') == std::string::npos || in.find('/') != std::string_view::npos);
  }
  if (!strict) require(!clean_capture(in));

  std::string scratch(in.size(), '\0');
  const char* lo = scratch.data();
  const char* hi = lo + scratch.size();
  const char* last_end = lo;
  for (const auto& p : ringio::http::query_params(in, scratch)) {
    require(p.name.data() >= last_end && p.name.data() + p.name.size() <= hi);
    require(p.value.data() >= p.name.data() + p.name.size() && p.value.data() + p.value.size() <= hi);
    last_end = p.value.data() + p.value.size();
    std::size_t at = static_cast<std::size_t>(p.name.data() - lo);
    std::string_view piece = in.substr(at, in.find('&', at) - at);
    std::string_view raw_name = piece.substr(0, piece.find('='));
    std::string_view raw_value =
        raw_name.size() < piece.size() ? piece.substr(raw_name.size() + 1) : std::string_view{};
    bool strict_ok =
        ringio::http::percent_decode(raw_name).has_value() && ringio::http::percent_decode(raw_value).has_value();
    require(p.malformed != strict_ok);
  }
  return 0;
}
