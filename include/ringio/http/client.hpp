// SPDX-License-Identifier: Apache-2.0
// ringio/http/client.hpp — an HTTP/1.1 client with a connection pool, redirects and a
// timeout for each phase of a request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/http/client_error.hpp"
#include "ringio/http/client_options.hpp"
#include "ringio/http/client_response.hpp"
#include "ringio/http/client_statistics.hpp"
#include "ringio/http/request_spec.hpp"
#include "ringio/http/response_stream.hpp"
#include "ringio/http/url.hpp"
#include "ringio/http/websocket.hpp"
#include "ringio/http/websocket_connect_options.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"
#include "ringio/tls/context.hpp"
#include "ringio/tls/stream.hpp"

namespace ringio::http {

/// An HTTP/1.1 client for one io_context. Not thread-safe: create one per loop and use
/// it from tasks of that loop only; it must outlive every request and response_stream
/// it made.
///
/// Connections are kept per (scheme, host, port) after a response whose body was read
/// to its end, up to client_options::max_idle_per_host, for idle_timeout. A pooled
/// connection the server has closed, or that has anything to read, is dropped before
/// use; if a request on a pooled connection fails before any byte of the response
/// arrived (a send or receive error, or the close), it is sent once more on a newly
/// opened connection when that is safe: an idempotent method (GET, HEAD, PUT, DELETE,
/// OPTIONS, TRACE) and a body that is not streamed. A server that answers before the
/// whole body is sent and closes gets its answer returned. Redirects to another origin
/// go without Authorization, Proxy-Authorization and Cookie.
///
/// Host names are resolved on the loop's resolver thread (see resolve()); literals
/// are used directly. Every request obeys the stop token of its task: a stop ends it
/// with operation_canceled once its operations are done, and the connection it used
/// is closed rather than pooled. Timeouts: see client_options; each ends the request
/// with its own client_errc (connect_timeout, head_timeout, body_timeout).
class client {
 public:
  /// A client with `opts`.
  explicit client(client_options opts = {});
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// GET `url` and the whole body. Errors: see request().
  [[nodiscard]] task<result<client_response>> get(std::string_view url);
  /// POST `body` with `content_type` to `url`. Errors: see request().
  [[nodiscard]] task<result<client_response>> post(std::string_view url, std::string_view body,
                                                   std::string_view content_type);
  /// Sends `spec` and reads the whole response. Errors: client_errc (bad_url,
  /// resolve_failed, connect_failed, the timeouts, protocol errors, body_too_large,
  /// truncated_body, too_many_redirects, bad_redirect, bad_request_header), socket
  /// errors (connection_reset, broken_pipe, ...), operation_canceled on a stop. For
  /// https://, a client_options::tls that cannot be used fails before any connection
  /// opens, with its reason (tls::tls_errc::ca_file_missing, ca_file_not_pem, ...).
  [[nodiscard]] task<result<client_response>> request(const request_spec& spec);
  /// Sends `spec` and returns once the response head has arrived; the body is then read
  /// with response_stream::read. Redirects are followed as in request() (their bodies
  /// read and dropped). Errors and cancellation: those of request() up to the head.
  [[nodiscard]] task<result<response_stream>> stream_request(const request_spec& spec);

  /// Opens a WebSocket to `url` (ws:// or wss://, as http:// and https:// otherwise):
  /// a new connection (never pooled), the opening handshake with a random key, then the
  /// websocket, which owns the connection. Connecting and TLS obey client_options
  /// (connect_timeout, tls, tls_handshake_timeout); the handshake, head_timeout.
  /// Errors: websocket_errc::bad_url, handshake_failed (an answer other than 101, no
  /// "Upgrade: websocket", a subprotocol not offered, an extension), bad_accept, and
  /// those of request(). Cancellation: operation_canceled. `opts` must stay valid until
  /// the task completes.
  [[nodiscard]] task<result<websocket>> connect_websocket(std::string_view url, const websocket_connect_options& opts);
  /// connect_websocket(url, opts) with default options. (An overload rather than a
  /// default argument: GCC 12 destroys a defaulted class argument of an awaited call twice.)
  [[nodiscard]] task<result<websocket>> connect_websocket(std::string_view url);
  /// Idle connections in the pool.
  [[nodiscard]] std::size_t idle_connections() const noexcept { return idle_.size(); }
  /// Counters since the client was made.
  [[nodiscard]] const client_statistics& stats() const noexcept { return stats_; }
  /// Closes every idle connection.
  void close_idle() noexcept;
  /// The options.
  [[nodiscard]] const client_options& options() const noexcept { return opts_; }

  /// @cond INTERNAL
  void release(detail::connection_ptr conn) noexcept;
  /// @endcond

 private:
  /// @cond INTERNAL
  struct outcome;
  task<result<response_stream>> exchange(const url& target, method m, const request_spec& spec, bool cross_origin,
                                         bool with_body);
  task<result<detail::connection_ptr>> connect(const url& target);
  std::error_code make_tls_context();
  task<result<tls::stream>> handshake(const url& target, stream_socket socket);
  detail::connection_ptr checkout(const url& target) noexcept;

  client_options opts_;
  std::vector<detail::connection_ptr> idle_;
  client_statistics stats_;
  std::unique_ptr<tls::context> tls_context_;  // made before the first https connection
  /// @endcond
};

}  // namespace ringio::http
