// HTTPS: a TLS stream in front of an http::server connection, joined by a Unix socket
// pair. Two relay tasks move plaintext: client -> server (decrypted) and server ->
// client (encrypted). Costs: a copy and a few more syscalls per chunk. An idle
// connection holds no relay buffer: the relays wait with 512 bytes of their own (or a
// one-byte peek) and borrow 16 KiB buffers from a per-thread cache while data flows.
#include "ringio/http/https.hpp"

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <new>
#include <utility>

#include "ringio/log.hpp"
#include "ringio/scope.hpp"
#include "ringio/serve.hpp"
#include "ringio/tls/stream.hpp"

namespace ringio::http {
namespace {

constexpr std::size_t relay_size = 16 * 1024;
constexpr std::size_t wait_size = 512;

// A relay buffer from the calling thread's cache, given back when destroyed.
class relay_buffer {
 public:
  relay_buffer() {
    cache& c = thread_cache();
    p_ = c.count > 0 ? c.buffers[--c.count] : static_cast<std::byte*>(::operator new(relay_size));
  }
  ~relay_buffer() {
    cache& c = thread_cache();
    if (c.count < c.buffers.size()) c.buffers[c.count++] = p_;
    else ::operator delete(p_);
  }
  relay_buffer(const relay_buffer&) = delete;
  relay_buffer& operator=(const relay_buffer&) = delete;
  [[nodiscard]] mutable_buffer get() const noexcept { return {p_, relay_size}; }

 private:
  struct cache {
    std::array<std::byte*, 64> buffers{};
    std::size_t count = 0;
    ~cache() {
      for (std::size_t i = 0; i < count; ++i) ::operator delete(buffers[i]);
    }
  };
  static cache& thread_cache() {
    thread_local cache c;
    return c;
  }
  std::byte* p_;
};

// Client -> server: decrypted bytes into the socket pair. It waits with a small buffer
// (requests usually fit); a full one means more is coming (a body), which goes through
// a borrowed buffer until a read comes back short. At the client's end (or an error)
// the server sees the end of its input.
task<void> from_client(tls::stream& t, stream_socket& plain) {
  std::array<std::byte, wait_size> small;
  bool open = true;
  while (open) {
    auto n = co_await t.recv(small);
    if (!n || *n == 0) break;
    auto w = co_await plain.send_all(std::span(small).first(*n));
    if (!w || *w < *n) break;
    if (*n < small.size()) continue;
    relay_buffer big;
    for (;;) {
      auto m = co_await t.recv(big.get());
      if (!m || *m == 0) {
        open = false;
        break;
      }
      auto w2 = co_await plain.send_all(big.get().first(*m));
      if (!w2 || *w2 < *m) {
        open = false;
        break;
      }
      if (*m < relay_size) break;
    }
  }
  ::shutdown(plain.native_handle(), SHUT_WR);
}

// Server -> client: responses encrypted, through a buffer borrowed once the server has
// written something (a one-byte peek waits for that). When the server closes,
// close_notify.
task<void> to_client(stream_socket& plain, tls::stream& t) {
  for (;;) {
    std::array<std::byte, 1> probe;
    auto ready = co_await plain.recv(probe, MSG_PEEK);
    if (!ready || *ready == 0) break;
    relay_buffer big;
    auto n = co_await plain.recv(big.get());
    if (!n || *n == 0) break;
    auto w = co_await t.send_all(big.get().first(*n));
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
