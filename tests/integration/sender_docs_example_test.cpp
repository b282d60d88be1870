// SPDX-License-Identifier: Apache-2.0
// The complete example of docs/senders.md, compiled and run: keep the two the same.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <span>
#include <string>

// --- docs/senders.md example begins ---
#include <ringio/exec.hpp>
#include <ringio/ringio.hpp>

namespace ex = ringio::exec;
using namespace std::chrono_literals;

// Echoes everything it receives until the peer closes: a loop of recv then send_all.
auto echo(ringio::stream_socket& s, std::array<std::byte, 4096>& buf) {
  return ex::repeat_until([&s, &buf] {
    return ex::recv(s, buf) | ex::let_value([&s, &buf](std::size_t n) {
             return ex::send_all(s, std::span(buf).first(n)) |
                    ex::then([n](std::size_t) { return n == 0; });  // 0: end of stream
           });
  });
}

std::string run_example() {
  ringio::io_context ctx;
  auto listener = ringio::stream_listener::bind(ringio::socket_address::loopback(0));
  auto at = listener->local_address();

  // Accept one connection and connect to it, both at once.
  auto [server, client] = ex::sync_wait(ctx, ex::when_all(ex::accept(*listener), ex::connect_to(*at))).value();

  std::array<std::byte, 4096> server_buf{};
  std::array<char, 5> reply{};
  const std::string hello = "hello";
  // The server loop runs beside the client's exchange; every receive of the client
  // is bounded by a timer (when_any stops the loser and waits for it).
  auto client_side =
      ex::send_all(client, std::as_bytes(std::span(hello))) | ex::let_value([&](std::size_t) {
        return ex::when_any(ex::recv_exact(client, std::as_writable_bytes(std::span(reply))), ex::fail_after(5s));
      }) |
      ex::let_value([&](std::size_t) { return ex::shutdown(client); });  // the server loop then ends
  ex::sync_wait(ctx, ex::when_all(echo(server, server_buf), std::move(client_side))).value();
  return std::string(reply.data(), reply.size());
}
// --- docs/senders.md example ends ---

TEST(SenderDocsExample, EchoesHello) { EXPECT_EQ(run_example(), "hello"); }
