// SPDX-License-Identifier: Apache-2.0
// ringio/http/request.hpp — a parsed HTTP/1.x request. Every string_view points into
// the connection's receive buffer and stays valid until the handler's response has
// been sent; copy what must live longer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ringio/http/header_list.hpp"
#include "ringio/http/method.hpp"

namespace ringio::http {

namespace detail {
class connection;
struct request_state;
}  // namespace detail
class request_parser;
class router;

/// A path parameter captured by a router pattern ("/items/{id}"): its name as in the
/// pattern and its percent-decoded value.
struct route_param {
  std::string_view name;   ///< as written in the pattern, without the braces
  std::string_view value;  ///< percent-decoded
};

/// One parsed request, as a handler sees it (see the top of this file).
class request {
 public:
  /// The most captures one route pattern may have (router::route rejects more).
  static constexpr std::size_t max_route_params = 8;

  /// An empty request (the parser fills it in).
  request() = default;
  // Not copyable: its strings are views into the connection's buffers and into its own
  // parameter storage, which a copy would still point into.
  request(const request&) = delete;
  request& operator=(const request&) = delete;

  /// The method; method::unknown never reaches a handler (the server answers 501).
  [[nodiscard]] http::method method() const noexcept { return method_; }
  /// The method as sent ("GET").
  [[nodiscard]] std::string_view method_name() const noexcept { return method_name_; }
  /// The request-target as sent: "/a/b?x=1", "http://host/a", or "*" (OPTIONS only).
  [[nodiscard]] std::string_view target() const noexcept { return target_; }
  /// The path of the target, still percent-encoded ("/a/b"); for an absolute-form
  /// target the part after the authority ("/" if none); "*" for OPTIONS *.
  [[nodiscard]] std::string_view path() const noexcept { return path_; }
  /// The query without its '?', or empty.
  [[nodiscard]] std::string_view query() const noexcept { return query_; }
  /// 0 for HTTP/1.0, 1 for HTTP/1.1 (and for HTTP/1.2 to 1.9, served as HTTP/1.1).
  [[nodiscard]] int version_minor() const noexcept { return version_minor_; }

  /// Every header field, in the order received.
  [[nodiscard]] const header_list& headers() const noexcept { return headers_; }
  /// The value of the first field called `name` (any case); empty if absent.
  [[nodiscard]] std::string_view header(std::string_view name) const noexcept { return headers_.get(name); }

  /// The whole body (Content-Length or de-chunked), empty when there is none.
  [[nodiscard]] std::string_view body() const noexcept { return body_; }
  /// Content-Length as sent, or -1 when absent.
  [[nodiscard]] std::int64_t content_length() const noexcept { return content_length_; }
  /// Whether the body came with "Transfer-Encoding: chunked".
  [[nodiscard]] bool chunked() const noexcept { return chunked_; }
  /// Whether the client sent "Expect: 100-continue".
  [[nodiscard]] bool expects_continue() const noexcept { return expect_continue_; }

  /// Whether the client lets the connection stay open after the response: HTTP/1.1
  /// unless "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
  [[nodiscard]] bool keep_alive() const noexcept { return keep_alive_; }

  /// After a router's prefix route matched: the rest of the path after the prefix
  /// (for prefix "/static/" and path "/static/a.css": "a.css"). Empty otherwise.
  [[nodiscard]] std::string_view route_rest() const noexcept { return route_rest_; }
  /// Whether a router's prefix route matched (route_rest() is meaningful).
  [[nodiscard]] bool prefix_routed() const noexcept { return prefix_routed_; }

  /// After a router's pattern route matched ("/items/{id}"): the percent-decoded value
  /// of the parameter `name`; empty when the route has no parameter of that name (a
  /// "{name}" capture is never empty; a "{name...}" one may be, see has_param). The
  /// value lives in this request's storage, valid until the response has been sent.
  [[nodiscard]] std::string_view param(std::string_view name) const noexcept;
  /// Whether the matched route captured a parameter called `name`.
  [[nodiscard]] bool has_param(std::string_view name) const noexcept;
  /// Every parameter the matched route captured, in pattern order.
  [[nodiscard]] std::span<const route_param> params() const noexcept { return {params_.data(), param_count_}; }

  /// Forgets everything (the connection reuses one request object).
  void clear() noexcept;
  /// Re-points the views into [from, from + size) after those bytes moved to `to`.
  void rebase(const char* from, std::size_t size, const char* to) noexcept;

 private:
  friend class request_parser;
  friend class detail::connection;
  friend struct detail::request_state;
  friend class router;

  std::string_view method_name_, target_, path_, query_, body_, route_rest_;
  header_list headers_;
  std::array<route_param, max_route_params> params_{};
  std::string param_text_;  // decoded parameters; kept across requests unless it grew large
  std::size_t param_count_ = 0;
  std::int64_t content_length_ = -1;
  http::method method_ = http::method::unknown;
  std::uint8_t version_minor_ = 1;
  std::uint8_t host_count_ = 0;
  bool chunked_ = false;
  bool expect_continue_ = false;
  bool keep_alive_ = true;
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
  bool transfer_encoding_ = false;
  bool other_coding_ = false;
  bool expect_unknown_ = false;
  bool prefix_routed_ = false;
};

}  // namespace ringio::http
