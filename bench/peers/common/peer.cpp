// SPDX-License-Identifier: Apache-2.0
#include "peer.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

namespace peers {
namespace {

void print_usage(std::FILE* out, const char* program) {
  std::fprintf(out,
               "usage: %s --mode echo|pong|http --port P [--threads N] "
               "[--block B] [--host ADDR]\n"
               "\n"
               "  --mode     echo: write back every byte as it arrives\n"
               "             pong: read B-byte blocks, write each one back\n"
               "             http: answer HTTP/1.1 GETs with \"Hello world!\"\n"
               "  --port     TCP port to listen on (1-65535)\n"
               "  --threads  worker threads, each with its own listener "
               "(default 1)\n"
               "  --block    pong block size in bytes (default 16384)\n"
               "  --host     address to bind (default 127.0.0.1)\n",
               program);
}

[[noreturn]] void usage_error(const char* program, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", program, why.c_str());
  print_usage(stderr, program);
  std::exit(2);
}

template <typename T>
bool parse_number(std::string_view text, T min, T max, T& out) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return false;
  if (value < min || value > max) return false;
  out = value;
  return true;
}

}  // namespace

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::echo:
      return "echo";
    case Mode::pong:
      return "pong";
    case Mode::http:
      return "http";
  }
  return "?";
}

Options parse_options(int argc, char** argv, const char* program) {
  Options options;
  bool have_mode = false;
  bool have_port = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_usage(stdout, program);
      std::exit(0);
    }
    // Accept both `--name value` and `--name=value`.
    std::string_view name = arg;
    std::string_view value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (arg.starts_with("--")) {
      if (i + 1 >= argc) usage_error(program, "missing value for " + std::string(arg));
      value = argv[++i];
    }
    const std::string bad = "bad value for " + std::string(name) + ": '" + std::string(value) + "'";
    if (name == "--mode") {
      if (value == "echo") options.mode = Mode::echo;
      else if (value == "pong") options.mode = Mode::pong;
      else if (value == "http") options.mode = Mode::http;
      else usage_error(program, bad);
      have_mode = true;
    } else if (name == "--port") {
      if (!parse_number<std::uint16_t>(value, 1, 65535, options.port)) usage_error(program, bad);
      have_port = true;
    } else if (name == "--threads") {
      if (!parse_number(value, 1, 1024, options.threads)) usage_error(program, bad);
    } else if (name == "--block") {
      if (!parse_number<std::size_t>(value, 1, std::size_t{1} << 30, options.block)) usage_error(program, bad);
    } else if (name == "--host") {
      if (value.empty()) usage_error(program, bad);
      options.host = std::string(value);
    } else {
      usage_error(program, "unknown argument '" + std::string(arg) + "'");
    }
  }
  if (!have_mode) usage_error(program, "--mode is required");
  if (!have_port) usage_error(program, "--port is required");
  return options;
}

void prepare_process() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::vector<int> open_listeners(const Options& options, int count, bool nonblocking, const char* program) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.port);
  if (int rc = getaddrinfo(options.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    std::fprintf(stderr, "%s: cannot resolve host '%s': %s\n", program, options.host.c_str(), gai_strerror(rc));
    std::exit(2);
  }
  const int one = 1;

  // SO_REUSEPORT would let us share the port with any other SO_REUSEPORT
  // listener of the same user, so probe it first with a plain socket: its
  // bind fails if anything at all listens there.
  int probe = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) die(program, "socket", errno);
  setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(probe, found->ai_addr, found->ai_addrlen) != 0) {
    if (errno == EADDRINUSE) {
      std::fprintf(stderr, "%s: port %u on %s is already in use\n", program, options.port, options.host.c_str());
      std::exit(1);
    }
    die(program, "bind", errno);
  }
  close(probe);

  std::vector<int> listeners;
  for (int i = 0; i < count; ++i) {
    int type = SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0);
    int fd = socket(found->ai_family, type, 0);
    if (fd < 0) die(program, "socket", errno);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
      die(program, "setsockopt(SO_REUSEPORT)", errno);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      if (errno == EADDRINUSE) {
        std::fprintf(stderr, "%s: port %u on %s is already in use\n", program, options.port, options.host.c_str());
        std::exit(1);
      }
      die(program, "bind", errno);
    }
    if (listen(fd, SOMAXCONN) != 0) die(program, "listen", errno);
    listeners.push_back(fd);
  }
  freeaddrinfo(found);
  return listeners;
}

void run_until_signal(const char* program, const Options& options, const std::vector<int>& listeners,
                      const Worker& worker) {
  static std::latch ready(static_cast<std::ptrdiff_t>(listeners.size()));
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    std::thread thread([worker, listener = listeners[i]] { worker(listener, ready); });
    // Named so that per-thread activity can be told apart in /proc.
    const std::string name = "worker-" + std::to_string(i);
    pthread_setname_np(thread.native_handle(), name.c_str());
    thread.detach();
  }
  ready.wait();
  std::printf("%s: mode=%s port=%u threads=%d\n", program, mode_name(options.mode), options.port, options.threads);
  std::fflush(stdout);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int signal_number = 0;
  sigwait(&set, &signal_number);
  // A listener that an io_uring request still references outlives the
  // process for a moment; shutting it down frees the port right away.
  for (int listener : listeners) shutdown(listener, SHUT_RDWR);
  // The workers are parked in the kernel with connections open; there is
  // nothing to flush but stdout, so leave without unwinding them.
  std::fflush(stdout);
  std::_Exit(0);
}

void die(const char* program, const char* what, int err) {
  std::fprintf(stderr, "%s: %s: %s\n", program, what, std::strerror(err));
  std::fflush(stdout);
  std::_Exit(1);  // may run on a worker thread while the others are busy
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace peers
