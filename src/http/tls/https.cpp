// HTTPS: a TLS stream in front of an http::server connection, joined by a Unix socket
// pair. Two relay tasks move plaintext: client -> server (decrypted) and server ->
// client (encrypted). Costs: a copy and two more syscalls per chunk, and 32 KiB of relay
// buffers per connection.
#include "ringio/http/https.hpp"

#include <sys/socket.h>

#include <array>
#include <chrono>

#include "ringio/log.hpp"
#include "ringio/scope.hpp"
#include "ringio/serve.hpp"
#include "ringio/tls/stream.hpp"

namespace ringio::http {
namespace {

constexpr std::size_t relay_buffer = 16 * 1024;

// Client -> server: decrypted bytes into the socket pair. At the client's end (or an
// error) the server sees the end of its input.
task<void> from_client(tls::stream& t, stream_socket& plain) {
  std::array<std::byte, relay_buffer> buf;
  for (;;) {
    auto n = co_await t.recv(buf);
    if (!n || *n == 0) break;
    auto w = co_await plain.send_all(std::span(buf).first(*n));
    if (!w || *w < *n) break;
  }
  ::shutdown(plain.native_handle(), SHUT_WR);
}

// Server -> client: responses encrypted. When the server closes, close_notify.
task<void> to_client(stream_socket& plain, tls::stream& t) {
  std::array<std::byte, relay_buffer> buf;
  for (;;) {
    auto n = co_await plain.recv(buf);
    if (!n || *n == 0) break;
    auto w = co_await t.send_all(std::span(buf).first(*n));
    if (!w || *w < *n) co_return;
  }
  (void)co_await t.shutdown(std::chrono::seconds(1));
}

}  // namespace

task<void> serve_tls_connection(server& srv, const tls::context& ctx, stream_socket s) {
  auto t = tls::stream::server(ctx, std::move(s));
  if (!t) co_return;
  auto hs = co_await t->handshake();
  if (!hs) {
    if (log_enabled(log_level::debug))
      log(log_level::debug, "https: handshake failed: %s", hs.error().message().c_str());
    co_return;
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) co_return;
  stream_socket inner{ringio::detail::fd_handle(fds[0])};
  stream_socket outer{ringio::detail::fd_handle(fds[1])};
  scope reader;
  scope writer;
  reader.spawn(from_client(*t, outer));
  writer.spawn(to_client(outer, *t));
  co_await srv.serve_connection(std::move(inner));  // closes `inner` when it ends
  co_await writer.join();                           // the last response, then close_notify
  reader.request_stop();
  co_await reader.join();
}

task<void> serve_tls(server& srv, const tls::context& ctx, stream_listener& listener, std::stop_token stop) {
  serve_options options{.drain_timeout = std::chrono::milliseconds::max(), .on_drain = [&srv] { srv.drain(); }};
  auto served = co_await ringio::serve(
      listener, [&srv, &ctx](stream_socket s) { return serve_tls_connection(srv, ctx, std::move(s)); },
      std::move(options), std::move(stop));
  (void)served;
}

}  // namespace ringio::http
