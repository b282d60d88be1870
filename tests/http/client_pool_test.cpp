// SPDX-License-Identifier: Apache-2.0
// http::client's pool against scripted raw servers (plain and TLS), on every backend:
// pooled connections the server closed, the retry on a new connection, and sends that
// fail part-way.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "ringio/http/client.hpp"
#include "scripted_server.hpp"

namespace {

using namespace std::chrono_literals;
using ringio::result;
using ringio::task;
namespace http = ringio::http;
using namespace ringio_test;

const std::string ok_one = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none";
const std::string ok_two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo";

std::string outcome(const result<http::client_response>& r) {
  return r ? std::to_string(r->status) + " " + r->body : r.error().message();
}

class ClientPool : public backend_test {};

// Two pooled connections, both closed by the server when the next request arrives:
// the retry must not take the other pooled one.
task<std::vector<std::string>> two_pooled_then_get(http::client& c, std::string u) {
  std::vector<std::string> out;
  {
    auto a = co_await c.stream_request({.url = u});
    auto b = co_await c.stream_request({.url = u});  // while `a` holds the first connection
    for (auto* s : {&a, &b}) {
      std::string body;
      if (*s) {
        auto done = co_await (*s)->read_all(body);
        out.push_back(done ? body : done.error().message());
      } else {
        out.push_back(s->error().message());
      }
    }
  }
  out.push_back(std::to_string(c.idle_connections()) + " pooled");
  auto r = co_await c.get(u);
  out.push_back(outcome(r));
  co_return out;
}

TEST_P(ClientPool, StaleRetryOpensANewConnection) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send(ok_one), read_request()},
                          {read_request(), send(ok_one), read_request()},
                          {read_request(), send(ok_two)}},
                         log, nullptr, two_pooled_then_get(c, url_of(l, false))));
  EXPECT_EQ(out, (std::vector<std::string>{"one", "one", "2 pooled", "200 two"}));
  EXPECT_EQ(c.stats().stale_retries, 1u);
  EXPECT_EQ(c.stats().connections_opened, 3u);
}

// The server reads the head of a large upload, answers 413 and closes with the body
// unread (an RST): the client's send fails, and the answer is what it returns.
TEST_P(ClientPool, UploadRefusedEarlyReturnsTheAnswer) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c;
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(against(l, {{read_head(), send(refused)}}, log, nullptr,
                       fetch(c, url_of(l, false), http::method::post, std::string(16 << 20, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(c.idle_connections(), 0u);
}

// A pooled connection reset while the next request's body is being sent: the send
// error is a stale connection's, and the PUT goes again on a new connection.
TEST_P(ClientPool, SendFailingOnAReusedConnectionIsRetried) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c;
  server_log log;
  auto out = run(against(l, {{read_request(), send(ok_one), read_head(), reset()}, {read_request(), send(ok_two)}}, log,
                         nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           auto first = co_await c.get(u);
                           out.push_back(outcome(first));
                           auto put = co_await fetch(c, u, http::method::put, std::string(16 << 20, 'u'));
                           out.push_back(outcome(put));
                           co_return out;
                         }(c, url_of(l, false))));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().stale_retries, 1u);
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

// The same for POST, which is not retried: the send error itself comes back, not a
// timeout.
TEST_P(ClientPool, SendFailingOnAReusedConnectionReportsTheSendError) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c({.head_timeout = 5s});
  server_log log;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(against(l, {{read_request(), send(ok_one), read_head(), reset()}}, log, nullptr,
                       [](http::client& c, std::string u) -> task<result<http::client_response>> {
                         auto first = co_await c.get(u);
                         if (!first) co_return first;
                         auto post = co_await fetch(c, u, http::method::post, std::string(16 << 20, 'u'));
                         co_return post;
                       }(c, url_of(l, false))));
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error() == std::errc::connection_reset || r.error() == std::errc::broken_pipe) << r.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_EQ(c.stats().stale_retries, 0u);
}

class ClientPoolTls : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    server_tls_ = test_server_tls();
    if (!server_tls_) GTEST_SKIP() << "the openssl command could not make test certificates";
  }
  std::optional<ringio::tls::context> server_tls_;
};

// The server answers, then (once the client has read the answer) sends close_notify
// and closes: the pooled connection has
// bytes waiting (the alert before the FIN), so it is not reused, and a PUT with a body
// goes out on a new connection.
TEST_P(ClientPoolTls, PooledConnectionClosedWithCloseNotifyIsNotReused) {
  auto l = listen_loopback();
  http::client c(trusting_test_ca());
  server_log log;
  auto out =
      run(against(l, {{read_request(), send(ok_one), stall(50), close_notify()}, {read_request(), send(ok_two)}}, log,
                  &*server_tls_, [](http::client& c, std::string u, server_log& log) -> task<std::vector<std::string>> {
                    std::vector<std::string> out;
                    auto first = co_await c.get(u);
                    out.push_back(outcome(first));
                    if (!co_await closed_at_least(log, 1)) out.push_back("the server did not close");
                    auto put = co_await fetch(c, u, http::method::put, "data");
                    out.push_back(outcome(put));
                    co_return out;
                  }(c, url_of(l, true), log)));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
  EXPECT_EQ(c.stats().stale_retries, 0u);  // noticed before use
}

RINGIO_ALL_BACKENDS(ClientPool);
RINGIO_ALL_BACKENDS(ClientPoolTls);

}  // namespace
