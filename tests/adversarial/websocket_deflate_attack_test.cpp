// SPDX-License-Identifier: Apache-2.0
// websocket_deflate_attack_test — permessage-deflate (RFC 7692), keep-alive without a
// waiting receive(), drains cutting compressed sends, and http_server's /ws/echo, probed
// through the public API with raw peers (a thread of blocking sockets and zlib of their
// own) and Python's websockets. Every assertion is RFC 6455/7692 or docs/websocket.md.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ringio/http/http.hpp"
#include "ringio/http/https.hpp"
#include "ringio/io_context.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/context.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {
// A raw, blocking peer.

int tcp_connect(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    auto n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool read_exact(int fd, char* p, std::size_t n) {
  while (n > 0) {
    auto r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Reads the response head byte by byte (so frames after it stay in the socket).
std::string read_head(int fd) {
  std::string h;
  char c;
  while (h.size() < 65536 && ::recv(fd, &c, 1, 0) == 1) {
    h.push_back(c);
    if (h.size() >= 4 && h.compare(h.size() - 4, 4, "\r\n\r\n") == 0) break;
  }
  return h;
}

int status_of(const std::string& head) {
  if (head.size() < 12) return -1;
  return std::atoi(head.c_str() + 9);
}

std::string upgrade_request(std::string_view extra = {}, std::string_view method = "GET",
                            std::string_view key_line = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
                            std::string_view version_line = "Sec-WebSocket-Version: 13\r\n",
                            std::string_view conn_line = "Connection: Upgrade\r\n",
                            std::string_view upgrade_line = "Upgrade: websocket\r\n",
                            std::string_view http_version = "HTTP/1.1") {
  std::string r;
  r += method;
  r += " /ws ";
  r += http_version;
  r += "\r\nHost: 127.0.0.1\r\n";
  r += upgrade_line;
  r += conn_line;
  r += key_line;
  r += version_line;
  r += extra;
  r += "\r\n";
  return r;
}

// A frame as a client sends it (masked unless told otherwise). len_form: 0 = minimal,
// 126 / 127 = force that encoding; raw_len64: put this exact 64-bit length in the header.
std::string make_frame(int opcode, std::string_view payload, bool fin = true, bool mask = true, int rsv = 0,
                       int len_form = 0, std::optional<std::uint64_t> raw_len64 = std::nullopt) {
  std::string f;
  f.push_back(static_cast<char>((fin ? 0x80 : 0) | (rsv << 4) | opcode));
  const std::uint8_t m = mask ? 0x80 : 0;
  std::uint64_t n = raw_len64 ? *raw_len64 : payload.size();
  int form = len_form;
  if (raw_len64) form = 127;
  if (form == 0) form = n < 126 ? 0 : (n < 65536 ? 126 : 127);
  if (form == 0) {
    f.push_back(static_cast<char>(m | n));
  } else if (form == 126) {
    f.push_back(static_cast<char>(m | 126));
    f.push_back(static_cast<char>((n >> 8) & 0xff));
    f.push_back(static_cast<char>(n & 0xff));
  } else {
    f.push_back(static_cast<char>(m | 127));
    for (int i = 7; i >= 0; --i) f.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  }
  const char key[4] = {0x12, 0x34, 0x56, 0x78};
  if (mask) f.append(key, 4);
  for (std::size_t i = 0; i < payload.size(); ++i)
    f.push_back(mask ? static_cast<char>(payload[i] ^ key[i % 4]) : payload[i]);
  return f;
}

std::string close_payload(int code, std::string_view reason = {}) {
  std::string p;
  p.push_back(static_cast<char>((code >> 8) & 0xff));
  p.push_back(static_cast<char>(code & 0xff));
  p += reason;
  return p;
}

struct frame_in {
  int opcode = -1;
  bool fin = false;
  bool masked = false;
  int rsv = 0;
  std::string payload;
  int close_code() const {
    if (opcode != 8) return -1;
    if (payload.size() < 2) return 1005;
    return (static_cast<unsigned char>(payload[0]) << 8) | static_cast<unsigned char>(payload[1]);
  }
};

std::optional<frame_in> read_frame(int fd) {
  unsigned char h[2];
  if (!read_exact(fd, reinterpret_cast<char*>(h), 2)) return std::nullopt;
  frame_in f;
  f.fin = (h[0] & 0x80) != 0;
  f.rsv = (h[0] >> 4) & 7;
  f.opcode = h[0] & 0x0f;
  f.masked = (h[1] & 0x80) != 0;
  std::uint64_t n = h[1] & 0x7f;
  if (n == 126) {
    unsigned char e[2];
    if (!read_exact(fd, reinterpret_cast<char*>(e), 2)) return std::nullopt;
    n = (static_cast<std::uint64_t>(e[0]) << 8) | e[1];
  } else if (n == 127) {
    unsigned char e[8];
    if (!read_exact(fd, reinterpret_cast<char*>(e), 8)) return std::nullopt;
    n = 0;
    for (unsigned char b : e) n = (n << 8) | b;
  }
  unsigned char key[4] = {};
  if (f.masked && !read_exact(fd, reinterpret_cast<char*>(key), 4)) return std::nullopt;
  if (n > (64u << 20)) return std::nullopt;
  f.payload.resize(n);
  if (n > 0 && !read_exact(fd, f.payload.data(), n)) return std::nullopt;
  if (f.masked)
    for (std::size_t i = 0; i < n; ++i) f.payload[i] = static_cast<char>(f.payload[i] ^ key[i % 4]);
  return f;
}

// Reads frames until a close frame: its code (1005 when it has none), or -1 at the end of
// the connection without one.
int read_close_code(int fd, std::string* reason = nullptr) {
  for (;;) {
    auto f = read_frame(fd);
    if (!f) return -1;
    if (f->opcode == 8) {
      if (reason && f->payload.size() > 2) *reason = f->payload.substr(2);
      return f->close_code();
    }
  }
}

// Whether the connection ends (EOF or reset) before the receive timeout, dropping data.
bool reaches_eof(int fd) {
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

// ---------------------------------------------------------------------------------------
// A ringio server on 127.0.0.1 with one WebSocket route; the peer runs in a thread.

struct ws_server {
  http::websocket_accept_options opts;
  http::server_options server_opts;
  std::function<task<void>(http::websocket&)> session;  // default: echo
  // What the (last) echo session saw.
  std::error_code end_error;
  std::uint16_t end_close_code = 0;
  std::string end_close_reason;
  int messages = 0;
  std::atomic<int> sessions_ended{0};
  // Set by the peer: the server stops (drains) once this is true, then the peer thread is joined.
  std::atomic<bool> stop_now{false};
  // srv.connections() as the loop thread last read it (every 5 ms while run() runs).
  std::atomic<std::size_t> connections_now{0};
  // Guards end_error for the peer's thread (the socket orders the two threads, which a
  // race detector cannot see).
  std::mutex mu;
  std::error_code last_error() {
    std::lock_guard lock(mu);
    return end_error;
  }

  task<void> echo(http::websocket& ws) {
    for (;;) {
      auto m = co_await ws.receive();
      if (!m) {
        std::lock_guard lock(mu);
        end_error = m.error();
        end_close_code = ws.close_code();
        end_close_reason = std::string(ws.close_reason());
        co_return;
      }
      ++messages;
      result<void> sent;
      if (m->is_text()) {
        sent = co_await ws.send_text(m->data);
      } else {
        sent = co_await ws.send_binary(m->data);
      }
      if (!sent) {
        end_error = sent.error();
        co_return;
      }
    }
  }

  void run(const std::function<void(std::uint16_t)>& peer) {
    http::router routes;
    routes.get("/ws", [this](http::request& r) -> task<http::response> {
      http::websocket_session s = [this](http::websocket& ws) -> task<void> {
        if (session) {
          co_await session(ws);
        } else {
          co_await echo(ws);
        }
        sessions_ended.fetch_add(1);
      };
      co_return http::accept_websocket(r, s, opts);
    });
    io_context ctx;
    http::server srv(routes, server_opts);
    auto listener = ringio_test::listen_loopback();
    const std::uint16_t port = ringio_test::address_of(listener).port();
    std::atomic<bool> done{false};
    std::thread t([&] {
      peer(port);
      done = true;
      stop_now = true;
    });
    sync_wait(ctx, [&]() -> task<void> {
      std::stop_source stop;
      scope sc;
      sc.spawn(srv.serve(listener, stop.get_token()));
      while (!stop_now.load()) {
        connections_now = srv.connections();
        (void)co_await sleep_for(5ms);
      }
      stop.request_stop();
      co_await sc.join();
    }());
    t.join();
  }
};

// ---------------------------------------------------------------------------------------
// The client against raw servers.

std::string accept_of(std::string_view key) {
  std::string k(key);
  k += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(k.data()), k.size(), d);
  unsigned char out[64];
  const int n = EVP_EncodeBlock(out, d, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
}

std::string request_key(const std::string& head) {
  std::string lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto p = lower.find("sec-websocket-key:");
  if (p == std::string::npos) return {};
  p += 18;
  while (head[p] == ' ') ++p;
  auto e = head.find("\r\n", p);
  return head.substr(p, e - p);
}

// A raw server for one connection, in a thread; `serve(fd, key)` runs after the request.
struct raw_server {
  int lfd = -1;
  std::uint16_t port = 0;
  std::thread t;
  explicit raw_server(std::function<void(int fd, const std::string& head)> serve) {
    lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(lfd, 8);
    socklen_t len = sizeof a;
    ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    t = std::thread([this, serve = std::move(serve)] {
      int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      timeval tv{20, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      serve(fd, read_head(fd));
      ::close(fd);
    });
  }
  // Waits for the peer's thread: what it recorded may be read after this.
  void join() {
    ::shutdown(lfd, SHUT_RDWR);
    if (t.joinable()) t.join();
  }
  ~raw_server() {
    join();
    ::close(lfd);
  }
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(port) + "/ws"; }
};

std::string ok_101(const std::string& head, std::string_view extra = {}) {
  return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
         accept_of(request_key(head)) + "\r\n" + std::string(extra) + "\r\n";
}

std::string server_frame(int op, std::string_view payload, bool fin = true) {
  return make_frame(op, payload, fin, false);
}

template <class F>
void client_run(F body) {
  io_context ctx;
  sync_wait(ctx, [&]() -> task<void> {
    http::client c;
    co_await body(c);
  }());
}

// ---------------------------------------------------------------------------------------
// permessage-deflate, client side: a raw server that agrees to it and then breaks it.

// Raw deflate of `data` with a sync flush, the trailing 00 00 ff ff cut (RFC 7692 7.2.1).
std::string deflated(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  (void)deflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out - 4);
  deflateEnd(&z);
  return out;
}

// ---------------------------------------------------------------------------------------
// The peer's own zlib streams (raw deflate, RFC 7692 section 7.2).

struct peer_deflater {
  z_stream z{};
  bool takeover;
  peer_deflater(int bits, bool takeover_) : takeover(takeover_) {
    (void)deflateInit2(&z, 6, Z_DEFLATED, -bits, 8, Z_DEFAULT_STRATEGY);
  }
  peer_deflater(const peer_deflater&) = delete;
  peer_deflater& operator=(const peer_deflater&) = delete;
  ~peer_deflater() { deflateEnd(&z); }
  // One message: a sync flush, the trailing 00 00 ff ff removed.
  std::string message(std::string_view data) {
    std::string out;
    char buf[65536];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      (void)deflate(&z, Z_SYNC_FLUSH);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
    out.resize(out.size() - 4);
    if (!takeover) deflateReset(&z);
    return out;
  }
};

struct peer_inflater {
  z_stream z{};
  explicit peer_inflater(int bits) { (void)inflateInit2(&z, -bits); }
  peer_inflater(const peer_inflater&) = delete;
  peer_inflater& operator=(const peer_inflater&) = delete;
  ~peer_inflater() { inflateEnd(&z); }
  // One message's payload; nullopt when it is not valid for this window and history.
  std::optional<std::string> message(std::string payload) {
    payload.append("\x00\x00\xff\xff", 4);
    std::string out;
    char buf[65536];
    z.next_in = reinterpret_cast<Bytef*>(payload.data());
    z.avail_in = static_cast<uInt>(payload.size());
    for (;;) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      const int r = inflate(&z, Z_SYNC_FLUSH);
      const std::size_t produced = sizeof buf - z.avail_out;
      out.append(buf, produced);
      if (r == Z_STREAM_END) break;
      if (r != Z_OK && r != Z_BUF_ERROR) return std::nullopt;
      if (z.avail_in == 0 && z.avail_out != 0) break;
      if (r == Z_BUF_ERROR && produced == 0) break;
    }
    return out;
  }
};

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}

// Text that compresses well and has matches far apart (a block repeated).
std::string far_repeats(std::size_t block, int times, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::string b(block, 'a');
  for (auto& c : b) c = static_cast<char>('a' + g() % 26);
  std::string s;
  for (int i = 0; i < times; ++i) s += b;
  return s;
}

// A whole data message read by the raw peer: control frames before and inside it are
// kept aside. nullopt at a close frame (kept in controls) or the end of the connection.
struct message_in {
  int opcode = -1;
  int rsv = 0;
  std::string payload;
};

std::optional<message_in> read_message(int fd, std::vector<frame_in>* controls = nullptr,
                                       int* controls_inside = nullptr) {
  message_in m;
  bool inside = false;
  for (;;) {
    auto f = read_frame(fd);
    if (!f) return std::nullopt;
    if (f->opcode >= 8) {
      if (controls) controls->push_back(*f);
      if (inside && controls_inside) ++*controls_inside;
      if (f->opcode == 8) return std::nullopt;
      continue;
    }
    if (f->opcode != 0) {
      m.opcode = f->opcode;
      m.rsv = f->rsv;
    } else if (f->rsv != 0) {
      ADD_FAILURE() << "RSV bits on a continuation frame: " << f->rsv;
    }
    m.payload += f->payload;
    inside = true;
    if (f->fin) return m;
  }
}

std::string extension_answer(const std::string& head, int* count = nullptr) {
  std::string lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string v;
  int n = 0;
  for (std::size_t p = 0; (p = lower.find("\r\nsec-websocket-extensions:", p)) != std::string::npos;) {
    p += 27;
    auto e = lower.find("\r\n", p);
    v = lower.substr(p, e - p);
    ++n;
  }
  if (count) *count = n;
  return v;
}

// The answer's extension as a set of its trimmed parts ("permessage-deflate", each
// parameter); empty when there is none.
std::set<std::string> parts_of(const std::string& value) {
  std::set<std::string> out;
  std::size_t p = 0;
  while (p <= value.size()) {
    auto e = value.find(';', p);
    if (e == std::string::npos) e = value.size();
    std::string part = value.substr(p, e - p);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.erase(part.begin());
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.pop_back();
    if (!part.empty()) out.insert(part);
    p = e + 1;
  }
  return out;
}

// Connects and upgrades with the extension lines given: the fd (or -1) and the answer.
int open_ws_with(std::uint16_t port, std::string_view extension_lines, std::string* head_out = nullptr) {
  int fd = tcp_connect(port);
  if (fd < 0) return -1;
  send_all(fd, upgrade_request(extension_lines));
  auto head = read_head(fd);
  if (head_out) *head_out = head;
  if (status_of(head) != 101) {
    ADD_FAILURE() << "upgrade refused: " << head;
    ::close(fd);
    return -1;
  }
  return fd;
}

void wait_sessions(ws_server& s, int n) {
  for (int i = 0; i < 4000 && s.sessions_ended.load() < n; ++i) std::this_thread::sleep_for(5ms);
}

// ---------------------------------------------------------------------------------------
// Negotiation, server side: offers a raw client makes.

struct offer_case {
  std::string lines;               // Sec-WebSocket-Extensions lines of the request
  std::set<std::string> expected;  // the answer's parts; empty: no extension
};

TEST(WsDeflateNegotiation, ServerDeclinesBadOffersAndAnswersItsLimits) {
  const std::string h = "Sec-WebSocket-Extensions: ";
  const std::string pmd = "permessage-deflate";
  const std::vector<offer_case> cases = {
      {h + "permessage-deflate\r\n", {pmd}},
      {h + "permessage-deflate; client_max_window_bits; client_max_window_bits\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=9; server_max_window_bits=10\r\n", {}},
      {h + "permessage-deflate; server_no_context_takeover; server_no_context_takeover\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=010\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=+9\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=\"10\"\r\n", {pmd, "server_max_window_bits=10"}},
      {h + "permessage-deflate; server_max_window_bits=\"\"\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=\"9,permessage-deflate\"\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits\r\n", {}},
      {h + "permessage-deflate; server_no_context_takeover=1\r\n", {}},
      {h + "permessage-deflate; client_no_context_takeover=\"\"\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=7\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=16\r\n", {}},
      {h + "permessage-deflate; server_max_window_bits=8\r\n", {pmd, "server_max_window_bits=8"}},
      {h + "permessage-deflate; client_max_window_bits=\r\n", {}},
      {h + "permessage-deflate; client_max_window_bits=15\r\n", {pmd}},
      {h + "permessage-deflate; client_max_window_bits=8\r\n", {pmd, "client_max_window_bits=8"}},
      {h + "permessage-deflate; x-unknown\r\n", {}},
      {h + "permessage-deflate ;\tserver_max_window_bits=10 \r\n", {pmd, "server_max_window_bits=10"}},
      {h + "permessage-deflate; server_max_window_bits=16, permessage-deflate; client_no_context_takeover\r\n",
       {pmd, "client_no_context_takeover"}},
      {h + "x-foo\r\n" + h + "permessage-deflate; client_max_window_bits=9\r\n", {pmd, "client_max_window_bits=9"}},
      {h + "permessage-deflate;server_max_window_bits=9;server_no_context_takeover\r\n",
       {pmd, "server_max_window_bits=9", "server_no_context_takeover"}},
      {h + "permessage-deflate; x=\"a, permessage-deflate\", permessage-deflate; server_max_window_bits=12\r\n",
       {pmd, "server_max_window_bits=12"}},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.run([&](std::uint16_t port) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.lines);
      std::string head;
      int fd = open_ws_with(port, c.lines, &head);
      if (fd < 0) continue;
      int count = 0;
      const std::string answer = extension_answer(head, &count);
      EXPECT_LE(count, 1) << head;
      EXPECT_EQ(parts_of(answer), c.expected) << head;
      send_all(fd, make_frame(8, close_payload(1000)));
      read_close_code(fd);
      ::close(fd);
    }
  });
}

TEST(WsDeflateNegotiation, ServerAsksForClientNoContextTakeoverUnoffered) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.deflate.peer_no_context_takeover = true;
  s.opts.options.deflate.no_context_takeover = true;
  s.run([&](std::uint16_t port) {
    std::string head;
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n", &head);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(parts_of(extension_answer(head)),
              (std::set<std::string>{"permessage-deflate", "server_no_context_takeover", "client_no_context_takeover"}))
        << head;
    // Each echo compressed alone: the same message twice gives the same bytes, each
    // inflated by a fresh inflater.
    const std::string text = far_repeats(3000, 4, 7);
    peer_deflater d(15, false);
    std::vector<std::string> echoes;
    for (int i = 0; i < 2; ++i) {
      send_all(fd, make_frame(1, d.message(text), true, true, 4));
      auto m = read_message(fd);
      ASSERT_TRUE(m);
      EXPECT_EQ(m->rsv, 4);
      peer_inflater in(15);
      auto t = in.message(m->payload);
      ASSERT_TRUE(t) << "echo " << i << " needs a previous message's context";
      EXPECT_EQ(*t, text);
      echoes.push_back(m->payload);
    }
    EXPECT_EQ(echoes[0], echoes[1]);
    ::close(fd);
  });
}

// Every window from 8 to 15 both ways: the server compresses within the window asked
// (8: uncompressed), and inflates what the client compressed within its own.
TEST(WsDeflateNegotiation, EveryWindowBothWays) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.run([&](std::uint16_t port) {
    for (int bits = 8; bits <= 15; ++bits) {
      SCOPED_TRACE("window bits " + std::to_string(bits));
      std::string head;
      const std::string offer =
          "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=" + std::to_string(bits) +
          "; client_max_window_bits=" + std::to_string(bits) + "\r\n";
      int fd = open_ws_with(port, offer, &head);
      if (fd < 0) continue;
      std::set<std::string> want = {"permessage-deflate", "server_max_window_bits=" + std::to_string(bits)};
      if (bits < 15) want.insert("client_max_window_bits=" + std::to_string(bits));
      EXPECT_EQ(parts_of(extension_answer(head)), want) << head;
      // 20 KB blocks repeated: a match reaches back 20 KB within a message, and into the
      // previous message, beyond every window under 15 bits.
      const std::string text = far_repeats(20000, 2, static_cast<std::uint32_t>(bits));
      std::optional<peer_deflater> d;
      if (bits >= 9) d.emplace(bits, true);
      peer_inflater in(bits == 8 ? 9 : bits);
      for (int i = 0; i < 3; ++i) {
        if (d) {
          send_all(fd, make_frame(1, d->message(text), true, true, 4));
        } else {
          send_all(fd, make_frame(1, text));
        }
        auto m = read_message(fd);
        if (!m) {
          ADD_FAILURE() << "no echo " << i;
          break;
        }
        if (bits == 8) {
          EXPECT_EQ(m->rsv, 0) << "compressed with a window of 8 bits";
          EXPECT_EQ(m->payload, text);
        } else {
          EXPECT_EQ(m->rsv, 4);
          auto t = in.message(m->payload);
          ASSERT_TRUE(t) << "the echo " << i << " does not inflate within " << bits << " bits";
          EXPECT_EQ(*t, text);
        }
      }
      send_all(fd, make_frame(8, close_payload(1000)));
      EXPECT_EQ(read_close_code(fd), 1000);
      ::close(fd);
    }
  });
}

// The client against a raw server that answers each window: the client compresses within it.
TEST(WsDeflateNegotiation, ClientCompressesWithinTheAnsweredWindow) {
  for (int bits = 8; bits <= 15; ++bits) {
    SCOPED_TRACE("client_max_window_bits=" + std::to_string(bits));
    const std::string text = far_repeats(20000, 2, 100 + static_cast<std::uint32_t>(bits));
    std::vector<message_in> got;
    raw_server srv([&](int fd, const std::string& head) {
      EXPECT_NE(head.find("client_max_window_bits"), std::string::npos) << head;
      send_all(fd, ok_101(head, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=" +
                                    std::to_string(bits) + "\r\n"));
      for (int i = 0; i < 3; ++i) {
        auto m = read_message(fd);
        if (!m) break;
        got.push_back(*m);
      }
      send_all(fd, server_frame(8, close_payload(1000)));
      ::shutdown(fd, SHUT_WR);
      reaches_eof(fd);
    });
    client_run([&](http::client& c) -> task<void> {
      http::websocket_connect_options o;
      o.options.deflate.enabled = true;
      auto ws = co_await c.connect_websocket(srv.url(), o);
      if (!ws) {
        ADD_FAILURE() << ws.error().message();
        co_return;
      }
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(co_await ws->send_text(text));
      auto m = co_await ws->receive();
      EXPECT_FALSE(m);
    });
    srv.join();
    ASSERT_EQ(got.size(), 3u);
    peer_inflater in(bits == 8 ? 9 : bits);
    for (const auto& m : got) {
      if (bits == 8) {
        EXPECT_EQ(m.rsv, 0);
        EXPECT_EQ(m.payload, text);
        continue;
      }
      EXPECT_EQ(m.rsv, 4);
      auto t = in.message(m.payload);
      ASSERT_TRUE(t) << "does not inflate within " << bits << " bits";
      EXPECT_EQ(*t, text);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Bombs, limits, reserved bits, pings inside a compressed message (server side).

TEST(WsDeflateLimits, BombsInManySmallFrames) {
  const std::string bomb = deflated(std::string(16u << 20, '\0'));
  struct split {
    const char* name;
    std::vector<std::size_t> sizes;  // repeated until the bomb is out
  };
  const std::vector<split> splits = {
      {"1-byte frames", {1}},
      {"empty and 1-byte frames", {0, 1}},
      {"an empty first frame, then 7 bytes", {0, 7, 7, 7}},
      {"3 and 1000", {3, 1000}},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_message_bytes = 65536;
  s.run([&](std::uint16_t port) {
    int ended = 0;
    for (const auto& sp : splits) {
      SCOPED_TRACE(sp.name);
      int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
      if (fd < 0) continue;
      std::string wire;
      std::size_t at = 0;
      bool first = true;
      for (std::size_t k = 0; at < bomb.size(); ++k) {
        std::size_t n = std::min(sp.sizes[k % sp.sizes.size()], bomb.size() - at);
        const bool last = at + n == bomb.size();
        wire += make_frame(first ? 2 : 0, std::string_view(bomb).substr(at, n), last, true, first ? 4 : 0);
        first = false;
        at += n;
      }
      std::thread sender([&] { send_all(fd, wire); });
      EXPECT_EQ(read_close_code(fd), 1009);
      sender.join();
      ::close(fd);
      wait_sessions(s, ++ended);
      EXPECT_EQ(s.last_error(), make_error_code(http::websocket_errc::message_too_big)) << s.last_error().message();
    }
  });
}

TEST(WsDeflateLimits, ExactlyTheLimitAfterInflatingAndOneMore) {
  constexpr std::size_t limit = 100000;
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_message_bytes = limit;
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    peer_deflater d(15, true);
    peer_inflater in(15);
    const std::string at_limit = far_repeats(1000, limit / 1000, 3);
    ASSERT_EQ(at_limit.size(), limit);
    // One frame, three frames, one-byte frames: each exactly at the limit is taken.
    for (int form = 0; form < 3; ++form) {
      SCOPED_TRACE("form " + std::to_string(form));
      const std::string z = d.message(at_limit);
      if (form == 0) {
        send_all(fd, make_frame(1, z, true, true, 4));
      } else if (form == 1) {
        const std::size_t a = z.size() / 3, b = 2 * z.size() / 3;
        send_all(fd, make_frame(1, std::string_view(z).substr(0, a), false, true, 4) +
                         make_frame(0, std::string_view(z).substr(a, b - a), false) +
                         make_frame(0, std::string_view(z).substr(b)));
      } else {
        std::string wire;
        for (std::size_t i = 0; i < z.size(); ++i)
          wire += make_frame(i == 0 ? 1 : 0, std::string_view(z).substr(i, 1), i + 1 == z.size(), true, i == 0 ? 4 : 0);
        send_all(fd, wire);
      }
      auto m = read_message(fd);
      ASSERT_TRUE(m) << "a message of exactly max_message_bytes was refused";
      auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
      ASSERT_TRUE(t);
      EXPECT_EQ(*t, at_limit);
    }
    // One byte more.
    send_all(fd, make_frame(1, d.message(at_limit + "a"), true, true, 4));
    EXPECT_EQ(read_close_code(fd), 1009);
    ::close(fd);
    wait_sessions(s, 1);
  });
  EXPECT_EQ(s.messages, 3);
  EXPECT_EQ(s.end_error, make_error_code(http::websocket_errc::message_too_big)) << s.end_error.message();
}

TEST(WsDeflateLimits, ReservedBitsWithTheExtensionAgreed) {
  const std::string z = deflated("hello hello hello");
  struct rsv_case {
    const char* name;
    std::string wire;
  };
  const std::vector<rsv_case> cases = {
      {"RSV2 on a compressed text frame", make_frame(1, z, true, true, 4 | 2)},
      {"RSV3 on a compressed text frame", make_frame(1, z, true, true, 4 | 1)},
      {"RSV2 alone", make_frame(1, "hello", true, true, 2)},
      {"RSV1 on a pong", make_frame(10, "p", true, true, 4)},
      {"RSV1 on the continuation of an uncompressed message",
       make_frame(1, "hel", false, true, 0) + make_frame(0, "lo", true, true, 4)},
      {"RSV1 on the second of three frames", make_frame(1, z.substr(0, 3), false, true, 4) +
                                                 make_frame(0, z.substr(3, 3), false, true, 4) +
                                                 make_frame(0, z.substr(6))},
      {"RSV1 on a ping inside a compressed message",
       make_frame(1, z.substr(0, 3), false, true, 4) + make_frame(9, "x", true, true, 4) + make_frame(0, z.substr(3))},
      {"a compressed message whose data ends in a final block and goes on",
       make_frame(2, deflated("abc") + std::string("\x03\x00", 2) + "garbage", true, true, 4)},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.run([&](std::uint16_t port) {
    int ended = 0;
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name);
      int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
      if (fd < 0) continue;
      send_all(fd, c.wire);
      EXPECT_EQ(read_close_code(fd), 1002);
      ::close(fd);
      wait_sessions(s, ++ended);
      EXPECT_EQ(s.last_error(), make_error_code(http::websocket_errc::protocol_error)) << s.last_error().message();
    }
  });
}

TEST(WsDeflateFrames, PingsAndPongsInsideAFragmentedCompressedMessage) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    peer_deflater d(15, true);
    peer_inflater in(15);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("message " + std::to_string(round));
      const std::string text = far_repeats(700, 30, 40 + static_cast<std::uint32_t>(round)) + "\xe2\x82\xac";
      const std::string z = d.message(text);
      const std::size_t a = z.size() / 4, b = z.size() / 2;
      send_all(fd, make_frame(1, std::string_view(z).substr(0, a), false, true, 4) + make_frame(9, "one") +
                       make_frame(0, std::string_view(z).substr(a, b - a), false) + make_frame(10, "unasked") +
                       make_frame(0, "", false) + make_frame(9, "two") + make_frame(0, std::string_view(z).substr(b)));
      std::vector<frame_in> controls;
      auto m = read_message(fd, &controls);
      ASSERT_TRUE(m);
      ASSERT_EQ(controls.size(), 2u);
      EXPECT_EQ(controls[0].opcode, 10);
      EXPECT_EQ(controls[0].payload, "one");
      EXPECT_EQ(controls[1].payload, "two");
      EXPECT_EQ(controls[0].rsv, 0);
      auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
      ASSERT_TRUE(t);
      EXPECT_EQ(*t, text);
    }
    send_all(fd, make_frame(8, close_payload(1000)));
    EXPECT_EQ(read_close_code(fd), 1000);
    ::close(fd);
  });
  EXPECT_EQ(s.messages, 3);
}

// ---------------------------------------------------------------------------------------
// Cancellation with compression on.

// Receives stopped at every point of a compressed message dribbled in (header bytes,
// payload bytes, between frames): nothing lost, and the inflater's history stays right
// for the messages after (context takeover).
TEST(WsDeflateCancel, StoppedReceivesKeepTheInflaterConsistent) {
  const std::uint32_t seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("seed %u\n", seed);
  ws_server s;
  s.opts.options.deflate.enabled = true;
  std::atomic<int> stopped{0};
  s.session = [&](http::websocket& ws) -> task<void> {
    std::mt19937 g(seed);
    for (;;) {
      const auto limit = std::chrono::milliseconds(1 + g() % 4);
      auto m = co_await with_timeout(ws.receive(), limit);
      if (!m) {
        if (m.error() == std::errc::timed_out) {
          ++stopped;
          continue;
        }
        s.end_error = m.error();
        co_return;
      }
      ++s.messages;
      auto sent = co_await ws.send_text(m->data);
      if (!sent) co_return;
    }
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    std::mt19937 g(seed + 1);
    peer_deflater d(15, true);
    peer_inflater in(15);
    for (int round = 0; round < 6; ++round) {
      SCOPED_TRACE("message " + std::to_string(round));
      const std::string text = far_repeats(300 + 50 * static_cast<std::size_t>(round), 8, seed + round);
      const std::string z = d.message(text);
      std::string wire;
      std::size_t at = 0;
      bool first = true;
      while (at < z.size()) {
        const std::size_t n = std::min<std::size_t>(1 + g() % 200, z.size() - at);
        wire += make_frame(first ? 1 : 0, std::string_view(z).substr(at, n), at + n == z.size(), true, first ? 4 : 0);
        if (g() % 3 == 0) wire += make_frame(9, "p");
        first = false;
        at += n;
      }
      for (std::size_t i = 0; i < wire.size();) {
        const std::size_t n = std::min<std::size_t>(1 + g() % 7, wire.size() - i);
        send_all(fd, std::string_view(wire).substr(i, n));
        i += n;
        std::this_thread::sleep_for(std::chrono::microseconds(300 + g() % 2000));
      }
      auto m = read_message(fd);
      ASSERT_TRUE(m) << "no echo";
      auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
      ASSERT_TRUE(t);
      EXPECT_EQ(*t, text);
    }
    send_all(fd, make_frame(8, close_payload(1000)));
    read_close_code(fd);
    ::close(fd);
  });
  EXPECT_EQ(s.messages, 6);
  EXPECT_GT(stopped.load(), 0);
}

// A compressed send that times out while another send holds the write lock (nothing of
// it went out): the next message must still inflate with the history the peer has.
TEST(WsDeflateCancel, SendStoppedBeforeItsFrameLeavesTheCompressorConsistent) {
  const std::string big = random_bytes(32u << 20, 11);
  const std::string text = far_repeats(2000, 10, 12);
  ws_server s;
  s.opts.options.deflate.enabled = true;
  std::error_code first_error, stopped_error, after_error;
  std::atomic<bool> stopped_done{false};
  s.session = [&](http::websocket& ws) -> task<void> {
    auto big_send = [&]() -> task<void> {
      auto r = co_await ws.send_binary(big);
      first_error = r ? std::error_code{} : r.error();
    };
    scope sc;
    sc.spawn(big_send());
    (void)co_await sleep_for(50ms);
    auto r = co_await with_timeout(ws.send_text(text), 200ms);
    stopped_error = r ? std::error_code{} : r.error();
    stopped_done = true;
    co_await sc.join();
    auto again = co_await ws.send_text(text);
    after_error = again ? std::error_code{} : again.error();
    auto m = co_await ws.receive();
    (void)m;
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    // The big send fills the socket; the second times out waiting behind it.
    for (int i = 0; i < 4000 && !stopped_done.load(); ++i) std::this_thread::sleep_for(5ms);
    peer_inflater in(15);
    std::vector<std::string> got;
    for (int i = 0; i < 2; ++i) {
      auto m = read_message(fd);
      if (!m) break;
      auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
      if (!t) {
        ADD_FAILURE() << "message " << i << " does not inflate with the history sent";
        break;
      }
      got.push_back(*t);
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(got[0] == big);
    EXPECT_EQ(got[1], text);
    send_all(fd, make_frame(8, close_payload(1000)));
    read_close_code(fd);
    ::close(fd);
  });
  EXPECT_FALSE(first_error) << first_error.message();
  EXPECT_TRUE(stopped_done.load());
  EXPECT_TRUE(stopped_error == std::errc::timed_out) << stopped_error.message();
  EXPECT_FALSE(after_error) << after_error.message();
}

// A compressed send stopped part-way (a frame cut), then close() and another send: both
// fail at once (nothing more can go out after a cut frame), and the connection ends.
TEST(WsDeflateCancel, CutCompressedSendThenCloseAndSend) {
  const std::string big = random_bytes(32u << 20, 61);
  ws_server s;
  s.opts.options.deflate.enabled = true;
  std::error_code cut_error, close_error, send_error;
  std::chrono::steady_clock::duration close_took{};
  s.session = [&](http::websocket& ws) -> task<void> {
    auto r = co_await with_timeout(ws.send_binary(big), 300ms);
    cut_error = r ? std::error_code{} : r.error();
    const auto t0 = std::chrono::steady_clock::now();
    auto c = co_await ws.close(1000, "after a cut");
    close_took = std::chrono::steady_clock::now() - t0;
    close_error = c ? std::error_code{} : c.error();
    auto again = co_await ws.send_text(far_repeats(100, 3, 1));
    send_error = again ? std::error_code{} : again.error();
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    wait_sessions(s, 1);
    std::size_t bytes = 0;
    int close_frames = 0;
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 8) ++close_frames;
      bytes += f->payload.size();
    }
    EXPECT_EQ(close_frames, 0);
    EXPECT_LT(bytes, big.size());
    ::close(fd);
  });
  EXPECT_TRUE(cut_error == std::errc::timed_out) << cut_error.message();
  EXPECT_TRUE(close_error) << "close() after a cut frame succeeded";
  EXPECT_LT(close_took, 4s);  // under close_timeout (5 s): no wait for an answer
  EXPECT_TRUE(send_error) << "a send after a cut frame succeeded";
}

// Several tasks sending compressed messages at once (fragmented, some under the
// threshold), while the peer pings: every message inflates in order with one history.
TEST(WsDeflateConcurrency, ConcurrentCompressedSendsKeepOneHistory) {
  constexpr int senders = 6, each = 40;
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_send_frame_bytes = 100;
  std::atomic<int> failures{0};
  s.session = [&](http::websocket& ws) -> task<void> {
    auto sender = [&](int k) -> task<void> {
      for (int i = 0; i < each; ++i) {
        std::string m = "s" + std::to_string(k) + " m" + std::to_string(i) + " ";
        if (i % 3 != 0)
          m += far_repeats(50 + 37 * static_cast<std::size_t>(i), 5, static_cast<std::uint32_t>(k * 1000 + i));
        auto r = co_await ws.send_text(m);
        if (!r) ++failures;
        if (i % 7 == 0) (void)co_await sleep_for(1ms);
      }
    };
    auto reader = [&]() -> task<void> {
      for (;;) {
        auto m = co_await ws.receive();
        if (!m) co_return;
      }
    };
    scope sc;
    for (int k = 0; k < senders; ++k) sc.spawn(sender(k));
    sc.spawn(reader());
    co_await sc.join();
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    std::thread pinger([&] {
      for (int i = 0; i < 50; ++i) {
        if (!send_all(fd, make_frame(9, "k" + std::to_string(i)))) break;
        std::this_thread::sleep_for(2ms);
      }
    });
    peer_inflater in(15);
    std::vector<int> next(senders, 0);
    int pongs = 0;
    int inside = 0;  // pongs between two frames of a message
    for (int n = 0; n < senders * each; ++n) {
      std::vector<frame_in> controls;
      auto m = read_message(fd, &controls, &inside);
      pongs += static_cast<int>(controls.size());
      if (!m) {
        ADD_FAILURE() << "stream ended after " << n << " messages";
        break;
      }
      auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
      if (!t) {
        ADD_FAILURE() << "message " << n << " does not inflate";
        break;
      }
      int k = -1, i = -1;
      if (std::sscanf(t->c_str(), "s%d m%d ", &k, &i) != 2 || k < 0 || k >= senders) {
        ADD_FAILURE() << "garbled message " << n << ": " << t->substr(0, 40);
        break;
      }
      EXPECT_EQ(i, next[k]) << "sender " << k;
      next[k] = i + 1;
    }
    pinger.join();
    send_all(fd, make_frame(8, close_payload(1000)));
    std::vector<frame_in> controls;
    while (read_message(fd, &controls)) {
    }
    for (const auto& f : controls) pongs += f.opcode == 10 ? 1 : 0;
    EXPECT_GT(pongs, 0) << "no ping answered";
    // The whole message goes out under the write lock: a pong waits for its last frame.
    EXPECT_EQ(inside, 0);
    ::close(fd);
  });
  EXPECT_EQ(failures.load(), 0);
}

// ---------------------------------------------------------------------------------------
// Drain during a compressed, fragmented send.

TEST(WsDeflateDrain, DrainCutsACompressedFragmentedSend) {
  const std::string big = random_bytes(32u << 20, 21);  // incompressible: many frames
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_send_frame_bytes = 4096;
  std::error_code send_error;
  std::atomic<bool> send_done{false};
  s.session = [&](http::websocket& ws) -> task<void> {
    auto r = co_await ws.send_binary(big);
    send_error = r ? std::error_code{} : r.error();
    send_done = true;
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    std::this_thread::sleep_for(500ms);
    s.stop_now = true;  // drain while the send waits for the peer
    for (int i = 0; i < 2000 && !send_done.load(); ++i) std::this_thread::sleep_for(5ms);
    // Whatever went out: frames of the cut message, no close frame after them, then the end.
    std::size_t bytes = 0;
    int close_frames = 0;
    bool first = true;
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 8) {
        ++close_frames;
        continue;
      }
      if (first) {
        EXPECT_EQ(f->rsv, 4);
        first = false;
      }
      bytes += f->payload.size();
      EXPECT_LE(f->payload.size(), 4096u);
    }
    EXPECT_EQ(close_frames, 0) << "a close frame after a cut frame";
    EXPECT_LT(bytes, big.size());
    ::close(fd);
  });
  EXPECT_TRUE(send_done.load());
  EXPECT_TRUE(send_error == std::errc::operation_canceled) << send_error.message();
}

// ---------------------------------------------------------------------------------------
// Valid compressed data in less usual shapes (RFC 7692 section 7.2.3).

// Raw deflate of `data` ended with Z_FINISH (a block with BFINAL set), nothing removed.
std::string deflated_final(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  (void)deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// Raw deflate with a sync flush, the trailing 00 00 ff ff left in place.
std::string deflated_with_tail(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  (void)deflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

struct shape_case {
  const char* name;
  std::string wire;
  std::string expected;
};

TEST(WsDeflateFrames, ValidCompressedShapesAreTaken) {
  const std::string text = far_repeats(500, 6, 77);
  const std::vector<shape_case> cases = {
      // RFC 7692 7.2.3.6: an empty message compressed as one 0x00 byte, or as nothing.
      {"an empty message as 0x00", make_frame(1, std::string("\x00", 1), true, true, 4), ""},
      {"an empty message as no bytes", make_frame(2, "", true, true, 4), ""},
      // 7.2.3.3: a block with BFINAL set; the next message starts a new stream.
      {"BFINAL set", make_frame(1, deflated_final(text), true, true, 4), text},
      {"BFINAL set again", make_frame(1, deflated_final(text + "!"), true, true, 4), text + "!"},
      // 7.2.3.4: the 00 00 ff ff tail not removed by the sender: an empty block more.
      {"the tail left in place", make_frame(1, deflated_with_tail(text), true, true, 4), text},
      // 7.2.3.5: a stored (uncompressed) block.
      {"a stored block", make_frame(1, std::string("\x00\x05\x00\xfa\xff", 5) + "hello", true, true, 4), "hello"},
      {"a multi-byte character split between frames by the compressor's output",
       make_frame(1, deflated("\xe2\x82"), false, true, 4) + make_frame(0, std::string("\x00\x00\xff\xff", 4), false) +
           make_frame(0, deflated("\xac")),
       "\xe2\x82\xac"},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.deflate.threshold = 1u << 30;  // echoes go out uncompressed
  s.run([&](std::uint16_t port) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name);
      // A connection of its own each (no context taken over between cases).
      int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n");
      if (fd < 0) continue;
      send_all(fd, c.wire);
      std::vector<frame_in> controls;
      auto m = read_message(fd, &controls);
      if (!m) {
        ADD_FAILURE() << "refused, close " << (controls.empty() ? -1 : controls.back().close_code());
      } else {
        EXPECT_EQ(m->rsv, 0);
        EXPECT_EQ(m->payload, c.expected);
      }
      send_all(fd, make_frame(8, close_payload(1000)));
      read_close_code(fd);
      ::close(fd);
    }
  });
}

TEST(WsDeflateFrames, InvalidUtf8InsideCompressedTextIs1007) {
  struct utf_case {
    const char* name;
    std::string wire;
  };
  const std::string bad = far_repeats(300, 4, 5) + "\xc3\x28" + far_repeats(300, 4, 6);
  const std::string z = deflated(bad);
  const std::vector<utf_case> cases = {
      {"one frame", make_frame(1, z, true, true, 4)},
      {"one-byte frames",
       [&] {
         std::string w;
         for (std::size_t i = 0; i < z.size(); ++i)
           w += make_frame(i == 0 ? 1 : 0, std::string_view(z).substr(i, 1), i + 1 == z.size(), true, i == 0 ? 4 : 0);
         return w;
       }()},
      {"a character cut at the end of the message", make_frame(1, deflated("abc\xe2\x82"), true, true, 4)},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.run([&](std::uint16_t port) {
    int ended = 0;
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name);
      int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
      if (fd < 0) continue;
      send_all(fd, c.wire);
      EXPECT_EQ(read_close_code(fd), 1007);
      ::close(fd);
      wait_sessions(s, ++ended);
      EXPECT_EQ(s.last_error(), make_error_code(http::websocket_errc::invalid_utf8)) << s.last_error().message();
    }
  });
}

// RFC 7692 7.1.2.1: a server may answer server_max_window_bits though the client did
// not ask, and server_no_context_takeover likewise (7.1.1.1): the client takes both.
TEST(WsDeflateNegotiation, ClientTakesParametersTheServerMayAddUnasked) {
  for (const char* answer :
       {"permessage-deflate; server_max_window_bits=10", "permessage-deflate; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=\"9\"; server_no_context_takeover"}) {
    SCOPED_TRACE(answer);
    const std::string text = far_repeats(3000, 5, 9);
    raw_server srv([&](int fd, const std::string& head) {
      send_all(fd, ok_101(head, std::string("Sec-WebSocket-Extensions: ") + answer + "\r\n"));
      peer_deflater d(10, false);
      send_all(fd, make_frame(1, d.message(text), true, false, 4));
      auto m = read_message(fd);
      EXPECT_TRUE(m);
      send_all(fd, server_frame(8, close_payload(1000)));
      ::shutdown(fd, SHUT_WR);
      reaches_eof(fd);
    });
    client_run([&](http::client& c) -> task<void> {
      http::websocket_connect_options o;
      o.options.deflate.enabled = true;
      auto ws = co_await c.connect_websocket(srv.url(), o);
      if (!ws) {
        ADD_FAILURE() << "the client refused: " << ws.error().message();
        co_return;
      }
      EXPECT_TRUE(ws->compressed());
      auto m = co_await ws->receive();
      if (!m) {
        ADD_FAILURE() << m.error().message();
        co_return;
      }
      EXPECT_EQ(m->data, text);
      (void)co_await ws->send_text("ok");
      auto end = co_await ws->receive();
      EXPECT_FALSE(end);
    });
    srv.join();
  }
}

// close() from one task while others send compressed messages: every message before
// the close frame inflates, nothing follows the close frame.
TEST(WsDeflateConcurrency, CloseWhileCompressedSendsRun) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_send_frame_bytes = 64;
  std::atomic<int> after_close_ok{0};
  s.session = [&](http::websocket& ws) -> task<void> {
    std::atomic<bool> closed{false};
    auto sender = [&](int k) -> task<void> {
      for (int i = 0; i < 200; ++i) {
        const bool after = closed.load();  // close() has returned
        auto r =
            co_await ws.send_text(far_repeats(100 + static_cast<std::size_t>(i), 3, static_cast<std::uint32_t>(k)));
        if (r && after) ++after_close_ok;
        if (!r) co_return;
      }
    };
    auto closer = [&]() -> task<void> {
      (void)co_await sleep_for(20ms);
      (void)co_await ws.close(1000, "enough");
      closed = true;
    };
    scope sc;
    for (int k = 0; k < 4; ++k) sc.spawn(sender(k));
    sc.spawn(closer());
    co_await sc.join();
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    peer_inflater in(15);
    bool close_seen = false;
    std::string partial;
    int rsv = 0;
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 8) {
        close_seen = true;
        send_all(fd, make_frame(8, close_payload(1000)));
        continue;
      }
      EXPECT_FALSE(close_seen) << "a frame after the close frame";
      if (f->opcode >= 8) continue;
      if (f->opcode != 0) rsv = f->rsv;
      partial += f->payload;
      if (!f->fin) continue;
      if (rsv == 4) {
        EXPECT_TRUE(in.message(partial)) << "a message does not inflate";
      }
      partial.clear();
    }
    EXPECT_TRUE(close_seen);
    EXPECT_TRUE(partial.empty()) << "the close frame came inside a message";
    ::close(fd);
  });
  EXPECT_EQ(after_close_ok.load(), 0) << "sends started after close() returned succeeded";
}

// A stopped receive of the client in the middle of a compressed message from a raw
// server, many times, then the next messages with context taken over.
TEST(WsDeflateCancel, ClientStoppedReceivesKeepTheInflaterConsistent) {
  const std::uint32_t seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("seed %u\n", seed);
  std::vector<std::string> texts;
  for (int i = 0; i < 5; ++i) texts.push_back(far_repeats(400, 6, seed + static_cast<std::uint32_t>(i)));
  raw_server srv([&](int fd, const std::string& head) {
    send_all(fd, ok_101(head, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
    std::mt19937 g(seed);
    peer_deflater d(15, true);
    for (const auto& t : texts) {
      const std::string z = d.message(t);
      std::string wire;
      for (std::size_t at = 0; at < z.size();) {
        const std::size_t n = std::min<std::size_t>(1 + g() % 100, z.size() - at);
        wire +=
            make_frame(at == 0 ? 1 : 0, std::string_view(z).substr(at, n), at + n == z.size(), false, at == 0 ? 4 : 0);
        at += n;
      }
      for (std::size_t i = 0; i < wire.size();) {
        const std::size_t n = std::min<std::size_t>(1 + g() % 9, wire.size() - i);
        send_all(fd, std::string_view(wire).substr(i, n));
        i += n;
        std::this_thread::sleep_for(std::chrono::microseconds(200 + g() % 1500));
      }
    }
    auto c = read_close_code(fd);
    EXPECT_EQ(c, 1000);
    send_all(fd, server_frame(8, close_payload(1000)));
    ::shutdown(fd, SHUT_WR);
    reaches_eof(fd);
  });
  std::vector<std::string> got;
  int stopped = 0;
  client_run([&](http::client& c) -> task<void> {
    http::websocket_connect_options o;
    o.options.deflate.enabled = true;
    auto ws = co_await c.connect_websocket(srv.url(), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    std::mt19937 g(seed + 9);
    while (got.size() < texts.size()) {
      auto m = co_await with_timeout(ws->receive(), std::chrono::milliseconds(1 + g() % 3));
      if (!m) {
        if (m.error() == std::errc::timed_out) {
          ++stopped;
          continue;
        }
        ADD_FAILURE() << m.error().message();
        co_return;
      }
      got.emplace_back(m->data);
    }
    (void)co_await ws->close(1000);
  });
  srv.join();
  EXPECT_EQ(got, texts);
  EXPECT_GT(stopped, 0);
}

// A drain while the keep-alive is armed and the session sleeps: 1001, then nothing after
// the close frame (no keep-alive ping), and the session ends at once.
TEST(WsDeflateDrain, DrainWithKeepAliveArmedSendsNothingAfterTheClose) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.ping_interval = 30ms;
  std::chrono::steady_clock::duration slept{};
  s.session = [&](http::websocket& ws) -> task<void> {
    (void)co_await ws.send_text(far_repeats(200, 4, 1));
    const auto t0 = std::chrono::steady_clock::now();
    (void)co_await sleep_for(20s);
    slept = std::chrono::steady_clock::now() - t0;
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    int pings = 0;
    const auto until = std::chrono::steady_clock::now() + 400ms;
    timeval tv{0, 50'000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (std::chrono::steady_clock::now() < until) {
      auto f = read_frame(fd);
      if (f && f->opcode == 9) {
        ++pings;
        send_all(fd, make_frame(10, f->payload));
      }
    }
    tv = {20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_GT(pings, 0);
    s.stop_now = true;
    int code = -1, after_close = 0;
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (code != -1) {
        ++after_close;
        continue;
      }
      if (f->opcode == 8) {
        code = f->close_code();
        send_all(fd, make_frame(8, close_payload(1001)));
      } else if (f->opcode == 9) {
        send_all(fd, make_frame(10, f->payload));
      }
    }
    EXPECT_EQ(code, 1001);
    EXPECT_EQ(after_close, 0) << "frames after the close frame";
    ::close(fd);
  });
  EXPECT_LT(slept, 10s);
}

// A drain while one compressed send is cut mid-message and another waits for the write
// lock: both fail with operation_canceled, nothing of the second goes out.
TEST(WsDeflateDrain, DrainWhileACompressedSendWaitsForTheLock) {
  const std::string big = random_bytes(32u << 20, 31);
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.max_send_frame_bytes = 8192;
  std::error_code first_error, second_error;
  std::atomic<int> done{0};
  s.session = [&](http::websocket& ws) -> task<void> {
    auto first = [&]() -> task<void> {
      auto r = co_await ws.send_binary(big);
      first_error = r ? std::error_code{} : r.error();
      ++done;
    };
    auto second = [&]() -> task<void> {
      (void)co_await sleep_for(50ms);
      auto r = co_await ws.send_text(far_repeats(1000, 10, 2));
      second_error = r ? std::error_code{} : r.error();
      ++done;
    };
    scope sc;
    sc.spawn(first());
    sc.spawn(second());
    co_await sc.join();
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    std::this_thread::sleep_for(500ms);
    s.stop_now = true;
    for (int i = 0; i < 2000 && done.load() < 2; ++i) std::this_thread::sleep_for(5ms);
    int text_frames = 0, close_frames = 0;
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 1) ++text_frames;
      if (f->opcode == 8) ++close_frames;
    }
    EXPECT_EQ(text_frames, 0);
    EXPECT_EQ(close_frames, 0);
    ::close(fd);
  });
  EXPECT_EQ(done.load(), 2);
  EXPECT_TRUE(first_error == std::errc::operation_canceled) << first_error.message();
  EXPECT_TRUE(second_error == std::errc::operation_canceled) << second_error.message();
}

// A send held by a peer that reads nothing for a while but keeps sending: the input
// counts for the keep-alive, the connection lives, the send completes.
TEST(WsDeflateKeepAlive, PeerThatSendsButReadsLateKeepsTheConnection) {
  const std::string big = random_bytes(32u << 20, 41);
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.ping_interval = 100ms;
  s.opts.options.ping_timeout = 300ms;
  std::error_code err;
  bool sent = false;
  s.session = [&](http::websocket& ws) -> task<void> {
    auto r = co_await ws.send_binary(big);
    sent = static_cast<bool>(r);
    if (!r) err = r.error();
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 30; ++i) {  // 1.5 s of input, nothing read
      send_all(fd, make_frame(1, "tick"));
      std::this_thread::sleep_for(50ms);
    }
    peer_inflater in(15);
    auto m = read_message(fd);
    ASSERT_TRUE(m) << "connection ended";
    auto t = m->rsv == 4 ? in.message(m->payload) : std::optional<std::string>(m->payload);
    ASSERT_TRUE(t);
    EXPECT_TRUE(*t == big);
    ::close(fd);
  });
  EXPECT_TRUE(sent) << err.message();
}

// The server's own limits: max_window_bits 10 and peer_max_window_bits 11.
TEST(WsDeflateNegotiation, ServerOwnWindowLimitsAnsweredAndHonoured) {
  const std::string h = "Sec-WebSocket-Extensions: ";
  const std::vector<offer_case> cases = {
      {h + "permessage-deflate\r\n", {"permessage-deflate", "server_max_window_bits=10"}},
      {h + "permessage-deflate; server_max_window_bits=12\r\n", {"permessage-deflate", "server_max_window_bits=10"}},
      {h + "permessage-deflate; server_max_window_bits=9\r\n", {"permessage-deflate", "server_max_window_bits=9"}},
      {h + "permessage-deflate; client_max_window_bits\r\n",
       {"permessage-deflate", "server_max_window_bits=10", "client_max_window_bits=11"}},
      {h + "permessage-deflate; client_max_window_bits=9\r\n",
       {"permessage-deflate", "server_max_window_bits=10", "client_max_window_bits=9"}},
  };
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.deflate.max_window_bits = 10;
  s.opts.options.deflate.peer_max_window_bits = 11;
  s.run([&](std::uint16_t port) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.lines);
      std::string head;
      int fd = open_ws_with(port, c.lines, &head);
      if (fd < 0) continue;
      EXPECT_EQ(parts_of(extension_answer(head)), c.expected) << head;
      const int bits = c.expected.count("server_max_window_bits=9") ? 9 : 10;
      const std::string text = far_repeats(5000, 3, 3);
      send_all(fd, make_frame(1, text));
      auto m = read_message(fd);
      if (m) {
        EXPECT_EQ(m->rsv, 4);
        peer_inflater in(bits);
        auto t = in.message(m->payload);
        EXPECT_TRUE(t && *t == text) << "not within " << bits << " bits";
      } else {
        ADD_FAILURE() << "no echo";
      }
      send_all(fd, make_frame(8, close_payload(1000)));
      read_close_code(fd);
      ::close(fd);
    }
  });
}

// The client's threshold and level 0: messages under the threshold and everything at
// level 0 go out with RSV1 clear; a message of exactly the threshold is compressed.
TEST(WsDeflateNegotiation, ClientThresholdAndLevelZero) {
  for (int level : {0, 6}) {
    SCOPED_TRACE("level " + std::to_string(level));
    std::vector<message_in> got;
    raw_server srv([&](int fd, const std::string& head) {
      send_all(fd, ok_101(head, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
      for (int i = 0; i < 2; ++i) {
        auto m = read_message(fd);
        if (!m) break;
        got.push_back(*m);
      }
      send_all(fd, server_frame(8, close_payload(1000)));
      ::shutdown(fd, SHUT_WR);
      reaches_eof(fd);
    });
    client_run([&](http::client& c) -> task<void> {
      http::websocket_connect_options o;
      o.options.deflate.enabled = true;
      o.options.deflate.threshold = 100;
      o.options.deflate.level = level;
      auto ws = co_await c.connect_websocket(srv.url(), o);
      if (!ws) {
        ADD_FAILURE() << ws.error().message();
        co_return;
      }
      (void)co_await ws->send_text(std::string(99, 'a'));
      (void)co_await ws->send_text(std::string(100, 'a'));
      auto m = co_await ws->receive();
      EXPECT_FALSE(m);
    });
    srv.join();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].rsv, 0);
    EXPECT_EQ(got[0].payload, std::string(99, 'a'));
    if (level == 0) {
      EXPECT_EQ(got[1].rsv, 0);
      EXPECT_EQ(got[1].payload, std::string(100, 'a'));
    } else {
      EXPECT_EQ(got[1].rsv, 4);
      peer_inflater in(15);
      auto t = in.message(got[1].payload);
      EXPECT_TRUE(t && *t == std::string(100, 'a'));
    }
  }
}

// Websockets with keep-alive armed replaced by move assignment, the keep-alive restarted
// and stopped through the public calls, then destroyed: the replaced one's keep-alive
// ends with it, nothing touches freed state.
TEST(WsDeflateKeepAlive, MoveAssignAndRestartWhileArmed) {
  std::atomic<int> eofs{0};
  auto serve = [&](int fd, const std::string& head) {
    send_all(fd, ok_101(head, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      if (std::chrono::steady_clock::now() > deadline) return;  // still pinged: not ended
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 9) send_all(fd, server_frame(10, f->payload));
      if (f->opcode == 8) {
        send_all(fd, server_frame(8, close_payload(1000)));
        ::shutdown(fd, SHUT_WR);
      }
    }
    ++eofs;
  };
  raw_server a(serve), b(serve);
  client_run([&](http::client& c) -> task<void> {
    http::websocket_connect_options o;
    o.options.deflate.enabled = true;
    o.options.ping_interval = 20ms;
    o.options.ping_timeout = 2s;
    auto wa = co_await c.connect_websocket(a.url(), o);
    auto wb = co_await c.connect_websocket(b.url(), o);
    if (!wa || !wb) {
      ADD_FAILURE() << "connect failed";
      co_return;
    }
    (void)co_await sleep_for(50ms);
    *wa = std::move(*wb);  // the first websocket goes; its keep-alive must end
    (void)co_await sleep_for(60ms);
    co_await wa->stop_keep_alive();
    wa->start_keep_alive();
    wa->start_keep_alive();
    (void)co_await sleep_for(60ms);
    EXPECT_TRUE(co_await wa->send_text(std::string(300, 'q')));
    co_await wa->stop_keep_alive();
    co_await wa->stop_keep_alive();
    auto closed = co_await wa->close(1000);
    EXPECT_TRUE(closed) << closed.error().message();
  });
  a.join();
  b.join();
  EXPECT_EQ(eofs.load(), 2);
}

// ---------------------------------------------------------------------------------------
// wss: keep-alive, drains and the connection limit over TLS.

struct cert_dir {
  std::string dir, cert, key;
  bool ok = false;
  cert_dir() {
    char tmpl[] = "/tmp/ws_attack_XXXXXX";
    if (!::mkdtemp(tmpl)) return;
    dir = tmpl;
    cert = dir + "/cert.pem";
    key = dir + "/key.pem";
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost "
        "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
        key + " -out " + cert + " >/dev/null 2>&1";
    ok = std::system(cmd.c_str()) == 0;
  }
  ~cert_dir() {
    if (!dir.empty()) {
      (void)std::system(("rm -rf " + dir).c_str());
    }
  }
};

struct wss_fixture {
  cert_dir certs;
  std::optional<tls::context> sctx;
  http::router routes;
  http::server_options server_opts;
  http::websocket_accept_options opts;
  std::function<task<void>(http::websocket&)> session;
  std::atomic<int> sessions_ended{0};

  // Runs `client(url, server)` with the server serving meanwhile, then drains it.
  template <class F>
  void run(F client) {
    tls::server_options so;
    so.certificate_chain_file = certs.cert;
    so.private_key_file = certs.key;
    auto made = tls::context::server(so);
    if (!made) {
      ADD_FAILURE() << made.error().message();
      return;
    }
    sctx.emplace(std::move(*made));
    routes.get("/ws", [this](http::request& r) -> task<http::response> {
      http::websocket_session s = [this](http::websocket& ws) -> task<void> {
        co_await session(ws);
        sessions_ended.fetch_add(1);
      };
      co_return http::accept_websocket(r, s, opts);
    });
    io_context ctx;
    http::server srv(routes, server_opts);
    auto listener = ringio_test::listen_loopback();
    const std::uint16_t port = ringio_test::address_of(listener).port();
    sync_wait(ctx, [&]() -> task<void> {
      std::stop_source stop;
      scope sc;
      sc.spawn(http::serve_tls(srv, *sctx, listener, stop.get_token()));
      http::client_options co;
      co.tls.ca_file = certs.cert;
      co.tls.use_system_trust_store = false;
      http::client c(co);
      const std::string url = "wss://127.0.0.1:" + std::to_string(port) + "/ws";
      co_await client(c, url, srv);
      stop.request_stop();
      co_await sc.join();
    }());
  }
};

// A session that only sends, over TLS, with keep-alive: a peer that answers pings (a
// waiting receive()) keeps it; a peer that does nothing is given up.
TEST(WsDeflateTls, KeepAliveOfASendOnlySessionOverTls) {
  for (bool answering : {true, false}) {
    SCOPED_TRACE(answering ? "peer answers" : "peer silent");
    wss_fixture f;
    if (!f.certs.ok) GTEST_SKIP() << "no openssl command to make a certificate";
    f.opts.options.deflate.enabled = true;
    f.opts.options.ping_interval = 50ms;
    f.opts.options.ping_timeout = 1000ms;
    int sent_ok = 0;
    std::error_code err;
    f.session = [&](http::websocket& ws) -> task<void> {
      for (int i = 0; i < 60; ++i) {
        auto r = co_await ws.send_text(far_repeats(200, 3, static_cast<std::uint32_t>(i)));
        if (!r) {
          err = r.error();
          co_return;
        }
        ++sent_ok;
        (void)co_await sleep_for(50ms);
      }
    };
    f.run([&](http::client& c, const std::string& url, http::server&) -> task<void> {
      http::websocket_connect_options o;
      o.options.deflate.enabled = true;
      auto ws = co_await c.connect_websocket(url, o);
      if (!ws) {
        ADD_FAILURE() << ws.error().message();
        co_return;
      }
      EXPECT_TRUE(ws->compressed());
      if (answering) {
        int got = 0;
        for (;;) {
          auto m = co_await with_timeout(ws->receive(), 10s);
          if (!m) break;
          ++got;
        }
        EXPECT_EQ(got, 60);
      } else {
        (void)co_await sleep_for(5s);
      }
    });
    if (answering) {
      EXPECT_EQ(sent_ok, 60) << err.message();
    } else {
      EXPECT_LT(sent_ok, 60);
      EXPECT_EQ(err, make_error_code(http::websocket_errc::ping_timeout)) << err.message();
    }
  }
}

// Websockets over TLS count against max_connections while they are open: with two open,
// a third connection is closed before its handshake; once one ends, a new one is served;
// at the end none is counted.
TEST(WsDeflateTls, OpenWebsocketsCountAgainstMaxConnections) {
  wss_fixture f;
  if (!f.certs.ok) GTEST_SKIP() << "no openssl command to make a certificate";
  f.server_opts.max_connections = 2;
  f.opts.options.deflate.enabled = true;
  f.session = [&](http::websocket& ws) -> task<void> {
    for (;;) {
      auto m = co_await ws.receive();
      if (!m) co_return;
      if (!co_await ws.send_text(m->data)) co_return;
    }
  };
  std::size_t at_end = 99;
  f.run([&](http::client& c, const std::string& url, http::server& srv) -> task<void> {
    http::websocket_connect_options o;
    o.options.deflate.enabled = true;
    auto a = co_await c.connect_websocket(url, o);
    auto b = co_await c.connect_websocket(url, o);
    if (!a || !b) {
      ADD_FAILURE() << "the first two failed";
      co_return;
    }
    auto third = co_await with_timeout(c.connect_websocket(url, o), 10s);
    EXPECT_FALSE(third) << "a third connection was served with max_connections 2";
    (void)co_await a->close(1000);
    for (int i = 0; i < 400 && srv.connections() > 1; ++i) (void)co_await sleep_for(5ms);
    auto fourth = co_await with_timeout(c.connect_websocket(url, o), 10s);
    if (!fourth) {
      ADD_FAILURE() << "no connection after one ended: " << fourth.error().message();
    } else {
      const std::string text = far_repeats(400, 5, 1);
      EXPECT_TRUE(co_await fourth->send_text(text));
      auto m = co_await fourth->receive();
      EXPECT_TRUE(m && m->data == text);
      (void)co_await fourth->close(1000);
    }
    (void)co_await b->close(1000);
    for (int i = 0; i < 400 && srv.connections() > 0; ++i) (void)co_await sleep_for(5ms);
    at_end = srv.connections();
  });
  EXPECT_EQ(at_end, 0u);
}

// A drain over TLS while a compressed, fragmented send is held by a peer that reads
// nothing: the send fails with operation_canceled and the drain is not held up.
TEST(WsDeflateTls, DrainCutsACompressedSendOverTls) {
  wss_fixture f;
  if (!f.certs.ok) GTEST_SKIP() << "no openssl command to make a certificate";
  f.opts.options.deflate.enabled = true;
  f.opts.options.max_send_frame_bytes = 4096;
  const std::string big = random_bytes(32u << 20, 51);
  std::error_code err;
  std::atomic<bool> done{false};
  f.session = [&](http::websocket& ws) -> task<void> {
    auto r = co_await ws.send_binary(big);
    err = r ? std::error_code{} : r.error();
    done = true;
  };
  std::optional<http::websocket> held;
  const auto t0 = std::chrono::steady_clock::now();
  f.run([&](http::client& c, const std::string& url, http::server&) -> task<void> {
    http::websocket_connect_options o;
    o.options.deflate.enabled = true;
    auto ws = co_await c.connect_websocket(url, o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    held.emplace(std::move(*ws));  // reads nothing
    (void)co_await sleep_for(500ms);
  });
  const auto took = std::chrono::steady_clock::now() - t0;
  held.reset();
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(err == std::errc::operation_canceled) << err.message();
  EXPECT_LT(took, 10s);
}

// Half ClientHellos hold every place of max_connections: a wss client is closed before
// its handshake; once they go, it is served; a drain with half ClientHellos pending and
// a websocket open is not held up; nothing stays counted.
TEST(WsDeflateTls, HalfClientHellosAndTheConnectionLimit) {
  wss_fixture f;
  if (!f.certs.ok) GTEST_SKIP() << "no openssl command to make a certificate";
  f.server_opts.max_connections = 3;
  f.opts.options.deflate.enabled = true;
  f.session = [&](http::websocket& ws) -> task<void> {
    for (;;) {
      auto m = co_await ws.receive();
      if (!m) co_return;
      if (!co_await ws.send_text(m->data)) co_return;
    }
  };
  const std::string half_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x11\x22", 13);
  std::size_t while_held = 0;
  std::vector<int> held;
  const auto t0 = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration drain_started{};
  f.run([&](http::client& c, const std::string& url, http::server& srv) -> task<void> {
    const std::uint16_t port = static_cast<std::uint16_t>(std::atoi(url.substr(url.rfind(':') + 1).c_str()));
    for (int i = 0; i < 3; ++i) {
      int fd = tcp_connect(port);
      if (fd >= 0) {
        send_all(fd, half_hello);
        held.push_back(fd);
      }
    }
    for (int i = 0; i < 400 && srv.connections() < 3; ++i) (void)co_await sleep_for(5ms);
    while_held = srv.connections();
    http::websocket_connect_options o;
    o.options.deflate.enabled = true;
    auto refused = co_await with_timeout(c.connect_websocket(url, o), 10s);
    EXPECT_FALSE(refused) << "served over max_connections";
    ::close(held[0]);
    held.erase(held.begin());
    for (int i = 0; i < 400 && srv.connections() > 2; ++i) (void)co_await sleep_for(5ms);
    auto ws = co_await with_timeout(c.connect_websocket(url, o), 10s);
    if (!ws) {
      ADD_FAILURE() << "not served once a place was free: " << ws.error().message();
    } else {
      const std::string text = far_repeats(300, 4, 2);
      EXPECT_TRUE(co_await ws->send_text(text));
      auto m = co_await ws->receive();
      EXPECT_TRUE(m && m->data == text);
    }
    drain_started = std::chrono::steady_clock::now() - t0;
    co_return;  // the fixture drains with the half ClientHellos and the websocket open
  });
  const auto total = std::chrono::steady_clock::now() - t0;
  for (int fd : held) ::close(fd);
  EXPECT_EQ(while_held, 3u);
  EXPECT_LT(total - drain_started, 5s) << "the drain waited on half ClientHellos or the websocket";
}

// ---------------------------------------------------------------------------------------
// Keep-alive without a waiting receive().

// A session that only sends; the peer answers each ping late (after ping_interval, well
// within ping_timeout) and with a payload other than the ping's: whatever arrives counts,
// the connection lives.
TEST(WsDeflateKeepAlive, LateAndWrongPongsKeepASendOnlySessionAlive) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.ping_interval = 100ms;
  s.opts.options.ping_timeout = 1500ms;
  int sent_ok = 0;
  std::error_code err;
  s.session = [&](http::websocket& ws) -> task<void> {
    for (int i = 0; i < 40; ++i) {
      auto r = co_await ws.send_text(far_repeats(100, 3, static_cast<std::uint32_t>(i)));
      if (!r) {
        err = r.error();
        co_return;
      }
      ++sent_ok;
      (void)co_await sleep_for(50ms);
    }
  };
  int pings = 0;
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 9) {
        ++pings;
        std::this_thread::sleep_for(300ms);
        send_all(fd, make_frame(10, "not-your-payload"));
      }
      if (f->opcode == 8) {
        send_all(fd, make_frame(8, close_payload(1000)));
        break;
      }
    }
    ::close(fd);
  });
  EXPECT_EQ(sent_ok, 40) << err.message();
  EXPECT_GT(pings, 0);
}

// A peer that reads nothing and answers nothing while a send-only session's sends fit
// the socket buffers: the keep-alive gives it up within ping_interval + ping_timeout.
TEST(WsDeflateKeepAlive, PeerThatReadsNothingIsGivenUp) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.ping_interval = 100ms;
  s.opts.options.ping_timeout = 300ms;
  std::error_code err;
  std::chrono::steady_clock::duration took{};
  s.session = [&](http::websocket& ws) -> task<void> {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 400; ++i) {
      auto r = co_await ws.send_text(far_repeats(100, 3, static_cast<std::uint32_t>(i)));
      if (!r) {
        err = r.error();
        break;
      }
      (void)co_await sleep_for(10ms);
    }
    took = std::chrono::steady_clock::now() - t0;
  };
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    wait_sessions(s, 1);
    ::close(fd);
  });
  EXPECT_EQ(err, make_error_code(http::websocket_errc::ping_timeout)) << err.message();
  EXPECT_LT(took, 10s);
}

// Receives stopped right after their keep-alive ping went out, the pong arriving while no
// receive() waits (the keep-alive task then watches), over and over: the peer answers
// every ping, so the connection lives.
TEST(WsDeflateKeepAlive, PongsArrivingBetweenStoppedReceivesCount) {
  ws_server s;
  s.opts.options.deflate.enabled = true;
  s.opts.options.ping_interval = 100ms;
  s.opts.options.ping_timeout = 1000ms;
  std::error_code err;
  int rounds = 0;
  s.session = [&](http::websocket& ws) -> task<void> {
    for (int i = 0; i < 12; ++i) {
      auto m = co_await with_timeout(ws.receive(), 130ms);  // a ping goes out at 100 ms
      if (!m && !(m.error() == std::errc::timed_out)) {
        err = m.error();
        co_return;
      }
      (void)co_await sleep_for(200ms);  // the pong comes meanwhile
      auto r = co_await ws.send_text(far_repeats(100, 2, static_cast<std::uint32_t>(i)));
      if (!r) {
        err = r.error();
        co_return;
      }
      ++rounds;
    }
  };
  int pings = 0;
  s.run([&](std::uint16_t port) {
    int fd = open_ws_with(port, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    ASSERT_GE(fd, 0);
    for (;;) {
      auto f = read_frame(fd);
      if (!f) break;
      if (f->opcode == 9) {
        ++pings;
        std::this_thread::sleep_for(60ms);
        send_all(fd, make_frame(10, f->payload));
      }
      if (f->opcode == 8) {
        send_all(fd, make_frame(8, close_payload(1000)));
        break;
      }
    }
    ::close(fd);
  });
  EXPECT_EQ(rounds, 12) << err.message();
  EXPECT_GT(pings, 0);
}

// The client's websocket destroyed while its keep-alive is armed (ping due, ping sent
// and unanswered), then the loop goes on and ends: nothing touches the freed websocket.
TEST(WsDeflateKeepAlive, WebsocketDestroyedWhileKeepAliveIsArmed) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    raw_server srv([&](int fd, const std::string& head) {
      send_all(fd, ok_101(head, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
      reaches_eof(fd);
    });
    client_run([&](http::client& c) -> task<void> {
      http::websocket_connect_options o;
      o.options.deflate.enabled = true;
      o.options.ping_interval = 30ms;
      o.options.ping_timeout = 60ms;
      {
        auto ws = co_await c.connect_websocket(srv.url(), o);
        if (!ws) {
          ADD_FAILURE() << ws.error().message();
          co_return;
        }
        if (variant == 1) (void)co_await sleep_for(45ms);   // a ping out, unanswered
        if (variant == 2) (void)co_await sleep_for(200ms);  // given up already
        auto moved = std::move(*ws);
        (void)co_await moved.send_text(std::string(200, 'x'));
      }
      (void)co_await sleep_for(300ms);
    });
    srv.join();
  }
}

// The io_context ends (sync_wait returns, the context is destroyed) while a websocket
// with keep-alive armed still exists; it is destroyed after.
TEST(WsDeflateKeepAlive, ContextEndsWhileKeepAliveIsArmed) {
  raw_server srv([&](int fd, const std::string& head) {
    send_all(fd, ok_101(head));
    reaches_eof(fd);
  });
  std::optional<http::websocket> kept;
  {
    io_context ctx;
    sync_wait(ctx, [&]() -> task<void> {
      http::client c;
      http::websocket_connect_options o;
      o.options.ping_interval = 20ms;
      auto ws = co_await c.connect_websocket(srv.url(), o);
      if (!ws) {
        ADD_FAILURE() << ws.error().message();
        co_return;
      }
      kept.emplace(std::move(*ws));
      (void)co_await sleep_for(30ms);
    }());
  }
  kept.reset();
  srv.join();
}

#ifdef HTTP_SERVER_PATH
// ---------------------------------------------------------------------------------------
// http_server's /ws/echo against Python's websockets as a hostile or slow client.

constexpr const char* ws_echo_py = R"PY(
import asyncio, os, signal, ssl, subprocess, sys, tempfile, time
import websockets
server, tls = sys.argv[1], sys.argv[2] == "tls"
args = [server, "--port", "0", "--drain-timeout", "2"]
ctx = None
if tls:
    d = tempfile.mkdtemp()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", d + "/k.pem", "-out", d + "/c.pem"],
                   check=True, capture_output=True)
    args += ["--tls-cert", d + "/c.pem", "--tls-key", d + "/k.pem"]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
line = p.stdout.readline()
port = int(line.split("listening on ")[1].split(",")[0].rsplit(":", 1)[1])
url = ("wss" if tls else "ws") + "://127.0.0.1:%d/ws/echo" % port

async def limits():
    async with websockets.connect(url, ssl=ctx, max_size=None, compression="deflate") as ws:
        print("extensions", [e.name for e in ws.extensions], flush=True)
        d = b"x" * (1 << 20)
        await ws.send(d)
        r = await ws.recv()
        print("echo1m", len(r), r == d, flush=True)
        await ws.send([b"z" * (1 << 20)] * 4)
        r = await ws.recv()
        print("echo4m", len(r), r == b"z" * (4 << 20), flush=True)
        t = "\u20ac" * 1000
        await ws.send(t)
        print("text", (await ws.recv()) == t, flush=True)
        await ws.send([b"y" * (1 << 20)] * 4 + [b"y"])
        try:
            await ws.recv()
            print("over the limit echoed", flush=True)
        except websockets.ConnectionClosed as e:
            print("closed", e.rcvd.code if e.rcvd else None, flush=True)

async def flood():
    # Sends and never reads (max_queue=1: the reader stops), then the server is told to stop.
    ws = await websockets.connect(url, ssl=ctx, max_size=None, max_queue=1, compression=None, write_limit=1 << 30)
    async def sender():
        try:
            for i in range(200):
                await ws.send(os.urandom(256 << 10))
        except Exception:
            pass
    task = asyncio.ensure_future(sender())
    await asyncio.sleep(2)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    while p.poll() is None and time.monotonic() - t0 < 20:
        await asyncio.sleep(0.05)
    print("exit", p.poll(), "after %.1f" % (time.monotonic() - t0), flush=True)
    task.cancel()
    ws.transport.abort()

def upgrade_during_drain():
    # The head of an upgrade half sent, the server told to stop, then the rest: no 101.
    import socket
    q = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    qport = int(q.stdout.readline().split("listening on ")[1].split(",")[0].rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", qport))
    s.settimeout(10)
    if tls:
        s = ctx.wrap_socket(s, server_hostname="localhost")
    s.sendall(b"GET /ws/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
    time.sleep(0.3)
    q.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    r = b""
    try:
        s.sendall(b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        while b"\r\n\r\n" not in r:
            d = s.recv(4096)
            if not d:
                break
            r += d
    except Exception:
        pass
    status = r.split(b" ")[1].decode() if r.startswith(b"HTTP/1.1 ") else "none"
    print("drain-upgrade", status, b"connection: close" in r.lower(), flush=True)
    try:
        q.wait(timeout=20)
    except subprocess.TimeoutExpired:
        q.kill()
    print("drain-exit", q.returncode, flush=True)

asyncio.run(limits())
asyncio.run(flood())
if p.poll() is None:
    p.kill()
upgrade_during_drain()
)PY";

void ws_echo_with_python(const char* mode) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string script = "/tmp/ws_deflate_attack_" + std::to_string(::getpid()) + ".py";
  if (FILE* f = std::fopen(script.c_str(), "w")) {
    std::fputs(ws_echo_py, f);
    std::fclose(f);
  }
  std::string out;
  FILE* p =
      ::popen(("timeout 120 /usr/bin/python3 " + script + " " HTTP_SERVER_PATH " " + mode + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[4096];
  while (std::fgets(line, sizeof line, p)) out += line;
  ::pclose(p);
  std::remove(script.c_str());
  if (out.find("No module named") != std::string::npos) GTEST_SKIP() << out;
  EXPECT_NE(out.find("extensions []\n"), std::string::npos) << out;  // /ws/echo: no deflate by default
  EXPECT_NE(out.find("echo1m 1048576 True\n"), std::string::npos) << out;
  EXPECT_NE(out.find("echo4m 4194304 True\n"), std::string::npos) << out;
  EXPECT_NE(out.find("text True\n"), std::string::npos) << out;
  EXPECT_NE(out.find("closed 1009\n"), std::string::npos) << out;
  auto e = out.find("exit ");
  ASSERT_NE(e, std::string::npos) << out;
  EXPECT_EQ(out.substr(e, 7), "exit 0 ") << out;
  const double after = std::atof(out.c_str() + out.find("after ", e) + 6);
  EXPECT_LT(after, 10.0) << out;  // --drain-timeout 2
  // An upgrade whose request completes during the drain: 503 with Connection: close, or
  // no answer at all, never a 101.
  EXPECT_EQ(out.find("drain-upgrade 101"), std::string::npos) << out;
  if (out.find("drain-upgrade 503") != std::string::npos) {
    EXPECT_NE(out.find("drain-upgrade 503 True\n"), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("drain-upgrade none"), std::string::npos) << out;
  }
  EXPECT_NE(out.find("drain-exit 0\n"), std::string::npos) << out;
}

TEST(WsDeflateEchoApp, PythonClientsAgainstWsEcho) { ws_echo_with_python("plain"); }
TEST(WsDeflateEchoApp, PythonClientsAgainstWssEcho) { ws_echo_with_python("tls"); }

#endif  // HTTP_SERVER_PATH

}  // namespace
