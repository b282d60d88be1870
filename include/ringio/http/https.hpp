// ringio/http/https.hpp — HTTPS for http::server: TLS in front of its connections.
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
/// handshake_timeout; a client that sends nothing, garbage or plain HTTP is closed when
/// it fails), then `srv` serves the decrypted requests with all its limits and
/// timeouts. The plaintext goes between the TLS stream and the server through a Unix
/// socket pair relayed by two tasks, so the plain-HTTP path is untouched; file bodies
/// are read, then encrypted. When the server ends the connection it sends
/// close_notify. Cancellation: the awaiting task's stop token ends the connection.
/// `ctx` must be a server context and outlive the call.
[[nodiscard]] task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s);

/// Accepts on `listener` and serves every connection over TLS (serve_tls_connection)
/// until `stop`, draining like server::serve.
[[nodiscard]] task<void> serve_tls(server& srv, const tls::context& ctx, stream_listener& listener,
                                   std::stop_token stop = {});

}  // namespace ringio::http
