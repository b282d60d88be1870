// SPDX-License-Identifier: Apache-2.0
// ringio/http/response_head.hpp — a strict parser for the head of an HTTP/1.1 response
// (status line and fields) and the body framing it implies (RFC 9112 section 6.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ringio/http/body_framing.hpp"
#include "ringio/http/header_list.hpp"
#include "ringio/result.hpp"

namespace ringio::http {

/// The parsed head of a response. Views point into the parsed text.
struct response_head {
  /// The status code (100-999).
  int status = 0;
  /// The minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
  int version_minor = 1;
  /// The reason phrase (may be empty).
  std::string_view reason;
  /// The fields in the order received.
  header_list headers;
  /// How the body is delimited.
  body_framing framing = body_framing::none;
  /// The body length when framing is content_length.
  std::uint64_t content_length = 0;
  /// Whether the connection may carry another request after this response.
  bool keep_alive = true;
};

/// Parses the response head at the start of `data`. Returns the length of the head
/// (through its blank line) once it is complete, or 0 when more bytes are needed.
/// `head_request`: the request was HEAD (no body whatever the fields say). Strict:
/// CRLF line endings, "HTTP/1.x NNN reason", field names are tokens with no space
/// before ':', obs-fold rejected, conflicting Content-Length values rejected, and on a
/// response with a body a Transfer-Encoding other than "chunked" alone rejected (the
/// client decodes no other coding). Errors (client_errc): bad_status_line, bad_header,
/// head_too_large (over `max_bytes` with or without a blank line, or more than
/// header_list::capacity fields), bad_content_length, bad_transfer_encoding. Not
/// asynchronous: nothing to cancel.
[[nodiscard]] result<std::size_t> parse_response_head(std::string_view data, bool head_request, response_head& out,
                                                      std::size_t max_bytes = 16 * 1024) noexcept;

}  // namespace ringio::http
