// SPDX-License-Identifier: Apache-2.0
// permessage-deflate (RFC 7692): the negotiation functions; the codec against a
// decompression bomb; ringio's server and client against Python's `websockets` with
// compression agreed; ringio against itself with every parameter combination, many
// messages of many sizes (in the manner of the Autobahn suite's cases 12 and 13); and a
// raw client that breaks the extension's rules.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "ringio/http/client.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/server.hpp"
#include "ringio/http/websocket_accept.hpp"
#include "ringio/ringio.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"
#include "websocket/frame_header.hpp"
#include "websocket/permessage_deflate.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;
using http::websocket;
using http::websocket_errc;
using http::detail::deflate_agreement;
using http::detail::deflate_codec;

namespace {

const std::string peer_script = std::string(RINGIO_TEST_SOURCE_DIR) + "/http/websocket_deflate_peer.py";

bool have_python_websockets() {
  static const bool found = std::system("/usr/bin/python3 -c 'import websockets' >/dev/null 2>&1") == 0;
  return found;
}

// Raw deflate of `data` as a permessage-deflate sender makes it (sync flush, tail cut).
std::string deflate_message(std::string_view data, int level = 9) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  out.resize(out.size() - z.avail_out - 4);
  deflateEnd(&z);
  return out;
}

// A header list with one Sec-WebSocket-Extensions field (views of `value`).
http::header_list offer(std::string_view value) {
  http::header_list h;
  (void)h.push({"Sec-WebSocket-Extensions", value});
  return h;
}

task<void> echo_session(websocket& ws) {
  for (;;) {
    auto m = co_await ws.receive();
    if (!m) co_return;
    result<void> sent;
    if (m->is_text()) {
      sent = co_await ws.send_text(m->data);
    } else {
      sent = co_await ws.send_binary(m->data);
    }
    if (!sent) co_return;
  }
}

// An http::server on its own thread with /ws: an echo session with `o`.
class deflate_server {
 public:
  explicit deflate_server(const http::websocket_accept_options& o) {
    routes_.get(
        "/ws", [o](http::request& r) -> task<http::response> { co_return http::accept_websocket(r, echo_session, o); });
    server_ = std::make_unique<http::server>(routes_);
    listener_ = listen_loopback();
    port_ = address_of(listener_).port();
    thread_ = std::thread([this] {
      io_context ctx(io_context_options{.quiet = true});
      sync_wait(ctx, server_->serve(listener_, stop_.get_token()));
    });
  }
  ~deflate_server() {
    stop_.request_stop();
    thread_.join();
  }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/ws"; }

 private:
  http::router routes_;
  std::unique_ptr<http::server> server_;
  stream_listener listener_;
  std::uint16_t port_ = 0;
  std::stop_source stop_;
  std::thread thread_;
};

http::websocket_accept_options deflating_server(bool no_context = false, int window = 15) {
  http::websocket_accept_options o;
  o.options.max_frame_bytes = 4 << 20;
  o.options.max_message_bytes = 4 << 20;
  o.options.deflate.enabled = true;
  o.options.deflate.no_context_takeover = no_context;
  o.options.deflate.peer_no_context_takeover = no_context;
  o.options.deflate.max_window_bits = window;
  return o;
}

// A blocking client socket that upgrades with `extensions` offered.
class raw_client {
 public:
  explicit raw_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~raw_client() { ::close(fd_); }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;
  [[nodiscard]] bool connected() const { return connected_; }
  void send(std::string_view data) const {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
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
  std::string upgrade(std::string_view extensions) {
    std::string req =
        "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    if (!extensions.empty()) req += "Sec-WebSocket-Extensions: " + std::string(extensions) + "\r\n";
    send(req + "\r\n");
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) head += c;
    return head;
  }
  // The next frame from the server: its first byte and payload (first byte 0: none).
  std::pair<unsigned char, std::string> frame() {
    const std::string h = read(2);
    if (h.size() < 2) return {0, {}};
    std::uint64_t len = static_cast<unsigned char>(h[1]) & 0x7f;
    if (len == 126) {
      const std::string e = read(2);
      len = static_cast<std::uint64_t>(static_cast<unsigned char>(e[0]) << 8 | static_cast<unsigned char>(e[1]));
    } else if (len == 127) {
      const std::string e = read(8);
      len = 0;
      for (char b : e) len = len << 8 | static_cast<unsigned char>(b);
    }
    return {static_cast<unsigned char>(h[0]), read(static_cast<std::size_t>(len))};
  }
  // The close code of the next close frame (data frames before it skipped); 0: none.
  int close_code() {
    for (;;) {
      auto [first, payload] = frame();
      if (first == 0) return 0;
      if ((first & 0x0f) != 8) continue;
      if (payload.size() < 2) return 0;
      return static_cast<unsigned char>(payload[0]) << 8 | static_cast<unsigned char>(payload[1]);
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// A masked client frame; `first` is the whole first byte (FIN, RSV bits, opcode).
std::string frame(unsigned char first, std::string_view payload) {
  unsigned char head[http::detail::max_frame_header];
  const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
  const std::size_t n = http::detail::encode_frame_header(head, static_cast<http::detail::ws_opcode>(first & 0x0f),
                                                          true, payload.size(), key);
  head[0] = first;
  std::string body(payload);
  http::detail::apply_mask(reinterpret_cast<unsigned char*>(body.data()), body.size(), key);
  return std::string(reinterpret_cast<char*>(head), n) + body;
}

}  // namespace

// --- negotiation ------------------------------------------------------------------------

TEST(WebSocketDeflateNegotiation, ClientOffersItsParameters) {
  http::websocket_deflate_options o;
  EXPECT_EQ(http::detail::deflate_offer(o), "permessage-deflate; client_max_window_bits");
  o.max_window_bits = 10;
  o.peer_max_window_bits = 9;
  o.no_context_takeover = true;
  o.peer_no_context_takeover = true;
  EXPECT_EQ(http::detail::deflate_offer(o),
            "permessage-deflate; client_max_window_bits=10; server_max_window_bits=9; server_no_context_takeover; "
            "client_no_context_takeover");
}

TEST(WebSocketDeflateNegotiation, ServerAcceptsTheFirstValidOffer) {
  http::websocket_deflate_options o;
  o.enabled = true;
  std::string answer;
  deflate_agreement a;
  // Offers with bad parameters are declined one by one; the valid one is taken.
  ASSERT_TRUE(http::detail::accept_deflate_offer(
      offer("permessage-deflate; server_max_window_bits=16, permessage-deflate; foo, "
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover, x-other, "
            "permessage-deflate; client_max_window_bits; server_max_window_bits=\"10\""),
      o, answer, a));
  EXPECT_EQ(answer, "permessage-deflate; server_max_window_bits=10");
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.send_window_bits, 10);
  EXPECT_FALSE(a.send_no_context_takeover);
  EXPECT_FALSE(a.receive_no_context_takeover);

  ASSERT_TRUE(http::detail::accept_deflate_offer(
      offer("permessage-deflate; client_no_context_takeover; server_no_context_takeover; client_max_window_bits=9"), o,
      answer, a));
  EXPECT_EQ(answer,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; client_max_window_bits=9");
  EXPECT_TRUE(a.send_no_context_takeover);
  EXPECT_TRUE(a.receive_no_context_takeover);

  // 8 bits cannot be compressed with by zlib: accepted, and this side sends uncompressed.
  ASSERT_TRUE(http::detail::accept_deflate_offer(offer("permessage-deflate; server_max_window_bits=8"), o, answer, a));
  EXPECT_EQ(a.send_window_bits, 8);
  EXPECT_FALSE(deflate_codec(a, 6).can_compress());

  for (const char* bad :
       {"permessage-deflate; server_max_window_bits", "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=08", "permessage-deflate; client_max_window_bits=0",
        "permessage-deflate; client_max_window_bits=1x", "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover=yes", "permessage-deflate; mystery",
        "permessage-deflate; client_max_window_bits; client_max_window_bits", "x-webkit-deflate-frame"}) {
    EXPECT_FALSE(http::detail::accept_deflate_offer(offer(bad), o, answer, a)) << bad;
  }
  o.enabled = false;
  EXPECT_FALSE(http::detail::accept_deflate_offer(offer("permessage-deflate"), o, answer, a));
}

TEST(WebSocketDeflateNegotiation, ServerAnswersItsOwnLimits) {
  http::websocket_deflate_options o;
  o.enabled = true;
  o.max_window_bits = 11;
  o.peer_max_window_bits = 12;
  o.no_context_takeover = true;
  std::string answer;
  deflate_agreement a;
  ASSERT_TRUE(http::detail::accept_deflate_offer(offer("permessage-deflate; client_max_window_bits"), o, answer, a));
  EXPECT_EQ(answer,
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=11; client_max_window_bits=12");
  // Without client_max_window_bits in the offer the answer may not name it.
  ASSERT_TRUE(http::detail::accept_deflate_offer(offer("permessage-deflate"), o, answer, a));
  EXPECT_EQ(answer, "permessage-deflate; server_no_context_takeover; server_max_window_bits=11");
}

TEST(WebSocketDeflateNegotiation, ClientChecksTheAnswer) {
  http::websocket_deflate_options o;
  o.enabled = true;
  deflate_agreement a;
  EXPECT_TRUE(http::detail::check_deflate_answer("", o, true, a));
  EXPECT_FALSE(a.enabled);
  EXPECT_TRUE(http::detail::check_deflate_answer("permessage-deflate", o, true, a));
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.send_window_bits, 15);
  EXPECT_TRUE(http::detail::check_deflate_answer(
      "permessage-deflate; server_no_context_takeover; client_no_context_takeover; client_max_window_bits=9", o, true,
      a));
  EXPECT_TRUE(a.send_no_context_takeover);
  EXPECT_TRUE(a.receive_no_context_takeover);
  EXPECT_EQ(a.send_window_bits, 9);
  for (const char* bad :
       {"permessage-deflate, permessage-deflate", "x-other", "permessage-deflate; client_max_window_bits",
        "permessage-deflate; server_max_window_bits=16", "permessage-deflate; bogus",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover"}) {
    EXPECT_FALSE(http::detail::check_deflate_answer(bad, o, true, a)) << bad;
  }
  EXPECT_FALSE(http::detail::check_deflate_answer("permessage-deflate", o, false, a)) << "not offered";
  // What the client asked for must be granted: a smaller server window, server_no_context_takeover.
  o.peer_max_window_bits = 10;
  EXPECT_FALSE(http::detail::check_deflate_answer("permessage-deflate", o, true, a));
  EXPECT_FALSE(http::detail::check_deflate_answer("permessage-deflate; server_max_window_bits=11", o, true, a));
  EXPECT_TRUE(http::detail::check_deflate_answer("permessage-deflate; server_max_window_bits=10", o, true, a));
  o.max_window_bits = 10;
  EXPECT_FALSE(http::detail::check_deflate_answer(
      "permessage-deflate; server_max_window_bits=10; client_max_window_bits=11", o, true, a));
  o.peer_no_context_takeover = true;
  EXPECT_FALSE(http::detail::check_deflate_answer("permessage-deflate; server_max_window_bits=10", o, true, a));
}

// --- the codec ----------------------------------------------------------------------------

TEST(WebSocketDeflateCodec, RoundTripsWithAndWithoutContext) {
  for (bool reset : {false, true}) {
    SCOPED_TRACE(reset ? "no context takeover" : "context takeover");
    deflate_agreement a{true, reset, reset, 15};
    deflate_codec sender(a, 6), receiver(a, 6);
    std::mt19937 rng(12);
    for (int i = 0; i < 50; ++i) {
      std::string m(static_cast<std::size_t>(rng() % 5000), '\0');
      for (char& c : m) c = static_cast<char>('a' + rng() % 4);
      const std::string wire(sender.compress(m));
      receiver.begin_message();
      // In two frames, cut anywhere.
      const std::size_t cut = wire.empty() ? 0 : rng() % wire.size();
      const auto* p = reinterpret_cast<const unsigned char*>(wire.data());
      ASSERT_EQ(receiver.inflate(p, cut, false, 1 << 20), deflate_codec::inflate_status::ok);
      ASSERT_EQ(receiver.inflate(p + cut, wire.size() - cut, true, 1 << 20), deflate_codec::inflate_status::ok);
      EXPECT_EQ(receiver.inflated(), m);
      receiver.end_message();
    }
  }
}

TEST(WebSocketDeflateCodec, BombStopsAtTheLimit) {
  // 64 MiB of zeros in about 64 KB: inflating stops one byte past the 1 MiB limit.
  const std::string bomb = deflate_message(std::string(64u << 20, '\0'));
  ASSERT_LT(bomb.size(), 100'000u);
  deflate_codec c(deflate_agreement{true, false, false, 15}, 6);
  c.begin_message();
  const auto st = c.inflate(reinterpret_cast<const unsigned char*>(bomb.data()), bomb.size(), true, 1 << 20);
  EXPECT_EQ(st, deflate_codec::inflate_status::too_big);
  EXPECT_EQ(c.inflated().size(), (1u << 20) + 1) << "inflated past the limit";
}

TEST(WebSocketDeflateCodec, GarbageIsBadData) {
  deflate_codec c(deflate_agreement{true, false, false, 15}, 6);
  c.begin_message();
  const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x12};
  EXPECT_EQ(c.inflate(junk, sizeof(junk), true, 1 << 20), deflate_codec::inflate_status::bad_data);
}

// --- ringio server, Python client ------------------------------------------------------

class WebSocketDeflatePythonClient : public ::testing::TestWithParam<const char*> {};

TEST_P(WebSocketDeflatePythonClient, EchoesCompressedMessages) {
  if (!have_python_websockets()) GTEST_SKIP() << "/usr/bin/python3 has no websockets (Debian: python3-websockets)";
  deflate_server server(deflating_server());
  child_process py({"/usr/bin/python3", peer_script, "client", server.url(), GetParam()});
  ASSERT_TRUE(py.started());
  auto line = py.read_line(60s);
  auto status = py.wait(20s);
  ASSERT_TRUE(line) << py.stderr_text();
  EXPECT_EQ(*line, "ok permessage-deflate") << py.stderr_text();
  EXPECT_EQ(status, 0) << py.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(Variants, WebSocketDeflatePythonClient,
                         ::testing::Values("default", "no_context", "small_window"));

// --- ringio client, Python server ------------------------------------------------------

struct client_variant {
  const char* python;  // the server's variant
  bool no_context;     // ours
  int window;          // ours
};

class WebSocketDeflatePythonServer : public ::testing::TestWithParam<client_variant> {};

std::vector<std::string> interop_messages() {
  std::mt19937 rng(7692);
  std::vector<std::string> out{"", "x", "hello hello hello hello hello hello hello hello"};
  out.emplace_back(1 << 20, 'a');  // about 1000:1
  out.emplace_back(300'000, '\0');
  std::string random(100'000, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  out.push_back(random);
  for (std::size_t size : {10u, 100u, 1000u, 10'000u, 100'000u}) {
    std::string s(size, '\0');
    for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    out.push_back(s);
  }
  return out;
}

TEST_P(WebSocketDeflatePythonServer, EchoesCompressedMessages) {
  if (!have_python_websockets()) GTEST_SKIP() << "/usr/bin/python3 has no websockets (Debian: python3-websockets)";
  const client_variant v = GetParam();
  child_process py({"/usr/bin/python3", peer_script, "server", v.python});
  ASSERT_TRUE(py.started());
  auto port = py.read_line(20s);
  ASSERT_TRUE(port) << py.stderr_text();
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    http::websocket_connect_options o;
    o.options.max_message_bytes = 4 << 20;
    o.options.max_frame_bytes = 4 << 20;
    o.options.deflate.enabled = true;
    o.options.deflate.no_context_takeover = v.no_context;
    o.options.deflate.max_window_bits = v.window;
    auto ws = co_await client.connect_websocket("ws://127.0.0.1:" + *port + "/", o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    EXPECT_TRUE(ws->compressed());
    const auto messages = interop_messages();
    for (int round = 0; round < 2; ++round) {
      for (std::size_t i = 0; i < messages.size(); ++i) {
        const bool text = i % 2 == 0 && messages[i].find('\0') == std::string::npos &&
                          messages[i].end() == std::find_if(messages[i].begin(), messages[i].end(),
                                                            [](char c) { return (c & 0x80) != 0; });
        auto sent = text ? co_await ws->send_text(messages[i]) : co_await ws->send_binary(messages[i]);
        EXPECT_TRUE(sent) << sent.error().message();
        auto m = co_await ws->receive();
        if (!m) {
          ADD_FAILURE() << "message " << i << ": " << m.error().message();
          co_return;
        }
        EXPECT_EQ(m->is_text(), text);
        EXPECT_TRUE(m->data == messages[i]) << "message " << i << " of " << messages[i].size() << " bytes";
      }
    }
    (void)co_await ws->send_text("close-me");
    auto end = co_await ws->receive();
    EXPECT_EQ(end.error(), websocket_errc::closed);
    EXPECT_EQ(ws->close_code(), 4001);
  }());
}

INSTANTIATE_TEST_SUITE_P(Variants, WebSocketDeflatePythonServer,
                         ::testing::Values(client_variant{"default", false, 15}, client_variant{"default", true, 15},
                                           client_variant{"default", false, 10},
                                           client_variant{"no_context", false, 15},
                                           client_variant{"small_window", false, 12}),
                         [](const auto& info) {
                           return std::string(info.param.python) + (info.param.no_context ? "_ours_no_context" : "") +
                                  "_window" + std::to_string(info.param.window);
                         });

// --- ringio against ringio: every parameter combination ----------------------------------

struct combination {
  bool server_no_context;
  bool client_no_context;
  int server_window;
  int client_window;
  std::size_t frame;  // max_send_frame_bytes on both sides (0: one frame a message)
};

class WebSocketDeflateConformance : public ::testing::TestWithParam<combination> {};

// Like Autobahn's cases 12.x (client echoes from a server) and 13.x (each parameter
// set): many messages of each size, compressible and not, text and binary, each side
// compressing under the combination's parameters.
TEST_P(WebSocketDeflateConformance, ManyMessagesOfManySizes) {
  const combination c = GetParam();
  http::websocket_accept_options so;
  so.options.max_frame_bytes = so.options.max_message_bytes = 1 << 20;
  so.options.max_send_frame_bytes = c.frame;
  so.options.deflate.enabled = true;
  so.options.deflate.no_context_takeover = c.server_no_context;
  so.options.deflate.max_window_bits = c.server_window;
  so.options.deflate.threshold = 0;
  deflate_server server(so);
  const unsigned seed = 1307u + static_cast<unsigned>(c.server_window * 31 + c.client_window + c.frame);
  std::cout << "seed " << seed << "\n";
  io_context ctx(io_context_options{.quiet = true});
  sync_wait(ctx, [&]() -> task<void> {
    http::client client;
    http::websocket_connect_options o;
    o.options.max_frame_bytes = o.options.max_message_bytes = 1 << 20;
    o.options.max_send_frame_bytes = c.frame;
    o.options.deflate.enabled = true;
    o.options.deflate.no_context_takeover = c.client_no_context;
    o.options.deflate.max_window_bits = c.client_window;
    o.options.deflate.threshold = 0;
    auto ws = co_await client.connect_websocket(server.url(), o);
    if (!ws) {
      ADD_FAILURE() << ws.error().message();
      co_return;
    }
    EXPECT_TRUE(ws->compressed());
    std::mt19937 rng(seed);
    std::string m;
    for (std::size_t size : {0u, 1u, 16u, 64u, 256u, 1024u, 4096u, 8192u, 16384u, 32768u, 65536u, 131072u}) {
      const int count = size <= 4096 ? 100 : 20;
      for (int i = 0; i < count; ++i) {
        m.resize(size);
        const bool random = i % 3 == 2;  // incompressible
        for (char& ch : m) ch = random ? static_cast<char>(rng()) : static_cast<char>('a' + rng() % 8);
        const bool text = !random;
        auto sent = text ? co_await ws->send_text(m) : co_await ws->send_binary(m);
        if (!sent) {
          ADD_FAILURE() << sent.error().message();
          co_return;
        }
        auto got = co_await ws->receive();
        if (!got) {
          ADD_FAILURE() << "size " << size << " #" << i << ": " << got.error().message();
          co_return;
        }
        if (got->data != m || got->is_text() != text) {
          ADD_FAILURE() << "size " << size << " #" << i << " came back different";
          co_return;
        }
      }
    }
    auto closed = co_await ws->close();
    EXPECT_TRUE(closed) << closed.error().message();
  }());
}

INSTANTIATE_TEST_SUITE_P(Parameters, WebSocketDeflateConformance,
                         ::testing::Values(combination{false, false, 15, 15, 0}, combination{true, false, 15, 15, 0},
                                           combination{false, true, 15, 15, 0}, combination{true, true, 15, 15, 0},
                                           combination{false, false, 9, 9, 0}, combination{true, true, 9, 9, 0},
                                           combination{false, false, 12, 10, 1000},
                                           combination{true, false, 9, 15, 333}),
                         [](const auto& info) {
                           const combination& c = info.param;
                           return std::string(c.server_no_context ? "s_noctx_" : "s_ctx_") +
                                  (c.client_no_context ? "c_noctx_" : "c_ctx_") + "sw" +
                                  std::to_string(c.server_window) + "_cw" + std::to_string(c.client_window) + "_frame" +
                                  std::to_string(c.frame);
                         });

// --- a raw client breaking the extension's rules -----------------------------------------

TEST(WebSocketDeflateServer, SendsCompressedFramesWithRsv1) {
  http::websocket_accept_options so = deflating_server();
  deflate_server server(so);
  raw_client c(server.port());
  ASSERT_TRUE(c.connected());
  const std::string head = c.upgrade("permessage-deflate");
  ASSERT_NE(head.find("101"), std::string::npos) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Extensions: permessage-deflate"), std::string::npos) << head;
  const std::string text(10'000, 'q');
  c.send(frame(0xc1, deflate_message(text)));  // FIN, RSV1, text
  auto [first, payload] = c.frame();
  EXPECT_EQ(first, 0xc1) << "a compressed echo: FIN, RSV1, text";
  EXPECT_LT(payload.size(), 200u);
  // Short messages go uncompressed (under the threshold).
  c.send(frame(0x81, "hi"));
  auto [first2, payload2] = c.frame();
  EXPECT_EQ(first2, 0x81);
  EXPECT_EQ(payload2, "hi");
}

TEST(WebSocketDeflateServer, NoExtensionWithoutAnOffer) {
  deflate_server server(deflating_server());
  raw_client c(server.port());
  const std::string head = c.upgrade("");
  EXPECT_EQ(head.find("Sec-WebSocket-Extensions"), std::string::npos) << head;
  c.send(frame(0xc1, deflate_message("hello")));  // RSV1 without the extension
  EXPECT_EQ(c.close_code(), 1002);
}

TEST(WebSocketDeflateServer, RefusesRsv1OnContinuationAndControlFrames) {
  deflate_server server(deflating_server());
  {
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    const std::string z = deflate_message("hello hello hello");
    c.send(frame(0x41, z.substr(0, 4)) + frame(0xc0, z.substr(4)));  // RSV1 on the continuation
    EXPECT_EQ(c.close_code(), 1002);
  }
  {
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    c.send(frame(0xc9, "ping"));  // RSV1 on a ping
    EXPECT_EQ(c.close_code(), 1002);
  }
  {
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    c.send(frame(0xa1, "x"));  // RSV2 stays reserved
    EXPECT_EQ(c.close_code(), 1002);
  }
  {
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    c.send(frame(0xc2, "\xff\xff\xff\xff\x01"));  // not deflate data
    EXPECT_EQ(c.close_code(), 1002);
  }
}

TEST(WebSocketDeflateServer, BombIsRefusedWith1009) {
  http::websocket_accept_options so = deflating_server();
  so.options.max_message_bytes = 1 << 20;
  deflate_server server(so);
  const std::string bomb = deflate_message(std::string(256u << 20, '\0'));  // 256 MiB in ~256 KB
  ASSERT_LT(bomb.size(), so.options.max_frame_bytes);
  {
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    c.send(frame(0xc2, bomb));
    EXPECT_EQ(c.close_code(), 1009);
  }
  {
    // The same bomb in fragments: the limit counts the whole message.
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    const std::size_t third = bomb.size() / 3;
    c.send(frame(0x42, bomb.substr(0, third)) + frame(0x00, bomb.substr(third, third)) +
           frame(0x80, bomb.substr(2 * third)));
    EXPECT_EQ(c.close_code(), 1009);
  }
  {
    // A text message one byte over the limit once inflated.
    raw_client c(server.port());
    (void)c.upgrade("permessage-deflate");
    c.send(frame(0xc1, deflate_message(std::string((1u << 20) + 1, 'a'))));
    EXPECT_EQ(c.close_code(), 1009);
  }
}
