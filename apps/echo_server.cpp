// SPDX-License-Identifier: Apache-2.0
// echo_server — writes back every byte it receives, on every connection.
#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "common/cli.hpp"
#include "common/pool_flags.hpp"
#include "common/serve.hpp"
#include "ringio/fiber.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/multishot_receiver.hpp"
#include "ringio/net/stream_socket.hpp"

namespace {

const std::string usage = std::string(
                              "usage: echo_server --port P [options]\n"
                              "Echoes every byte back on every TCP connection. SIGINT/SIGTERM stop it gracefully:\n"
                              "no new connections, open ones get --drain-timeout seconds, exit 0.\n"
                              "options:\n") +
                          apps::server_port_threads_usage + apps::server_options_usage +
                          "  --recv MODE              multishot (default: one armed recv per connection into\n"
                          "                           buffers shared by the thread) or single (a recv per message)\n" +
                          apps::pool_flags_usage +
                          "  --fibers                 one fiber per connection doing blocking-style recv/send\n"
                          "                           (a recv per message; not with --recv)\n"
                          "  --fiber-stack-kib N      stack of each fiber with --fibers (default 64)\n";

// --fibers: the stack size of each connection's fiber.
std::size_t fiber_stack_bytes = 64 * 1024;

// The same loop as echo(), written as ordinary blocking code on a fiber's stack.
void echo_blocking(ringio::stream_socket& s) {
  std::array<std::byte, 16384> buf;
  for (;;) {
    auto n = ringio::this_fiber::await(s.recv(buf));
    if (!n || *n == 0) return;
    auto sent = ringio::this_fiber::await(s.send_all(std::span(buf).first(*n)));
    if (!sent || *sent != *n) return;
  }
}

ringio::task<void> echo_fiber(ringio::stream_socket s) {
  return ringio::fiber([s = std::move(s)]() mutable { echo_blocking(s); },
                       ringio::fiber_options{.stack_size = fiber_stack_bytes});
}

// One recv per message into the connection's own buffer.
ringio::task<void> echo(ringio::stream_socket s) {
  std::array<std::byte, 16384> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;  // error or EOF: the socket closes with the frame
    auto sent = co_await s.send_all(std::span(buf).first(*n));
    if (!sent || *sent != *n) co_return;  // error, or stopped part-way
  }
}

// The loop's shared receive buffers (multishot mode), set up by loop_setup.
thread_local ringio::buffer_pool* loop_pool = nullptr;

// One multishot recv for the connection; data arrives in the loop's shared buffers.
// Whatever else is queued when it wakes (a bundle's buffers, earlier arrivals) goes
// back with the first buffer in one gathered send.
ringio::task<void> echo_multishot(ringio::stream_socket s) {
  ringio::multishot_receiver rx(s, *loop_pool);
  constexpr std::size_t max_batch = 16;
  std::array<ringio::pooled_buffer, max_batch> held;
  std::array<ringio::const_buffer, max_batch> out;
  for (;;) {
    auto chunk = co_await rx.next();
    if (!chunk || chunk->empty()) co_return;
    held[0] = std::move(*chunk);
    std::size_t n = 1;
    std::size_t total = held[0].size();
    while (n < max_batch && rx.next_ready(held[n])) total += held[n++].size();
    if (n == 1) {
      auto sent = co_await s.send_all(held[0].bytes());
      if (!sent || *sent != total) co_return;
    } else {
      for (std::size_t i = 0; i < n; ++i) out[i] = ringio::const_buffer(held[i].data(), held[i].size());
      auto sent = co_await s.send_all(std::span<const ringio::const_buffer>(out.data(), n));
      if (!sent || *sent != total) co_return;
    }
    for (std::size_t i = 0; i < n; ++i) held[i].release();
  }
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, apps::server_flags({"fibers"}));
  apps::server_config cfg;
  cfg.name = "echo_server";
  apps::read_server_options(args, cfg);
  const bool fibers = args.flag("fibers");
  auto recv_mode = args.text("recv", "");
  if (fibers && !recv_mode.empty()) args.fail("--fibers receives a message at a time: it takes no --recv");
  auto stack_kib = args.integer("fiber-stack-kib", 0, 16, 64 * 1024);
  if (stack_kib != 0 && !fibers) args.fail("--fiber-stack-kib needs --fibers");
  if (stack_kib != 0) fiber_stack_bytes = static_cast<std::size_t>(stack_kib) * 1024;
  if (recv_mode.empty()) recv_mode = "multishot";
  if (recv_mode != "single" && recv_mode != "multishot")
    args.fail("--recv must be single or multishot, got '" + recv_mode + "'");
  static ringio::buffer_pool_options pool_options;
  pool_options = apps::read_pool_flags(args);
  args.done();
  if (fibers) return apps::run_server(cfg, echo_fiber);
  if (recv_mode == "single") return apps::run_server(cfg, echo);
  cfg.options.loop_setup = [](ringio::io_context& ctx, unsigned) -> std::shared_ptr<void> {
    auto pool = std::make_shared<ringio::buffer_pool>(ctx, 4096, 16384, pool_options);
    loop_pool = pool.get();
    return pool;
  };
  return apps::run_server(cfg, echo_multishot);
}
