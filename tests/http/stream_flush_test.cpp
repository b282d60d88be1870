// SPDX-License-Identifier: Apache-2.0
// Streamed bodies reach the client as they are written, on every backend: a raw
// socket sees the first chunk while the handler still sleeps before the second (the
// example of docs/http.md), write_batched() holds parts until flush(), and a client
// leaving mid-stream makes the next write fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "ringio/http/body_writer.hpp"
#include "ringio/http/router.hpp"
#include "ringio/time/sleep.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;
using ringio::task;
using ringio::http::body_writer;
using ringio::http::request;
using ringio::http::response;

namespace {

// What the handlers have done so far, seen by the client thread.
struct progress {
  std::atomic<int> slept{0};        // sleeps finished
  std::atomic<bool> failed{false};  // a write reported an error
  std::atomic<bool> ended{false};   // the stream function returned
};

ringio::http::router make_stream_routes(progress& p) {
  ringio::http::router r;
  // The streaming example of docs/http.md, with the sleep it has there.
  r.get("/count", [&p](request&) -> task<response> {
    co_return response::stream(200, "text/plain", [&p](body_writer& w) -> task<void> {
      for (int i = 0; i < 3; ++i) {
        auto ok = co_await w.write(std::to_string(i) + "\n");
        if (!ok) co_return;
        auto slept = co_await ringio::sleep_for(300ms);
        (void)slept;
        p.slept.fetch_add(1);
      }
    });
  });
  // Small parts gathered, then sent by flush().
  r.get("/batched", [&p](request&) -> task<response> {
    co_return response::stream(200, "text/plain", [&p](body_writer& w) -> task<void> {
      for (int i = 0; i < 5; ++i) {
        auto ok = co_await w.write_batched("b" + std::to_string(i) + ";");
        if (!ok) co_return;
      }
      auto slept = co_await ringio::sleep_for(300ms);  // nothing sent yet: the head neither
      (void)slept;
      p.slept.fetch_add(1);
      auto flushed = co_await w.flush();
      (void)flushed;
      auto again = co_await ringio::sleep_for(300ms);
      (void)again;
      p.slept.fetch_add(1);
      auto last = co_await w.write_batched("end");
      (void)last;
    });
  });
  // Writes until a write fails (the client left).
  r.get("/endless", [&p](request&) -> task<response> {
    co_return response::stream(200, "text/plain", [&p](body_writer& w) -> task<void> {
      for (int i = 0; i < 2000; ++i) {
        auto ok = co_await w.write(std::string(1000, 'e'));
        if (!ok) {
          p.failed = true;
          break;
        }
        auto slept = co_await ringio::sleep_for(5ms);
        (void)slept;
      }
      p.ended = true;
    });
  });
  return r;
}

class HttpStreamFlush : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (!IsSkipped()) start_server(routes_);
  }
  // Reads until `text` is in the received bytes (false on timeout or close).
  static bool read_until(http_client& c, std::string_view text) {
    while (c.buffered().find(text) == std::string::npos)
      if (!c.fill()) return false;
    return true;
  }
  progress progress_;
  ringio::http::router routes_ = make_stream_routes(progress_);
};

TEST_P(HttpStreamFlush, EachChunkArrivesWhileTheHandlerSleepsBeforeTheNext) {
  http_client c(port(), 2000);
  ASSERT_TRUE(c.send(get_request("/count")));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(read_until(c, "\r\n\r\n2\r\n0\n\r\n"))
      << "the head and the first chunk, complete with its CRLF: " << c.buffered();
  EXPECT_EQ(progress_.slept.load(), 0) << "the first chunk arrived only after the handler's sleep";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_EQ(c.buffered().find("2\r\n1\n"), std::string::npos) << "the second chunk came early";
  ASSERT_TRUE(read_until(c, "2\r\n1\n\r\n"));
  EXPECT_EQ(progress_.slept.load(), 1) << "the second chunk arrived during the second sleep";
  ASSERT_TRUE(read_until(c, "2\r\n2\n\r\n"));
  EXPECT_EQ(progress_.slept.load(), 2);
  ASSERT_TRUE(read_until(c, "0\r\n\r\n")) << "the last chunk after the last sleep";
  EXPECT_EQ(progress_.slept.load(), 3);
  auto again = c.exchange(get_request("/count"));  // whole, through the framing client
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, "0\n1\n2\n");
}

TEST_P(HttpStreamFlush, BatchedPartsWaitForFlush) {
  http_client c(port(), 2000);
  ASSERT_TRUE(c.send(get_request("/batched")));
  ASSERT_TRUE(read_until(c, "b4;\r\n"));
  EXPECT_EQ(progress_.slept.load(), 1) << "gathered parts were sent before flush()";
  EXPECT_NE(c.buffered().find("Transfer-Encoding: chunked"), std::string::npos);
  ASSERT_TRUE(read_until(c, "0\r\n\r\n"));
  EXPECT_EQ(progress_.slept.load(), 2);
  EXPECT_NE(c.buffered().find("3\r\nend\r\n0\r\n\r\n"), std::string::npos);
}

TEST_P(HttpStreamFlush, ClientLeavingMidStreamFailsTheNextWrite) {
  {
    http_client c(port(), 2000);
    ASSERT_TRUE(c.send(get_request("/endless")));
    ASSERT_TRUE(read_until(c, "eeee"));
    linger hard{1, 0};
    ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  }
  for (int i = 0; i < 200 && !progress_.ended; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(progress_.ended) << "the stream kept writing to a closed connection";
  EXPECT_TRUE(progress_.failed);
  http_client d(port());
  auto r = d.exchange(get_request("/count"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "0\n1\n2\n");
}

RINGIO_ALL_BACKENDS(HttpStreamFlush);

}  // namespace
