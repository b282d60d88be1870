// SPDX-License-Identifier: Apache-2.0
// beast_ws_server: the WebSocket echo peer, written the usual way with Boost.Beast's
// websocket::stream over Boost.Asio and C++20 coroutines, one coroutine per
// connection. Every thread runs its own io_context with its own SO_REUSEPORT
// acceptor (the benchmark runs one). The handshake is accepted on any path; every
// text or binary message is sent back as it came, as one frame (auto_fragment off,
// as ringio and tungstenite send by default); pings are answered by Beast itself.
//
//   beast_ws_server --mode echo --port P [--threads N] [--host ADDR]
#include <sys/socket.h>

// clang-format off
#include <utility>  // before Boost: 1.74's awaitable.hpp uses std::exchange without it
// clang-format on
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cstdio>
#include <latch>
#include <vector>

#include "../common/peer.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using asio::ip::tcp;

constexpr const char* kProgram = "beast_ws_server";

auto token(beast::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

asio::awaitable<void> serve(tcp::socket socket) {
  socket.set_option(tcp::no_delay(true));
  websocket::stream<tcp::socket> ws(std::move(socket));
  ws.auto_fragment(false);
  beast::error_code ec;
  co_await ws.async_accept(token(ec));
  if (ec) co_return;
  beast::flat_buffer buffer;
  for (;;) {
    co_await ws.async_read(buffer, token(ec));
    if (ec) co_return;  // closed (the close handshake is Beast's), reset, protocol error
    ws.text(ws.got_text());
    co_await ws.async_write(buffer.data(), token(ec));
    if (ec) co_return;
    buffer.consume(buffer.size());
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor) {
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(token(ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
      continue;  // a connection reset before it was accepted, or out of descriptors for a moment
    }
    asio::co_spawn(acceptor.get_executor(), serve(std::move(socket)), asio::detached);
  }
}

void run_thread(int listener, std::latch& ready) {
  asio::io_context context(1);
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const tcp protocol = address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  tcp::acceptor acceptor(context);
  acceptor.assign(protocol, listener);
  asio::co_spawn(context, accept_loop(acceptor), asio::detached);
  ready.count_down();
  context.run();
}

}  // namespace

int main(int argc, char** argv) {
  const peers::Options options = peers::parse_options(argc, argv, kProgram);
  if (options.mode != peers::Mode::echo) {
    std::fprintf(stderr, "%s: only --mode echo (the WebSocket echo)\n", kProgram);
    return 2;
  }
  peers::prepare_process();
  const std::vector<int> listeners = peers::open_listeners(options, options.threads, /*nonblocking=*/false, kProgram);
  peers::run_until_signal(kProgram, options, listeners,
                          [&](int listener, std::latch& ready) { run_thread(listener, ready); });
}
