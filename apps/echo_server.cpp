// echo_server — writes back every byte it receives, on every connection.
#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "common/cli.hpp"
#include "common/serve.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/multishot_receiver.hpp"
#include "ringio/net/stream_socket.hpp"

namespace {

const std::string usage = std::string(
    "usage: echo_server --port P [options]\n"
    "Echoes every byte back on every TCP connection. SIGINT/SIGTERM stop it gracefully:\n"
    "no new connections, open ones get --drain-timeout seconds, exit 0.\n"
    "options:\n") + apps::server_port_threads_usage + apps::server_options_usage +
    "  --recv MODE              multishot (default: one armed recv per connection into\n"
    "                           buffers shared by the thread) or single (a recv per message)\n";

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
ringio::task<void> echo_multishot(ringio::stream_socket s) {
  ringio::multishot_receiver rx(s, *loop_pool);
  for (;;) {
    auto chunk = co_await rx.next();
    if (!chunk || chunk->empty()) co_return;
    auto sent = co_await s.send_all(chunk->bytes());
    if (!sent || *sent != chunk->size()) co_return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, apps::server_flags());
  apps::server_config cfg;
  cfg.name = "echo_server";
  apps::read_server_options(args, cfg);
  auto recv_mode = args.text("recv", "multishot");
  if (recv_mode != "single" && recv_mode != "multishot")
    args.fail("--recv must be single or multishot, got '" + recv_mode + "'");
  args.done();
  if (recv_mode == "single") return apps::run_server(cfg, echo);
  cfg.options.loop_setup = [](ringio::io_context& ctx, unsigned) -> std::shared_ptr<void> {
    auto pool = std::make_shared<ringio::buffer_pool>(ctx, 4096, 16384);
    loop_pool = pool.get();
    return pool;
  };
  return apps::run_server(cfg, echo_multishot);
}
