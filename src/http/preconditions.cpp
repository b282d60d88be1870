// SPDX-License-Identifier: Apache-2.0
#include "preconditions.hpp"

#include "char_class.hpp"
#include "http_date.hpp"

namespace ringio::http::detail {
namespace {

// "*" or a list of entity tags: whether one matches `etag`. The weak comparison ignores
// "W/"; in the strong one a weak tag never matches (RFC 9110 8.8.3.2).
bool list_matches(std::string_view list, std::string_view etag, bool weak) {
  bool hit = false;
  for_each_list_element(list, [&](std::string_view tag) {
    if (tag == "*") hit = true;
    if (tag.starts_with("W/")) {
      if (!weak) return;
      tag.remove_prefix(2);
    }
    if (tag == etag) hit = true;
  });
  return hit;
}

}  // namespace

int check_preconditions(const request& r, std::string_view etag, std::time_t modified) {
  // If-Unmodified-Since only without If-Match, If-Modified-Since only without
  // If-None-Match: the entity tag is the more precise validator.
  if (std::string_view match = r.header("If-Match"); !match.empty()) {
    if (!list_matches(match, etag, false)) return 412;
  } else if (auto since = parse_http_date(r.header("If-Unmodified-Since"))) {
    if (modified > *since) return 412;
  }
  if (std::string_view none_match = r.header("If-None-Match"); !none_match.empty()) {
    if (list_matches(none_match, etag, true)) return 304;
  } else if (auto since = parse_http_date(r.header("If-Modified-Since"))) {
    if (modified <= *since) return 304;
  }
  return 0;
}

}  // namespace ringio::http::detail
