// SPDX-License-Identifier: Apache-2.0
// A request on a reused connection allocates nothing: stream_request + read into a
// caller's buffer, against an allocation-free scripted server on the same loop, on
// every backend, with the global operator new replaced by a counting one.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

#include "ringio/http/client.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/scope.hpp"
#include "support/backend_test.hpp"
#include "support/counting_new.hpp"
#include "support/loopback.hpp"

namespace {

using namespace ringio;
namespace http = ringio::http;

constexpr std::string_view reply = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nHello world!";

// Answers every request (a head without a body) on one connection with `reply`.
task<> serve_fixed(stream_listener& l) {
  auto s = co_await l.accept();
  if (!s) co_return;
  std::array<char, 4096> in;
  std::size_t have = 0;
  for (;;) {
    auto n = co_await s->recv(std::span(in).subspan(have));
    if (!n || *n == 0) co_return;
    have += *n;
    std::string_view data(in.data(), have);
    std::size_t end;
    while ((end = data.find("\r\n\r\n")) != std::string_view::npos) {
      auto sent = co_await s->send_all(const_buffer(reply.data(), reply.size()));
      if (!sent) co_return;
      data.remove_prefix(end + 4);
    }
    std::copy(data.begin(), data.end(), in.begin());
    have = data.size();
  }
}

task<long> requests(http::client& c, std::string_view url, int warmup, int counted) {
  std::array<char, 64> body;
  for (int i = 0; i < warmup + counted; ++i) {
    if (i == warmup) {
      ringio_test::allocations = 0;
      ringio_test::counting = true;
    }
    auto rs = co_await c.stream_request(http::request_spec{.url = url});
    if (!rs) {
      ringio_test::counting = false;
      ADD_FAILURE() << rs.error().message();
      co_return -1;
    }
    std::size_t got = 0;
    for (;;) {
      auto n = co_await rs->read(mutable_buffer(body.data() + got, body.size() - got));
      if (!n || *n == 0) break;
      got += *n;
    }
    EXPECT_EQ(std::string_view(body.data(), got), "Hello world!");
  }
  ringio_test::counting = false;
  co_return ringio_test::allocations.load();
}

class ClientAllocation : public ringio_test::backend_test {};

TEST_P(ClientAllocation, RequestOnAReusedConnectionAllocatesNothing) {
#if defined(RINGIO_SANITIZED)
  GTEST_SKIP() << "sanitizer builds bypass the coroutine frame cache: each task allocates its frame";
#endif
  auto l = ringio_test::listen_loopback();
  const std::string url = "http://127.0.0.1:" + std::to_string(ringio_test::address_of(l).port()) + "/hello";
  http::client c;
  const long counted = run([](stream_listener& l, http::client& c, std::string_view url) -> task<long> {
    scope server;
    server.spawn(serve_fixed(l));
    const long n = co_await requests(c, url, 100, 2000);
    c.close_idle();
    co_await server.join();
    co_return n;
  }(l, c, url));
  EXPECT_EQ(counted, 0) << "allocations over 2000 requests";
  EXPECT_EQ(c.stats().connections_opened, 1u);
}

RINGIO_ALL_BACKENDS(ClientAllocation);

}  // namespace
