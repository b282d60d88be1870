// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/request_parser.hpp"

#include <cstring>

#include "authority.hpp"
#include "char_class.hpp"

namespace ringio::http {
namespace {

using detail::cc_token;
using detail::is;

constexpr int incomplete = -1;  // a line result: more bytes are needed

parse_result fail(int status) noexcept { return {parse_state::error, status, 0}; }

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ): its length at the start of s, or 0.
std::size_t scheme_length(std::string_view s) noexcept {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (s.empty() || !alpha(s[0])) return 0;
  std::size_t n = 1;
  while (n < s.size() && (alpha(s[n]) || is_digit(s[n]) || s[n] == '+' || s[n] == '-' || s[n] == '.')) ++n;
  return n;
}

// 1*DIGIT, at most 18 digits (so it fits an int64 without overflow checks).
bool parse_length(std::string_view s, std::int64_t& out) noexcept {
  if (s.empty() || s.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

}  // namespace

// Each line is parsed in one left-to-right pass that validates as it looks for the
// CR; a line cut short by the end of the input is parsed again on the next call.
// Only the first max_ bytes are looked at, so a verdict never depends on how the
// bytes were split into reads.
parse_result request_parser::parse(std::string_view data, request& req) noexcept {
  const std::string_view d = data.substr(0, max_);
  for (;;) {
    int status;
    if (pos_ + 1 < d.size() && d[pos_] == '\r' && d[pos_ + 1] == '\n') {  // an empty line
      pos_ += 2;
      if (!have_request_line_) continue;  // RFC 9112 2.2: ignore empty lines before the request
      status = finish(req);
      if (status == 0) return {parse_state::complete, 0, pos_};
    } else if (pos_ < d.size() && d[pos_] == '\r' && pos_ + 1 == d.size()) {
      status = incomplete;
    } else if (!have_request_line_) {
      status = parse_request_line(d, req);
      if (status == 0) have_request_line_ = true;
    } else {
      status = parse_field(d, req);
    }
    // Over the limit: a request line that does not fit is a URI too long (414), since
    // nothing else in it can be long; otherwise the fields are too large (431).
    if (status == incomplete) return data.size() > max_ ? fail(have_request_line_ ? 431 : 414) : parse_result{};
    if (status != 0) return fail(status);
  }
}

int request_parser::parse_request_line(std::string_view d, request& req) noexcept {
  // method SP request-target SP HTTP-version CRLF, single spaces only.
  const char *start = d.data() + pos_, *end = d.data() + d.size(), *p = start;
  while (p < end && is(*p, cc_token)) ++p;
  if (p == end) return incomplete;
  if (p == start || *p != ' ') return 400;
  const char* target = ++p;
  p = detail::find_below<0x21>(p, end);  // the target ends at SP and holds no control
  if (p == end) return incomplete;
  if (p == target || *p != ' ') return 400;
  const char* v = p + 1;
  if (end - v < 10) return incomplete;
  if (std::memcmp(v, "HTTP/", 5) != 0 || !is_digit(v[5]) || v[6] != '.' || !is_digit(v[7])) return 400;
  if (v[8] != '\r' || v[9] != '\n') return 400;
  if (v[5] != '1') return 505;
  pos_ = static_cast<std::size_t>(v + 10 - d.data());

  req.method_name_ = {start, static_cast<std::size_t>(target - 1 - start)};
  req.target_ = {target, static_cast<std::size_t>(p - target)};
  // RFC 9110 2.5: a higher minor version of HTTP/1 is served as the highest we implement.
  req.version_minor_ = v[7] == '0' ? 0 : 1;
  req.method_ = parse_method(req.method_name_);
  if (req.method_ == method::unknown) return 501;
  return parse_target(req);
}

int request_parser::parse_target(request& req) noexcept {
  // RFC 9112 3.2: origin-form "/p?q"; absolute-form "http://host/p?q", whose path is
  // what follows the authority; asterisk-form "*" for OPTIONS only. Authority-form
  // belongs to CONNECT, and a server that opens no tunnels refuses any CONNECT.
  if (req.method_ == method::connect) return 400;
  // A fragment is the client's own business and never part of a request-target.
  if (req.target_.find('#') != std::string_view::npos) return 400;
  if (req.target_ == "*") {
    if (req.method_ != method::options) return 400;
    req.path_ = req.target_;
    return 0;
  }
  std::string_view path = req.target_;
  if (auto q = path.find('?'); q != std::string_view::npos) {
    req.query_ = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (!path.starts_with('/')) {
    std::size_t n = scheme_length(path);
    if (n == 0 || path.substr(n, 3) != "://") return 400;
    std::string_view rest = path.substr(n + 3);
    auto slash = rest.find('/');
    if (!detail::valid_authority(rest.substr(0, slash), true)) return 400;
    path = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  }
  req.path_ = path;
  return 0;
}

int request_parser::parse_field(std::string_view d, request& req) noexcept {
  // name ":" OWS value OWS CRLF; no whitespace before the colon, no obs-fold.
  const char *start = d.data() + pos_, *end = d.data() + d.size(), *p = start;
  while (p < end && is(*p, cc_token)) ++p;
  if (p == end) return incomplete;
  if (p == start || *p != ':') return 400;
  std::string_view name(start, static_cast<std::size_t>(p - start));
  ++p;
  while (p < end && detail::is_ws(*p)) ++p;
  const char* v = p;
  for (p = detail::find_control(p, end); p < end && *p == '\t'; p = detail::find_control(p + 1, end)) {
  }
  if (p == end || p + 1 == end) return incomplete;
  if (p[0] != '\r' || p[1] != '\n') return 400;
  const char* ve = p;
  while (ve > v && detail::is_ws(ve[-1])) --ve;
  std::string_view value(v, static_cast<std::size_t>(ve - v));
  pos_ = static_cast<std::size_t>(p + 2 - d.data());
  if (!req.headers_.push({name, value})) return 431;

  // The fields that frame the message or steer the connection, picked by length first.
  switch (name.size()) {
    case 4:
      if (iequals(name, "host") && (++req.host_count_ > 1 || !detail::valid_authority(value, false))) return 400;
      break;
    case 6:
      if (iequals(name, "expect")) (iequals(value, "100-continue") ? req.expect_continue_ : req.expect_unknown_) = true;
      break;
    case 10:
      if (iequals(name, "connection")) {
        bool bad = false;  // RFC 9110 7.6.1: a list of tokens
        detail::for_each_list_element(value, [&](std::string_view token) {
          for (char c : token) bad = bad || !is(c, cc_token);
          if (iequals(token, "close")) req.connection_close_ = true;
          else if (iequals(token, "keep-alive")) req.connection_keep_alive_ = true;
        });
        if (bad) return 400;
      }
      break;
    case 14:
      if (iequals(name, "content-length")) {
        std::int64_t len = 0;
        if (!parse_length(value, len)) return 400;
        if (req.content_length_ >= 0 && req.content_length_ != len) return 400;
        req.content_length_ = len;
      }
      break;
    case 17:
      if (iequals(name, "transfer-encoding")) {
        bool bad = false;
        req.transfer_encoding_ = true;
        detail::for_each_list_element(value, [&](std::string_view coding) {
          if (req.chunked_) bad = true;  // anything after chunked, or chunked twice
          if (iequals(coding, "chunked")) req.chunked_ = true;
          else req.other_coding_ = true;
        });
        if (bad) return 400;
      }
      break;
    default:
      break;
  }
  return 0;
}

int request_parser::finish(request& req) noexcept {
  if (req.version_minor_ == 1 && req.host_count_ == 0) return 400;  // RFC 9112 3.2
  if (req.transfer_encoding_) {
    // RFC 9112 6.1/6.3: with Content-Length or from HTTP/1.0 the framing is unreliable;
    // chunked must be the final coding; other codings are not implemented.
    if (req.content_length_ >= 0 || req.version_minor_ == 0 || !req.chunked_) return 400;
    if (req.other_coding_) return 501;
  }
  if (req.expect_unknown_) return 417;
  req.keep_alive_ =
      req.version_minor_ == 1 ? !req.connection_close_ : req.connection_keep_alive_ && !req.connection_close_;
  return 0;
}

}  // namespace ringio::http
