// SPDX-License-Identifier: Apache-2.0
// http::server::metrics(): responses by status class, latency, bytes, idle and active
// connections, and timeouts by kind, checked against what a client did.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "ringio/http/server_metrics_exposition.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class HttpServerMetrics : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    routes_.get("/", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(200, "hello");
    });
    routes_.get("/boom", [](ringio::http::request&) -> ringio::task<ringio::http::response> {
      co_return ringio::http::response::borrowed(503, "busy");
    });
  }
  // Waits (up to 10 s: the server updates its counters on its own thread) until
  // `done(metrics)` holds; returns the last snapshot.
  template <class Done>
  ringio::http::server_metrics wait_for(Done done) {
    ringio::http::server_metrics m = server().metrics();
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         !done(m) && std::chrono::steady_clock::now() < deadline; m = server().metrics())
      std::this_thread::sleep_for(5ms);
    return m;
  }
  ringio::http::router routes_;
};

TEST_P(HttpServerMetrics, CountsResponsesByClassLatencyAndBytes) {
  start_server(routes_);
  {
    http_client c(port());
    for (int i = 0; i < 3; ++i) {
      auto r = c.exchange(get_request("/"));
      ASSERT_TRUE(r);
    }
    ASSERT_TRUE(c.exchange(get_request("/boom")));
    ASSERT_TRUE(c.exchange(get_request("/none")));
    // Answered and idle: the connection waits for its next request.
    auto idle = wait_for([](const auto& m) { return m.connections_idle == 1; });
    EXPECT_EQ(idle.connections_idle, 1u);
    EXPECT_EQ(idle.connections_active, 1u);
  }
  auto m = wait_for([](const auto& m) { return m.connections_active == 0; });
  EXPECT_EQ(m.connections_active, 0u);
  EXPECT_EQ(m.connections_idle, 0u);
  EXPECT_EQ(m.responses_by_class[1], 3u);  // 2xx
  EXPECT_EQ(m.responses_by_class[3], 1u);  // 4xx: no route
  EXPECT_EQ(m.responses_by_class[4], 1u);  // 5xx
  std::uint64_t observed = 0;
  for (auto n : m.latency_count) observed += n;
  EXPECT_EQ(observed, 5u);
  EXPECT_EQ(m.request_bytes, 3 * get_request("/").size() + get_request("/boom").size() + get_request("/none").size());
  EXPECT_GT(m.response_bytes, 5 * std::string_view("HTTP/1.1 200 OK\r\n").size());
  EXPECT_EQ(m.header_timeouts + m.body_timeouts + m.idle_timeouts + m.send_timeouts, 0u);

  ringio::prometheus_writer w;
  ringio::http::write_server_metrics(w, m);
  EXPECT_NE(w.text().find("ringio_http_responses_total{class=\"2xx\"} 3\n"), std::string::npos) << w.text();
  EXPECT_NE(w.text().find("ringio_http_request_duration_seconds_count 5\n"), std::string::npos);
}

TEST_P(HttpServerMetrics, CountsHeaderAndIdleTimeouts) {
  ringio::http::server_options o;
  o.header_timeout = 200ms;
  o.idle_timeout = 200ms;
  start_server(routes_, o);
  {
    http_client slow(port());
    ASSERT_TRUE(slow.send("GET / HTTP/1.1\r\n"));  // the rest never comes
    auto r = slow.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
  }
  {
    http_client idle(port());
    ASSERT_TRUE(idle.exchange(get_request("/")));
    EXPECT_TRUE(idle.closed_by_peer());  // closed by the idle timeout
  }
  auto m = wait_for([](const auto& m) { return m.connections_active == 0 && m.idle_timeouts == 1; });
  EXPECT_EQ(m.header_timeouts, 1u);
  EXPECT_EQ(m.idle_timeouts, 1u);
  EXPECT_EQ(m.body_timeouts, 0u);
  EXPECT_EQ(m.send_timeouts, 0u);
  EXPECT_EQ(m.responses_by_class[3], 1u);  // the 408
  EXPECT_EQ(m.responses_by_class[1], 1u);
}

RINGIO_ALL_BACKENDS(HttpServerMetrics);

}  // namespace
