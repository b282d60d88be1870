// SPDX-License-Identifier: Apache-2.0
// Echoes one message through a real socket pair with ringio::ringio alone: the core
// library links with liburing and nothing else, and its version is the headers'.
#include <array>
#include <cstdio>
#include <ringio/ringio.hpp>
#include <string_view>

using namespace ringio;

int main() {
  io_context ctx;
  auto listener = tcp_listener::bind(socket_address::loopback(0));
  if (!listener) return 1;
  auto at = listener->local_address();
  bool ok = sync_wait(ctx, [](tcp_listener& l, socket_address at) -> task<bool> {
    auto [server, client] = co_await when_all(l.accept(), tcp_stream::connect(at));
    if (!server || !client) co_return false;
    auto sent = co_await client->send_all(std::string_view("core"));
    std::array<char, 4> buf;
    auto got = co_await server->recv_exact(buf);
    co_return sent&& got&& std::string_view(buf.data(), 4) == "core";
  }(*listener, *at));
  ok = ok && version() == header_version;
  std::printf("core consumer (ringio %s): %s on %s\n", version().string.data(), ok ? "ok" : "FAILED",
              std::string(to_string(ctx.backend())).c_str());
  return ok ? 0 : 1;
}
