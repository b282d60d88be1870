// SPDX-License-Identifier: Apache-2.0
// WebSocket, end to end: ringio's server against Python's `websockets` client and a raw
// socket that breaks the protocol on purpose; ringio's client against Python's server,
// against ringio's server, and against a raw server that stalls; ws:// and wss://.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "ringio/http/client.hpp"
#include "ringio/http/https.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/websocket_accept.hpp"
#include "ringio/ringio.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"
#include "tls/tls_support.hpp"
#include "websocket/frame_header.hpp"
#include "websocket/handshake.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using http::websocket;
using http::websocket_errc;

namespace {

const std::string peer_script = std::string(RINGIO_TEST_SOURCE_DIR) + "/http/websocket_peer.py";

// A Python with the websockets package: the first python3 on PATH, else the system's.
const std::string& python() {
  static const std::string found = [] {
    for (const char* p : {"python3", "/usr/bin/python3"}) {
      const std::string probe = std::string(p) + " -c 'import websockets' >/dev/null 2>&1";
      if (std::system(probe.c_str()) == 0) return std::string(p);
    }
    return std::string();
  }();
  return found;
}

bool have_python_websockets() { return !python().empty(); }

// The ringio side of the tests: echoes every message; "close-me" closes with 4000.
task<void> echo_session(websocket& ws) {
  for (;;) {
    auto m = co_await ws.receive();
    if (!m) co_return;
    if (m->data == "close-me") {
      (void)co_await ws.close(4000, "bye from ringio");
      co_return;
    }
    result<void> sent;
    if (m->is_text()) {
      sent = co_await ws.send_text(m->data);
    } else {
      sent = co_await ws.send_binary(m->data);
    }
    if (!sent) co_return;
  }
}

// An http::server (optionally HTTPS) on its own thread, with /ws (echo, subprotocol
// "chat", limits lowered for the tests), /quiet (a session that never reads) and
// /origin (only "https://good.example").
class ws_server {
 public:
  explicit ws_server(bool tls) {
    http::websocket_accept_options echo_opts;
    echo_opts.subprotocols = {"chat"};
    echo_opts.options.max_frame_bytes = 512 * 1024;
    echo_opts.options.max_message_bytes = 1024 * 1024;
    routes_.get("/ws", [echo_opts](http::request& r) -> task<http::response> {
      co_return http::accept_websocket(r, echo_session, echo_opts);
    });
    routes_.get("/quiet", [](http::request& r) -> task<http::response> {
      co_return http::accept_websocket(r, [](websocket&) -> task<void> { (void)co_await sleep_for(30s); });
    });
    routes_.get("/keepalive", [](http::request& r) -> task<http::response> {
      http::websocket_accept_options o;
      o.options.ping_interval = 50ms;
      o.options.ping_timeout = 100ms;
      co_return http::accept_websocket(r, echo_session, o);
    });
    routes_.get("/origin", [](http::request& r) -> task<http::response> {
      http::websocket_accept_options o;
      o.check_origin = [](std::string_view origin) { return origin == "https://good.example"; };
      co_return http::accept_websocket(r, echo_session, o);
    });
    server_ = std::make_unique<http::server>(routes_);
    listener_ = listen_loopback();
    port_ = address_of(listener_).port();
    if (tls) tls_.emplace(make_server_context());
    thread_ = std::thread([this] {
      io_context ctx(io_context_options{.quiet = true});
      if (tls_) {
        sync_wait(ctx, http::serve_tls(*server_, *tls_, listener_, stop_.get_token()));
      } else {
        sync_wait(ctx, server_->serve(listener_, stop_.get_token()));
      }
    });
  }
  ~ws_server() {
    stop_.request_stop();
    thread_.join();
  }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::size_t connections() const { return server_->connections(); }
  [[nodiscard]] std::string url(std::string_view path) const {
    return std::string(tls_ ? "wss" : "ws") + "://localhost:" + std::to_string(port_) + std::string(path);
  }

 private:
  http::router routes_;
  std::unique_ptr<http::server> server_;
  stream_listener listener_;
  std::optional<tls::context> tls_;
  std::uint16_t port_ = 0;
  std::stop_source stop_;
  std::thread thread_;
};

// A blocking TCP client for the protocol-violation tests.
class raw_client {
 public:
  explicit raw_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~raw_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Ends the connection with a reset (SO_LINGER 0).
  void reset() {
    linger l{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] bool connected() const { return connected_; }
  void send(std::string_view data) const {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  // Everything up to the end of the response head.
  std::string read_head() {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) head += c;
    return head;
  }
  // The next `n` bytes (fewer if the connection ends).
  std::string read(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }
  // Upgrades on `path`; returns the response head.
  std::string upgrade(std::string_view path, std::string_view extra = "") {
    send("GET " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n" +
         "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + std::string(extra) + "\r\n");
    return read_head();
  }
  // The close code of the close frame the server sends next (0: none came).
  int close_code() {
    const std::string h = read(2);
    if (h.size() < 2 || static_cast<unsigned char>(h[0]) != 0x88) return 0;
    const std::string payload = read(static_cast<unsigned char>(h[1]) & 0x7f);
    if (payload.size() < 2) return 0;
    return static_cast<unsigned char>(payload[0]) << 8 | static_cast<unsigned char>(payload[1]);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// A frame as a client sends it: `first` is the first byte (FIN, opcode), masked with
// a fixed key unless `masked` is false; `announced` overrides the payload length.
std::string frame(unsigned char first, std::string_view payload, bool masked = true,
                  std::optional<std::uint64_t> announced = std::nullopt) {
  unsigned char head[http::detail::max_frame_header];
  const unsigned char key[4] = {0x11, 0x22, 0x33, 0x44};
  std::size_t n =
      http::detail::encode_frame_header(head, static_cast<http::detail::ws_opcode>(first & 0x0f), (first & 0x80) != 0,
                                        announced.value_or(payload.size()), masked ? key : nullptr);
  head[0] = first;  // the reserved bits too
  std::string out(reinterpret_cast<char*>(head), n);
  std::string body(payload);
  if (masked) http::detail::apply_mask(reinterpret_cast<unsigned char*>(body.data()), body.size(), key);
  return out + body;
}

int close_code_after(std::uint16_t port, const std::string& frames) {
  raw_client c(port);
  EXPECT_TRUE(c.connected());
  const std::string head = c.upgrade("/ws", "Sec-WebSocket-Version: 13\r\n");
  EXPECT_NE(head.find("101 Switching Protocols"), std::string::npos) << head;
  c.send(frames);
  return c.close_code();
}

http::client_options client_options_for_tests() {
  http::client_options o;
  o.tls = client_settings();
  return o;
}

}  // namespace

// --- ringio server, Python client ------------------------------------------------------

class WebSocketServerPython : public ::testing::TestWithParam<bool> {};

TEST_P(WebSocketServerPython, EchoesPingsAndClosesWithItsCode) {
  if (!have_python_websockets()) GTEST_SKIP() << "python3 websockets is not installed (Debian: python3-websockets)";
  ASSERT_TRUE(test_certs::get().ok);
  ws_server server(GetParam());
  child_process py({python(), peer_script, "client", server.url("/ws"), test_certs::get().ca});
  ASSERT_TRUE(py.started());
  auto line = py.read_line(20s);
  auto status = py.wait(20s);
  ASSERT_TRUE(line) << py.stderr_text();
  EXPECT_EQ(*line, "ok subprotocol=chat code=4000 reason=bye from ringio") << py.stderr_text();
  EXPECT_EQ(status, 0) << py.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(WsAndWss, WebSocketServerPython, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "wss" : "ws"; });

// --- ringio server, raw client breaking the protocol ------------------------------------

TEST(WebSocketServer, AnswersProtocolViolationsWithTheRightCloseCode) {
  ws_server server(false);
  const std::uint16_t port = server.port();
  EXPECT_EQ(close_code_after(port, frame(0x81, "hi", false)), 1002) << "unmasked client frame";
  EXPECT_EQ(close_code_after(port, frame(0x83, "hi")), 1002) << "reserved opcode";
  EXPECT_EQ(close_code_after(port, frame(0xc1, "hi")), 1002) << "RSV1 without an extension";
  EXPECT_EQ(close_code_after(port, frame(0x82, "", true, 600 * 1024)), 1009) << "frame over max_frame_bytes";
  EXPECT_EQ(close_code_after(port, frame(0x81, "caf\xc3")), 1007) << "text cut in a character";
  EXPECT_EQ(close_code_after(port, frame(0x81, "\xff")), 1007) << "invalid UTF-8";
  EXPECT_EQ(close_code_after(port, frame(0x01, "caf\xc3") + frame(0x80, "\xff")), 1007) << "fragmented invalid UTF-8";
  EXPECT_EQ(close_code_after(port, frame(0x89, std::string(126, 'p'))), 1002) << "ping over 125 bytes";
  EXPECT_EQ(close_code_after(port, frame(0x09, "p")), 1002) << "fragmented ping";
  EXPECT_EQ(close_code_after(port, frame(0x80, "orphan")), 1002) << "continuation without a message";
  EXPECT_EQ(close_code_after(port, frame(0x01, "a") + frame(0x81, "b")), 1002) << "new message inside one";
  EXPECT_EQ(close_code_after(port, frame(0x88, "\x03\xed")), 1002) << "close code 1005 sent";
  EXPECT_EQ(close_code_after(port, frame(0x88, "x")), 1002) << "close payload of one byte";
  const std::string half(400 * 1024, 'x');
  EXPECT_EQ(close_code_after(port, frame(0x02, half) + frame(0x00, half) + frame(0x80, half)), 1009)
      << "message over max_message_bytes";
}

TEST(WebSocketServer, EchoesOverARawClientAndRepliesToClose) {
  ws_server server(false);
  raw_client c(server.port());
  const std::string head = c.upgrade("/ws", "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: x, chat\r\n");
  EXPECT_NE(head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Protocol: chat\r\n"), std::string::npos) << head;
  // A ping between two fragments: answered at once, the message joined after it.
  c.send(frame(0x01, "hel") + frame(0x89, "p!") + frame(0x80, "lo"));
  EXPECT_EQ(c.read(4), std::string("\x8a\x02p!", 4));
  EXPECT_EQ(c.read(7), std::string("\x81\x05hello", 7));
  c.send(frame(0x88, std::string("\x0f\xa0", 2) + "done"));  // 4000
  EXPECT_EQ(c.close_code(), 4000);
  EXPECT_EQ(c.read(1), "");  // then the server ends the connection
}

TEST(WebSocketServer, RefusesBadUpgrades) {
  ws_server server(false);
  {
    raw_client c(server.port());
    const std::string head = c.upgrade("/ws", "Sec-WebSocket-Version: 8\r\n");
    EXPECT_EQ(head.rfind("HTTP/1.1 426 ", 0), 0u) << head;
    EXPECT_NE(head.find("Sec-WebSocket-Version: 13\r\n"), std::string::npos) << head;
  }
  {
    raw_client c(server.port());
    c.send(
        "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short==\r\n\r\n");
    EXPECT_EQ(c.read_head().rfind("HTTP/1.1 400 ", 0), 0u);
  }
  {
    raw_client c(server.port());
    c.send("GET /ws HTTP/1.1\r\nHost: localhost\r\n\r\n");  // a plain GET
    EXPECT_EQ(c.read_head().rfind("HTTP/1.1 400 ", 0), 0u);
  }
  {
    raw_client c(server.port());
    const std::string head = c.upgrade("/origin", "Sec-WebSocket-Version: 13\r\nOrigin: https://evil.example\r\n");
    EXPECT_EQ(head.rfind("HTTP/1.1 403 ", 0), 0u) << head;
  }
  {
    raw_client c(server.port());
    const std::string head = c.upgrade("/origin", "Sec-WebSocket-Version: 13\r\nOrigin: https://good.example\r\n");
    EXPECT_EQ(head.rfind("HTTP/1.1 101 ", 0), 0u) << head;
  }
}

// Peers that vanish: one resets mid-frame, one goes silent after half a frame; neither
// leaves a connection behind (the silent one is found by the server's keep-alive ping).
TEST(WebSocketServer, ResetAndStalledPeersLeaveNothingBehind) {
  ws_server server(false);
  {
    raw_client c(server.port());
    EXPECT_NE(c.upgrade("/ws", "Sec-WebSocket-Version: 13\r\n").find(" 101 "), std::string::npos);
    c.send(frame(0x81, "hello").substr(0, 4));
    c.reset();
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.connections() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server.connections(), 0u);
}

TEST(WebSocketServer, KeepAlivePingFindsASilentClient) {
  ws_server server(false);
  raw_client c(server.port());
  EXPECT_NE(c.upgrade("/keepalive", "Sec-WebSocket-Version: 13\r\n").find(" 101 "), std::string::npos);
  EXPECT_EQ(c.read(2), std::string("\x89\x00", 2));  // the server's keep-alive ping, never answered
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.connections() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(server.connections(), 0u);
}

// A server that drains closes its websockets with 1001 (going away).
TEST(WebSocketServer, DrainClosesWithGoingAway) {
  auto server = std::make_unique<ws_server>(false);
  io_context ctx(io_context_options{.quiet = true});
  std::thread stopper;
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    auto ws = co_await client.connect_websocket(server->url("/ws"));
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    stopper = std::thread([&] { server.reset(); });
    auto m = co_await with_timeout(ws->receive(), 5s);
    EXPECT_EQ(m.error(), websocket_errc::closed);
    EXPECT_EQ(ws->close_code(), websocket::going_away);
  }());
  if (stopper.joinable()) stopper.join();
}

// --- ringio client ----------------------------------------------------------------------

class WebSocketClient : public ::testing::TestWithParam<bool> {
 protected:
  template <class T>
  T run(task<T> t) {
    return sync_wait(ctx_, std::move(t));
  }
  io_context ctx_{io_context_options{.quiet = true}};
};

// Against ringio's own server: echo, a reader and a writer at once, close handshake.
TEST_P(WebSocketClient, TalksToRingioServer) {
  ASSERT_TRUE(test_certs::get().ok);
  ws_server server(GetParam());
  run([&]() -> task<void> {
    http::client client(client_options_for_tests());
    http::websocket_connect_options o;
    o.subprotocols = {"chat"};
    o.options.max_send_frame_bytes = 699;  // the longer messages below go in several frames
    auto ws = co_await client.connect_websocket(server.url("/ws"), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    EXPECT_EQ(ws->subprotocol(), "chat");
    auto hello = co_await ws->send_text("héllo");
    EXPECT_TRUE(hello.has_value());
    auto m = co_await ws->receive();
    if (m) {
      EXPECT_TRUE(m->is_text());
      EXPECT_EQ(m->data, "héllo");
    }
    std::string accents;
    for (int i = 0; i < 750; ++i) accents += "é";  // frames of 699 bytes cut characters in two
    auto long_text = co_await ws->send_text(accents);
    EXPECT_TRUE(long_text.has_value());
    m = co_await ws->receive();
    if (m) {
      EXPECT_EQ(m->data, accents);
    } else {
      ADD_FAILURE() << m.error().message();
    }
    // 200 messages sent by one task while another receives their echoes.
    constexpr int count = 200;
    auto writer = [](websocket& w) -> task<void> {
      for (int i = 0; i < count; ++i) {
        auto sent = co_await w.send_binary(std::string(1000 + i, static_cast<char>(i)));
        if (!sent) {
          ADD_FAILURE() << sent.error().message();
          co_return;
        }
        if (i % 50 == 0) (void)co_await w.ping("keep");
      }
    };
    auto reader = [](websocket& w) -> task<void> {
      for (int i = 0; i < count; ++i) {
        auto got = co_await w.receive();
        if (!got) {
          ADD_FAILURE() << got.error().message();
          co_return;
        }
        EXPECT_EQ(got->data, std::string(1000 + i, static_cast<char>(i)));
      }
    };
    co_await when_all(writer(*ws), reader(*ws));
    auto closed = co_await ws->close(websocket::normal_closure, "done");
    EXPECT_TRUE(closed.has_value()) << closed.error().message();
    EXPECT_EQ(ws->close_code(), 1000);
    auto after = co_await ws->receive();
    EXPECT_EQ(after.error(), websocket_errc::closed);
    auto late = co_await ws->send_text("late");
    EXPECT_EQ(late.error(), websocket_errc::closed);
  }());
}

// Two tasks sending large messages at once while a third receives: every echoed message
// comes back whole, none mixed with another's frames.
TEST_P(WebSocketClient, ConcurrentSendersNeverInterleave) {
  ASSERT_TRUE(test_certs::get().ok);
  ws_server server(GetParam());
  run([&]() -> task<void> {
    http::client client(client_options_for_tests());
    http::websocket_connect_options o;
    o.options.max_send_frame_bytes = 16 * 1024;  // each message in several frames
    auto ws = co_await client.connect_websocket(server.url("/ws"), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    constexpr int each = 40;
    auto writer = [](websocket& w, char fill) -> task<void> {
      const std::string message(100 * 1024, fill);
      for (int i = 0; i < each; ++i) {
        auto sent = co_await w.send_binary(message);
        if (!sent) {
          ADD_FAILURE() << sent.error().message();
          co_return;
        }
      }
    };
    int a = 0, b = 0;
    auto reader = [&a, &b](websocket& w) -> task<void> {
      for (int i = 0; i < 2 * each; ++i) {
        auto got = co_await w.receive();
        if (!got) {
          ADD_FAILURE() << got.error().message();
          co_return;
        }
        const char first = got->data.empty() ? '?' : got->data.front();
        EXPECT_EQ(got->data, std::string(100 * 1024, first));
        (first == 'a' ? a : b) += 1;
      }
    };
    co_await when_all(writer(*ws, 'a'), writer(*ws, 'b'), reader(*ws));
    EXPECT_EQ(a, each);
    EXPECT_EQ(b, each);
    auto closed = co_await ws->close();
    EXPECT_TRUE(closed.has_value());
  }());
}

// The server closes (4000 after "close-me"): receive() reports closed with its code.
TEST_P(WebSocketClient, SeesTheServersCloseCode) {
  ASSERT_TRUE(test_certs::get().ok);
  ws_server server(GetParam());
  run([&]() -> task<void> {
    http::client client(client_options_for_tests());
    auto ws = co_await client.connect_websocket(server.url("/ws"));
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    EXPECT_EQ(ws->subprotocol(), "");
    (void)co_await ws->send_text("close-me");
    auto m = co_await ws->receive();
    EXPECT_EQ(m.error(), websocket_errc::closed);
    EXPECT_EQ(ws->close_code(), 4000);
    EXPECT_EQ(ws->close_reason(), "bye from ringio");
    EXPECT_FALSE(ws->is_open());
  }());
}

// Against Python's server: echo of text, a large binary message, and its close code.
TEST_P(WebSocketClient, TalksToPythonServer) {
  if (!have_python_websockets()) GTEST_SKIP() << "python3 websockets is not installed (Debian: python3-websockets)";
  ASSERT_TRUE(test_certs::get().ok);
  std::vector<std::string> argv{python(), peer_script, "server"};
  if (GetParam()) {
    argv.push_back(test_certs::get().server_cert);
    argv.push_back(test_certs::get().server_key);
  }
  child_process py(argv);
  ASSERT_TRUE(py.started());
  auto port = py.read_line(20s);
  ASSERT_TRUE(port) << py.stderr_text();
  const std::string url = std::string(GetParam() ? "wss" : "ws") + "://localhost:" + *port + "/";
  run([&]() -> task<void> {
    http::client client(client_options_for_tests());
    http::websocket_connect_options o;
    o.subprotocols = {"chat"};
    o.options.max_send_frame_bytes = 4096;  // the large message goes in 75 frames
    auto ws = co_await client.connect_websocket(url, o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    EXPECT_EQ(ws->subprotocol(), "chat");
    (void)co_await ws->send_text("grüße");
    auto m = co_await ws->receive();
    if (m) {
      EXPECT_EQ(m->data, "grüße");
    } else {
      ADD_FAILURE() << m.error().message();
    }
    std::string blob(300 * 1024, '\0');
    for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 31);
    (void)co_await ws->send_binary(blob);
    m = co_await ws->receive();
    if (m) {
      EXPECT_FALSE(m->is_text());
      EXPECT_EQ(m->data, blob);
    }
    auto pinged = co_await ws->ping("hi");
    EXPECT_TRUE(pinged.has_value());
    (void)co_await ws->send_text("close-me");
    m = co_await ws->receive();
    EXPECT_EQ(m.error(), websocket_errc::closed);
    EXPECT_EQ(ws->close_code(), 4001);
    EXPECT_EQ(ws->close_reason(), "bye from python");
  }());
}

INSTANTIATE_TEST_SUITE_P(WsAndWss, WebSocketClient, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "wss" : "ws"; });

// A peer that stops answering: keep-alive pings find it out.
TEST(WebSocketClientTimeouts, KeepAlivePingTimesOutOnASilentPeer) {
  ws_server server(false);
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    http::websocket_connect_options o;
    o.options.ping_interval = 50ms;
    o.options.ping_timeout = 100ms;
    auto ws = co_await client.connect_websocket(server.url("/quiet"), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    const auto start = std::chrono::steady_clock::now();
    auto m = co_await ws->receive();
    EXPECT_EQ(m.error(), websocket_errc::ping_timeout);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(ws->close_code(), websocket::abnormal_closure);
  }());
}

// Keep-alive needs no receive(): a client that only sends finds a server that answers
// no ping (the /quiet session never reads) through its next send.
TEST(WebSocketClientTimeouts, KeepAliveWithoutAReceiveFindsASilentPeer) {
  ws_server server(false);
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    http::websocket_connect_options o;
    o.options.ping_interval = 50ms;
    o.options.ping_timeout = 100ms;
    auto ws = co_await client.connect_websocket(server.url("/quiet"), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    const auto start = std::chrono::steady_clock::now();
    std::error_code err;
    while (!err && std::chrono::steady_clock::now() - start < 10s) {
      auto sent = co_await ws->send_text("tick");
      if (!sent) err = sent.error();
      (void)co_await sleep_for(10ms);
    }
    EXPECT_EQ(err, websocket_errc::ping_timeout) << err.message();
    EXPECT_EQ(ws->close_code(), websocket::abnormal_closure);
    auto m = co_await ws->receive();
    EXPECT_EQ(m.error(), websocket_errc::ping_timeout);
  }());
}

// A receive stopped part-way through a frame loses nothing: the next one gets the
// whole message. The server side is a raw socket that sends the frame in two halves.
TEST(WebSocketClientTimeouts, StoppedReceiveKeepsAPartialFrame) {
  auto listener = listen_loopback();
  const std::uint16_t port = address_of(listener).port();
  int fd = -1;
  std::thread peer([&] {
    io_context ctx(io_context_options{.quiet = true});
    sync_wait(ctx, [&]() -> task<void> {
      auto s = co_await with_timeout(listener.accept(), 10s);
      if (s) fd = s->release();
    }());
    if (fd < 0) return;
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head += c;
    const std::size_t at = head.find("Sec-WebSocket-Key: ") + 19;
    const std::string key = head.substr(at, head.find("\r\n", at) - at);
    const std::string reply =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        http::detail::websocket_accept_value(key) + "\r\n\r\n";
    (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    const std::string whole = std::string("\x82\x7e\x01\x00", 4) + std::string(256, 'z');
    (void)::send(fd, whole.data(), 100, MSG_NOSIGNAL);
    std::this_thread::sleep_for(300ms);
    (void)::send(fd, whole.data() + 100, whole.size() - 100, MSG_NOSIGNAL);
    std::this_thread::sleep_for(500ms);
    ::close(fd);
  });
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    auto ws = co_await client.connect_websocket("ws://127.0.0.1:" + std::to_string(port) + "/");
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    auto first = co_await with_timeout(ws->receive(), 100ms);
    EXPECT_EQ(first.error(), std::errc::timed_out);
    EXPECT_TRUE(ws->is_open());
    auto second = co_await with_timeout(ws->receive(), 5s);
    if (second) {
      EXPECT_EQ(second->data, std::string(256, 'z'));
    } else {
      ADD_FAILURE() << second.error().message();
    }
    auto third = co_await with_timeout(ws->receive(), 5s);
    EXPECT_EQ(third.error(), websocket_errc::connection_lost);
  }());
  peer.join();
}

TEST(WebSocketClientTimeouts, RejectsBadUrlsAndRefusedUpgrades) {
  ws_server server(false);
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    auto bad = co_await client.connect_websocket("http://localhost:1/");
    EXPECT_EQ(bad.error(), websocket_errc::bad_url);
    http::websocket_connect_options o;
    o.origin = "https://evil.example";
    auto refused = co_await client.connect_websocket(server.url("/origin"), o);
    EXPECT_EQ(refused.error(), websocket_errc::handshake_failed);
  }());
}
