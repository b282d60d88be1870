// serve — what every ringio server app shares: listeners on every loop thread, a
// graceful stop on SIGINT/SIGTERM (stop accepting, let connections finish within a
// deadline, then cancel them), and accept errors that never take the server down.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <stop_token>
#include <string>

#include "ringio/backend_kind.hpp"
#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"

namespace apps {

/// How connections reach the loop threads.
enum class dispatch_mode {
  reuse_port,  ///< one SO_REUSEPORT listener per thread: the kernel spreads connections
  acceptor,    ///< thread 0 accepts and hands each socket to the least-loaded loop
};

struct server_config {
  std::string name;                 // program name for messages
  ringio::socket_address address;
  unsigned threads = 1;
  std::optional<ringio::backend_kind> backend;
  std::chrono::milliseconds drain_timeout{5000};
  bool multishot_accept = true;
  dispatch_mode dispatch = dispatch_mode::reuse_port;
  bool sqpoll = false;  // IORING_SETUP_SQPOLL on the loop threads' rings
  bool defer_taskrun = true;  // IORING_SETUP_DEFER_TASKRUN on the loop threads' rings
  /// Runs on each loop thread before it serves; what it returns lives until that loop
  /// has drained its connections (per-loop resources such as a buffer_pool).
  std::function<std::shared_ptr<void>(ringio::io_context&)> loop_setup;
  /// Called (on the main thread) once serving is to end, after accepting stopped: with
  /// the signal number, or 0 when `done` asked for it. E.g. to close idle keep-alive
  /// connections at once.
  std::function<void(int signo)> on_stop;
  /// When requested, the server stops as on a signal (pong: its sessions are over).
  std::stop_token done;
  /// Appended to the start-up line (", <text>").
  std::string banner;
};

/// Handles one connection; runs on the loop thread that accepted it.
using connection_handler = std::function<ringio::task<void>(ringio::stream_socket)>;

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
    "  --no-defer-taskrun       set up the rings without IORING_SETUP_DEFER_TASKRUN\n";

/// Flags (options without a value) among the server options, for cli's constructor.
std::set<std::string> server_flags(std::set<std::string> extra = {});

/// Reads the options above into `cfg` (exits with usage on bad input).
void read_server_options(cli& args, server_config& cfg);
/// The same without --port and --threads: the caller has them already.
void read_server_options(cli& args, server_config& cfg, std::uint16_t port, unsigned threads);

/// Binds (one SO_REUSEPORT listener per thread), prints one line with the address and
/// the backend, serves until SIGINT/SIGTERM, drains, and returns the exit status:
/// 0 after a graceful stop, 1 when the address cannot be bound or a loop fails.
int serve(const server_config& cfg, const connection_handler& handler);

}  // namespace apps
