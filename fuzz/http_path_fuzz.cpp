// Fuzzes what static files make of request paths, Range values and HTTP dates: a
// decoded path never holds a ".." segment, an absolute start or a NUL; served ranges
// lie inside the file and never overlap; a parsed date formats back to the same time.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "byte_range.hpp"
#include "file_path.hpp"
#include "http_date.hpp"

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
  return 0;
}
