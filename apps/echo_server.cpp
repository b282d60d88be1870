// echo_server — writes back every byte it receives, on every connection.
#include <array>
#include <cstddef>
#include <span>

#include "common/cli.hpp"
#include "common/serve.hpp"
#include "ringio/net/buffer_pool.hpp"
#include "ringio/net/multishot_receiver.hpp"
#include "ringio/net/stream_socket.hpp"

namespace {

constexpr const char* usage =
    "usage: echo_server --port P [--host ADDR] [--threads N] [--backend uring|epoll|uring-poll]\n"
    "                   [--drain-timeout SECONDS] [--single-accept] [--dispatch reuseport|acceptor]\n"
    "                   [--sqpoll] [--recv single|multishot]\n"
    "Echoes every byte back on every TCP connection. SIGINT/SIGTERM stop it gracefully:\n"
    "no new connections, open ones get --drain-timeout (default 5) seconds, exit 0.\n"
    "--dispatch: one SO_REUSEPORT listener per thread (default), or one acceptor thread\n"
    "handing each connection to the least-loaded thread.\n"
    "--sqpoll: a kernel thread polls each ring's submission queue (io_uring; costs a core).\n"
    "--recv: one recv per message into a per-connection buffer (single), or one armed\n"
    "multishot recv per connection into buffers shared by the thread (multishot, default).\n";

// One recv per message into the connection's own buffer.
ringio::task<void> echo(ringio::stream_socket s) {
  std::array<std::byte, 16384> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;  // error or EOF: the socket closes with the frame
    auto sent = co_await s.send_all(std::span(buf).first(*n));
    if (!sent) co_return;
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
    if (!sent) co_return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"single-accept", "sqpoll"});
  apps::server_config cfg;
  cfg.name = "echo_server";
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 0, 65535));
  auto host = args.text("host", "127.0.0.1");
  auto addr = ringio::socket_address::from_host(host, port);
  if (!addr) args.fail("invalid --host '" + host + "': " + addr.error().message());
  cfg.address = *addr;
  cfg.threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  cfg.backend = args.backend();
  cfg.drain_timeout = std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  cfg.multishot_accept = !args.flag("single-accept");
  cfg.sqpoll = args.flag("sqpoll");
  auto dispatch = args.text("dispatch", "reuseport");
  if (dispatch == "acceptor")
    cfg.dispatch = apps::dispatch_mode::acceptor;
  else if (dispatch != "reuseport")
    args.fail("--dispatch must be reuseport or acceptor, got '" + dispatch + "'");
  auto recv_mode = args.text("recv", "multishot");
  if (recv_mode != "single" && recv_mode != "multishot")
    args.fail("--recv must be single or multishot, got '" + recv_mode + "'");
  args.done();
  if (recv_mode == "single") return apps::serve(cfg, echo);
  cfg.loop_setup = [](ringio::io_context& ctx) -> std::shared_ptr<void> {
    auto pool = std::make_shared<ringio::buffer_pool>(ctx, 4096, 16384);
    loop_pool = pool.get();
    return pool;
  };
  return apps::serve(cfg, echo_multishot);
}
