// SPDX-License-Identifier: Apache-2.0
// ringio/http/request_spec.hpp — what http::client::request sends: method, URL, extra
// fields and a body that is either a buffer or produced piece by piece.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

#include "ringio/http/header_list.hpp"
#include "ringio/http/method.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// A streamed request body: each call fills some of the buffer it is given and returns
/// how many bytes it wrote; 0 ends the body. An error ends the request with
/// client_errc::body_source_failed. The body is sent chunked, one chunk per call.
using body_source = std::function<task<result<std::size_t>>(std::span<char>)>;

/// One request. Every view must stay valid until the request's task completes.
struct request_spec {
  /// The method.
  http::method method = http::method::get;
  /// The absolute URL (http:// or https://).
  std::string_view url;
  /// Extra fields. Host is always set by the client; Content-Length and
  /// Transfer-Encoding are set from the body and must not be given.
  std::span<const header> headers{};
  /// The body, sent with Content-Length (POST, PUT and PATCH send "Content-Length: 0"
  /// when it is empty). Ignored when `source` is set.
  std::string_view body{};
  /// A body produced piece by piece, sent with Transfer-Encoding: chunked.
  body_source source{};
  /// The Content-Type field of the body; empty: none.
  std::string_view content_type{};
};

}  // namespace ringio::http
