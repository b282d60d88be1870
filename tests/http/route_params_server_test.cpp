// SPDX-License-Identifier: Apache-2.0
// Path parameters, query strings and JSON through a real server on every backend:
// captures reach the handler decoded, 405/404/OPTIONS * for pattern routes, a body
// for a pattern route that does not take the method is answered before it is read,
// and a seeded randomized run with clients that reset or vanish at random points.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "ringio/http/body_writer.hpp"
#include "ringio/http/json_writer.hpp"
#include "ringio/http/query_params.hpp"
#include "ringio/http/router.hpp"
#include "ringio/time/sleep.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;
using ringio::task;
using ringio::http::request;
using ringio::http::response;

namespace {

ringio::http::router make_param_routes() {
  ringio::http::router r;
  // {"user":..., "post":..., "q": {pairs}} so every decoded value is visible.
  r.get("/users/{user}/posts/{post}", [](request& q) -> task<response> {
    ringio::http::json_writer j;
    j.begin_object().key("user").value(q.param("user")).key("post").value(q.param("post")).key("q").begin_array();
    for (const auto& p : ringio::http::query_params(q.query()))
      j.begin_array().value(p.name).value(p.value).end_array();
    j.end_array().end_object();
    co_return response::json(200, j.take());
  });
  r.get("/items/{id}",
        [](request& q) -> task<response> { co_return response::text(200, "get " + std::string(q.param("id"))); });
  r.put("/items/{id}", [](request& q) -> task<response> {
    co_return response::text(200, "put " + std::string(q.param("id")) + "=" + std::string(q.body()));
  });
  r.get("/items/new", [](request&) -> task<response> { co_return response::borrowed(200, "the form"); });
  r.get("/files/{path...}",
        [](request& q) -> task<response> { co_return response::text(200, std::string(q.param("path"))); });
  // GET /wait/{ms}: answers after ms milliseconds (a handler in progress when a client leaves).
  r.get("/wait/{ms}", [](request& q) -> task<response> {
    auto done = co_await ringio::sleep_for(std::chrono::milliseconds(std::stoi(std::string(q.param("ms")))));
    (void)done;
    co_return response::borrowed(200, "waited");
  });
  // GET /ticks/{n}: a stream of n chunks, 1 ms apart.
  r.get("/ticks/{n}", [](request& q) -> task<response> {
    int n = std::stoi(std::string(q.param("n")));
    co_return response::stream(200, "text/plain", [n](ringio::http::body_writer& w) -> task<void> {
      for (int i = 0; i < n; ++i) {
        auto ok = co_await w.write("tick" + std::to_string(i) + "\n");
        if (!ok) co_return;
        auto slept = co_await ringio::sleep_for(1ms);
        (void)slept;
      }
    });
  });
  return r;
}

class HttpRouteParams : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (!IsSkipped()) start_server(routes_);
  }
  ringio::http::router routes_ = make_param_routes();
};

TEST_P(HttpRouteParams, CapturesAndQueryReachTheHandlerDecoded) {
  http_client c(port());
  auto r = c.exchange(get_request("/users/ann%20lee/posts/%E2%82%AC7?tag=a+b&tag=c%26d&empty"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Content-Type"), "application/json");
  EXPECT_EQ(r->body,
            "{\"user\":\"ann lee\",\"post\":\"\xe2\x82\xac"
            "7\",\"q\":[[\"tag\",\"a b\"],[\"tag\",\"c&d\"],[\"empty\",\"\"]]}");
  auto files = c.exchange(get_request("/files/css/site%20main.css"));
  ASSERT_TRUE(files);
  EXPECT_EQ(files->body, "css/site main.css");
  auto exact = c.exchange(get_request("/items/new"));
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->body, "the form") << "the exact route beats the pattern";
  auto put = c.exchange("PUT /items/9 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->body, "put 9=abc");
  auto head = c.exchange("HEAD /items/5 HTTP/1.1\r\nHost: t\r\n\r\n", true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("Content-Length"), "5");
}

TEST_P(HttpRouteParams, UncleanCapturesAndUnknownShapesGet404) {
  http_client c(port());
  for (const char* path : {"/items/a%2Fb", "/items/%00", "/items/%zz", "/items/", "/items/1/2", "/users/a/posts/"}) {
    auto r = c.exchange(get_request(path));
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
  }
}

TEST_P(HttpRouteParams, OtherMethodGets405WithAllowAndOptionsAsteriskListsAll) {
  http_client c(port());
  auto r = c.exchange("DELETE /items/3 HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD, PUT, OPTIONS");
  auto o = c.exchange("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(o->header("Allow"), "GET, HEAD, PUT, OPTIONS");
}

TEST_P(HttpRouteParams, BodyForAPatternRouteWithoutThatMethodIsRefusedBeforeItIsRead) {
  http_client c(port());
  // A megabyte announced, none sent: only an answer from the head alone can come back.
  ASSERT_TRUE(c.send("POST /items/3 HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n"));
  auto r = c.read_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD, PUT, OPTIONS");
  EXPECT_EQ(r->header("Connection"), "close");
  http_client d(port());
  ASSERT_TRUE(d.send("PUT /items/%2F HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n"));
  auto nf = d.read_reply();
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
}

// Clients that reset the connection (RST), half-close or vanish mid-request, mid-body,
// while a handler waits or in the middle of a streamed body, mixed with ordinary
// requests and whole streams; at the end every connection has ended and the server
// still answers correctly.
TEST_P(HttpRouteParams, RandomResetsAndCancellationsLeaveTheServerHealthy) {
  const auto seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("RandomResetsAndCancellationsLeaveTheServerHealthy seed %u\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  int answered = 0, expected_answers = 0;
  for (int round = 0; round < 60; ++round) {
    http_client c(port(), 3000);
    ASSERT_TRUE(c.connected());
    int id = static_cast<int>(rng() % 1000);
    std::string full =
        "PUT /items/" + std::to_string(id) + " HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789";
    switch (rng() % 7) {
      case 0: {  // a whole request, answered and checked
        ++expected_answers;
        auto r = c.exchange(full);
        if (r && r->body == "put " + std::to_string(id) + "=0123456789") ++answered;
        break;
      }
      case 1:  // cut at a random byte, then reset
        c.send(std::string_view(full).substr(0, rng() % full.size()));
        break;
      case 2:  // a handler in progress when the client leaves
        c.send(get_request("/wait/" + std::to_string(rng() % 30)));
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 20));
        break;
      case 3:  // half-close after part of the body
        c.send(std::string_view(full).substr(0, full.size() - 1 - rng() % 10));
        ::shutdown(c.fd(), SHUT_WR);
        break;
      case 4:  // reset right after a complete request, before reading the answer
        c.send(full);
        break;
      case 5: {  // a whole stream, read to its end and checked
        ++expected_answers;
        int n = static_cast<int>(rng() % 20);
        std::string want;
        for (int i = 0; i < n; ++i) want += "tick" + std::to_string(i) + "\n";
        auto r = c.exchange(get_request("/ticks/" + std::to_string(n)));
        if (r && r->body == want) ++answered;
        break;
      }
      default: {  // leave a stream after a random number of its chunks
        c.send(get_request("/ticks/" + std::to_string(10 + rng() % 190)));
        std::string until = "tick" + std::to_string(rng() % 10) + "\n";
        while (c.buffered().find(until) == std::string::npos && c.fill()) {
        }
        break;
      }
    }
    if (rng() % 2) {
      linger hard{1, 0};  // close with RST rather than FIN
      ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
  }
  EXPECT_EQ(answered, expected_answers);
  bool all_ended = false;
  for (int i = 0; i < 300 && !all_ended; ++i) {
    all_ended = server().connections() == 0;
    if (!all_ended) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(all_ended) << server().connections() << " connections still open";
  http_client c(port());
  auto r = c.exchange(get_request("/users/x/posts/y"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "{\"user\":\"x\",\"post\":\"y\",\"q\":[]}");
}

RINGIO_ALL_BACKENDS(HttpRouteParams);

}  // namespace
