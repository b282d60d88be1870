// SPDX-License-Identifier: Apache-2.0
// asio_server_epoll / asio_server_uring: the peers written the usual way with
// standalone Asio and C++20 coroutines, one coroutine per connection. The
// same source builds against Asio's epoll reactor and its io_uring backend
// (see CMakeLists.txt). Every thread runs its own io_context with its own
// SO_REUSEPORT acceptor, so nothing is shared between threads.
#include <sys/socket.h>

#include <asio.hpp>
#include <cstdio>
#include <latch>
#include <string>
#include <vector>

#include "../common/http.hpp"
#include "../common/peer.hpp"

namespace {

using asio::ip::tcp;

constexpr const char* kProgram = PEER_PROGRAM;

// Completion token that reports errors through `ec` instead of throwing:
// every connection ends with one (end of file or reset).
auto token(asio::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

asio::awaitable<void> serve_echo(tcp::socket socket) {
  std::vector<char> buffer(peers::kReadBufferSize);
  asio::error_code ec;
  for (;;) {
    const std::size_t n = co_await socket.async_read_some(asio::buffer(buffer), token(ec));
    if (ec) co_return;
    co_await asio::async_write(socket, asio::buffer(buffer.data(), n), token(ec));
    if (ec) co_return;
  }
}

asio::awaitable<void> serve_pong(tcp::socket socket, std::size_t block) {
  std::vector<char> buffer(block);
  asio::error_code ec;
  for (;;) {
    co_await asio::async_read(socket, asio::buffer(buffer), token(ec));
    if (ec) co_return;
    co_await asio::async_write(socket, asio::buffer(buffer), token(ec));
    if (ec) co_return;
  }
}

asio::awaitable<void> serve_http(tcp::socket socket) {
  std::vector<char> buffer(peers::kReadBufferSize);
  peers::http::Session session;
  std::string output;
  asio::error_code ec;
  for (;;) {
    const std::size_t n = co_await socket.async_read_some(asio::buffer(buffer), token(ec));
    if (ec) co_return;
    const bool close = session.feed({buffer.data(), n}, output);
    if (!output.empty()) {
      co_await asio::async_write(socket, asio::buffer(output), token(ec));
      if (ec) co_return;
      output.clear();
    }
    if (close) co_return;  // the socket closes as the coroutine ends
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, const peers::Options& options) {
  bool error_reported = false;
  for (;;) {
    asio::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(token(ec));
    if (ec == asio::error::invalid_argument) co_return;  // listener shut down: exiting
    if (ec) {
      if (!error_reported) {  // usually EMFILE: keep accepting, but say it once
        std::fprintf(stderr, "%s: accept: %s\n", kProgram, ec.message().c_str());
        error_reported = true;
      }
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    const auto executor = acceptor.get_executor();
    switch (options.mode) {
      case peers::Mode::echo:
        asio::co_spawn(executor, serve_echo(std::move(socket)), asio::detached);
        break;
      case peers::Mode::pong:
        asio::co_spawn(executor, serve_pong(std::move(socket), options.block), asio::detached);
        break;
      case peers::Mode::http:
        asio::co_spawn(executor, serve_http(std::move(socket)), asio::detached);
        break;
    }
  }
}

void run_thread(const peers::Options& options, int listener, std::latch& ready) {
  asio::io_context context(1);  // one thread per context: no locking inside Asio
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const tcp protocol = address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  tcp::acceptor acceptor(context);
  acceptor.assign(protocol, listener);
  asio::co_spawn(context, accept_loop(acceptor, options), asio::detached);
  ready.count_down();
  context.run();
}

}  // namespace

int main(int argc, char** argv) {
  const peers::Options options = peers::parse_options(argc, argv, kProgram);
  peers::prepare_process();
  const std::vector<int> listeners = peers::open_listeners(options, options.threads, /*nonblocking=*/false, kProgram);
  peers::run_until_signal(kProgram, options, listeners,
                          [&](int listener, std::latch& ready) { run_thread(options, listener, ready); });
}
