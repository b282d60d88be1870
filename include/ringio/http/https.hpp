// SPDX-License-Identifier: Apache-2.0
// ringio/http/https.hpp — HTTPS for http::server: its connections served over TLS.
// Part of ringio::https (link it; it brings ringio::tls and OpenSSL), so that the
// plain server does not depend on OpenSSL.
#pragma once

#include <stop_token>

#include "ringio/http/server.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"
#include "ringio/tls/context.hpp"

namespace ringio::http {

/// Serves one accepted connection over TLS: the handshake (bounded by the context's
/// handshake_timeout; a client that sends nothing or a bad handshake is closed when it
/// fails; one whose first byte cannot start a TLS handshake record, such as plain HTTP,
/// gets a plain-text `400 Bad Request` with Connection: close, then a lingering close
/// as in server_options::linger_timeout), then `srv` serves the decrypted requests with
/// all its limits and timeouts. The connection counts in srv.connections() and against
/// server_options::max_connections from the start: one over the limit is closed at once,
/// before any handshake (and a log line says so). A drain (server::drain()) ends a
/// connection still in its handshake at once. The server's connection code reads and writes through the TLS stream
/// directly (no copy through a socket pair): between requests it waits with a receive
/// into its loop's shared pool, so an idle connection holds no record buffer; file
/// bodies are read in chunks and encrypted (no sendfile). When the connection ends
/// (Connection: close, the idle timeout, a drain, the client's close_notify) it sends
/// close_notify, waiting at most 500 ms for the socket to take it, and closes the socket.
/// A client that ends without close_notify or resets ends the connection like a reset.
/// Cancellation: the awaiting task's stop token ends the connection at once (no
/// close_notify). `ctx` must be a server context and outlive the call.
[[nodiscard]] task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s);

/// Accepts on `listener` and serves every connection over TLS (serve_tls_connection)
/// until `stop`, draining like server::serve.
[[nodiscard]] task<void> serve_tls(server& srv, const tls::context& ctx, stream_listener& listener,
                                   std::stop_token stop = {});

}  // namespace ringio::http
