// SPDX-License-Identifier: Apache-2.0
// ringio/http/request_parser.hpp — the incremental, zero-copy parser of a request's
// head (request line and header fields). It fills a `request` with views into the
// caller's buffer and allocates nothing. Strict where leniency invites request
// smuggling: CRLF line endings only, no whitespace before a field's colon, no
// obs-fold, Content-Length must be digits and agree with any repetition, never
// together with Transfer-Encoding; chunked must be the only and final coding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ringio/http/request.hpp"

namespace ringio::http {

enum class parse_state : std::uint8_t {
  complete,    ///< the head is parsed; `size` bytes of the input belong to it
  incomplete,  ///< more bytes are needed (everything so far is valid)
  error,       ///< invalid: answer `status` and close the connection
};

/// What request_parser::parse() found.
struct parse_result {
  /// Complete, incomplete or error.
  parse_state state = parse_state::incomplete;
  /// For errors: 400 (malformed; a Host that is no authority; a target in neither
  /// origin nor absolute form, "*" but for OPTIONS; CONNECT), 414 (a request line longer
  /// than the head limit), 417 (unknown expectation), 431 (head too large or too many
  /// fields), 501 (unknown method or transfer coding), 505 (not HTTP/1.x).
  int status = 0;
  /// For complete heads: bytes used, including leading empty lines and the final CRLF.
  std::size_t size = 0;
};

/// An incremental HTTP/1.1 request-head parser (RFC 9112) that fills a request with
/// views into the received bytes; allocates nothing.
class request_parser {
 public:
  /// Heads over `max_head_bytes` are errors (431, or 414 for the request line).
  explicit request_parser(std::size_t max_head_bytes = 16 * 1024) noexcept : max_(max_head_bytes) {}

  /// Parses the head at the start of `data`, which holds everything received so far
  /// for this request: each call sees the previous call's bytes plus new ones (if the
  /// bytes moved in memory, call req.rebase() first). A line is examined once when it
  /// arrives whole; one cut short by the end of `data` is examined again next time.
  parse_result parse(std::string_view data, request& req) noexcept;

  /// Prepares for the next request (call req.clear() too).
  void reset() noexcept {
    pos_ = 0;
    have_request_line_ = false;
  }

  /// The limit given at construction.
  [[nodiscard]] std::size_t max_head_bytes() const noexcept { return max_; }

 private:
  int parse_request_line(std::string_view d, request& req) noexcept;
  static int parse_target(request& req) noexcept;
  int parse_field(std::string_view d, request& req) noexcept;
  static int finish(request& req) noexcept;

  std::size_t pos_ = 0;  // start of the first line not parsed yet
  std::size_t max_;
  bool have_request_line_ = false;
};

}  // namespace ringio::http
