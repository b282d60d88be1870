// SPDX-License-Identifier: Apache-2.0
// raw_epoll_echo_client: echo_bench's load (N connections, each looping "send L
// bytes, receive the L bytes back") written the plain way, with no framework, to
// compare CPU per round trip and latency with ringio's clients. Same command line and
// output as echo_bench, same latency histogram.
//
// Every thread owns one epoll instance and its share of nonblocking connections,
// registered once, edge-triggered, for input and output. A connection sends its
// request as far as the socket takes it, then waits for EPOLLIN (the reply cannot be
// there yet, so no recv is tried first), reads until the whole reply is in, and sends
// the next request at once. Buffers are allocated once per connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../../apps/common/latency_histogram.hpp"

namespace {

constexpr const char* kProgram = "raw_epoll_echo_client";
constexpr const char* kUsage =
    "usage: raw_epoll_echo_client --port P [--host ADDR] --connections N --length L --duration D\n"
    "                             [--threads T] [--warmup S] [--backend epoll] [--verify]\n"
    "echo_bench's load with plain epoll (edge-triggered, one epoll instance per thread, no\n"
    "framework): N connections to ADDR:P (default 127.0.0.1) over T threads (default 1),\n"
    "each looping \"send L bytes, receive the L bytes back\". After S seconds of warm-up\n"
    "(default 0, not counted) it measures for D seconds: requests/s, round-trip latency\n"
    "percentiles, failed connections and CPU time per request, then a `RESULT {json}`\n"
    "line. --verify checks every byte that comes back.\n"
    "Exit status: 0 after a run, 1 when no connection could be made, 2 for a usage error.\n";
constexpr int kMaxEvents = 1024;
constexpr std::int64_t kConnectTimeoutNs = 10'000'000'000;
constexpr std::size_t kConnectParallel = 512;  // connects in flight per thread

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n%s", kProgram, message.c_str(), kUsage);
  std::exit(2);
}

std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double cpu_seconds() noexcept {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return tv(u.ru_utime) + tv(u.ru_stime);
}

// ---------------------------------------------------------------- command line

struct Options {
  std::uint16_t port = 0;
  std::string host = "127.0.0.1";
  std::size_t connections = 0;
  std::size_t length = 0;
  double duration = 0;
  unsigned threads = 1;
  double warmup = 0;
  bool verify = false;
};

std::int64_t parse_integer(const std::map<std::string, std::string>& opts, const std::string& name,
                           std::int64_t fallback, std::int64_t min, std::int64_t max, bool required) {
  auto it = opts.find(name);
  if (it == opts.end()) {
    if (required) usage_error("missing --" + name);
    return fallback;
  }
  std::int64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || v < min || v > max)
    usage_error("--" + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                "], got '" + s + "'");
  return v;
}

double parse_seconds(const std::map<std::string, std::string>& opts, const std::string& name, double fallback,
                     double min, double max, bool required) {
  auto it = opts.find(name);
  if (it == opts.end()) {
    if (required) usage_error("missing --" + name);
    return fallback;
  }
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !(v >= min && v <= max))
    usage_error("--" + name + " must be a number of seconds in [" + std::to_string(min) + ", " + std::to_string(max) +
                "], got '" + it->second + "'");
  return v;
}

Options parse_options(int argc, char** argv) {
  const std::set<std::string> valued = {"port",     "host",    "connections", "length",
                                        "duration", "threads", "warmup",      "backend"};
  std::map<std::string, std::string> opts;
  bool verify = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a.size() <= 2 || a.compare(0, 2, "--") != 0) usage_error("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    if (name == "verify") {
      verify = true;
      continue;
    }
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (valued.count(name) == 0) usage_error("unknown option --" + name);
    if (eq == std::string::npos) {
      if (i + 1 >= argc) usage_error("option --" + name + " needs a value");
      value = argv[++i];
    }
    if (!opts.emplace(name, value).second) usage_error("option --" + name + " given twice");
  }
  Options o;
  o.port = static_cast<std::uint16_t>(parse_integer(opts, "port", 0, 1, 65535, true));
  if (auto it = opts.find("host"); it != opts.end()) o.host = it->second;
  o.connections = static_cast<std::size_t>(parse_integer(opts, "connections", 0, 1, 1'000'000, true));
  o.length = static_cast<std::size_t>(parse_integer(opts, "length", 0, 1, 64 << 20, true));
  o.duration = parse_seconds(opts, "duration", 0, 0.001, 86400, true);
  o.threads = static_cast<unsigned>(parse_integer(opts, "threads", 1, 1, 1024, false));
  o.warmup = parse_seconds(opts, "warmup", 0, 0, 3600, false);
  if (auto it = opts.find("backend"); it != opts.end() && it->second != "epoll")
    usage_error("this client only has an epoll backend, got --backend '" + it->second + "'");
  o.verify = verify;
  return o;
}

// ---------------------------------------------------------------- the load

void fill_payload(char* p, std::size_t len, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (std::size_t i = 0; i < len; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<char>(x >> 56);
  }
}

void stamp_payload(char* p, std::size_t len, std::uint64_t seq) {
  std::memcpy(p, &seq, std::min<std::size_t>(len, sizeof seq));
  if (len >= 2 * sizeof seq) std::memcpy(p + len - sizeof seq, &seq, sizeof seq);
}

enum class State { connecting, sending, receiving, closed };

struct Connection {
  int fd = -1;
  State state = State::closed;
  std::size_t offset = 0;  // bytes sent (sending) or received (receiving)
  std::int64_t started = 0;
  std::uint64_t seq = 0;
  bool hangup = false;  // the peer closed or reset: a recv will say how
  char* out = nullptr;
  char* in = nullptr;
};

struct alignas(64) Worker {
  const Options* options = nullptr;
  sockaddr_storage address{};
  socklen_t address_size = 0;
  std::vector<Connection> conns;
  std::unique_ptr<char[]> in_buffers, out_buffers;
  int epoll = -1;
  apps::latency_histogram latency;
  std::uint64_t round_trips = 0;
  std::uint64_t connect_errors = 0, session_errors = 0, verify_errors = 0;
  std::size_t open = 0;
  std::int64_t end_ns = 0;
  std::string first_error;

  void note_error(const char* what, int err) {
    if (first_error.empty()) first_error = std::string(what) + ": " + std::strerror(err);
  }
  void note_error(const char* what, const std::string& why) {
    if (first_error.empty()) first_error = std::string(what) + ": " + why;
  }

  void close_connection(Connection& c) {
    if (c.fd >= 0) close(c.fd);  // also leaves the epoll set
    c.fd = -1;
    c.state = State::closed;
    --open;
  }

  // Connect phase: at most kConnectParallel connects in flight.
  void connect_all() {
    epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) {
      std::fprintf(stderr, "%s: epoll_create1: %s\n", kProgram, std::strerror(errno));
      std::exit(1);
    }
    std::size_t next = 0, pending = 0;
    const std::int64_t deadline = now_ns() + kConnectTimeoutNs;
    epoll_event events[kMaxEvents];
    while (next < conns.size() || pending > 0) {
      while (next < conns.size() && pending < kConnectParallel) {
        Connection& c = conns[next++];
        if (start_connect(c)) ++pending;
      }
      if (pending == 0) continue;
      const std::int64_t left_ms = (deadline - now_ns()) / 1'000'000;
      if (left_ms <= 0) break;
      const int n = epoll_wait(epoll, events, kMaxEvents, static_cast<int>(std::min<std::int64_t>(left_ms, 1000)));
      for (int i = 0; i < n; ++i) {
        Connection& c = *static_cast<Connection*>(events[i].data.ptr);
        if (c.state != State::connecting) continue;
        --pending;
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          ++connect_errors;
          note_error("connect", err);
          close_connection(c);
        } else {
          c.state = State::sending;
        }
      }
    }
    for (Connection& c : conns) {
      if (c.state == State::connecting) {  // the connect timed out
        ++connect_errors;
        note_error("connect", ETIMEDOUT);
        close_connection(c);
      }
    }
  }

  bool start_connect(Connection& c) {
    c.fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ++open;
    if (c.fd < 0) {
      ++connect_errors;
      note_error("socket", errno);
      close_connection(c);
      return false;
    }
    const int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Registered once for the connection's life: output (the connect, then sends)
    // and input, edge-triggered.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &c;
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
      ++connect_errors;
      note_error("epoll_ctl", errno);
      close_connection(c);
      return false;
    }
    c.state = State::connecting;
    if (connect(c.fd, reinterpret_cast<const sockaddr*>(&address), address_size) == 0) {
      c.state = State::sending;
      return false;
    }
    if (errno == EINPROGRESS) return true;
    ++connect_errors;
    note_error("connect", errno);
    close_connection(c);
    return false;
  }

  void fail(Connection& c, const char* what, int err) {
    ++session_errors;
    note_error(what, err);
    close_connection(c);
  }

  // Runs the connection until it would block. The window decides what is counted.
  void drive(Connection& c, std::int64_t window_start, std::int64_t window_end) {
    const std::size_t len = options->length;
    for (;;) {
      if (c.state == State::sending) {
        if (c.offset == 0) {
          if (options->verify) stamp_payload(c.out, len, c.seq);
          c.started = now_ns();
        }
        while (c.offset < len) {
          const ssize_t n = send(c.fd, c.out + c.offset, len - c.offset, MSG_NOSIGNAL);
          if (n >= 0) {
            c.offset += static_cast<std::size_t>(n);
          } else if (errno == EAGAIN) {
            return;  // EPOLLOUT will come
          } else if (errno != EINTR) {
            return fail(c, "send", errno);
          }
        }
        c.state = State::receiving;
        c.offset = 0;
        if (!c.hangup) return;  // the reply cannot be there yet: wait for EPOLLIN
      }
      if (c.state != State::receiving) return;
      while (c.offset < len) {
        const ssize_t n = recv(c.fd, c.in + c.offset, len - c.offset, 0);
        if (n > 0) {
          c.offset += static_cast<std::size_t>(n);
        } else if (n == 0) {
          ++session_errors;
          note_error("recv", "the server closed the connection after " + std::to_string(c.offset) + " of " +
                                 std::to_string(len) + " bytes");
          return close_connection(c);
        } else if (errno == EAGAIN) {
          return;
        } else if (errno != EINTR) {
          return fail(c, "recv", errno);
        }
      }
      const std::int64_t t1 = now_ns();
      if (options->verify && std::memcmp(c.in, c.out, len) != 0) {
        ++verify_errors;
        ++session_errors;
        note_error("verify", "round trip " + std::to_string(c.seq) + " came back with different bytes");
        return close_connection(c);
      }
      if (t1 >= window_start && t1 < window_end) {
        ++round_trips;
        latency.record(static_cast<std::uint64_t>(t1 - c.started));
      }
      ++c.seq;
      c.state = State::sending;
      c.offset = 0;
      if (t1 >= window_end) return;  // the run is over: no new request
    }
  }

  void run(std::int64_t window_start, std::int64_t window_end) {
    for (Connection& c : conns)
      if (c.state == State::sending) drive(c, window_start, window_end);
    epoll_event events[kMaxEvents];
    for (;;) {
      const std::int64_t now = now_ns();
      if (now >= window_end || open == 0) break;
      const int timeout_ms = static_cast<int>(std::min<std::int64_t>((window_end - now) / 1'000'000 + 1, 1000));
      const int n = epoll_wait(epoll, events, kMaxEvents, timeout_ms);
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "%s: epoll_wait: %s\n", kProgram, std::strerror(errno));
        std::exit(1);
      }
      for (int i = 0; i < n; ++i) {
        Connection& c = *static_cast<Connection*>(events[i].data.ptr);
        if ((events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) c.hangup = true;
        if (c.state == State::sending || c.state == State::receiving) drive(c, window_start, window_end);
      }
    }
    end_ns = std::min(now_ns(), window_end);
    for (Connection& c : conns)
      if (c.fd >= 0) close_connection(c);
    close(epoll);
  }
};

void print_json_string(const char* key, const std::string& value) {
  std::printf(",\"%s\":\"", key);
  for (char ch : value) {
    if (ch == '"' || ch == '\\') std::printf("\\%c", ch);
    else if (static_cast<unsigned char>(ch) < 0x20) std::printf("\\u%04x", static_cast<unsigned>(ch));
    else std::putchar(ch);
  }
  std::putchar('"');
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  sockaddr_storage address{};
  socklen_t address_size = 0;
  {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (inet_pton(AF_INET, o.host.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(o.port);
      address_size = sizeof *v4;
    } else if (inet_pton(AF_INET6, o.host.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(o.port);
      address_size = sizeof *v6;
    } else {
      usage_error("invalid --host '" + o.host + "' (a numeric IPv4 or IPv6 address)");
    }
  }
  const std::string target =
      (address.ss_family == AF_INET6 ? "[" + o.host + "]" : o.host) + ":" + std::to_string(o.port);
  rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  std::printf("%s: backend raw epoll (edge-triggered, one epoll instance per thread, nonblocking sockets)\n", kProgram);
  std::fflush(stdout);

  // Connections spread evenly: thread t gets connections / threads, the first
  // connections % threads get one more.
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < o.threads; ++t) {
    auto w = std::make_unique<Worker>();
    w->options = &o;
    w->address = address;
    w->address_size = address_size;
    const std::size_t n = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    w->conns.resize(n);
    w->in_buffers.reset(new char[n * o.length]());
    w->out_buffers.reset(new char[(o.verify ? n : 1) * o.length]());
    for (std::size_t i = 0; i < n; ++i) {
      Connection& c = w->conns[i];
      c.in = w->in_buffers.get() + i * o.length;
      c.out = w->out_buffers.get() + (o.verify ? i * o.length : 0);
      if (o.verify) fill_payload(c.out, o.length, (std::uint64_t{t} << 32) | i);
    }
    if (!o.verify) fill_payload(w->out_buffers.get(), o.length, t);
    workers.push_back(std::move(w));
  }

  // Every thread connects; the window starts once all of them are done.
  std::latch connected(o.threads);
  std::atomic<std::int64_t> window_start{0}, window_end{0};
  std::latch go(1);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      Worker& w = *workers[t];
      w.connect_all();
      connected.count_down();
      go.wait();
      w.run(window_start.load(), window_end.load());
    });
  }
  connected.wait();
  std::uint64_t connected_count = 0, connect_errors = 0;
  for (auto& w : workers) {
    connect_errors += w->connect_errors;
    for (auto& c : w->conns) connected_count += c.state == State::sending ? 1 : 0;
  }
  const std::int64_t start = now_ns() + static_cast<std::int64_t>(o.warmup * 1e9);
  const std::int64_t end = start + static_cast<std::int64_t>(o.duration * 1e9);
  window_start = start;
  window_end = connected_count > 0 ? end : 0;  // nothing connected: the threads stop at once
  go.count_down();

  // CPU time of the whole process over the window, sampled from this idle thread.
  double cpu_begin = 0, cpu_end = 0;
  {
    std::mutex mu;
    std::condition_variable cv;
    std::unique_lock lk(mu);
    auto until = [](std::int64_t ns) { return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns)); };
    if (connected_count > 0) {
      cv.wait_until(lk, until(start), [] { return false; });
      cpu_begin = cpu_seconds();
      cv.wait_until(lk, until(end), [] { return false; });
      cpu_end = cpu_seconds();
    }
  }
  for (auto& th : threads) th.join();
  if (connected_count == 0) {
    std::fprintf(stderr, "%s: cannot connect to %s: %s\n", kProgram, target.c_str(), workers[0]->first_error.c_str());
    return 1;
  }

  apps::latency_histogram h;
  std::uint64_t requests = 0, session_errors = 0, verify_errors = 0;
  std::int64_t last_end = 0;
  std::string first_error;
  for (auto& w : workers) {
    h.merge(w->latency);
    requests += w->round_trips;
    session_errors += w->session_errors;
    verify_errors += w->verify_errors;
    last_end = std::max(last_end, w->end_ns);
    if (first_error.empty()) first_error = w->first_error;
  }
  const double seconds = static_cast<double>(std::max<std::int64_t>(0, std::min(last_end, end) - start)) / 1e9;
  const double cpu = cpu_end - cpu_begin;
  const std::uint64_t errors = connect_errors + session_errors;
  const double rps = seconds > 0 ? static_cast<double>(requests) / seconds : 0;
  const double cpu_us = requests > 0 ? cpu * 1e6 / static_cast<double>(requests) : 0;
  auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };

  std::printf("%s: %zu connections on %u thread%s, %zu-byte messages, %s, %.3f s measured after %.3f s warm-up\n",
              kProgram, o.connections, o.threads, o.threads == 1 ? "" : "s", o.length, target.c_str(), seconds,
              o.warmup);
  std::printf("%s: %.0f requests/s (%llu requests), %.3f CPU s, %.2f CPU us per request\n", kProgram, rps,
              static_cast<unsigned long long>(requests), cpu, cpu_us);
  std::printf("%s: latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (mean %.1f)\n", kProgram,
              us(h.percentile(50)), us(h.percentile(90)), us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()),
              h.mean() / 1000.0);
  std::printf("%s: %llu failed connection%s (%llu could not connect, %llu failed while running", kProgram,
              static_cast<unsigned long long>(errors), errors == 1 ? "" : "s",
              static_cast<unsigned long long>(connect_errors), static_cast<unsigned long long>(session_errors));
  if (o.verify) std::printf(", %llu bad replies", static_cast<unsigned long long>(verify_errors));
  std::printf(")\n");
  if (errors > 0) std::printf("%s: first error: %s\n", kProgram, first_error.c_str());
  std::printf(
      "RESULT {\"tool\":\"%s\",\"requests_per_s\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
      "\"p999_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f,\"requests\":%llu,\"errors\":%llu,"
      "\"connect_errors\":%llu,\"seconds\":%.4f,\"warmup_s\":%.3f,\"connections\":%zu,\"length\":%zu,"
      "\"threads\":%u,\"cpu_s\":%.3f,\"cpu_us_per_request\":%.3f,\"verify\":%s",
      kProgram, std::isfinite(rps) ? rps : 0.0, us(h.percentile(50)), us(h.percentile(90)), us(h.percentile(99)),
      us(h.percentile(99.9)), us(h.max()), h.mean() / 1000.0, static_cast<unsigned long long>(requests),
      static_cast<unsigned long long>(errors), static_cast<unsigned long long>(connect_errors), seconds, o.warmup,
      o.connections, o.length, o.threads, cpu, cpu_us, o.verify ? "true" : "false");
  print_json_string("backend", "raw-epoll");
  std::printf("}\n");
  return 0;
}
