// SPDX-License-Identifier: Apache-2.0
// Process plumbing shared by the C++ benchmark peers: the command line, the
// listeners, the start-up line and the shutdown signal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <latch>
#include <string>
#include <vector>

namespace peers {

enum class Mode { echo, pong, http };

// Size of the buffers the peers read into (pong reads whole blocks instead).
inline constexpr std::size_t kReadBufferSize = 16384;

struct Options {
  Mode mode = Mode::echo;
  std::uint16_t port = 0;
  int threads = 1;
  std::size_t block = 16384;  // pong block size in bytes
  std::string host = "127.0.0.1";
};

const char* mode_name(Mode mode);

// Parses `--mode M --port P [--threads N] [--block B] [--host ADDR]`.
// --help prints the usage and exits 0; a bad or missing argument prints the
// usage to stderr and exits 2.
Options parse_options(int argc, char** argv, const char* program);

// Raises the RLIMIT_NOFILE soft limit to the hard limit, ignores SIGPIPE and
// blocks SIGINT/SIGTERM so that only run_until_signal() receives them.
// Call it before any thread is started: threads inherit the signal mask.
void prepare_process();

// Opens `count` listeners bound to host:port with SO_REUSEPORT, one per
// worker thread, so the kernel spreads new connections across the threads.
// Exits 1 with a message if the port is already taken.
std::vector<int> open_listeners(const Options& options, int count, bool nonblocking, const char* program);

// Runs worker(listener, ready) on its own thread for each listener. Once
// every worker has called ready.count_down() it prints the start-up line
// `<program>: mode=M port=P threads=N`, so the line means "serving". Then it
// waits for SIGINT or SIGTERM, shuts the listeners down and exits with 0.
using Worker = std::function<void(int listener, std::latch& ready)>;
[[noreturn]] void run_until_signal(const char* program, const Options& options, const std::vector<int>& listeners,
                                   const Worker& worker);

// Prints `<program>: <what>: <strerror(err)>` and exits 1.
[[noreturn]] void die(const char* program, const char* what, int err);

void set_nodelay(int fd);

}  // namespace peers
