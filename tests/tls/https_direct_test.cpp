// SPDX-License-Identifier: Apache-2.0
// HTTPS served straight over the TLS stream, on every backend: pipelined requests, a
// file larger than the read-through limit, a streamed body, the idle and send timeouts,
// clients that cut the connection (without close_notify, with a reset) at awkward
// points, and a seeded random mix of all of them while requests are in flight. After
// each, the server still answers and every descriptor is closed again.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ringio/http/body_writer.hpp"
#include "ringio/http/https.hpp"
#include "ringio/http/router.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

std::string text_of(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

class HttpsDirect : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
    routes_.get("/", [](http::request&) -> task<http::response> {
      co_return http::response::borrowed(200, "Hello world!", "text/plain");
    });
    routes_.get("/echo", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, std::string(q.query()));
    });
    routes_.post("/echo", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, std::string(q.body()));
    });
    routes_.get("/huge",
                [this](http::request&) -> task<http::response> { co_return http::response::borrowed(200, huge_); });
    routes_.get("/stream", [](http::request&) -> task<http::response> {
      co_return http::response::stream(200, "text/plain", [](http::body_writer& w) -> task<void> {
        for (int i = 0; i < 50; ++i) {
          auto ok = co_await w.write_batched("part" + std::to_string(i) + ";");
          if (!ok) co_return;
        }
        auto flushed = co_await w.flush();
        if (!flushed) co_return;
        auto slept = co_await sleep_for(5ms);  // the client has everything so far meanwhile
        (void)slept;
        auto big = co_await w.write(std::string(100'000, 's'));  // sent directly, several records
        (void)big;
      });
    });
    dir_ = test_certs::get().dir + "/direct-" + std::to_string(static_cast<int>(GetParam()));
    std::filesystem::create_directories(dir_);
    file_.assign(1'500'000, 'f');
    for (std::size_t i = 0; i < file_.size(); i += 97) file_[i] = static_cast<char>('a' + i % 26);
    std::ofstream(dir_ + "/data.bin", std::ios::binary) << file_;
    // Without the open-file cache: these tests count the process's descriptors to see
    // that every connection closed its own, and a cached file would stay open.
    routes_.prefix(http::method::get, "/files/", http::static_files(dir_, {.open_file_cache_entries = 0}));
  }

  http::router routes_;
  std::string huge_ = std::string(32 << 20, 'h');
  std::string dir_;
  std::string file_;
};

// Runs `client` while serve_tls serves `l`; then drains the server and waits for every
// connection to end.
task<void> serving(http::server& srv, const tls::context& sctx, stream_listener& l, task<void> client) {
  std::stop_source stop;
  scope server;
  server.spawn(http::serve_tls(srv, sctx, l, stop.get_token()));
  co_await client;
  stop.request_stop();
  co_await server.join();
}

task<result<tls::stream>> connect_tls(stream_listener& l, const tls::context& cctx) {
  auto sock = co_await stream_socket::connect(address_of(l));
  if (!sock) co_return unexpected(sock.error());
  auto c = tls::stream::client(cctx, std::move(*sock), "localhost");
  if (!c) co_return unexpected(c.error());
  auto hs = co_await c->handshake(5s);
  if (!hs) co_return unexpected(hs.error());
  co_return std::move(*c);
}

// Everything the server sends until its close_notify ("" plus an error note otherwise).
task<std::string> read_to_end(tls::stream& c, bool* clean = nullptr) {
  std::string all;
  std::vector<std::byte> buf(16384);
  for (;;) {
    auto n = co_await with_timeout(c.recv(buf), 10s);
    if (!n || *n == 0) {
      if (clean != nullptr) *clean = n.has_value();
      co_return all;
    }
    all.append(text_of(std::span(buf).first(*n)));
  }
}

// Splits responses with Content-Length bodies; returns the bodies ("?" for a bad one).
std::vector<std::string> bodies_of(const std::string& all) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < all.size()) {
    std::size_t head_end = all.find("\r\n\r\n", at);
    std::size_t cl = all.find("Content-Length: ", at);
    if (head_end == std::string::npos || cl == std::string::npos || cl > head_end) {
      out.emplace_back("?");
      break;
    }
    std::size_t length = std::stoul(all.substr(cl + 16, 20));
    out.push_back(all.substr(head_end + 4, length));
    at = head_end + 4 + length;
  }
  return out;
}

std::string dechunk(const std::string& body) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    std::size_t eol = body.find("\r\n", at);
    if (eol == std::string::npos) return out + "<truncated>";
    std::size_t size = std::stoul(body.substr(at, eol - at), nullptr, 16);
    if (size == 0) return out;
    out.append(body, eol + 2, size);
    at = eol + 2 + size + 2;
  }
}

// Waits (up to 5 s) until the server serves no connection.
task<bool> no_connections(http::server& srv) {
  for (int i = 0; i < 500; ++i) {
    if (srv.connections() == 0) co_return true;
    auto slept = co_await sleep_for(10ms);
    (void)slept;
  }
  co_return srv.connections() == 0;
}

// A warm-up request: the loop's lazily made resources (descriptors included) exist
// before the descriptors are counted.
task<void> warm_up(stream_listener& l, const tls::context& cctx) {
  auto c = co_await connect_tls(l, cctx);
  EXPECT_TRUE(c);
  if (!c) co_return;
  auto sent = co_await c->send_all(std::string_view("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_TRUE(sent);
  std::string all = co_await read_to_end(*c);
  EXPECT_EQ(bodies_of(all), std::vector<std::string>{"Hello world!"});
}

// Connection-level checks after a client is done: the server ends the connection and
// closes its descriptor.
// The count is taken again for up to 5 s: a leaked descriptor never goes, while one
// whose close is still on its way does (a full ASan+UBSan run once saw 9 for 8 at the
// first look); a failure lists the descriptors.
task<void> expect_all_closed(http::server& srv, std::size_t fds) {
  bool none = co_await no_connections(srv);
  EXPECT_TRUE(none) << srv.connections() << " connections left";
  if (const std::size_t first = open_fd_count(); first != fds) {
    const std::string first_look = open_fd_list();
    int waited = 0;
    for (; waited < 500 && open_fd_count() != fds; ++waited) (void)co_await sleep_for(10ms);
    std::printf("descriptors: %zu for %zu at the first look, %zu after %d ms; at the first look:\n%s", first, fds,
                open_fd_count(), waited * 10, first_look.c_str());
  }
  EXPECT_EQ(open_fd_count(), fds) << open_fd_list();
}

TEST_P(HttpsDirect, PipelinedRequestsAreAnsweredInOrder) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  run(serving(srv, sctx, listener, [](http::server& srv, stream_listener& l, const tls::context& cctx) -> task<void> {
    co_await warm_up(l, cctx);
    const std::size_t fds = open_fd_count();
    {
      auto c = co_await connect_tls(l, cctx);
      EXPECT_TRUE(c);
      if (!c) co_return;
      // 40 requests in one write (several records), a POST with a body among them.
      std::string batch;
      std::vector<std::string> expected;
      for (int i = 0; i < 40; ++i) {
        if (i == 17) {
          std::string body(3000, 'p');
          batch += "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3000\r\n\r\n" + body;
          expected.push_back(body);
        } else {
          batch += "GET /echo?n" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n" +
                   std::string(i == 39 ? "Connection: close\r\n" : "") + "\r\n";
          expected.push_back("n" + std::to_string(i));
        }
      }
      auto sent = co_await c->send_all(std::string_view(batch));
      EXPECT_TRUE(sent && *sent == batch.size());
      bool clean = false;
      std::string all = co_await read_to_end(*c, &clean);
      EXPECT_TRUE(clean) << "the server ends with close_notify";
      EXPECT_EQ(bodies_of(all), expected);
    }
    co_await expect_all_closed(srv, fds);
  }(srv, listener, cctx)));
  EXPECT_EQ(srv.connections(), 0u);
}

TEST_P(HttpsDirect, LargeFileArrivesWholeInBoundedChunks) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  std::string got, got_head;
  run(serving(srv, sctx, listener,
              [](http::server& srv, stream_listener& l, const tls::context& cctx, std::string& got,
                 std::string& got_head) -> task<void> {
                co_await warm_up(l, cctx);
                const std::size_t fds = open_fd_count();
                {
                  auto c = co_await connect_tls(l, cctx);
                  EXPECT_TRUE(c);
                  if (!c) co_return;
                  auto sent = co_await c->send_all(
                      std::string_view("HEAD /files/data.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                                       "GET /files/data.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
                  EXPECT_TRUE(sent);
                  std::string all = co_await read_to_end(*c);
                  std::size_t second = all.find("HTTP/1.1 200", 1);
                  got_head = all.substr(0, second);
                  if (second != std::string::npos) {
                    auto b = bodies_of(all.substr(second));
                    if (!b.empty()) got = b[0];
                  }
                }
                co_await expect_all_closed(srv, fds);
              }(srv, listener, cctx, got, got_head)));
  EXPECT_NE(got_head.find("Content-Length: 1500000"), std::string::npos) << got_head;
  EXPECT_TRUE(got == file_) << got.size();
}

TEST_P(HttpsDirect, StreamedBodyArrivesInOrder) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  std::string got;
  run(serving(srv, sctx, listener,
              [](http::server& srv, stream_listener& l, const tls::context& cctx, std::string& got) -> task<void> {
                co_await warm_up(l, cctx);
                const std::size_t fds = open_fd_count();
                {
                  auto c = co_await connect_tls(l, cctx);
                  EXPECT_TRUE(c);
                  if (!c) co_return;
                  auto sent = co_await c->send_all(
                      std::string_view("GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
                  EXPECT_TRUE(sent);
                  std::string all = co_await read_to_end(*c);
                  std::size_t head_end = all.find("\r\n\r\n");
                  EXPECT_NE(all.find("Transfer-Encoding: chunked"), std::string::npos);
                  if (head_end != std::string::npos) got = dechunk(all.substr(head_end + 4));
                }
                co_await expect_all_closed(srv, fds);
              }(srv, listener, cctx, got)));
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "part" + std::to_string(i) + ";";
  expected += std::string(100'000, 's');
  EXPECT_TRUE(got == expected) << got.size() << " " << got.substr(0, 100);
}

TEST_P(HttpsDirect, IdleConnectionEndsWithCloseNotifyAfterTheIdleTimeout) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_, http::server_options{.idle_timeout = 200ms});
  run(serving(srv, sctx, listener, [](http::server& srv, stream_listener& l, const tls::context& cctx) -> task<void> {
    co_await warm_up(l, cctx);
    const std::size_t fds = open_fd_count();
    {
      auto c = co_await connect_tls(l, cctx);
      EXPECT_TRUE(c);
      if (!c) co_return;
      auto sent = co_await c->send_all(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
      EXPECT_TRUE(sent);
      auto begun = std::chrono::steady_clock::now();
      bool clean = false;
      std::string all = co_await read_to_end(*c, &clean);
      auto waited = std::chrono::steady_clock::now() - begun;
      EXPECT_EQ(bodies_of(all), std::vector<std::string>{"Hello world!"});
      EXPECT_TRUE(clean);
      EXPECT_GT(waited, 150ms);
      EXPECT_LT(waited, 3s);
    }
    co_await expect_all_closed(srv, fds);
  }(srv, listener, cctx)));
}

TEST_P(HttpsDirect, ClientThatNeverReadsIsCutAfterTheSendTimeout) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_, http::server_options{.send_timeout = 300ms});
  run(serving(srv, sctx, listener, [](http::server& srv, stream_listener& l, const tls::context& cctx) -> task<void> {
    co_await warm_up(l, cctx);
    const std::size_t fds = open_fd_count();
    {
      auto c = co_await connect_tls(l, cctx);
      EXPECT_TRUE(c);
      if (!c) co_return;
      auto sent = co_await c->send_all(std::string_view("GET /huge HTTP/1.1\r\nHost: x\r\n\r\n"));
      EXPECT_TRUE(sent);
      std::vector<std::byte> buf(100);
      auto first = co_await with_timeout(c->recv(buf), 5s);  // the response has begun
      EXPECT_TRUE(first && *first > 0);
      EXPECT_EQ(srv.connections(), 1u);
      auto begun = std::chrono::steady_clock::now();
      bool gone = co_await no_connections(srv);  // the rest of 32 MiB never read: the server gives up
      EXPECT_TRUE(gone);
      EXPECT_GT(std::chrono::steady_clock::now() - begun, 250ms);
      EXPECT_LT(std::chrono::steady_clock::now() - begun, 4s);
    }
    co_await expect_all_closed(srv, fds);
  }(srv, listener, cctx)));
}

TEST_P(HttpsDirect, TruncatedRequestsEndTheConnection) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  run(serving(srv, sctx, listener, [](http::server& srv, stream_listener& l, const tls::context& cctx) -> task<void> {
    co_await warm_up(l, cctx);
    const std::size_t fds = open_fd_count();
    const std::string_view cuts[] = {
        "GET / HTTP/1.1\r\nHo",                                               // mid-head
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc",  // mid-body
        "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTT",                         // mid-pipeline
    };
    for (std::string_view cut : cuts) {
      {
        auto c = co_await connect_tls(l, cctx);
        EXPECT_TRUE(c);
        if (!c) co_return;
        auto sent = co_await c->send_all(cut);
        EXPECT_TRUE(sent);
        auto slept = co_await sleep_for(20ms);
        (void)slept;
      }  // closed without close_notify
      co_await expect_all_closed(srv, fds);
    }
  }(srv, listener, cctx)));
}

TEST_P(HttpsDirect, ClientResetMidResponseEndsTheConnection) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  run(serving(srv, sctx, listener, [](http::server& srv, stream_listener& l, const tls::context& cctx) -> task<void> {
    co_await warm_up(l, cctx);
    const std::size_t fds = open_fd_count();
    for (const char* path : {"/huge", "/files/data.bin", "/stream"}) {
      {
        auto c = co_await connect_tls(l, cctx);
        EXPECT_TRUE(c);
        if (!c) co_return;
        auto sent = co_await c->send_all(std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
        EXPECT_TRUE(sent);
        std::vector<std::byte> buf(4096);
        auto n = co_await with_timeout(c->recv(buf), 5s);
        EXPECT_TRUE(n && *n > 0);
        ::linger reset{1, 0};
        ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      }  // closes with RST
      co_await expect_all_closed(srv, fds);
    }
  }(srv, listener, cctx)));
}

// One client of the random test: `kind` picks what it does, `cut` where it stops.
task<void> random_client(stream_listener& l, const tls::context& cctx, int kind, int cut, int& answered) {
  auto sock = co_await stream_socket::connect(address_of(l));
  if (!sock) co_return;
  auto made = tls::stream::client(cctx, std::move(*sock), "localhost");
  if (!made) co_return;
  tls::stream& c = *made;
  if (kind == 0) co_return;  // closes before the handshake
  auto hs = co_await c.handshake(5s);
  if (!hs) co_return;
  std::vector<std::byte> buf(8192);
  switch (kind) {
    case 1: {  // a complete exchange, then close_notify
      auto sent = co_await c.send_all(std::string_view("GET /echo?ok HTTP/1.1\r\nHost: x\r\n\r\n"));
      if (!sent) co_return;
      std::string all;
      while (all.find("\r\n\r\nok") == std::string::npos) {
        auto n = co_await with_timeout(c.recv(buf), 5s);
        if (!n || *n == 0) break;
        all.append(text_of(std::span(buf).first(*n)));
      }
      if (all.find("\r\n\r\nok") != std::string::npos) ++answered;
      (void)co_await c.shutdown(1s);
      co_return;
    }
    case 2: {  // a request cut after `cut` bytes, no close_notify
      std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'z');
      auto sent = co_await c.send_all(std::string_view(req).substr(0, static_cast<std::size_t>(cut) % req.size()));
      (void)sent;
      co_return;
    }
    case 3:    // a large response read `cut` times, then a reset
    case 4: {  // the same, then a shutdown(2) of the socket's sending side and a close
      const char* path = cut % 3 == 0 ? "/huge" : cut % 3 == 1 ? "/files/data.bin" : "/stream";
      auto sent = co_await c.send_all(std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
      if (!sent) co_return;
      for (int i = 0; i < cut % 40; ++i) {
        auto n = co_await with_timeout(c.recv(buf), 5s);
        if (!n || *n == 0) break;
      }
      if (kind == 3) {
        ::linger reset{1, 0};
        ::setsockopt(c.native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      } else {
        ::shutdown(c.native_handle(), SHUT_WR);
      }
      co_return;
    }
    default: {  // pipelined requests, the client stopped after `cut` ms whatever it does
      auto work = [](tls::stream& c, std::vector<std::byte>& buf) -> task<void> {
        std::string batch;
        for (int i = 0; i < 20; ++i) batch += "GET /echo?p HTTP/1.1\r\nHost: x\r\n\r\n";
        auto sent = co_await c.send_all(std::string_view(batch));
        if (!sent) co_return;
        for (;;) {
          auto n = co_await c.recv(buf);
          if (!n || *n == 0) co_return;
        }
      };
      auto stopped = co_await with_timeout(work(c, buf), std::chrono::milliseconds(cut % 30));
      (void)stopped;
      co_return;
    }
  }
}

TEST_P(HttpsDirect, RandomCutsResetsAndStopsLeaveTheServerHealthy) {
  const std::uint64_t seed = test_seed();
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_,
                   http::server_options{.header_timeout = 500ms, .idle_timeout = 500ms, .send_timeout = 500ms});
  run(serving(srv, sctx, listener,
              [](http::server& srv, stream_listener& l, const tls::context& cctx, std::uint64_t seed) -> task<void> {
                co_await warm_up(l, cctx);
                const std::size_t fds = open_fd_count();
                std::mt19937_64 rng(seed);
                int answered = 0, complete = 0;
                for (int round = 0; round < 4; ++round) {
                  scope clients;
                  for (int i = 0; i < 16; ++i) {
                    int kind = static_cast<int>(rng() % 6);
                    if (kind == 1) ++complete;
                    clients.spawn(random_client(l, cctx, kind, static_cast<int>(rng() % 100000), answered));
                  }
                  co_await clients.join();
                }
                EXPECT_EQ(answered, complete) << "every complete exchange is answered";
                co_await warm_up(l, cctx);  // still serving
                co_await expect_all_closed(srv, fds);
              }(srv, listener, cctx, seed)));
  EXPECT_EQ(srv.connections(), 0u);
}

}  // namespace

RINGIO_ALL_BACKENDS(HttpsDirect);
