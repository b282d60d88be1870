// SPDX-License-Identifier: Apache-2.0
// Adversarial: http::client against scripted raw servers: stale pooled connections (FIN or
// RST, plain and TLS) before a non-retryable POST, credentials on redirects to other
// origins (other port, scheme-relative Location), dot segments in relative Locations,
// transfer codings split over several fields, early refusals over TLS.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "http/scripted_server.hpp"
#include "ringio/http/client.hpp"
#include "ringio/time/timeout.hpp"

namespace {

using namespace std::chrono_literals;
using ringio::result;
using ringio::task;
namespace http = ringio::http;
using namespace ringio_test;

const std::string ok_one = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none";
const std::string ok_two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo";

std::string outcome(const result<http::client_response>& r) {
  return r ? std::to_string(r->status) + " " + r->body : "error: " + r.error().message();
}

class AdversarialHttp : public backend_test {};

class AdversarialHttpTls : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    server_tls_ = test_server_tls();
    if (!server_tls_) GTEST_SKIP() << "no test certificates";
  }
  std::optional<ringio::tls::context> server_tls_;
};

task<std::vector<std::string>> get_then_post(http::client& c, std::string u, server_log& log) {
  std::vector<std::string> out;
  auto first = co_await c.get(u);
  out.push_back(outcome(first));
  if (!co_await closed_at_least(log, 1)) out.push_back("the server did not close");
  (void)co_await ringio::sleep_for(20ms);
  auto post = co_await fetch(c, u, http::method::post, "data");
  out.push_back(outcome(post));
  co_return out;
}

// A pooled connection closed (FIN) by the server: a POST (never retried) must not be
// sent on it.
TEST_P(AdversarialHttp, PooledConnectionClosedIsNotUsedForPost) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l, {{read_request(), send(ok_one), stall(30)}, {read_request(), send(ok_two)}}, log, nullptr,
                         get_then_post(c, url_of(l, false), log)));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

// The same with an RST.
TEST_P(AdversarialHttp, PooledConnectionResetIsNotUsedForPost) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l, {{read_request(), send(ok_one), stall(30), reset()}, {read_request(), send(ok_two)}}, log,
                         nullptr, get_then_post(c, url_of(l, false), log)));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(AdversarialHttpTls, PooledTlsConnectionClosedWithoutCloseNotifyIsNotUsedForPost) {
  auto l = listen_loopback();
  http::client c(trusting_test_ca());
  server_log log;
  auto out = run(against(l, {{read_request(), send(ok_one), stall(30)}, {read_request(), send(ok_two)}}, log,
                         &*server_tls_, get_then_post(c, url_of(l, true), log)));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

TEST_P(AdversarialHttpTls, PooledTlsConnectionResetIsNotUsedForPost) {
  auto l = listen_loopback();
  http::client c(trusting_test_ca());
  server_log log;
  auto out = run(against(l, {{read_request(), send(ok_one), stall(30), reset()}, {read_request(), send(ok_two)}}, log,
                         &*server_tls_, get_then_post(c, url_of(l, true), log)));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 2u);
}

// A complete Content-Length response followed by a close without close_notify is whole.
TEST_P(AdversarialHttpTls, CompleteBodyThenCloseWithoutCloseNotifyIsFine) {
  auto l = listen_loopback();
  http::client c(trusting_test_ca());
  server_log log;
  auto r =
      run(against(l, {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\none")}},
                  log, &*server_tls_, fetch(c, url_of(l, true))));
  EXPECT_EQ(outcome(r), "200 one");
}

// An upload refused early (413, close) over TLS returns the 413.
TEST_P(AdversarialHttpTls, UploadRefusedEarlyOverTlsReturnsTheAnswer) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c(trusting_test_ca());
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(against(l, {{read_head(), send(refused)}}, log, &*server_tls_,
                       fetch(c, url_of(l, true), http::method::post, std::string(16 << 20, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// The same, with the server waiting 100 ms after its answer before it closes: the 413
// is in the client's socket well before the RST.
TEST_P(AdversarialHttpTls, UploadRefusedEarlyOverTlsWithPauseReturnsTheAnswer) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c(trusting_test_ca());
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  auto r = run(against(l, {{read_head(), send(refused), stall(100)}}, log, &*server_tls_,
                       fetch(c, url_of(l, true), http::method::post, std::string(16 << 20, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
}

// A TLS send that fails part-way on a reused connection: the real error, not a timeout.
TEST_P(AdversarialHttpTls, SendFailingPartWayOverTlsReportsTheSendError) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client_options o = trusting_test_ca();
  o.head_timeout = 5s;
  http::client c(o);
  server_log log;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(against(l, {{read_request(), send(ok_one), read_head(), reset()}}, log, &*server_tls_,
                       [](http::client& c, std::string u) -> task<result<http::client_response>> {
                         auto first = co_await c.get(u);
                         if (!first) co_return first;
                         auto post = co_await fetch(c, u, http::method::post, std::string(16 << 20, 'u'));
                         co_return post;
                       }(c, url_of(l, true))));
  ASSERT_FALSE(r) << outcome(r);
  EXPECT_NE(r.error(), http::client_errc::head_timeout) << r.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
}

const std::vector<std::pair<std::string, std::string>> credentials = {
    {"Authorization", "Bearer a"}, {"Proxy-Authorization", "Basic b"}, {"Cookie", "c=1"}};

void expect_no_credentials(const std::string& head) {
  EXPECT_EQ(head.find("Authorization"), std::string::npos) << head;
  EXPECT_EQ(head.find("Cookie"), std::string::npos) << head;
}

task<std::string> two_servers(ringio::stream_listener& l, ringio::stream_listener& l2, server_log& log,
                              server_log& log2, std::string loc, task<result<http::client_response>> client_side) {
  ringio::scope other;
  std::vector<std::vector<step>> s2(1), s1(1);
  s2[0].push_back(read_request());
  s2[0].push_back(send(ok_two));
  s1[0].push_back(read_request());
  s1[0].push_back(send(loc));
  other.spawn(serve_scripts(l2, std::move(s2), log2));
  auto out = co_await against(l, std::move(s1), log, nullptr, std::move(client_side));
  other.request_stop();
  co_await other.join();
  co_return outcome(out);
}

// Redirect to the same host on another port: another origin.
TEST_P(AdversarialHttp, RedirectToAnotherPortDropsCredentials) {
  auto l = listen_loopback();
  auto l2 = listen_loopback();
  http::client c({.follow_redirects = true});
  server_log log, log2;
  const std::string loc = "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:" + std::to_string(address_of(l2).port()) +
                          "/p\r\nContent-Length: 0\r\n\r\n";
  std::string r =
      run(two_servers(l, l2, log, log2, loc, fetch(c, url_of(l, false), http::method::get, {}, credentials)));
  EXPECT_EQ(r, "200 two");
  ASSERT_EQ(log2.heads.size(), 1u);
  expect_no_credentials(log2.heads[0]);
}

// A scheme-relative Location ("//host:port/path") names another host.
TEST_P(AdversarialHttp, SchemeRelativeRedirectToAnotherHostDropsCredentials) {
  auto l = listen_loopback();
  const std::string port = std::to_string(address_of(l).port());
  http::client c({.follow_redirects = true});
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send("HTTP/1.1 302 Found\r\nLocation: //localhost:" + port +
                                                "/other\r\nContent-Length: 0\r\n\r\n")},
                          {read_request(), send(ok_two)}},
                         log, nullptr, fetch(c, url_of(l, false, "/start"), http::method::get, {}, credentials)));
  EXPECT_EQ(outcome(out), "200 two");
  ASSERT_EQ(log.heads.size(), 2u);
  EXPECT_NE(log.heads[1].find("GET /other HTTP/1.1\r\n"), std::string::npos) << log.heads[1];
  expect_no_credentials(log.heads[1]);
}

// Credentials dropped on a cross-origin hop stay dropped on the next hop (which
// comes from the other origin's redirect, back to the first host).
TEST_P(AdversarialHttp, CredentialsStayDroppedAfterCrossOriginHop) {
  auto l = listen_loopback();
  const std::string port = std::to_string(address_of(l).port());
  http::client c({.follow_redirects = true});
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send("HTTP/1.1 302 Found\r\nLocation: http://localhost:" + port +
                                                "/b\r\nContent-Length: 0\r\n\r\n")},
                          {read_request(), send("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:" + port +
                                                "/c\r\nContent-Length: 0\r\n\r\n")},
                          {read_request(), send(ok_two)}},
                         log, nullptr, fetch(c, url_of(l, false, "/a"), http::method::get, {}, credentials)));
  EXPECT_EQ(outcome(out), "200 two");
  ASSERT_EQ(log.heads.size(), 3u);
  expect_no_credentials(log.heads[1]);
  // Informational: whether the third hop (an origin-B-chosen URL) got the credentials back.
  if (log.heads[2].find("Authorization") != std::string::npos)
    std::printf("note: credentials re-sent after a cross-origin hop came back:\n%s\n", log.heads[2].c_str());
}

// Relative Locations with dot segments (RFC 3986 5.2 / 5.4).
TEST_P(AdversarialHttp, RelativeLocationDotSegments) {
  struct row {
    const char* base;
    const char* location;
    const char* target;
  };
  const row rows[] = {
      {"/x/y/z", "../../a/./b/../c?q", "/a/c?q"},
      {"/x/y/z", "../../../../g", "/g"},
      {"/x/y/z", ".", "/x/y/"},
      {"/x/y/z", "..", "/x/"},
      {"/x/y/z", "./", "/x/y/"},
      {"/x/y/z", "../", "/x/"},
      {"/x/y/z", "g/..", "/x/y/"},
      {"/x/y/z", "/./a/../b/.", "/b/"},
      {"/x/y/z?old", "?new", "/x/y/z?new"},
      {"/x/y/z", "g#frag", "/x/y/g"},
      {"/x/y/z", "g;x=1/../y", "/x/y/y"},
      {"/x/y/z", "..g", "/x/y/..g"},
      {"/x/y/z", "g.", "/x/y/g."},
      {"/x/y/z", "/a/b/../../..", "/"},
      {"/x/y/z", "%2e%2e/q", "/x/y/%2e%2e/q"},
      {"/x/y/z", "g?y/../x", "/x/y/g?y/../x"},
      {"/x/y/z", "g?y/./x", "/x/y/g?y/./x"},
      {"/x/y/z", "g#s/../x", "/x/y/g"},
      {"/x/y/z", "../?q", "/x/?q"},
      {"/x/y/z", "?", "/x/y/z?"},
      {"/x/y/z", "./g/.", "/x/y/g/"},
      {"/x/y/z", "g/./h/../i", "/x/y/g/i"},
      {"/", "a/b/../../../c", "/c"},
      {"/x/y/", "..", "/x/"},
      {"/x/y/", ".", "/x/y/"},
  };
  for (const row& w : rows) {
    auto l = listen_loopback();
    http::client c({.follow_redirects = true});
    server_log log;
    auto out = run(
        against(l,
                {{read_request(),
                  send(std::string("HTTP/1.1 302 Found\r\nLocation: ") + w.location + "\r\nContent-Length: 0\r\n\r\n"),
                  read_request(), send(ok_two)}},
                log, nullptr, fetch(c, url_of(l, false, w.base))));
    EXPECT_EQ(outcome(out), "200 two") << w.location;
    if (log.heads.size() < 2) {
      ADD_FAILURE() << w.location << ": no second request";
      continue;
    }
    const std::string expect = std::string("GET ") + w.target + " HTTP/1.1\r\n";
    EXPECT_EQ(log.heads[1].substr(0, expect.size()), expect) << "base " << w.base << " + " << w.location;
  }
}

// Transfer-Encoding given over several header fields is one list.
TEST_P(AdversarialHttp, TransferEncodingSplitOverFieldsIsOneList) {
  for (const char* fields :
       {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", "Transfer-Encoding: chunked;ext=1\r\n",
        "Transfer-Encoding: \r\n", "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 9\r\n"}) {
    auto l = listen_loopback();
    http::client c;
    server_log log;
    auto r = run(
        against(l, {{read_request(), send(std::string("HTTP/1.1 200 OK\r\n") + fields + "\r\n3\r\nabc\r\n0\r\n\r\n")}},
                log, nullptr, fetch(c, url_of(l, false))));
    if (std::string(fields).find("Content-Length") != std::string::npos) {
      // RFC 9112 6.3: chunked wins (or an error); never the Content-Length framing.
      if (r) {
        EXPECT_EQ(r->body, "abc") << fields;
      }
      continue;
    }
    EXPECT_FALSE(r) << fields << " -> " << outcome(r);
  }
}

// Plain chunked in any letter case, with optional whitespace, is accepted.
TEST_P(AdversarialHttp, ChunkedInAnyCaseIsAccepted) {
  for (const char* coding : {"Chunked", "CHUNKED", "chunked ", " chunked"}) {
    auto l = listen_loopback();
    http::client c;
    server_log log;
    auto r = run(against(l,
                         {{read_request(), send(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding:") + coding +
                                                "\r\n\r\n3\r\nabc\r\n0\r\n\r\n")}},
                         log, nullptr, fetch(c, url_of(l, false))));
    EXPECT_EQ(outcome(r), "200 abc") << "[" << coding << "]";
  }
}

// Interim responses trickling in one by one still count towards the head limit.
TEST_P(AdversarialHttp, SlowInterimFloodIsCapped) {
  std::vector<step> script{read_request()};
  for (int i = 0; i < 400; ++i)
    script.push_back(send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"));
  script.push_back(send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  auto l = listen_loopback();
  http::client c({.max_head_bytes = 4 * 1024});
  server_log log;
  auto r = run(against(l, {script}, log, nullptr, fetch(c, url_of(l, false))));
  ASSERT_FALSE(r) << outcome(r);
  EXPECT_EQ(r.error(), http::client_errc::head_too_large) << r.error().message();
}

// A pooled connection with extra bytes after the body (the server sent more than its
// Content-Length): "has anything to read" so it is dropped, and the next answer is
// the new connection's, never the leftover bytes parsed as a response.
TEST_P(AdversarialHttp, PooledConnectionWithLeftoverBytesIsNotReused) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send(ok_one + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"),
                           read_request(), send(ok_two)},
                          {read_request(), send(ok_two)}},
                         log, nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           out.push_back(outcome(co_await c.get(u)));
                           (void)co_await ringio::sleep_for(20ms);
                           out.push_back(outcome(co_await c.get(u)));
                           co_return out;
                         }(c, url_of(l, false))));
  EXPECT_EQ(out, (std::vector<std::string>{"200 one", "200 two"}));
}

// A HEAD answer with Content-Length has no body: the connection is reused for the
// next request, and its answer is read correctly.
TEST_P(AdversarialHttp, HeadWithContentLengthThenGetOnTheSameConnection) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(
      against(l, {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"), read_request(), send(ok_two)}},
              log, nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                std::vector<std::string> out;
                out.push_back(outcome(co_await fetch(c, u, http::method::head)));
                out.push_back(outcome(co_await c.get(u)));
                co_return out;
              }(c, url_of(l, false))));
  EXPECT_EQ(out, (std::vector<std::string>{"200 ", "200 two"}));
  EXPECT_EQ(c.stats().connections_opened, 1u);
}

// A response_stream dropped with its body unread must not put the connection back.
TEST_P(AdversarialHttp, StreamDroppedBeforeItsBodyEndsIsNotPooled) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"),
                           stall(200), send("3\r\ndef\r\n0\r\n\r\n"), read_request(), send(ok_one)},
                          {read_request(), send(ok_two)}},
                         log, nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           {
                             auto s = co_await c.stream_request({.url = u});
                             out.push_back(s ? std::to_string(s->status()) : s.error().message());
                           }
                           out.push_back(std::to_string(c.idle_connections()) + " idle");
                           out.push_back(outcome(co_await c.get(u)));
                           co_return out;
                         }(c, url_of(l, false))));
  EXPECT_EQ(out, (std::vector<std::string>{"200", "0 idle", "200 two"}));
}

// A cross-origin 307 of a POST: the body goes again, the credentials do not.
TEST_P(AdversarialHttp, CrossOrigin307DropsCredentials) {
  auto l = listen_loopback();
  const std::string port = std::to_string(address_of(l).port());
  http::client c({.follow_redirects = true});
  server_log log;
  auto out =
      run(against(l,
                  {{read_request(), send("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:" + port +
                                         "/b\r\nContent-Length: 0\r\n\r\n")},
                   {read_request(), send(ok_two)}},
                  log, nullptr, fetch(c, url_of(l, false, "/a"), http::method::post, "payload", credentials)));
  EXPECT_EQ(outcome(out), "200 two");
  ASSERT_EQ(log.heads.size(), 2u);
  expect_no_credentials(log.heads[1]);
}

// The plain-TCP twin of AdversarialHttpTls.UploadRefusedEarlyOverTlsWithPauseReturnsTheAnswer.
TEST_P(AdversarialHttp, UploadRefusedEarlyPlainWithPauseReturnsTheAnswer) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c;
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  auto r = run(against(l, {{read_head(), send(refused), stall(100)}}, log, nullptr,
                       fetch(c, url_of(l, false), http::method::post, std::string(16 << 20, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
}

// A request stopped (with_timeout) mid-body: its connection is closed, not pooled, and
// the next request gets its own answer.
TEST_P(AdversarialHttp, RequestStoppedMidBodyIsNotPooled) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc"), stall(300),
                           send("def"), read_request(), send(ok_one)},
                          {read_request(), send(ok_two)}},
                         log, nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           auto r = co_await ringio::with_timeout(c.get(u), 100ms);
                           out.push_back(r ? "no timeout" : r.error().message());
                           out.push_back(std::to_string(c.idle_connections()) + " idle");
                           (void)co_await ringio::sleep_for(300ms);
                           out.push_back(outcome(co_await c.get(u)));
                           co_return out;
                         }(c, url_of(l, false))));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1], "0 idle");
  EXPECT_EQ(out[2], "200 two");
}

// A request stopped while its large body is being sent: not pooled; the next request
// gets its own answer.
TEST_P(AdversarialHttp, RequestStoppedMidUploadIsNotPooled) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c;
  server_log log;
  auto out = run(against(l, {{read_head(), stall(400), send(ok_one)}, {read_request(), send(ok_two)}}, log, nullptr,
                         [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           auto r = co_await ringio::with_timeout(
                               fetch(c, u, http::method::put, std::string(8 << 20, 'u')), 100ms);
                           out.push_back(r ? outcome(*r) : r.error().message());
                           out.push_back(std::to_string(c.idle_connections()) + " idle");
                           out.push_back(outcome(co_await c.get(u)));
                           co_return out;
                         }(c, url_of(l, false))));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1], "0 idle");
  EXPECT_EQ(out[2], "200 two");
}

// Close-delimited bodies over TLS cut without close_notify, through other paths: the
// response_stream (read_all, read), an HTTP/1.0 answer without Connection, an empty body.
TEST_P(AdversarialHttpTls, TruncationWithoutCloseNotifyOnOtherPaths) {
  struct row {
    std::string head;
    std::string body;
    bool stream;
  };
  const std::vector<row> rows = {
      {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "partial", true},
      {"HTTP/1.0 200 OK\r\n\r\n", "partial", false},
      {"HTTP/1.0 200 OK\r\n\r\n", "partial", true},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "", false},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "", true},
  };
  for (const row& w : rows) {
    auto l = listen_loopback();
    http::client c(trusting_test_ca());
    server_log log;
    std::vector<step> script{read_request(), send(w.head + w.body)};
    auto out = run(
        against(l, {script}, log, &*server_tls_, [](http::client& c, std::string u, bool stream) -> task<std::string> {
          if (!stream) {
            auto r = co_await c.get(u);
            co_return r ? "ok " + r->body : r.error().message();
          }
          auto s = co_await c.stream_request({.url = u});
          if (!s) co_return s.error().message();
          std::string body;
          auto done = co_await s->read_all(body);
          co_return done ? "ok " + body : done.error().message();
        }(c, url_of(l, true), w.stream)));
    EXPECT_EQ(out, http::make_error_code(http::client_errc::truncated_body).message())
        << w.head << (w.stream ? " (stream)" : " (request)") << " body [" << w.body << "]";
  }
}

// Two pooled connections; the first is closed by the server when the next request
// arrives (no answer), the second is fine: the retry must go on a NEW connection.
TEST_P(AdversarialHttp, RetryOpensANewConnectionEvenWithAFreshOnePooled) {
  auto l = listen_loopback();
  http::client c;
  server_log log;
  auto out = run(against(l,
                         {{read_request(), send(ok_one), read_request()},
                          {read_request(), send(ok_one), read_request(), send(ok_one)},
                          {read_request(), send(ok_two)}},
                         log, nullptr, [](http::client& c, std::string u) -> task<std::vector<std::string>> {
                           std::vector<std::string> out;
                           {
                             auto a = co_await c.stream_request({.url = u});
                             auto b = co_await c.stream_request({.url = u});
                             for (auto* s : {&a, &b}) {
                               std::string body;
                               if (*s) (void)co_await (*s)->read_all(body);
                             }
                           }
                           out.push_back(std::to_string(c.idle_connections()) + " pooled");
                           out.push_back(outcome(co_await c.get(u)));
                           co_return out;
                         }(c, url_of(l, false))));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], "2 pooled");
  // Which pooled connection goes first is the client's choice: when it took the good
  // one, there was nothing to retry.
  if (c.stats().stale_retries == 1) {
    EXPECT_EQ(out[1], "200 two") << "the retry did not go on a new connection";
    EXPECT_EQ(c.stats().connections_opened, 3u);
  } else {
    std::printf("note: the fresh pooled connection was used first (%s)\n", out[1].c_str());
  }
}

// 1xx floods through stream_request are capped too.
TEST_P(AdversarialHttp, InterimFloodThroughStreamRequestIsCapped) {
  std::string interim;
  while (interim.size() < 40000) interim += "HTTP/1.1 102 Processing\r\n\r\n";
  auto l = listen_loopback();
  http::client c({.max_head_bytes = 8 * 1024});
  server_log log;
  auto out = run(against(l, {{read_request(), send(interim + ok_one)}}, log, nullptr,
                         [](http::client& c, std::string u) -> task<std::string> {
                           auto s = co_await c.stream_request({.url = u});
                           co_return s ? "status " + std::to_string(s->status()) : s.error().message();
                         }(c, url_of(l, false))));
  EXPECT_EQ(out, http::make_error_code(http::client_errc::head_too_large).message());
}

// The same with a polite server: close_notify after the answer, then the close.
TEST_P(AdversarialHttpTls, UploadRefusedEarlyOverTlsWithCloseNotifyReturnsTheAnswer) {
  auto l = listen_loopback();
  const int small = 4096;
  ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  http::client c(trusting_test_ca());
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  auto r = run(against(l, {{read_head(), send(refused), close_notify(), stall(50)}}, log, &*server_tls_,
                       fetch(c, url_of(l, true), http::method::post, std::string(16 << 20, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
}

// A small upload (fits the socket buffers) refused before its body is read.
TEST_P(AdversarialHttpTls, SmallUploadRefusedEarlyOverTlsReturnsTheAnswer) {
  auto l = listen_loopback();
  http::client c(trusting_test_ca());
  server_log log;
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  auto r = run(against(l, {{read_head(), send(refused), stall(50)}}, log, &*server_tls_,
                       fetch(c, url_of(l, true), http::method::post, std::string(100 << 10, 'u'))));
  EXPECT_EQ(outcome(r), "413 too big");
}

RINGIO_ALL_BACKENDS(AdversarialHttp);
RINGIO_ALL_BACKENDS(AdversarialHttpTls);

}  // namespace
