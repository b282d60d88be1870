// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/response.hpp"

#include <stdexcept>
#include <utility>

#include "char_class.hpp"
#include "response_parts.hpp"

namespace ringio::http {
namespace {

void check_value(std::string_view value) {
  for (char c : value)
    if (!detail::is(c, detail::cc_value)) throw std::invalid_argument("http: control character in a header value");
}

}  // namespace

response response::text(int status, std::string body, std::string_view content_type) {
  response r(status);
  r.set_content_type(content_type);
  r.body_.emplace<std::string>(std::move(body));
  return r;
}

response response::borrowed(int status, std::string_view body, std::string_view content_type) {
  response r(status);
  r.set_content_type(content_type);
  r.body_.emplace<std::string_view>(body);
  return r;
}

response response::stream(int status, std::string_view content_type, body_stream fn) {
  response r(status);
  r.set_content_type(content_type);
  r.body_.emplace<body_stream>(std::move(fn));
  return r;
}

response response::upgrade(upgrade_handler fn) {
  response r(101);
  r.body_.emplace<upgrade_handler>(std::move(fn));
  return r;
}

response response::file(int status, file_body f, std::string_view content_type) {
  response r(status);
  r.set_content_type(content_type);
  r.body_.emplace<file_body>(std::move(f));
  return r;
}

response& response::set_header(std::string_view name, std::string_view value) {
  if (name.empty()) throw std::invalid_argument("http: empty header name");
  for (char c : name)
    if (!detail::is(c, detail::cc_token)) throw std::invalid_argument("http: invalid header name");
  check_value(value);
  if (!borrowed_fields_.empty()) fields_.assign(std::exchange(borrowed_fields_, {}));
  fields_.append(name).append(": ").append(detail::trim_ows(value)).append("\r\n");
  return *this;
}

response& response::set_content_type(std::string_view content_type) {
  check_value(content_type);
  borrowed_content_type_ = {};
  content_type_.assign(content_type);
  return *this;
}

void detail::response_parts::borrow(response& r, std::string_view content_type, std::string_view fields) noexcept {
  r.content_type_.clear();
  r.borrowed_content_type_ = content_type;
  r.fields_.clear();
  r.borrowed_fields_ = fields;
}

std::string_view response::body() const noexcept {
  if (const auto* s = std::get_if<std::string>(&body_)) return *s;
  if (const auto* v = std::get_if<std::string_view>(&body_)) return *v;
  return {};
}

}  // namespace ringio::http
