// SPDX-License-Identifier: Apache-2.0
// serve — what the server apps share on top of ringio::serve: the command-line options
// that fill serve_options, the start-up line on stdout, log lines prefixed with the
// program's name, and the per-thread counts at exit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/serve.hpp"
#include "ringio/serve_options.hpp"

namespace ringio::http {
class server;
}

namespace apps {

struct server_config {
  std::string name;  // program name for messages
  ringio::socket_address address;
  ringio::serve_options options;  // threads, backend, drain, dispatch, hooks
  /// Appended to the start-up line (", <text>").
  std::string banner;
  /// --metrics-port: serve GET /metrics (Prometheus) on this port of the same host;
  /// -1: not at all.
  int metrics_port = -1;
  /// The app's HTTP server, whose metrics /metrics adds (null: loops only).
  const ringio::http::server* http_server = nullptr;
  /// --handover-socket: take the listeners over from the process running there, and
  /// hand them to the next one (common/handover.hpp). Empty: not at all.
  std::string handover_path;
  /// Listeners passed in by socket activation (LISTEN_FDS), served instead of binding.
  std::shared_ptr<std::vector<ringio::stream_listener>> inherited;
  /// Called once, on a loop thread, when every loop has stopped accepting and closed
  /// its listeners (the drain begins after a signal or a handover).
  std::function<void()> on_listeners_closed;
  /// Whether a new process can take over from this one without refusing connections
  /// (--handover-socket, --reuse-port, or socket activation).
  [[nodiscard]] bool restartable() const {
    return !handover_path.empty() || options.share_port || (inherited && !inherited->empty());
  }
};

class cli;

/// --port and --threads, for the usage text of the apps that take them as options
/// (pong takes them as positional arguments).
constexpr const char* server_port_threads_usage =
    "  --port P                 TCP port on --host (0: the kernel picks one)\n"
    "  --threads N              loop threads (default 1)\n";

/// The options every server app takes, for its usage text.
constexpr const char* server_options_usage =
    "  --host ADDR              IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
    "  --backend B              uring, epoll or uring-poll (default: RINGIO_BACKEND, else\n"
    "                           io_uring with a fall back to epoll)\n"
    "  --drain-timeout SECONDS  after SIGINT/SIGTERM, time open connections get (default 5)\n"
    "  --dispatch MODE          reuseport (a listener per thread, default) or acceptor\n"
    "                           (thread 0 hands connections to the least-loaded thread)\n"
    "  --single-accept          one accept per connection instead of a multishot accept\n"
    "  --sqpoll                 a kernel thread polls each ring's submissions (io_uring)\n"
    "  --no-defer-taskrun       set up the rings without IORING_SETUP_DEFER_TASKRUN\n"
    "  --direct-fds             accept into each ring's file table (direct descriptors,\n"
    "                           io_uring on Linux 6.8+; ignored elsewhere)\n"
    "  --send-zc BYTES          sends of at least BYTES use IORING_OP_SEND_ZC (io_uring;\n"
    "                           default 0: off)\n"
    "  --min-wait US            wait up to US microseconds to batch completions\n"
    "                           (io_uring, Linux 6.12; default 0: off)\n"
    "  --busy-poll US           after a completion, ask the kernel without sleeping for\n"
    "                           US microseconds (all backends; default 0: off)\n"
    "  --iowait                 let the loop's sleeps count as I/O wait (io_uring: no\n"
    "                           IORING_ENTER_NO_IOWAIT, which Linux 6.15+ gets by default)\n"
    "  --no-ring-resize         give each ring its full size from the start (io_uring: no\n"
    "                           start at 256/1,024 entries growing in place, Linux 6.13+)\n"
    "  --handover-socket PATH   restarts that refuse no connection: listen on the Unix\n"
    "                           socket PATH; a new process started with the same option\n"
    "                           takes the listening sockets over from the running one,\n"
    "                           which then stops accepting and drains\n"
    "  --reuse-port             bind with SO_REUSEPORT, sharing the port with a running\n"
    "                           process (started with it too) instead of failing\n"
    "  (LISTEN_PID/LISTEN_FDS)  socket activation: serve the sockets passed in (--port is\n"
    "                           then not needed)\n"
    "  --metrics-port P         serve GET /metrics (Prometheus text format: every loop's\n"
    "                           metrics) on port P of --host (0: the kernel picks one)\n";

/// Flags (options without a value) among the server options, for cli's constructor.
std::set<std::string> server_flags(std::set<std::string> extra = {});

/// Reads the options above into `cfg` (exits with usage on bad input).
void read_server_options(cli& args, server_config& cfg);
/// The same without --port and --threads: the caller has them already.
void read_server_options(cli& args, server_config& cfg, std::uint16_t port, unsigned threads);

/// ringio::serve with the apps' conventions: raises the descriptor limit, prefixes log
/// lines with cfg.name, prints "<name>: listening on <address>, ..." on stdout once
/// bound, serves until SIGINT/SIGTERM or `done`, and logs the connections each thread
/// served. Returns the exit status: 0 after a graceful stop, 1 when the address cannot
/// be bound or a loop fails. `summary` (optional) receives what serve reported.
int run_server(server_config cfg, ringio::connection_handler handler, std::stop_token done = {},
               ringio::serve_summary* summary = nullptr);

}  // namespace apps
