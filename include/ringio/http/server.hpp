// SPDX-License-Identifier: Apache-2.0
// ringio/http/server.hpp — an HTTP/1.1 server: keep-alive, pipelining (all responses
// to one read go out in one write), Content-Length and chunked request bodies,
// Expect: 100-continue, HEAD, streamed responses, and the limits that keep hostile
// clients from hurting it. One server may be shared by every loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string_view>

#include "ringio/http/router.hpp"
#include "ringio/http/server_metrics.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

namespace detail {
class server_core;
}
}  // namespace ringio::http

namespace ringio::tls {
class context;
}

namespace ringio::http {

/// Limits and timeouts of an HTTP server. Every field has a default.
struct server_options {
  /// Request line plus header fields; larger heads are answered 431, or 414 when the
  /// request line alone does not fit.
  std::size_t max_header_bytes = 16 * 1024;
  /// Request bodies over this are answered 413 (before reading them when announced).
  std::size_t max_body_bytes = 1024 * 1024;
  /// From a request's first byte to the end of its head (slow clients: 408, close).
  std::chrono::milliseconds header_timeout{10'000};
  /// An idle keep-alive connection is closed after this (49 days or more: never); a
  /// body that stalls this long is answered 408.
  std::chrono::milliseconds idle_timeout{30'000};
  /// A whole request body, however steadily it trickles in, must arrive within this
  /// (408 and close otherwise).
  std::chrono::milliseconds body_timeout{60'000};
  /// One send (a response, or one part of a large body) must finish within this (49
  /// days or more: no limit).
  std::chrono::milliseconds send_timeout{30'000};
  /// File bodies over 16 KiB are sent by the kernel with sendfile(2) (no copy, no
  /// buffer per connection while a slow client reads). false: they are read through
  /// the loop into the connection's output buffer and sent from there, 64 KiB at a
  /// time (for comparison, or where sendfile is not wanted).
  bool sendfile = true;
  /// Connections served at once by this server (all threads); the next ones get 503
  /// and a log line. Over HTTPS (serve_tls) a connection counts from accept, its
  /// handshake included; the next ones are closed before their handshake.
  std::size_t max_connections = 10'000;
  /// A request body that no route takes (404, 405, OPTIONS) is read and thrown away
  /// after the answer, and the connection goes on, when it is announced (Content-Length)
  /// or decoded (chunked) at no more than this many bytes and no 100 Continue is
  /// awaited; a larger one ends the connection (Content-Length: the answer says
  /// Connection: close; chunked: the connection closes once the bound is passed, after
  /// the answer). Capped at max_body_bytes; 0: every such body ends the connection.
  std::size_t discard_body_bytes = 64 * 1024;
  /// When the server closes a connection whose client may still be sending (a body it
  /// did not read, a request after an error, pipelined bytes after Connection: close),
  /// it shuts its sending side after the answer and reads and drops what still comes,
  /// so that closing with unread bytes does not reset the connection and destroy the
  /// answer in the client's receive queue. This long at most...
  std::chrono::milliseconds linger_timeout{2'000};
  /// ...or until this many bytes were dropped, or the client closes.
  std::size_t linger_bytes = 1024 * 1024;
  /// Where log lines go (connection limit, handler errors); ringio::log (warning
  /// level) when empty.
  std::function<void(std::string_view)> log{};
};

/// An HTTP/1.1 server: serves connections with a handler or a router (see the file's
/// comment for what it guarantees). One server may serve every loop thread.
class server {
 public:
  /// Serves with `h`.
  explicit server(handler h, server_options opts = {});
  /// Serves with `routes`, which must outlive the server. A request with a body that
  /// no route takes (404, 405, OPTIONS) is answered at once, before its body is read
  /// and without 100 Continue; the body is then read and dropped and the connection
  /// goes on, or the connection closes (see server_options::discard_body_bytes).
  explicit server(const router& routes, server_options opts = {});
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Serves one accepted connection until the client closes it, a limit or timeout
  /// ends it, or the awaiting task's stop token cancels it. Callable on any loop
  /// thread, concurrently. A handler's exception becomes a 500 response; the
  /// connection goes on.
  [[nodiscard]] task<void> serve_connection(stream_socket s);

  /// Accepts on `listener` and serves every connection until `stop`: then it stops
  /// accepting, closes idle connections, lets requests in progress finish, and
  /// completes when every connection has ended. Built on ringio::serve (accept errors
  /// back off and are logged; no drain deadline). A stop of the awaiting task's token
  /// cancels every connection at once.
  [[nodiscard]] task<void> serve(stream_listener& listener, std::stop_token stop = {});

  /// Begins a graceful stop of every connection of this server (also what serve()
  /// does on stop): idle keep-alive connections and HTTPS connections still in their
  /// handshake close now, busy ones after their current response (an upgrade answered
  /// meanwhile gets 503). Thread-safe; cannot be undone.
  void drain() noexcept;

  /// A gentler drain, for a process that another one takes over from: every response
  /// from now on carries Connection: close and ends its connection, so that clients
  /// reconnect (to the successor) between requests rather than find their connection
  /// closed under a request they are sending; a keep-alive connection that receives no
  /// request for `idle_grace` closes (checked on the idle-timeout sweep, so up to a
  /// second later). An upgrade (WebSocket) is still answered 101: the upgraded
  /// connection stays until serve()'s stop, as those upgraded before. An idle_grace of
  /// zero or less is drain(). drain() afterwards
  /// still closes the idle ones at once. Thread-safe; cannot be undone.
  void drain(std::chrono::milliseconds idle_grace) noexcept;

  /// Connections being served now (over HTTPS, those in their handshake too).
  [[nodiscard]] std::size_t connections() const noexcept;

  /// What the server counted so far (requests by status class, latency, bytes,
  /// timeouts, connections), summed over its threads; safe from any thread.
  [[nodiscard]] server_metrics metrics() const;

 private:
  friend task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s);
  std::unique_ptr<detail::server_core> core_;
};

}  // namespace ringio::http
