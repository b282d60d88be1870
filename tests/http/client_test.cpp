// SPDX-License-Identifier: Apache-2.0
// http::client against ringio's http::server (in process, on its own thread) and
// against scripted raw servers on the client's loop, on every backend.
#include "ringio/http/client.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ringio/http/body_writer.hpp"
#include "ringio/http/resolver.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/yield.hpp"
#include "server_fixture.hpp"
#include "support/seed.hpp"

namespace {

using namespace std::chrono_literals;
using ringio::result;
using ringio::task;
namespace http = ringio::http;

const std::string big_body(200'000, 'x');

http::response redirect(int status, std::string location) {
  http::response r(status);
  r.set_header("Location", location);
  return r;
}

const http::router& test_routes() {
  static const http::router routes = [] {
    http::router r;
    r.get("/hello", [](http::request&) -> task<http::response> { co_return http::response::text(200, "hello world"); });
    r.get("/method", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, "GET body=" + std::string(q.body()));
    });
    r.post("/echo", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, "POST " + std::string(q.body()));
    });
    r.put("/echo", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, "PUT " + std::string(q.body()));
    });
    r.get("/chunked", [](http::request&) -> task<http::response> {
      co_return http::response::stream(200, "text/plain", [](http::body_writer& w) -> task<void> {
        for (int i = 0; i < 50; ++i) {
          auto sent = co_await w.write("piece-" + std::to_string(i) + ";");
          if (!sent) co_return;
        }
      });
    });
    r.get("/big", [](http::request&) -> task<http::response> { co_return http::response::borrowed(200, big_body); });
    r.get("/close", [](http::request&) -> task<http::response> {
      auto resp = http::response::text(200, "bye");
      resp.close_connection();
      co_return resp;
    });
    r.get("/auth", [](http::request& q) -> task<http::response> {
      co_return http::response::text(200, "auth=" + std::string(q.header("authorization")));
    });
    r.get("/r1", [](http::request&) -> task<http::response> { co_return redirect(302, "r2"); });
    r.get("/r2", [](http::request&) -> task<http::response> { co_return redirect(301, "/hello"); });
    r.get("/loop", [](http::request&) -> task<http::response> { co_return redirect(302, "/loop"); });
    r.post("/see-other", [](http::request&) -> task<http::response> { co_return redirect(303, "/method"); });
    r.post("/temporary", [](http::request&) -> task<http::response> { co_return redirect(307, "/echo"); });
    r.get("/to-localhost", [](http::request& q) -> task<http::response> {
      // The same server under another origin (a host name instead of the address).
      std::string host(q.header("host"));
      const std::string port = host.substr(host.rfind(':'));
      co_return redirect(302, "http://localhost" + port + "/auth");
    });
    r.get("/to-self", [](http::request&) -> task<http::response> { co_return redirect(302, "/auth"); });
    r.get("/slow", [](http::request&) -> task<http::response> {
      (void)co_await ringio::sleep_for(1500ms);
      co_return http::response::text(200, "late");
    });
    r.get("/slow-body", [](http::request&) -> task<http::response> {
      co_return http::response::stream(200, "text/plain", [](http::body_writer& w) -> task<void> {
        auto first = co_await w.write("first;");
        if (!first) co_return;
        (void)co_await ringio::sleep_for(1500ms);
        (void)co_await w.write("second;");
      });
    });
    return r;
  }();
  return routes;
}

std::string chunked_expected() {
  std::string s;
  for (int i = 0; i < 50; ++i) s += "piece-" + std::to_string(i) + ";";
  return s;
}

class Client : public ringio_test::http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (IsSkipped()) return;
    ctx_.emplace(ringio::io_context_options{.backend = GetParam(), .quiet = true});
  }
  void TearDown() override {
    ctx_.reset();
    http_server_test::TearDown();
  }
  void start(http::server_options opts = {}) {
    start_server(test_routes(), std::move(opts));
    base_ = "http://127.0.0.1:" + std::to_string(port());
  }
  template <class T>
  T run(task<T> t) {
    return ringio::sync_wait(*ctx_, std::move(t));
  }
  std::string url(std::string_view path) const { return base_ + std::string(path); }

  std::optional<ringio::io_context> ctx_;
  std::string base_;
};

task<result<http::client_response>> get(http::client& c, std::string u) {
  auto r = co_await c.get(u);
  co_return r;
}

TEST_P(Client, GetReturnsStatusFieldsAndBody) {
  start();
  http::client c;
  auto r = run(get(c, url("/hello")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->reason, "OK");
  EXPECT_EQ(r->body, "hello world");
  EXPECT_EQ(r->header("content-type"), "text/plain");
  EXPECT_EQ(r->header("CONTENT-LENGTH"), "11");
  auto missing = run(get(c, url("/nothing-here")));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_P(Client, PostWithContentLengthBody) {
  start();
  http::client c;
  auto r = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    auto out = co_await c.post(u, "payload=1", "application/x-www-form-urlencoded");
    co_return out;
  }(c, url("/echo")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->body, "POST payload=1");
}

TEST_P(Client, PutWithStreamedChunkedBody) {
  start();
  http::client c;
  auto r = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    int calls = 0;
    http::request_spec spec;
    spec.method = http::method::put;
    spec.url = u;
    spec.content_type = "text/plain";
    spec.source = [&calls](std::span<char> out) -> task<result<std::size_t>> {
      static constexpr std::string_view pieces[] = {"alpha,", "beta,", "gamma"};
      if (calls == 3) co_return std::size_t{0};
      const std::string_view p = pieces[calls++];
      p.copy(out.data(), p.size());
      co_return p.size();
    };
    auto out = co_await c.request(spec);
    co_return out;
  }(c, url("/echo")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->body, "PUT alpha,beta,gamma");
}

TEST_P(Client, ChunkedResponseIsDecoded) {
  start();
  http::client c;
  auto r = run(get(c, url("/chunked")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->header("transfer-encoding"), "chunked");
  EXPECT_EQ(r->body, chunked_expected());
  // The connection went back to the pool after the last chunk.
  EXPECT_EQ(c.idle_connections(), 1u);
}

TEST_P(Client, KeepAliveReusesOneConnection) {
  start();
  http::client c;
  for (int i = 0; i < 5; ++i) {
    auto r = run(get(c, url(i % 2 == 0 ? "/hello" : "/chunked")));
    ASSERT_TRUE(r) << r.error().message();
  }
  auto big = run(get(c, url("/big")));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->body, big_body);
  EXPECT_EQ(c.stats().connections_opened, 1u);
  EXPECT_EQ(c.stats().connections_reused, 5u);
  EXPECT_EQ(c.idle_connections(), 1u);
  EXPECT_EQ(server().connections(), 1u);  // as the server counts them
}

TEST_P(Client, ConnectionCloseIsNotPooled) {
  start();
  http::client c;
  auto r = run(get(c, url("/close")));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "bye");
  EXPECT_EQ(c.idle_connections(), 0u);
  auto again = run(get(c, url("/hello")));
  ASSERT_TRUE(again);
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(Client, ServerClosingAnIdlePooledConnectionIsNoticed) {
  http::server_options opts;
  opts.idle_timeout = 100ms;
  start(std::move(opts));
  http::client c;
  ASSERT_TRUE(run(get(c, url("/hello"))));
  EXPECT_EQ(c.idle_connections(), 1u);
  std::this_thread::sleep_for(400ms);  // the server closes it meanwhile
  auto r = run(get(c, url("/hello")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->body, "hello world");
  EXPECT_EQ(c.stats().connections_opened, 2u);
  EXPECT_EQ(c.stats().stale_retries, 0u);  // noticed before use
}

TEST_P(Client, IdleTimeoutOfThePool) {
  start();
  http::client_options o;
  o.idle_timeout = 50ms;
  http::client c(o);
  ASSERT_TRUE(run(get(c, url("/hello"))));
  std::this_thread::sleep_for(120ms);
  ASSERT_TRUE(run(get(c, url("/hello"))));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(Client, RedirectsAreNotFollowedByDefault) {
  start();
  http::client c;
  auto r = run(get(c, url("/r1")));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->header("location"), "r2");
}

TEST_P(Client, RedirectsFollowedWhenAsked) {
  start();
  http::client c({.follow_redirects = true});
  auto r = run(get(c, url("/r1")));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello world");
  EXPECT_EQ(c.stats().connections_opened, 1u);  // the redirects' connection was reused
}

TEST_P(Client, RedirectLoopIsTooManyRedirects) {
  start();
  http::client c({.follow_redirects = true, .max_redirects = 3});
  auto r = run(get(c, url("/loop")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::too_many_redirects);
}

TEST_P(Client, SeeOtherTurnsPostIntoGetAndTemporaryKeepsIt) {
  start();
  http::client c({.follow_redirects = true});
  auto r = run([](http::client& c, std::string a,
                  std::string b) -> task<std::pair<result<http::client_response>, result<http::client_response>>> {
    auto first = co_await c.post(a, "data", "text/plain");
    auto second = co_await c.post(b, "kept", "text/plain");
    co_return std::pair{std::move(first), std::move(second)};
  }(c, url("/see-other"), url("/temporary")));
  ASSERT_TRUE(r.first) << r.first.error().message();
  EXPECT_EQ(r.first->body, "GET body=");
  ASSERT_TRUE(r.second) << r.second.error().message();
  EXPECT_EQ(r.second->body, "POST kept");
}

task<result<http::client_response>> get_with_auth(http::client& c, std::string u) {
  const std::array<http::header, 1> fields{http::header{"Authorization", "Bearer secret"}};
  http::request_spec spec;
  spec.url = u;
  spec.headers = fields;
  auto r = co_await c.request(spec);
  co_return r;
}

TEST_P(Client, CrossOriginRedirectDropsAuthorization) {
  start();
  http::client c({.follow_redirects = true});
  auto same = run(get_with_auth(c, url("/to-self")));
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_EQ(same->body, "auth=Bearer secret");
  auto other = run(get_with_auth(c, url("/to-localhost")));
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(other->body, "auth=");
}

TEST_P(Client, ResolvesLocalhostThroughTheResolver) {
  start();
  http::client c;
  auto r = run(get(c, "http://localhost:" + std::to_string(port()) + "/hello"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->body, "hello world");
  auto unknown = run(get(c, "http://no-such-host.invalid/"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error(), http::client_errc::resolve_failed);
}

TEST_P(Client, HeadTimeout) {
  start();
  http::client c({.head_timeout = 150ms});
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(get(c, url("/slow")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::head_timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1200ms);
}

TEST_P(Client, BodyTimeout) {
  start();
  http::client c({.body_timeout = 150ms});
  auto r = run(get(c, url("/slow-body")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::body_timeout);
  EXPECT_EQ(c.idle_connections(), 0u);
}

TEST_P(Client, StreamedBodyAndCancellationMidBody) {
  start();
  http::client c;
  struct outcome {
    std::string head_status;
    std::string got;
    std::error_code last;
  };
  auto o = run([](http::client& c, std::string u) -> task<outcome> {
    outcome out;
    auto rs = co_await c.stream_request(http::request_spec{.url = u});
    if (!rs) {
      out.last = rs.error();
      co_return out;
    }
    out.head_status = std::to_string(rs->status());
    ringio::scope readers;
    readers.spawn([](http::response_stream& s, outcome& o) -> task<> {
      std::array<char, 64> buf;
      for (;;) {
        auto n = co_await s.read(ringio::mutable_buffer(buf.data(), buf.size()));
        if (!n) {
          o.last = n.error();
          co_return;
        }
        if (*n == 0) co_return;
        o.got.append(buf.data(), *n);
      }
    }(*rs, out));
    (void)co_await ringio::sleep_for(300ms);  // "first;" has arrived, "second;" has not
    readers.request_stop();
    co_await readers.join();
    co_return out;
  }(c, url("/slow-body")));
  EXPECT_EQ(o.head_status, "200");
  EXPECT_EQ(o.got, "first;");
  EXPECT_EQ(o.last, std::errc::operation_canceled);
  EXPECT_EQ(c.idle_connections(), 0u);  // a cancelled body leaves the connection closed
}

TEST_P(Client, StopBeforeStartSendsNothing) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client c;
  auto r = run([](ringio::stream_listener& l, http::client& c,
                  std::string u) -> task<std::pair<std::error_code, std::error_code>> {
    std::error_code request_error;
    ringio::scope s;
    s.request_stop();
    s.spawn([](http::client& c, std::string u, std::error_code& out) -> task<> {
      auto r = co_await c.get(u);
      out = r ? std::error_code{} : r.error();
    }(c, u, request_error));
    co_await s.join();
    auto nobody = co_await ringio::with_timeout(l.accept(), 200ms);  // no connection arrived
    co_return std::pair{request_error, nobody ? std::error_code{} : nobody.error()};
  }(l, c, u));
  EXPECT_EQ(r.first, std::errc::operation_canceled);
  EXPECT_EQ(r.second, std::errc::timed_out);
  EXPECT_EQ(c.stats().connections_opened, 0u);
}

TEST_P(Client, StopWhileWaitingForTheHead) {
  start();
  http::client c;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    auto out = co_await ringio::with_timeout(c.get(u), 150ms);
    co_return out;
  }(c, url("/slow")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1200ms);
  EXPECT_EQ(c.idle_connections(), 0u);
  auto after = run(get(c, url("/hello")));  // the client goes on with a new connection
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(Client, BodyOverTheLimit) {
  start();
  http::client c({.max_body = 100});
  auto r = run(get(c, url("/big")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::body_too_large);
  auto chunked = run(get(c, url("/chunked")));
  ASSERT_FALSE(chunked);
  EXPECT_EQ(chunked.error(), http::client_errc::body_too_large);
}

TEST_P(Client, BadUrlsAndHeaders) {
  start();
  http::client c;
  for (const char* bad :
       {"", "ftp://x/", "http://", "http:///path", "http://user@host/", "http://host:99999/", "http://host:x/",
        "http://ho st/", "http://[::1/", "http://host/a b", "http://host/%zz", "http://[zz::1]/", "//host/"}) {
    auto r = run(get(c, bad));
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error(), http::client_errc::bad_url) << bad;
  }
  auto injected = run([](http::client& c, std::string u) -> task<result<http::client_response>> {
    const std::array<http::header, 1> fields{http::header{"X-Test", "a\r\nEvil: 1"}};
    auto r = co_await c.request(http::request_spec{.url = u, .headers = fields});
    co_return r;
  }(c, url("/hello")));
  ASSERT_FALSE(injected);
  EXPECT_EQ(injected.error(), http::client_errc::bad_request_header);
  EXPECT_EQ(c.stats().connections_opened, 0u);
}

TEST_P(Client, ConnectFailed) {
  http::client c;
  auto l = ringio_test::listen_loopback();
  const auto port = ringio_test::address_of(l).port();
  l = ringio::stream_listener();  // nobody listens there now
  auto r = run(get(c, "http://127.0.0.1:" + std::to_string(port) + "/"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), http::client_errc::connect_failed);
}

// A listener whose accept queue is full drops new SYNs: connecting hangs until the
// connect timeout (skipped where the kernel answers otherwise).
TEST_P(Client, ConnectTimeout) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::vector<int> fillers;
  bool full = false;
  for (int i = 0; i < 8 && !full; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    fillers.push_back(fd);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    pollfd p{fd, POLLOUT, 0};
    full = ::poll(&p, 1, 100) == 0;  // still connecting after 100 ms: the queue is full
  }
  if (full) {
    http::client c({.connect_timeout = 200ms});
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run(get(c, "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/"));
    EXPECT_FALSE(r);
    if (!r) {
      EXPECT_EQ(r.error(), http::client_errc::connect_timeout) << r.error().message();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  }
  for (int fd : fillers) ::close(fd);
  ::close(listener);
  if (!full) GTEST_SKIP() << "this kernel completes connections to a full accept queue";
}

// A raw server on the client's loop: each accepted connection gets the next script.
struct script {
  // One per request read; "" closes instead of answering. After the last, it closes.
  std::vector<std::string> replies;
};

task<> raw_serve(ringio::stream_listener& l, std::vector<script> scripts) {
  for (auto& s : scripts) {
    auto sock = co_await l.accept();
    if (!sock) co_return;
    std::string in;
    std::array<char, 4096> buf;
    for (const std::string& reply : s.replies) {
      while (in.find("\r\n\r\n") == std::string::npos) {
        auto n = co_await sock->recv(ringio::mutable_buffer(buf.data(), buf.size()));
        if (!n || *n == 0) co_return;
        in.append(buf.data(), *n);
      }
      in.erase(0, in.find("\r\n\r\n") + 4);
      if (reply.empty()) break;
      auto sent = co_await sock->send_all(ringio::const_buffer(reply.data(), reply.size()));
      if (!sent) co_return;
    }
  }
}

TEST_P(Client, StaleConnectionIsRetriedOnceForIdempotentRequests) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client c;
  auto bodies = run([](ringio::stream_listener& l, http::client& c, std::string u) -> task<std::vector<std::string>> {
    ringio::scope server;
    // The first connection answers once, then closes when the second request comes.
    server.spawn(raw_serve(l, {script{{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", ""}},
                               script{{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"}}}));
    std::vector<std::string> out;
    for (int i = 0; i < 2; ++i) {
      auto r = co_await c.get(u);
      out.push_back(r ? r->body : r.error().message());
    }
    co_await server.join();
    co_return out;
  }(l, c, u));
  EXPECT_EQ(bodies, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(c.stats().stale_retries, 1u);
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(Client, StaleConnectionIsNotRetriedForPost) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client c;
  auto errors = run([](ringio::stream_listener& l, http::client& c, std::string u) -> task<std::vector<std::string>> {
    ringio::scope server;
    server.spawn(raw_serve(l, {script{{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", ""}}}));
    std::vector<std::string> out;
    auto first = co_await c.get(u);
    out.push_back(first ? first->body : first.error().message());
    auto second = co_await c.post(u, "x", "text/plain");
    out.push_back(second ? second->body : "error");
    co_await server.join();
    co_return out;
  }(l, c, u));
  EXPECT_EQ(errors, (std::vector<std::string>{"one", "error"}));
  EXPECT_EQ(c.stats().stale_retries, 0u);
}

TEST_P(Client, GarbageFromTheServer) {
  const std::vector<std::pair<std::string, std::error_code>> cases = {
      {"garbage\r\n\r\n", http::client_errc::bad_status_line},
      {"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", http::client_errc::bad_content_length},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", http::client_errc::bad_chunk},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", http::client_errc::truncated_body},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\nContent-Length: 0\n\n", http::client_errc::bad_header},
      {"", http::client_errc::connection_closed},
  };
  for (const auto& [reply, expected] : cases) {
    auto l = ringio_test::listen_loopback();
    const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
    http::client c;
    auto r = run([](ringio::stream_listener& l, http::client& c, std::string u,
                    std::string reply) -> task<result<http::client_response>> {
      ringio::scope server;
      server.spawn(raw_serve(l, {script{{reply}}}));
      auto out = co_await c.get(u);
      co_await server.join();
      co_return out;
    }(l, c, u, reply));
    ASSERT_FALSE(r) << reply;
    EXPECT_EQ(r.error(), expected) << reply << " gave " << r.error().message();
  }
}

TEST_P(Client, InterimResponsesAndBodiesUntilClose) {
  auto l = ringio_test::listen_loopback();
  const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client c;
  auto r = run([](ringio::stream_listener& l, http::client& c, std::string u) -> task<result<http::client_response>> {
    ringio::scope server;
    server.spawn(raw_serve(l, {script{{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "4;ext=1\r\nabcd\r\n0\r\nTrailer-Field: x\r\n\r\n"}}}));
    auto out = co_await c.get(u);
    co_await server.join();
    co_return out;
  }(l, c, u));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "abcd");

  auto l2 = ringio_test::listen_loopback();
  const std::string u2 = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l2).port()) + "/";
  auto until_close =
      run([](ringio::stream_listener& l, http::client& c, std::string u) -> task<result<http::client_response>> {
        ringio::scope server;
        server.spawn(raw_serve(l, {script{{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"}}}));
        auto out = co_await c.get(u);
        co_await server.join();
        co_return out;
      }(l2, c, u2));
  ASSERT_TRUE(until_close) << until_close.error().message();
  EXPECT_EQ(until_close->body, "all of it");
  EXPECT_EQ(c.idle_connections(), 1u);  // the first server's connection; not this one
}

TEST_P(Client, ResolveCancelledCompletesAtOnce) {
  auto r = run([]() -> task<std::pair<std::error_code, bool>> {
    std::optional<result<std::vector<ringio::socket_address>>> out;
    ringio::scope s;
    s.spawn([](std::optional<result<std::vector<ringio::socket_address>>>& out) -> task<> {
      auto r = co_await http::resolve("localhost", 80);
      out = std::move(r);
    }(out));
    s.request_stop();
    co_await s.join();
    auto again = co_await http::resolve("localhost", 80);
    co_return std::pair{out && !*out ? out->error() : std::error_code{}, static_cast<bool>(again)};
  }());
  EXPECT_EQ(r.first, std::errc::operation_canceled);
  EXPECT_TRUE(r.second);
}

// Random requests, each stopped at a random moment or not at all, with random pool
// flushes: every request either completes with exactly the right body or fails with
// operation_canceled / timed_out; afterwards the client still works and its pool is
// within bounds.
TEST_P(Client, RandomStopsKeepEveryResponseWholeOrCancelled) {
  start();
  const auto seed = ringio_test::test_seed();
  std::mt19937_64 rng(seed);
  http::client c({.max_idle_per_host = 2});
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"/hello", "hello world"}, {"/chunked", chunked_expected()}, {"/big", big_body}, {"/slow-body", "first;second;"}};
  int whole = 0;
  int stopped = 0;
  for (int i = 0; i < 40; ++i) {
    const auto& [path, expected] = targets[rng() % (i < 30 ? 3 : targets.size())];
    const bool with_stop = rng() % 2 == 0;
    const auto delay = std::chrono::microseconds(rng() % 3000);
    if (rng() % 8 == 0) c.close_idle();
    auto r = run([](http::client& c, std::string u, bool with_stop,
                    std::chrono::microseconds d) -> task<result<http::client_response>> {
      if (!with_stop) {
        auto r = co_await c.get(u);
        co_return r;
      }
      auto r = co_await ringio::with_timeout(c.get(u), d);
      co_return r;
    }(c, url(path), with_stop, delay));
    if (r) {
      EXPECT_EQ(r->status, 200) << "seed " << seed << " request " << i;
      EXPECT_EQ(r->body, expected) << "seed " << seed << " request " << i;
      ++whole;
    } else {
      EXPECT_TRUE(with_stop) << "seed " << seed << " request " << i << ": " << r.error().message();
      EXPECT_TRUE(r.error() == std::errc::timed_out || r.error() == std::errc::operation_canceled)
          << "seed " << seed << ": " << r.error().message();
      ++stopped;
    }
    EXPECT_LE(c.idle_connections(), 2u);
  }
  auto last = run(get(c, url("/hello")));
  ASSERT_TRUE(last) << "seed " << seed;
  EXPECT_EQ(last->body, "hello world");
  EXPECT_GT(whole, 0);
  std::printf("random stops: %d whole, %d stopped\n", whole, stopped);
}

// A raw server that misbehaves at random (seeded): per request it answers with
// Content-Length or chunked, answers and then closes, cuts the body short, sends
// garbage, closes without answering, or resets. The client issues requests, some with
// a random deadline. Every success must carry a body the server sent whole; every
// failure must be one that the server's action (or the deadline) explains; the pool
// stays within its bound, and a last request on a fresh server succeeds.
struct chaos_log {
  std::vector<std::string> whole;  // bodies sent completely
  int requests = 0;
};

task<> chaos_connection(ringio::stream_socket s, std::mt19937_64& rng, chaos_log& log) {
  std::string in;
  std::array<char, 4096> buf;
  for (;;) {
    while (in.find("\r\n\r\n") == std::string::npos) {
      auto n = co_await s.recv(ringio::mutable_buffer(buf.data(), buf.size()));
      if (!n || *n == 0) co_return;
      in.append(buf.data(), *n);
    }
    in.erase(0, in.find("\r\n\r\n") + 4);
    const std::string body = "body-" + std::to_string(++log.requests);
    const unsigned action = static_cast<unsigned>(rng() % 7);
    std::string reply;
    switch (action) {
      case 0:
      case 2:
        reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        break;
      case 1:
        reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n" + body.substr(0, 3) + "\r\n" +
                std::to_string(body.size() - 3) + "\r\n" + body.substr(3) + "\r\n0\r\n\r\n";
        break;
      case 3:
        reply = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" + body;
        break;
      case 4:
        reply = "XYZ\r\n\r\n";
        break;
      default:
        break;  // 5: close, 6: reset
    }
    if (action == 6) {
      linger l{1, 0};
      ::setsockopt(s.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
      co_return;
    }
    if (!reply.empty()) {
      // Logged before the send: the client may complete (same loop) before this send's
      // own completion is seen, and a body that did not leave whole cannot frame a success.
      if (action <= 2) log.whole.push_back(body);
      auto sent = co_await s.send_all(ringio::const_buffer(reply.data(), reply.size()));
      if (!sent || *sent != reply.size()) co_return;
    }
    if (action >= 2) co_return;
  }
}

task<> chaos_serve(ringio::stream_listener& l, std::mt19937_64& rng, chaos_log& log) {
  ringio::scope connections;
  for (;;) {
    auto s = co_await l.accept();
    if (!s) break;
    connections.spawn(chaos_connection(std::move(*s), rng, log));
  }
  connections.request_stop();
  co_await connections.join();
}

TEST_P(Client, RandomServerFailuresAreReportedAndNeverCorruptABody) {
  const auto seed = ringio_test::test_seed();
  auto l = ringio_test::listen_loopback();
  const std::string u = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/";
  http::client c({.max_idle_per_host = 2, .head_timeout = 2s, .body_timeout = 2s});
  struct tally {
    int ok = 0, failed = 0;
    std::vector<std::string> problems;
  };
  auto t = run([](ringio::stream_listener& l, http::client& c, std::string u, std::uint64_t seed) -> task<tally> {
    std::mt19937_64 server_rng(seed);
    std::mt19937_64 client_rng(seed ^ 0x9e3779b97f4a7c15ULL);
    chaos_log log;
    tally out;
    ringio::scope server;
    server.spawn(chaos_serve(l, server_rng, log));
    for (int i = 0; i < 60; ++i) {
      const bool deadline = client_rng() % 4 == 0;
      result<http::client_response> r = ringio::unexpected(std::make_error_code(std::errc::invalid_argument));
      if (deadline) {
        auto bounded = co_await ringio::with_timeout(c.get(u), std::chrono::microseconds(client_rng() % 2000));
        r = std::move(bounded);
      } else {
        auto plain = co_await c.get(u);
        r = std::move(plain);
      }
      if (r) {
        ++out.ok;
        if (std::find(log.whole.begin(), log.whole.end(), r->body) == log.whole.end())
          out.problems.push_back("request " + std::to_string(i) + ": body not sent whole: " + r->body);
      } else {
        ++out.failed;
        const std::error_code e = r.error();
        const bool explained = e == http::client_errc::truncated_body || e == http::client_errc::bad_status_line ||
                               e == http::client_errc::connection_closed || e == std::errc::connection_reset ||
                               e == std::errc::broken_pipe ||
                               (deadline && (e == std::errc::timed_out || e == std::errc::operation_canceled));
        if (!explained) out.problems.push_back("request " + std::to_string(i) + ": " + e.message());
      }
      if (c.idle_connections() > 2) out.problems.push_back("pool over its bound");
    }
    c.close_idle();
    server.request_stop();
    co_await server.join();
    co_return out;
  }(l, c, u, seed));
  for (const auto& p : t.problems) ADD_FAILURE() << "seed " << seed << ": " << p;
  EXPECT_GT(t.ok, 0) << "seed " << seed;
  EXPECT_GT(t.failed, 0) << "seed " << seed;
  std::printf("random server failures: %d ok, %d failed, %llu stale retries\n", t.ok, t.failed,
              static_cast<unsigned long long>(c.stats().stale_retries));
}

RINGIO_ALL_BACKENDS(Client);

}  // namespace
