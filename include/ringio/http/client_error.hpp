// SPDX-License-Identifier: Apache-2.0
// ringio/http/client_error.hpp — the errors of the HTTP client (http::client), in a
// category of their own ("ringio.http.client").
#pragma once

#include <system_error>

namespace ringio::http {

/// What went wrong in a client request, beyond the socket errors (connection_reset,
/// operation_canceled, ...) that come back as they are.
enum class client_errc {
  bad_url = 1,            ///< the URL could not be parsed, or its scheme is not http/https
  unsupported_scheme,     ///< not returned: a client_options::tls that cannot be used gives its TLS error
  resolve_failed,         ///< the host name did not resolve to an address
  connect_failed,         ///< no address of the host accepted a connection
  connect_timeout,        ///< connecting (resolution included) took longer than connect_timeout
  tls_handshake_timeout,  ///< the TLS handshake took longer than tls_handshake_timeout
  head_timeout,           ///< the response head did not arrive within head_timeout
  body_timeout,           ///< no body bytes arrived for body_timeout
  bad_status_line,        ///< the status line is not "HTTP/1.x NNN reason"
  bad_header,             ///< a malformed field line (obs-fold, space before ':', bad characters)
  head_too_large,  ///< the response head (with the 1xx heads before it) is over max_head_bytes, or has too many fields
  bad_content_length,     ///< Content-Length is not a number, or several values conflict
  bad_transfer_encoding,  ///< a Transfer-Encoding the client cannot decode (anything but "chunked" alone)
  bad_chunk,              ///< malformed chunked framing (size line, CRLF, trailer)
  truncated_body,         ///< the connection closed before the whole body arrived (over TLS: without close_notify)
  body_too_large,         ///< the body is longer than max_body
  too_many_redirects,     ///< more redirects than max_redirects
  bad_redirect,           ///< a redirect without a usable Location
  body_source_failed,     ///< the streaming request body reported an error
  connection_closed,      ///< the server closed the connection before the response head
  bad_request_header,     ///< a request field name or value is malformed (CR, LF, not a token)
};

/// The category of client_errc values.
const std::error_category& client_category() noexcept;

/// A client_errc as a std::error_code.
inline std::error_code make_error_code(client_errc e) noexcept { return {static_cast<int>(e), client_category()}; }

}  // namespace ringio::http

template <>
struct std::is_error_code_enum<ringio::http::client_errc> : std::true_type {};
