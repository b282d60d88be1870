// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 protocol over real sockets, on every backend: keep-alive, pipelining,
// request bodies (Content-Length and chunked), HTTP/1.0, HEAD, 100-continue, and
// streamed or large responses.
#include <gtest/gtest.h>

#include <string>

#include "http/http_client.hpp"
#include "http/server_fixture.hpp"
#include "http/test_routes.hpp"

using namespace ringio_test;

namespace {

class HttpProtocol : public http_server_test {
 protected:
  void SetUp() override {
    http_server_test::SetUp();
    if (!IsSkipped()) start_server(routes_);
  }
  ringio::http::router routes_ = make_test_routes();
};

TEST_P(HttpProtocol, KeepAliveServesManyRequestsOnOneConnection) {
  http_client c(port());
  for (int i = 0; i < 5; ++i) {
    auto r = c.exchange(get_request("/"));
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello world!");
    EXPECT_EQ(r->header("Content-Type"), "text/plain");
    EXPECT_EQ(r->header("Content-Length"), "12");
    EXPECT_EQ(r->header("Date").size(), 29u) << r->header("Date");
    EXPECT_FALSE(r->has_header("Connection"));
  }
}

TEST_P(HttpProtocol, HundredPipelinedRequestsInOneWriteAreAnsweredInOrder) {
  http_client c(port());
  std::string batch;
  for (int i = 0; i < 100; ++i) batch += get_request("/echo?" + std::to_string(i));
  ASSERT_TRUE(c.send(batch));
  for (int i = 0; i < 100; ++i) {
    auto r = c.read_reply();
    ASSERT_TRUE(r) << "response " << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(i));
  }
}

TEST_P(HttpProtocol, ChunkedBodyArrivingInPiecesIsDecoded) {
  http_client c(port());
  const std::string parts[] = {"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                               "5\r\nhel",
                               "lo\r\n",
                               "7;ext=\"a b\"\r\n, world\r\n",
                               "0\r\nX-Trailer: yes\r\n",
                               "\r\n"};
  for (const auto& p : parts) {
    ASSERT_TRUE(c.send(p));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto r = c.read_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello, world");
  auto again = c.exchange(get_request("/"));  // the connection continues after the trailer
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, "Hello world!");
}

TEST_P(HttpProtocol, ContentLengthBodyLargerThanTheBufferIsReadWhole) {
  http_client c(port());
  std::string body(200 * 1024, 'q');
  body[12345] = 'Z';
  auto r = c.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                      body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, body);
}

TEST_P(HttpProtocol, Http10ClosesAfterTheResponse) {
  http_client c(port());
  auto r = c.exchange("GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_P(HttpProtocol, Http10KeepsAliveWhenAsked) {
  http_client c(port());
  for (int i = 0; i < 3; ++i) {
    auto r = c.exchange("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->header("Connection"), "keep-alive");
    EXPECT_EQ(r->body, "Hello world!");
  }
}

TEST_P(HttpProtocol, ConnectionCloseIsHonoured) {
  http_client c(port());
  auto r = c.exchange(get_request("/", "Connection: close\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_P(HttpProtocol, HeadGivesTheLengthButNoBody) {
  http_client c(port());
  auto r = c.exchange("HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", /*head_request=*/true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Content-Length"), "12");
  auto next = c.exchange(get_request("/"));  // no stray body bytes before this reply
  ASSERT_TRUE(next);
  EXPECT_EQ(next->body, "Hello world!");
}

TEST_P(HttpProtocol, ExpectContinueGetsTheInterimResponseFirst) {
  http_client c(port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  auto interim = c.read_reply();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c.send("ping"));
  auto r = c.read_reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ping");
}

TEST_P(HttpProtocol, StreamedResponseIsChunkedForHttp11) {
  http_client c(port());
  auto r = c.exchange(get_request("/stream"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->body, "part0;part1;part2;" + std::string(40000, 'x'));
  auto next = c.exchange(get_request("/"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->body, "Hello world!");
}

TEST_P(HttpProtocol, StreamedResponseEndsWithTheConnectionForHttp10) {
  http_client c(port());
  auto r = c.exchange("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_header("Transfer-Encoding"));
  EXPECT_EQ(r->header("Connection"), "close");
  EXPECT_EQ(r->body, "part0;part1;part2;" + std::string(40000, 'x'));
}

TEST_P(HttpProtocol, LargeFixedBodyArrivesWhole) {
  http_client c(port());
  auto r = c.exchange(get_request("/big"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, std::string(300 * 1024, 'b'));
}

TEST_P(HttpProtocol, UnknownPathIs404AndWrongMethodIs405) {
  http_client c(port());
  auto r = c.exchange(get_request("/nowhere"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = c.exchange("DELETE /echo HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD, POST, OPTIONS");
}

TEST_P(HttpProtocol, OptionsOnARouteListsItsMethods) {
  http_client c(port());
  auto r = c.exchange("OPTIONS /echo HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD, POST, OPTIONS");
  EXPECT_EQ(r->header("Content-Length"), "0");
  EXPECT_FALSE(r->has_header("Connection")) << "kept alive";
  r = c.exchange("OPTIONS /nowhere HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_P(HttpProtocol, FragmentInTheTargetIs400) {
  http_client c(port());
  auto r = c.exchange("GET /#frag HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->header("Connection"), "close");
}

TEST_P(HttpProtocol, HigherHttp1MinorVersionIsAnsweredAsHttp11) {
  http_client c(port());
  for (const char* version : {"HTTP/1.2", "HTTP/1.9"}) {
    auto r = c.exchange(std::string("GET / ") + version + "\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(r) << version;  // the client accepts only an "HTTP/1.1" status line
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello world!");
    EXPECT_FALSE(r->has_header("Connection")) << "kept alive as for HTTP/1.1";
  }
}

TEST_P(HttpProtocol, HostMayBeAnIpv6LiteralWithAPort) {
  http_client c(port());
  auto r = c.exchange("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_P(HttpProtocol, OptionsAsteriskListsTheServersMethods) {
  http_client c(port());
  auto r = c.exchange("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD, POST, OPTIONS");
  EXPECT_EQ(r->header("Content-Length"), "0");
  auto next = c.exchange(get_request("/"));
  ASSERT_TRUE(next) << "the connection goes on";
  EXPECT_EQ(next->body, "Hello world!");
}

RINGIO_ALL_BACKENDS(HttpProtocol);

}  // namespace
