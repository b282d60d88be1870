#include "ringio/http/request_parser.hpp"

#include <algorithm>
#include <cstring>

#include "char_class.hpp"

namespace ringio::http {
namespace {

using detail::cc_target;
using detail::cc_token;
using detail::is;

parse_result fail(int status) noexcept { return {parse_state::error, status, 0}; }

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// While the request line is incomplete: could `rest` still start a valid one? Lets
// garbage (a TLS handshake on the plain port) be refused at its first byte.
bool plausible_start(std::string_view rest) noexcept {
  if (!rest.empty() && rest[0] == '\r') return true;  // an empty line before the request
  std::size_t i = 0;
  while (i < rest.size() && is(rest[i], cc_token)) ++i;
  return i == rest.size() || rest[i] == ' ';
}

// The path of a target: origin-form "/p?q" or absolute-form "http://host/p?q".
std::string_view path_of(std::string_view target) noexcept {
  std::string_view path = target.substr(0, target.find('?'));
  if (path.empty() || path[0] == '/' || path == "*") return path;
  auto scheme_end = path.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return path;  // authority-form or other
  auto slash = path.find('/', scheme_end + 3);
  return slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
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

parse_result request_parser::parse(std::string_view data, request& req) noexcept {
  for (;;) {
    std::size_t from = std::max(pos_, scanned_);
    const void* nl = from < data.size() ? std::memchr(data.data() + from, '\n', data.size() - from) : nullptr;
    if (nl == nullptr) {
      scanned_ = data.size();
      // Garbage first: once a prefix is implausible every longer input is, so the
      // verdict does not depend on how the bytes were split into reads.
      if (!have_request_line_ && !plausible_start(data.substr(pos_))) return fail(400);
      if (data.size() > max_) return fail(431);
      return {};
    }
    std::size_t lf = static_cast<std::size_t>(static_cast<const char*>(nl) - data.data());
    if (lf + 1 > max_) return fail(431);
    if (lf == pos_ || data[lf - 1] != '\r') return fail(400);  // a bare LF ends no line here
    std::string_view line = data.substr(pos_, lf - 1 - pos_);
    pos_ = scanned_ = lf + 1;
    int status = 0;
    if (!have_request_line_) {
      if (line.empty()) continue;  // RFC 9112 2.2: ignore empty lines before the request line
      status = parse_request_line(line, req);
      have_request_line_ = true;
    } else if (line.empty()) {
      status = finish(req);
      if (status == 0) return {parse_state::complete, 0, pos_};
    } else {
      status = parse_field(line, req);
    }
    if (status != 0) return fail(status);
  }
}

int request_parser::parse_request_line(std::string_view line, request& req) const noexcept {
  // method SP request-target SP HTTP-version, single spaces only.
  std::size_t n = line.size(), i = 0;
  while (i < n && is(line[i], cc_token)) ++i;
  if (i == 0 || i == n || line[i] != ' ') return 400;
  std::size_t t = i + 1, j = t;
  while (j < n && is(line[j], cc_target)) ++j;
  if (j == t || j == n || line[j] != ' ') return 400;
  std::string_view v = line.substr(j + 1);
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !is_digit(v[5]) || v[6] != '.' || !is_digit(v[7])) return 400;
  if (v[5] != '1' || v[7] > '1') return 505;
  req.method_name_ = line.substr(0, i);
  req.target_ = line.substr(t, j - t);
  req.version_minor_ = static_cast<std::uint8_t>(v[7] - '0');
  req.path_ = path_of(req.target_);
  if (auto q = req.target_.find('?'); q != std::string_view::npos) req.query_ = req.target_.substr(q + 1);
  req.method_ = parse_method(req.method_name_);
  return req.method_ == method::unknown ? 501 : 0;
}

int request_parser::parse_field(std::string_view line, request& req) const noexcept {
  std::string_view name, value;
  if (!detail::split_field_line(line, name, value)) return 400;
  if (!req.headers_.push({name, value})) return 431;
  // The fields that frame the message or steer the connection, picked by length first.
  switch (name.size()) {
    case 4:
      if (iequals(name, "host") && ++req.host_count_ > 1) return 400;
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
  req.keep_alive_ = req.version_minor_ == 1 ? !req.connection_close_
                                            : req.connection_keep_alive_ && !req.connection_close_;
  return 0;
}

}  // namespace ringio::http
