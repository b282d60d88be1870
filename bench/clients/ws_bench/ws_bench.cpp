// SPDX-License-Identifier: Apache-2.0
// ws_bench: the load of the benchmark's websocket scenario, the same for every server.
// N WebSocket connections to 127.0.0.1:P, each looping "send one masked message of L
// bytes, wait for the whole echo": messages per second and the round-trip latency.
//
// One thread, one epoll instance, nonblocking sockets registered once, edge-triggered.
// Each connection does a real client handshake (RFC 6455 section 4.1: a random
// Sec-WebSocket-Key, the 101 checked, Sec-WebSocket-Accept checked against the key's
// SHA-1), then sends its frames masked with a fresh random key each (section 5.3).
// The echo may come back in several frames (continuations): a message is complete at
// its frame with FIN. Control frames from the server (pings) are skipped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../../../apps/common/latency_histogram.hpp"

namespace {

constexpr const char* kUsage =
    "usage: ws_bench --port P --connections N --length L --duration D [--path /ws/echo]\n"
    "                [--text] [--warmup S] [--connect-timeout S]\n"
    "N WebSocket connections to 127.0.0.1:P (handshake on PATH), each looping \"send a\n"
    "masked message of L bytes (binary, or ASCII text with --text), wait for the whole\n"
    "echo\" for D seconds after S seconds of warm-up (default 0). Prints the rate, the\n"
    "latency percentiles and a `RESULT {json}` line.\n";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "ws_bench: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

struct Options {
  std::uint16_t port = 0;
  int connections = 0;
  std::size_t length = 0;
  double duration = 0;
  double warmup = 0;
  double connect_timeout = 30;
  std::string path = "/ws/echo";
  bool text = false;
};

double number(const char* flag, const char* text, double lo, double hi) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= lo && v <= hi)) usage_error(std::string("bad ") + flag + " '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  bool port = false, conns = false, length = false, duration = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a == "--text") {
      o.text = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("missing value for " + std::string(a));
    const char* v = argv[++i];
    if (a == "--port") {
      o.port = static_cast<std::uint16_t>(number("--port", v, 1, 65535));
      port = true;
    } else if (a == "--connections") {
      o.connections = static_cast<int>(number("--connections", v, 1, 1'000'000));
      conns = true;
    } else if (a == "--length") {
      o.length = static_cast<std::size_t>(number("--length", v, 1, 1 << 24));
      length = true;
    } else if (a == "--duration") {
      o.duration = number("--duration", v, 0.01, 86400);
      duration = true;
    } else if (a == "--warmup") {
      o.warmup = number("--warmup", v, 0, 86400);
    } else if (a == "--connect-timeout") {
      o.connect_timeout = number("--connect-timeout", v, 0.1, 3600);
    } else if (a == "--path") {
      o.path = v;
      if (o.path.empty() || o.path[0] != '/') usage_error("--path must start with /");
    } else {
      usage_error("unknown option " + std::string(a));
    }
  }
  if (!port || !conns || !length || !duration)
    usage_error("--port, --connections, --length and --duration are required");
  return o;
}

std::uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string base64(const unsigned char* data, int n) {
  std::string out(static_cast<std::size_t>(4 * ((n + 2) / 3)) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, n);
  out.resize(static_cast<std::size_t>(len));
  return out;
}

// Sec-WebSocket-Accept for `key`: base64(SHA-1(key + the RFC's GUID)).
std::string accept_for(const std::string& key) {
  const std::string s = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest);
  return base64(digest, SHA_DIGEST_LENGTH);
}

// The value of header `name` (case-insensitive) in a response head, or "".
std::string header(std::string_view head, std::string_view name) {
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const std::size_t start = pos + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end == std::string_view::npos ? end : end - start);
    const std::size_t colon = line.find(':');
    if (colon == name.size() && strncasecmp(line.data(), name.data(), name.size()) == 0) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return std::string(v);
    }
    pos = end;
  }
  return {};
}

enum class State { connecting, handshake, running, failed };

struct Conn {
  int fd = -1;
  State state = State::connecting;
  std::string key;
  std::string out;                // bytes to send: the handshake request, then one frame
  std::size_t sent = 0;           // of `out`
  std::vector<unsigned char> in;  // received bytes not yet parsed
  std::size_t got = 0;            // payload bytes of the current message so far
  std::uint64_t started = 0;      // when the current message was sent (ns)
};

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o), rng_(std::random_device{}()) {
    payload_.resize(o.length);
    for (std::size_t i = 0; i < o.length; ++i) payload_[i] = static_cast<char>(o.text ? 'a' + i % 26 : i * 131 + 7);
  }

  int run() {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return fail_all("epoll_create1");
    conns_.resize(static_cast<std::size_t>(o_.connections));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o_.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::uint64_t t0 = now_ns();
    // Connect all of them at once (the servers listen with large backlogs); the load
    // starts once every handshake is done (or failed), so that all N are in it.
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
      if (c.fd < 0) return fail_all("socket");
      int one = 1;
      ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
        fail(c);
        continue;
      }
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
      ev.data.u64 = i;
      ::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
      unsigned char raw[16];
      for (auto& b : raw) b = static_cast<unsigned char>(rng_());
      c.key = base64(raw, 16);
      c.out = "GET " + o_.path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o_.port) +
              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + c.key +
              "\r\nSec-WebSocket-Version: 13\r\n\r\n";
    }
    const std::uint64_t connect_deadline = t0 + static_cast<std::uint64_t>(o_.connect_timeout * 1e9);
    while (open_ + failed_ < conns_.size() && now_ns() < connect_deadline) poll(100);
    for (Conn& c : conns_) {
      if (c.state == State::connecting || c.state == State::handshake) fail(c);
    }
    connect_s_ = static_cast<double>(now_ns() - t0) / 1e9;
    // The load: every connection sends its first message now.
    const std::uint64_t start = now_ns();
    measure_from_ = start + static_cast<std::uint64_t>(o_.warmup * 1e9);
    measure_to_ = measure_from_ + static_cast<std::uint64_t>(o_.duration * 1e9);
    for (Conn& c : conns_) {
      if (c.state == State::running) send_message(c);
    }
    while (now_ns() < measure_to_ && failed_ < conns_.size()) poll(10);
    const double secs = static_cast<double>(measure_to_ - measure_from_) / 1e9;
    report(secs);
    for (Conn& c : conns_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    return 0;
  }

 private:
  int fail_all(const char* what) {
    std::fprintf(stderr, "ws_bench: %s: %s\n", what, std::strerror(errno));
    return 1;
  }

  void fail(Conn& c) {
    if (c.state == State::failed) return;
    c.state = State::failed;
    ++failed_;
    if (c.fd >= 0) {
      ::close(c.fd);
      c.fd = -1;
    }
  }

  void poll(int timeout_ms) {
    epoll_event events[256];
    const int n = ::epoll_wait(ep_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u64];
      if (c.state == State::failed) continue;
      if (events[i].events & EPOLLOUT) on_writable(c);
      if (c.state != State::failed && (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))) on_readable(c);
    }
  }

  void on_writable(Conn& c) {
    if (c.state == State::connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return fail(c);
      c.state = State::handshake;
    }
    flush(c);
  }

  // Sends what is left of c.out; false if the connection failed.
  bool flush(Conn& c) {
    while (c.sent < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EAGAIN) {
        return true;  // EPOLLOUT comes back
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        fail(c);
        return false;
      }
    }
    return true;
  }

  void on_readable(Conn& c) {
    unsigned char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.insert(c.in.end(), buf, buf + n);
        if (static_cast<std::size_t>(n) < sizeof buf) break;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && errno == EAGAIN) {
        break;
      } else {
        return fail(c);  // closed by the server or reset
      }
    }
    if (c.state == State::handshake || c.state == State::connecting) {
      const std::string_view text(reinterpret_cast<const char*>(c.in.data()), c.in.size());
      const std::size_t end = text.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (c.in.size() > 16384) fail(c);
        return;
      }
      const std::string_view head = text.substr(0, end + 2);
      if (head.substr(0, 13) != "HTTP/1.1 101 " || header(head, "Sec-WebSocket-Accept") != accept_for(c.key)) {
        ++bad_handshakes_;
        return fail(c);
      }
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(end + 4));
      c.state = State::running;
      ++open_;
      if (c.in.empty()) return;
      ++errors_;  // a server speaks first only with a frame we never asked for
      return fail(c);
    }
    parse_frames(c);
  }

  // Takes the whole frames in c.in; completes the message at a data frame with FIN.
  void parse_frames(Conn& c) {
    std::size_t pos = 0;
    while (c.in.size() - pos >= 2) {
      const unsigned char* p = c.in.data() + pos;
      const bool fin = p[0] & 0x80;
      const unsigned opcode = p[0] & 0x0f;
      if (p[1] & 0x80) {  // a server never masks
        ++errors_;
        return fail(c);
      }
      std::uint64_t len = p[1] & 0x7f;
      std::size_t hdr = 2;
      if (len == 126) {
        if (c.in.size() - pos < 4) break;
        len = (std::uint64_t{p[2]} << 8) | p[3];
        hdr = 4;
      } else if (len == 127) {
        if (c.in.size() - pos < 10) break;
        len = 0;
        for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
        hdr = 10;
      }
      if (c.in.size() - pos < hdr + len) break;
      pos += hdr + len;
      if (opcode >= 8) {
        if (opcode == 8) {  // the server closes: this connection is out of the load
          ++errors_;
          return fail(c);
        }
        continue;  // ping or pong: not part of the echo
      }
      c.got += len;
      if (!fin) continue;
      if (c.got != o_.length) {
        ++errors_;
        return fail(c);
      }
      const std::uint64_t t = now_ns();
      if (c.started >= measure_from_ && t <= measure_to_) {
        ++messages_;
        hist_.record(t - c.started);
      }
      c.got = 0;
      if (t < measure_to_) send_message(c);
      if (c.state == State::failed) return;
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(pos));
  }

  // One frame with FIN, masked with a fresh key, then as much of it as the socket takes.
  void send_message(Conn& c) {
    const std::size_t n = payload_.size();
    c.out.clear();
    c.out.push_back(static_cast<char>(o_.text ? 0x81 : 0x82));
    if (n < 126) {
      c.out.push_back(static_cast<char>(0x80 | n));
    } else if (n < 65536) {
      c.out.push_back(static_cast<char>(0x80 | 126));
      c.out.push_back(static_cast<char>(n >> 8));
      c.out.push_back(static_cast<char>(n & 0xff));
    } else {
      c.out.push_back(static_cast<char>(0x80 | 127));
      for (int i = 7; i >= 0; --i)
        c.out.push_back(static_cast<char>((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xff));
    }
    const std::uint32_t key = static_cast<std::uint32_t>(rng_());
    unsigned char mask[4];
    std::memcpy(mask, &key, 4);
    c.out.append(reinterpret_cast<const char*>(mask), 4);
    const std::size_t at = c.out.size();
    c.out.resize(at + n);
    for (std::size_t i = 0; i < n; ++i) c.out[at + i] = static_cast<char>(payload_[i] ^ mask[i & 3]);
    c.sent = 0;
    c.started = now_ns();
    flush(c);
  }

  void report(double secs) {
    const double rate = secs > 0 ? static_cast<double>(messages_) / secs : 0;
    auto us = [&](double pct) { return static_cast<double>(hist_.percentile(pct)) / 1e3; };
    std::printf("%zu connections (%zu failed), %zu-byte %s messages, %.2f s: %.1f messages/s\n", conns_.size(), failed_,
                o_.length, o_.text ? "text" : "binary", secs, rate);
    std::printf("latency p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n", us(50), us(90), us(99),
                us(99.9), static_cast<double>(hist_.max()) / 1e3);
    std::printf(
        "RESULT {\"tool\":\"ws_bench\",\"messages\":%llu,\"messages_per_s\":%.1f,\"seconds\":%.4f,"
        "\"connections\":%zu,\"length\":%zu,\"failed_connections\":%zu,\"bad_handshakes\":%zu,\"errors\":%zu,"
        "\"connect_s\":%.3f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f}\n",
        static_cast<unsigned long long>(messages_), rate, secs, conns_.size(), o_.length, failed_, bad_handshakes_,
        failed_ + errors_, connect_s_, us(50), us(90), us(99), us(99.9), static_cast<double>(hist_.max()) / 1e3);
    std::fflush(stdout);
  }

  Options o_;
  std::mt19937 rng_;
  std::string payload_;
  std::vector<Conn> conns_;
  int ep_ = -1;
  std::size_t open_ = 0;  // connections whose handshake is done
  std::size_t failed_ = 0;
  std::size_t bad_handshakes_ = 0;
  std::size_t errors_ = 0;
  std::uint64_t messages_ = 0;
  std::uint64_t measure_from_ = 0, measure_to_ = 0;
  double connect_s_ = 0;
  apps::latency_histogram hist_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  return Bench(o).run();
}
