// SPDX-License-Identifier: Apache-2.0
// parse_outcome — what a parser made of one complete input, in a form two parsers
// can be compared by: accepted or not, the request line, the fields, the body.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request_parser.hpp"

namespace ringio_test {

struct parse_outcome {
  enum kind_t { accepted, rejected, incomplete } kind = incomplete;
  int status = 0;     // ringio's status for rejections
  std::string error;  // Beast's message for rejections
  std::string method, target;
  int version = 0;  // 10 or 11
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  std::size_t consumed = 0;    // bytes of the message, body included
  bool head_complete = false;  // the head was parsed (even if the body is incomplete)

  [[nodiscard]] bool has_field(std::string_view name) const {
    for (const auto& f : fields)
      if (ringio::http::iequals(f.first, name)) return true;
    return false;
  }
  [[nodiscard]] std::size_t count_field(std::string_view name) const {
    std::size_t n = 0;
    for (const auto& f : fields) n += ringio::http::iequals(f.first, name) ? 1 : 0;
    return n;
  }
};

/// ringio's parser and body framing, as the server runs them (1 MiB body limit), on `in` given whole, or `step` bytes
/// at a time (0: whole).
inline parse_outcome ringio_parse(std::string in, std::size_t step = 0) {
  using namespace ringio::http;
  parse_outcome out;
  request req;
  request_parser p(16 * 1024);
  parse_result h;
  std::size_t avail = step == 0 ? in.size() : 0;
  do {
    avail = step == 0 ? in.size() : std::min(in.size(), avail + step);
    h = p.parse(std::string_view(in).substr(0, avail), req);
  } while (h.state == parse_state::incomplete && avail < in.size());
  if (h.state == parse_state::incomplete) return out;
  if (h.state == parse_state::error) {
    out.kind = parse_outcome::rejected;
    out.status = h.status;
    return out;
  }
  out.method = std::string(req.method_name());
  out.target = std::string(req.target());
  out.version = 10 + req.version_minor();
  for (const auto& f : req.headers()) out.fields.emplace_back(f.name, f.value);
  if (req.chunked()) {
    chunked_decoder d(1 << 20, 16 * 1024);
    auto st = d.decode(in.data() + h.size, in.size() - h.size);  // in place, as the server does
    if (st == chunked_decoder::status::need_more) return out;
    if (st == chunked_decoder::status::error) {
      out.kind = parse_outcome::rejected;
      out.status = d.error_status();
      return out;
    }
    out.body = in.substr(h.size, d.body_size());
    out.consumed = h.size + d.consumed();
  } else {
    if (req.content_length() > (1 << 20)) {  // the server answers 413 before reading it
      out.kind = parse_outcome::rejected;
      out.status = 413;
      return out;
    }
    auto len = static_cast<std::size_t>(std::max<std::int64_t>(req.content_length(), 0));
    if (in.size() - h.size < len) return out;
    out.body = in.substr(h.size, len);
    out.consumed = h.size + len;
  }
  out.kind = parse_outcome::accepted;
  return out;
}

/// Boost.Beast's basic_parser on the same input (defined in beast_reference.cpp).
parse_outcome beast_parse(const std::string& in);

}  // namespace ringio_test
