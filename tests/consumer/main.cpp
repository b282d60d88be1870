// SPDX-License-Identifier: Apache-2.0
// Echoes one message through a real socket pair with ringio: proves the headers,
// the library and its dependencies are all found by a consuming project.
#include <array>
#include <cstdio>
#include <ringio/fiber.hpp>
#include <ringio/ringio.hpp>
#include <string_view>

using namespace ringio;

bool options_compile();

int main() {
  io_context ctx;
  auto listener = tcp_listener::bind(socket_address::loopback(0));
  if (!listener) return 1;
  auto at = listener->local_address();
  bool ok = sync_wait(ctx, [](tcp_listener& l, socket_address at) -> task<bool> {
    auto [server, client] = co_await when_all(l.accept(), tcp_stream::connect(at));
    if (!server || !client) co_return false;
    auto sent = co_await client->send_all(std::string_view("consumer"));
    std::array<char, 8> buf;
    auto got = co_await server->recv_exact(buf);
    co_return sent&& got&& std::string_view(buf.data(), 8) == "consumer";
  }(*listener, *at));
  // ringio::fiber: a fiber waits for a task (Boost.Context is found and linked).
  int from_fiber = sync_wait(ctx, fiber([] { return this_fiber::await([]() -> task<int> { co_return 42; }()); }));
  ok = ok && from_fiber == 42;
  std::printf("consumer: %s on %s\n", ok ? "ok" : "FAILED", std::string(to_string(ctx.backend())).c_str());
  return ok && options_compile() ? 0 : 1;
}
