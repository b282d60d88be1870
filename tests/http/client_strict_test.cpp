// SPDX-License-Identifier: Apache-2.0
// http::client's strictness against scripted raw servers, on every backend: bodies cut
// short over TLS, credentials on redirects to another origin, transfer codings it
// cannot decode, and the head-size bound over interim responses.
#include <gtest/gtest.h>

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

std::string outcome(const result<http::client_response>& r) {
  return r ? std::to_string(r->status) + " " + r->body : r.error().message();
}

class ClientStrict : public backend_test {};

TEST_P(ClientStrict, CrossOriginRedirectDropsCredentials) {
  auto l = listen_loopback();
  const std::string port = std::to_string(address_of(l).port());
  http::client c({.follow_redirects = true});
  server_log log;
  const std::vector<std::pair<std::string, std::string>> credentials = {
      {"Authorization", "Bearer a"}, {"Proxy-Authorization", "Basic b"}, {"Cookie", "c=1"}, {"X-Other", "kept"}};
  auto out = run(against(
      l,
      {{read_request(), send("HTTP/1.1 302 Found\r\nLocation: /same\r\nContent-Length: 0\r\n\r\n"), read_request(),
        send("HTTP/1.1 302 Found\r\nLocation: http://localhost:" + port + "/other\r\nContent-Length: 0\r\n\r\n")},
       {read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")}},
      log, nullptr, fetch(c, url_of(l, false, "/start"), http::method::get, {}, credentials)));
  EXPECT_EQ(outcome(out), "200 ok");
  ASSERT_EQ(log.heads.size(), 3u);
  for (int i = 0; i < 2; ++i) {  // the same origin: everything sent
    EXPECT_NE(log.heads[i].find("Authorization: Bearer a\r\n"), std::string::npos) << log.heads[i];
    EXPECT_NE(log.heads[i].find("Proxy-Authorization: Basic b\r\n"), std::string::npos) << log.heads[i];
    EXPECT_NE(log.heads[i].find("Cookie: c=1\r\n"), std::string::npos) << log.heads[i];
  }
  const std::string& other = log.heads[2];  // http://localhost:port: another host
  EXPECT_NE(other.find("GET /other HTTP/1.1\r\n"), std::string::npos) << other;
  EXPECT_EQ(other.find("Authorization"), std::string::npos) << other;
  EXPECT_EQ(other.find("Cookie"), std::string::npos) << other;
  EXPECT_NE(other.find("X-Other: kept\r\n"), std::string::npos) << other;
}

TEST_P(ClientStrict, TransferCodingsOtherThanChunkedAreRefused) {
  for (const char* coding : {"gzip, chunked", "chunked, gzip", "gzip", "chunked, chunked", "identity"}) {
    auto l = listen_loopback();
    http::client c;
    server_log log;
    auto r = run(against(l,
                         {{read_request(), send(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + coding +
                                                "\r\n\r\n3\r\nabc\r\n0\r\n\r\n")}},
                         log, nullptr, fetch(c, url_of(l, false))));
    ASSERT_FALSE(r) << coding << ": " << outcome(r);
    EXPECT_EQ(r.error(), http::client_errc::bad_transfer_encoding) << coding << ": " << r.error().message();
  }
}

TEST_P(ClientStrict, InterimResponsesCountTowardsTheHeadLimit) {
  std::string interim;
  while (interim.size() < 20000) interim += "HTTP/1.1 100 Continue\r\n\r\n";
  auto l = listen_loopback();
  http::client c({.max_head_bytes = 16 * 1024});
  server_log log;
  auto r = run(against(l, {{read_request(), send(interim + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")}}, log,
                       nullptr, fetch(c, url_of(l, false))));
  ASSERT_FALSE(r) << outcome(r);
  EXPECT_EQ(r.error(), http::client_errc::head_too_large) << r.error().message();
}

class ClientStrictTls : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    server_tls_ = test_server_tls();
    if (!server_tls_) GTEST_SKIP() << "the openssl command could not make test certificates";
  }
  std::optional<ringio::tls::context> server_tls_;
};

// A body delimited by the end of the connection, cut without close_notify, is a
// truncation unless the client opts in; with close_notify it is whole.
TEST_P(ClientStrictTls, CloseDelimitedBodyWithoutCloseNotifyIsTruncated) {
  const std::string head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
  struct row {
    bool close_notify;
    bool accept;
    std::string expected;
  };
  for (const row& w :
       {row{false, false, "truncated"}, row{false, true, "200 partial"}, row{true, false, "200 partial"}}) {
    auto l = listen_loopback();
    http::client_options o = trusting_test_ca();
    o.accept_tls_truncation = w.accept;
    http::client c(o);
    server_log log;
    std::vector<step> script{read_request(), send(head + "partial")};
    if (w.close_notify) script.push_back(close_notify());
    auto r = run(against(l, {script}, log, &*server_tls_, fetch(c, url_of(l, true))));
    if (w.expected == "truncated") {
      ASSERT_FALSE(r) << outcome(r);
      EXPECT_EQ(r.error(), http::client_errc::truncated_body) << r.error().message();
    } else {
      EXPECT_EQ(outcome(r), w.expected);
    }
  }
}

RINGIO_ALL_BACKENDS(ClientStrict);
RINGIO_ALL_BACKENDS(ClientStrictTls);

}  // namespace
