// SPDX-License-Identifier: Apache-2.0
// ringio/http/client_options.hpp — the settings of an http::client.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "ringio/tls/client_options.hpp"

namespace ringio::http {

/// Settings of an http::client: limits, redirects, the connection pool and the
/// timeout of each phase of a request.
struct client_options {
  /// Follow 301, 302, 303, 307 and 308 responses that carry a Location.
  bool follow_redirects = false;
  /// The most redirects followed for one request; one more fails with too_many_redirects.
  unsigned max_redirects = 5;
  /// The longest response body accepted (body_too_large beyond it).
  std::size_t max_body = 8 * 1024 * 1024;
  /// The longest response head (status line and fields) accepted, the heads of the
  /// interim (1xx) responses before it counted in.
  std::size_t max_head_bytes = 16 * 1024;
  /// Idle connections kept per (scheme, host, port); 0 disables reuse.
  std::size_t max_idle_per_host = 4;
  /// How long an idle pooled connection is kept.
  std::chrono::milliseconds idle_timeout{30'000};
  /// Resolving the host and connecting (all addresses tried together).
  std::chrono::milliseconds connect_timeout{10'000};
  /// The TLS handshake (https).
  std::chrono::milliseconds tls_handshake_timeout{10'000};
  /// Sending the request head (and a buffered body) and receiving the whole response
  /// head; after a streamed body, the wait for the head starts when the body is sent.
  std::chrono::milliseconds head_timeout{30'000};
  /// The longest wait for the next bytes of the body (an idle timeout, reset by every
  /// read), and for each piece of a streamed request body to be sent.
  std::chrono::milliseconds body_timeout{30'000};
  /// The TLS settings of https:// requests (trust store, verification, versions); the
  /// client makes one client context from them on its first https request. ALPN is
  /// set to "http/1.1" when empty, and the handshake is bounded by tls_handshake_timeout.
  tls::client_options tls{};
  /// The User-Agent field sent unless a request gives its own; empty: none.
  std::string user_agent = "ringio";
  /// Over TLS, accept a body delimited by the end of the connection (no Content-Length,
  /// not chunked) when the connection ends without close_notify. Off: such a body is
  /// truncated_body, since an attacker on the path can cut it anywhere (RFC 9112
  /// section 9.8). Turn it on only for servers known to close without close_notify.
  bool accept_tls_truncation = false;
};

}  // namespace ringio::http
