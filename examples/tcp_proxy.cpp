// SPDX-License-Identifier: Apache-2.0
// tcp_proxy — forwards every connection on a local port to a backend address, with a
// connect timeout and an idle timeout, and logs what each connection moved.
//   tcp_proxy LISTEN_PORT BACKEND      e.g. tcp_proxy 9000 127.0.0.1:8080
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ringio/ringio.hpp>

using namespace ringio;
using namespace std::chrono_literals;

task<void> forward(stream_socket client, socket_address backend) {
  auto upstream = co_await with_timeout(stream_socket::connect(backend), 3s);
  if (!upstream) {
    std::fprintf(stderr, "tcp_proxy: %s: %s\n", backend.to_string().c_str(), upstream.error().message().c_str());
    client.abort();  // a reset: the client must not take this for an empty answer
    co_return;
  }
  // On an error both sockets close with a reset when they go out of scope.
  auto moved = co_await copy_bidirectional(client, *upstream, {.idle_timeout = 60s});
  if (moved) {
    std::printf("tcp_proxy: %llu bytes up, %llu down%s%s\n", static_cast<unsigned long long>(moved->a_to_b),
                static_cast<unsigned long long>(moved->b_to_a),
                moved->ok() ? "" : ", ended by: ", moved->ok() ? "" : moved->error.message().c_str());
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tcp_proxy LISTEN_PORT BACKEND_ADDRESS\n");
    return 2;
  }
  char* end = nullptr;
  const unsigned long port = std::strtoul(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || port > 65535) {
    std::fprintf(stderr, "tcp_proxy: bad port '%s'\n", argv[1]);
    return 2;
  }
  auto backend = socket_address::parse(argv[2]);
  if (!backend) {
    std::fprintf(stderr, "tcp_proxy: bad backend address '%s': %s\n", argv[2], backend.error().message().c_str());
    return 2;
  }
  auto served = serve(socket_address::loopback(static_cast<std::uint16_t>(port)),
                      [to = *backend](stream_socket s) { return forward(std::move(s), to); },
                      {.on_listening = [](const socket_address& at, runtime&) {
                        std::printf("tcp_proxy: listening on %s\n", at.to_string().c_str());
                        std::fflush(stdout);
                      }});
  if (!served) {
    std::fprintf(stderr, "tcp_proxy: %s\n", served.error().message().c_str());
    return 1;
  }
  return 0;
}
