// SPDX-License-Identifier: Apache-2.0
// HTTPS: http::server behind serve_tls_connection, against curl (--cacert) and a ringio
// TLS client, on every backend; and the hardening of the TLS front: a client that never
// completes the handshake, and plain HTTP sent to the TLS port.
#include "ringio/http/https.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ringio/http/router.hpp"
#include "ringio/http/static_files.hpp"
#include "ringio/ringio.hpp"
#include "ringio/tls.hpp"
#include "support/backend_test.hpp"
#include "support/child_process.hpp"
#include "support/loopback.hpp"
#include "tls_support.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Https : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(test_certs::get().ok);
    routes_.get("/", [](http::request&) -> task<http::response> {
      co_return http::response::borrowed(200, "Hello world!", "text/plain");
    });
  }
  http::router routes_;
};

// Serves `connections` accepted connections over TLS, one after the other.
task<void> serve_some(http::server& srv, tls::context& ctx, stream_listener& l, int connections) {
  for (int i = 0; i < connections; ++i) {
    auto s = co_await with_timeout(l.accept(), 10s);
    if (!s) {
      ADD_FAILURE() << "accept: " << s.error().message();
      co_return;
    }
    co_await serve_tls_connection(srv, ctx, std::move(*s));
  }
}

TEST_P(Https, CurlGetsPagesOverOneKeepAliveConnection) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/curl";
  auto listener = listen_loopback();
  auto so = server_settings();
  so.alpn = {"http/1.1"};
  auto sctx = make_server_context(so);
  http::server srv(routes_);
  const std::string port = std::to_string(address_of(listener).port());
  const std::string url = "https://localhost:" + port + "/";
  // After each body: a newline and the connections it opened (0: the first one reused).
  child_process curl({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", test_certs::get().ca, "--resolve",
                      "localhost:" + port + ":127.0.0.1", "-w", "\\n%{num_connects} %{http_version}\\n", url, url});
  ASSERT_TRUE(curl.started());
  run(serve_some(srv, sctx, listener, 1));  // both requests on one connection
  std::vector<std::string> lines;
  while (auto line = curl.read_line(5s)) lines.push_back(*line);
  EXPECT_EQ(curl.wait(10s), 0) << curl.stderr_text();
  EXPECT_EQ(lines, (std::vector<std::string>{"Hello world!", "1 1.1", "Hello world!", "0 1.1"}));
}

TEST_P(Https, ARingioClientGetsPipelinedResponses) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  http::server srv(routes_);
  auto text =
      run([](http::server& srv, tls::context& sctx, tls::context& cctx, stream_listener& l) -> task<std::string> {
        scope server;
        server.spawn(serve_some(srv, sctx, l, 1));
        auto sock = co_await stream_socket::connect(address_of(l));
        if (!sock) co_return "connect: " + sock.error().message();
        auto c = tls::stream::client(cctx, std::move(*sock), "localhost");
        auto hs = co_await c->handshake(5s);
        if (!hs) co_return "handshake: " + hs.error().message();
        auto sent = co_await c->send_all(std::string_view(
            "GET / HTTP/1.1\r\nHost: localhost\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
        EXPECT_TRUE(sent);
        std::string all;
        std::vector<std::byte> buf(4096);
        for (;;) {
          auto n = co_await with_timeout(c->recv(buf), 5s);
          if (!n) co_return "recv: " + n.error().message();
          if (*n == 0) break;  // close_notify after the last response
          all.append(reinterpret_cast<const char*>(buf.data()), *n);
        }
        co_await server.join();
        co_return all;
      }(srv, sctx, cctx, listener));
  std::size_t first = text.find("HTTP/1.1 200 OK");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("HTTP/1.1 200 OK", first + 1), std::string::npos) << text;
  EXPECT_EQ(text.rfind("Hello world!"), text.size() - 12) << text;
}

TEST_P(Https, SilentClientsAreClosedAndPlainHttpGets400) {
  auto listener = listen_loopback();
  auto so = server_settings();
  so.handshake_timeout = 100ms;
  auto sctx = make_server_context(so);
  http::server srv(routes_);
  run([](http::server& srv, tls::context& sctx, stream_listener& l) -> task<void> {
    scope server;
    server.spawn(serve_some(srv, sctx, l, 2));
    // A client that connects and says nothing: closed after the handshake timeout.
    auto silent = co_await stream_socket::connect(address_of(l));
    EXPECT_TRUE(silent);
    std::vector<std::byte> buf(256);
    auto t0 = std::chrono::steady_clock::now();
    auto end = co_await with_timeout(silent->recv(buf), 5s);
    EXPECT_TRUE(end && *end == 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    // Plain HTTP to the TLS port: a plain-text 400, then the end of the connection
    // (a clean one: the rest of what the client sent is read and dropped).
    auto plain = co_await stream_socket::connect(address_of(l));
    EXPECT_TRUE(plain);
    auto sent = co_await plain->send_all(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_TRUE(sent);
    std::string answer;
    bool clean_end = false;
    for (;;) {
      auto n = co_await with_timeout(plain->recv(buf), 5s);
      if (!n || *n == 0) {
        clean_end = n.has_value();
        break;
      }
      answer.append(reinterpret_cast<const char*>(buf.data()), *n);
    }
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 Bad Request\r\n")) << answer;
    EXPECT_NE(answer.find("\r\nContent-Type: text/plain\r\n"), std::string::npos) << answer;
    EXPECT_NE(answer.find("\r\nConnection: close\r\n"), std::string::npos) << answer;
    EXPECT_TRUE(answer.ends_with("\r\n\r\nThis port speaks HTTPS: plain HTTP was sent to it.\n")) << answer;
    EXPECT_TRUE(clean_end);
    co_await server.join();
    EXPECT_EQ(srv.connections(), 0u);
  }(srv, sctx, listener));
}

TEST_P(Https, CurlSendingPlainHttpToTheHttpsPortGets400) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/curl";
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  http::server srv(routes_);
  const std::string url = "http://127.0.0.1:" + std::to_string(address_of(listener).port()) + "/";
  // The body, then a newline and the status.
  child_process curl({"/usr/bin/curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}\n", url});
  ASSERT_TRUE(curl.started());
  run(serve_some(srv, sctx, listener, 1));
  std::vector<std::string> lines;
  while (auto line = curl.read_line(5s)) lines.push_back(*line);
  EXPECT_EQ(curl.wait(10s), 0) << curl.stderr_text();
  EXPECT_EQ(lines, (std::vector<std::string>{"This port speaks HTTPS: plain HTTP was sent to it.", "", "400"}));
  EXPECT_EQ(srv.connections(), 0u);
}

// Reads one response with a Content-Length body from `c` (after `already`).
task<std::string> read_response(tls::stream& c) {
  std::string all;
  std::vector<std::byte> buf(16384);
  for (;;) {
    auto head_end = all.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      auto at = all.find("Content-Length: ");
      if (at != std::string::npos && at < head_end) {
        std::size_t length = std::stoul(all.substr(at + 16));
        if (all.size() >= head_end + 4 + length) co_return all.substr(head_end + 4, length);
      }
    }
    auto n = co_await with_timeout(c.recv(buf), 5s);
    if (!n || *n == 0) co_return "incomplete: " + all.substr(0, 200);
    all.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
}

TEST_P(Https, LargeBodiesAndStaticFilesArriveWhole) {
  auto listener = listen_loopback();
  auto sctx = make_server_context();
  auto cctx = make_client_context();
  // A 1 MiB body from memory, and a 300 kB file (sendfile into the relay, then encrypted).
  std::string big(1 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  routes_.get("/big", [&big](http::request&) -> task<http::response> { co_return http::response::borrowed(200, big); });
  const std::string dir = test_certs::get().dir + "/site-" + std::to_string(static_cast<int>(GetParam()));
  std::filesystem::create_directories(dir);
  std::string file(300'000, 'f');
  for (std::size_t i = 0; i < file.size(); i += 101) file[i] = static_cast<char>('0' + i % 10);
  std::ofstream(dir + "/data.bin", std::ios::binary) << file;
  routes_.prefix(http::method::get, "/files/", http::static_files(dir));
  http::server srv(routes_);
  auto [got_big, got_file] = run([](http::server& srv, tls::context& sctx, tls::context& cctx,
                                    stream_listener& l) -> task<std::pair<std::string, std::string>> {
    scope server;
    server.spawn(serve_some(srv, sctx, l, 1));
    auto sock = co_await stream_socket::connect(address_of(l));
    auto c = tls::stream::client(cctx, std::move(*sock), "localhost");
    auto hs = co_await c->handshake(5s);
    EXPECT_TRUE(hs);
    auto s1 = co_await c->send_all(std::string_view("GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    EXPECT_TRUE(s1);
    std::string a = co_await read_response(*c);
    auto s2 = co_await c->send_all(
        std::string_view("GET /files/data.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    EXPECT_TRUE(s2);
    std::string b = co_await read_response(*c);
    co_await server.join();
    co_return std::pair{a, b};
  }(srv, sctx, cctx, listener));
  EXPECT_TRUE(got_big == big) << got_big.size();
  EXPECT_TRUE(got_file == file) << got_file.size();
}

}  // namespace

RINGIO_ALL_BACKENDS(Https);
