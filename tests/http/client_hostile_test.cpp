// SPDX-License-Identifier: Apache-2.0
// http::client against a corpus of hostile scripted servers on 127.0.0.1, plain TCP
// and TLS, on every backend: malformed heads, stalls, truncations, redirects, floods
// of interim responses, and pooled connections the server has closed or spoken on.
// Each case names the outcome the client must reach (a status and body, or an error),
// at least as strict as curl where curl refuses, and must reach it quickly: the
// client's timeouts are short, and the server stops once the client is done.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
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

constexpr std::uint64_t any = ~std::uint64_t{0};

struct hostile_case {
  std::string name;
  std::vector<std::vector<step>> scripts;  // one per connection, in accept order
  std::string expected;                    // "STATUS BODY" of a success; empty: none accepted
  std::vector<std::error_code> errors{};   // the errors accepted (any of them); empty: none
  bool tls = false;
  int warmup = 0;       // GETs before the request checked (to pool a connection)
  int wait_closed = 0;  // before the request checked, the connections the server must have closed
  http::method method = http::method::get;
  std::string body{};
  std::string request_line{};  // when set, the last request the server read starts with it
  std::uint64_t opened = any;  // connections the client opened in all
  std::uint64_t stale_retries = any;
  std::size_t idle = ~std::size_t{0};  // idle connections at the end
  bool follow_redirects = false;
  bool plain_server = false;  // a TLS case whose server does not speak TLS
  int wait_marks = 0;         // before the request checked, the mark() steps the server must have passed
};

std::string ok(const std::string& body, const char* extra = "") {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}
std::string redirect(const std::string& location) {
  return "HTTP/1.1 302 Found\r\nLocation: " + location + "\r\nContent-Length: 0\r\n\r\n";
}
std::error_code ec(http::client_errc e) { return make_error_code(e); }
std::error_code ec(std::errc e) { return std::make_error_code(e); }

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<hostile_case> corpus() {
  using http::client_errc;
  std::vector<hostile_case> c;
  // Malformed heads.
  c.push_back(
      {"not HTTP", {{read_request(), send("SSH-2.0-OpenSSH\r\n\r\n")}}, "", {ec(client_errc::bad_status_line)}});
  c.push_back({"four-digit status",
               {{read_request(), send("HTTP/1.1 2000 OK\r\n\r\n")}},
               "",
               {ec(client_errc::bad_status_line)}});
  c.push_back({"HTTP/2 status line",
               {{read_request(), send("HTTP/2 200 OK\r\n\r\n")}},
               "",
               {ec(client_errc::bad_status_line)}});
  c.push_back({"space before colon",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok")}},
               "",
               {ec(client_errc::bad_header)}});
  c.push_back({"obs-fold",
               {{read_request(), send("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\nok")}},
               "",
               {ec(client_errc::bad_header)}});
  c.push_back({"NUL in a value",
               {{read_request(), send(std::string("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27))}},
               "",
               {ec(client_errc::bad_header)}});
  c.push_back({"bare LF",
               {{read_request(), send("HTTP/1.1 200 OK\nContent-Length: 2\n\nok")}},
               "",
               {ec(client_errc::bad_header)}});
  c.push_back({"conflicting Content-Length",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk")}},
               "",
               {ec(client_errc::bad_content_length)}});
  c.push_back({"signed Content-Length",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok")}},
               "",
               {ec(client_errc::bad_content_length)}});
  c.push_back({"chunked wins over Content-Length",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "3\r\nabc\r\n0\r\n\r\n")}},
               "200 abc",
               {},
               false,
               0,
               0,
               http::method::get,
               {},
               {},
               any,
               any,
               0});
  c.push_back(
      {"gzip transfer coding",
       {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")}},
       "",
       {ec(client_errc::bad_transfer_encoding)}});
  c.push_back({"chunked on HTTP/1.0",
               {{read_request(), send("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")}},
               "",
               {ec(client_errc::bad_transfer_encoding)}});
  c.push_back({"endless field",
               {{read_request(), send("HTTP/1.1 200 OK\r\nX-Fill: "), flood(std::string(1000, 'a'))}},
               "",
               {ec(client_errc::head_too_large)}});
  c.push_back({"endless fields",
               {{read_request(), send("HTTP/1.1 200 OK\r\n"), flood(repeat("X-Fill: a\r\n", 100))}},
               "",
               {ec(client_errc::head_too_large)}});
  c.push_back({"too many fields",
               {{read_request(), send("HTTP/1.1 200 OK\r\n" + repeat("X: y\r\n", 150) + "\r\n")}},
               "",
               {ec(client_errc::head_too_large)}});
  c.push_back({"bad chunk size",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")}},
               "",
               {ec(client_errc::bad_chunk)}});
  c.push_back({"chunk size overflow",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n")}},
               "",
               {ec(client_errc::bad_chunk)}});
  c.push_back({"chunk without its CRLF",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n")}},
               "",
               {ec(client_errc::bad_chunk)}});
  c.push_back({"body over max_body",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\nok")}},
               "",
               {ec(client_errc::body_too_large)}});
  c.push_back({"excess bytes after the body",
               {{read_request(), send(ok("abc") + "EXTRA"), stall(5000)}},
               "200 abc",
               {},
               false,
               0,
               0,
               http::method::get,
               {},
               {},
               any,
               any,
               0});
  c.push_back({"body on a 204",
               {{read_request(), send("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello")}},
               "204 ",
               {},
               false,
               0,
               0,
               http::method::get,
               {},
               {},
               any,
               any,
               0});
  // Stalls.
  c.push_back({"no answer", {{read_request(), stall(5000)}}, "", {ec(client_errc::head_timeout)}});
  c.push_back({"half a head",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-"), stall(5000)}},
               "",
               {ec(client_errc::head_timeout)}});
  c.push_back({"slow head drip",
               {{read_request(), send("HTTP/1.1 200 OK\r\n"), stall(300), send("X: 1\r\n"), stall(300),
                 send("X: 2\r\n"), stall(5000)}},
               "",
               {ec(client_errc::head_timeout)}});
  c.push_back({"body stalls",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), stall(5000)}},
               "",
               {ec(client_errc::body_timeout)}});
  c.push_back(
      {"chunked body stalls",
       {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"), stall(5000)}},
       "",
       {ec(client_errc::body_timeout)}});
  // Truncations.
  c.push_back({"closed before answering", {{read_request()}}, "", {ec(client_errc::connection_closed)}});
  c.push_back({"closed mid-head",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Le")}},
               "",
               {ec(client_errc::connection_closed)}});
  c.push_back({"reset before answering", {{read_request(), reset()}}, "", {ec(std::errc::connection_reset)}});
  c.push_back({"Content-Length body cut",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")}},
               "",
               {ec(client_errc::truncated_body)}});
  c.push_back({"chunked body cut",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")}},
               "",
               {ec(client_errc::truncated_body)}});
  c.push_back({"chunked body without its last chunk",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")}},
               "",
               {ec(client_errc::truncated_body)}});
  c.push_back({"reset mid-body",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), stall(50), reset()}},
               "",
               {ec(std::errc::connection_reset)}});
  c.push_back({"body until close", {{read_request(), send("HTTP/1.1 200 OK\r\n\r\nall of it")}}, "200 all of it"});
  c.push_back({"TLS: body until close cut without close_notify",
               {{read_request(), send("HTTP/1.1 200 OK\r\n\r\nall of")}},
               "",
               {ec(client_errc::truncated_body)},
               true});
  c.push_back({"TLS: Content-Length body cut without close_notify",
               {{read_request(), send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")}},
               "",
               {ec(client_errc::truncated_body)},
               true});
  c.push_back({"TLS: chunked body cut without close_notify",
               {{read_request(), send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")}},
               "",
               {ec(client_errc::truncated_body)},
               true});
  c.push_back({"TLS: body until close_notify",
               {{read_request(), send("HTTP/1.1 200 OK\r\n\r\nall of it"), close_notify()}},
               "200 all of it",
               {},
               true});
  c.push_back({"TLS: not TLS at all", {{send(ok("plain")), stall(5000)}}, "", {}, true});
  c.back().plain_server = true;
  // Redirects.
  c.push_back({"redirect loop",
               {{read_request(), send(redirect("/")), read_request(), send(redirect("/")), read_request(),
                 send(redirect("/")), read_request(), send(redirect("/"))}},
               "",
               {ec(client_errc::too_many_redirects)}});
  c.back().follow_redirects = true;
  c.push_back({"redirect to ftp",
               {{read_request(), send(redirect("ftp://127.0.0.1/x"))}},
               "",
               {ec(client_errc::bad_redirect)}});
  c.back().follow_redirects = true;
  c.push_back({"redirect to http: without //",
               {{read_request(), send(redirect("http:x"))}},
               "",
               {ec(client_errc::bad_redirect)}});
  c.back().follow_redirects = true;
  c.push_back(
      {"redirect to a bad URL", {{read_request(), send(redirect("http://[::1/x"))}}, "", {ec(client_errc::bad_url)}});
  c.back().follow_redirects = true;
  c.push_back({"redirect climbing above the root",
               {{read_request(), send(redirect("../../../x/./y/../z?q")), read_request(), send(ok("there"))}},
               "200 there",
               {},
               false,
               0,
               0,
               http::method::get,
               {},
               "GET /x/z?q HTTP/1.1\r\n"});
  c.back().follow_redirects = true;
  // Interim responses.
  c.push_back({"a few interim responses",
               {{read_request(), send(repeat("HTTP/1.1 100 Continue\r\n\r\n", 10) +
                                      "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok("fine"))}},
               "200 fine"});
  c.push_back({"endless interim responses",
               {{read_request(), flood(repeat("HTTP/1.1 100 Continue\r\n\r\n", 40))}},
               "",
               {ec(client_errc::head_too_large)}});
  c.push_back({"TLS: endless interim responses",
               {{read_request(), flood(repeat("HTTP/1.1 100 Continue\r\n\r\n", 40))}},
               "",
               {ec(client_errc::head_too_large)},
               true});
  // Pooled connections the server closed or spoke on.
  c.push_back({"pooled: closed while idle",
               {{read_request(), send(ok("one"))}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               false,
               1,
               1,
               http::method::get,
               {},
               {},
               2,
               0});
  c.push_back({"pooled: unsolicited answer while idle",
               {{read_request(), send(ok("one")), stall(50),
                 send("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"), mark(), stall(5000)},
                {read_request(), send(ok("two"))}},
               "200 two",
               {},
               false,
               1,
               0,
               http::method::get,
               {},
               {},
               2,
               0});
  c.back().wait_marks = 1;
  c.push_back({"pooled: closed as the request arrives",
               {{read_request(), send(ok("one")), read_request()}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               false,
               1,
               0,
               http::method::get,
               {},
               {},
               2,
               1});
  c.push_back({"pooled: reset as the request arrives",
               {{read_request(), send(ok("one")), read_request(), reset()}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               false,
               1,
               0,
               http::method::get,
               {},
               {},
               2,
               1});
  c.push_back({"pooled: POST is not retried",
               {{read_request(), send(ok("one")), read_request()}},
               "",
               {ec(client_errc::connection_closed)},
               false,
               1,
               0,
               http::method::post,
               "x",
               {},
               1,
               0});
  c.push_back({"TLS pooled: close_notify while idle",
               {{read_request(), send(ok("one")), stall(50), close_notify()}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               true,
               1,
               1,
               http::method::put,
               "data",
               {},
               2,
               0});
  c.push_back({"TLS pooled: closed without close_notify while idle",
               {{read_request(), send(ok("one")), stall(50)}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               true,
               1,
               1,
               http::method::put,
               "data",
               {},
               2,
               0});
  c.push_back({"TLS pooled: closed as the request arrives",
               {{read_request(), send(ok("one")), read_request()}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               true,
               1,
               0,
               http::method::get,
               {},
               {},
               2,
               1});
  c.push_back({"TLS pooled: reset as the request arrives",
               {{read_request(), send(ok("one")), read_request(), reset()}, {read_request(), send(ok("two"))}},
               "200 two",
               {},
               true,
               1,
               0,
               http::method::get,
               {},
               {},
               2,
               1});
  // An upload the server refuses before reading it.
  const std::string refused = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big";
  c.push_back({"upload refused early",
               {{read_head(), send(refused)}},
               "413 too big",
               {},
               false,
               0,
               0,
               http::method::post,
               std::string(16 << 20, 'u')});
  // Over TLS the stream reports the failed send before the answer can be read: the
  // send's error, never a timeout.
  c.push_back({"TLS: upload refused early",
               {{read_head(), send(refused)}},
               "413 too big",
               {ec(std::errc::connection_reset), ec(std::errc::broken_pipe)},
               true,
               0,
               0,
               http::method::post,
               std::string(16 << 20, 'u')});
  return c;
}

class ClientHostile : public backend_test {};

task<result<http::client_response>> play_case(http::client& c, const hostile_case& k, std::string u, server_log& log) {
  for (int i = 0; i < k.warmup; ++i) {
    auto r = co_await fetch(c, u);
    if (!r) co_return r;
  }
  if (k.wait_closed > 0) (void)co_await closed_at_least(log, k.wait_closed);
  if (k.wait_marks > 0) (void)co_await marked_at_least(log, k.wait_marks);
  auto r = co_await fetch(c, u, k.method, k.body);
  co_return r;
}

TEST_P(ClientHostile, Corpus) {
  const std::optional<ringio::tls::context> server_tls = test_server_tls();
  for (const hostile_case& k : corpus()) {
    if (k.tls && !server_tls) continue;  // no test certificates: the TLS cases cannot run
    SCOPED_TRACE(k.name);
    auto l = listen_loopback();
    const int small = 4096;  // so that a refused upload cannot fit in the socket buffers
    ::setsockopt(l.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    http::client_options o = trusting_test_ca();
    o.follow_redirects = k.follow_redirects;
    o.max_redirects = 2;
    o.connect_timeout = 2s;
    o.tls_handshake_timeout = 2s;
    o.head_timeout = 800ms;
    o.body_timeout = 800ms;
    http::client c(o);
    server_log log;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run(against(l, k.scripts, log, k.tls && !k.plain_server ? &*server_tls : nullptr,
                         play_case(c, k, url_of(l, k.tls), log)));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    if (k.plain_server) {
      EXPECT_FALSE(r);  // a TLS error of OpenSSL's, whichever
      continue;
    }
    if (r) {
      EXPECT_EQ(std::to_string(r->status) + " " + r->body, k.expected);
    } else {
      bool listed = false;
      for (const std::error_code& e : k.errors) listed = listed || r.error() == e.default_error_condition();
      EXPECT_TRUE(listed) << r.error().message();
    }
    if (!k.request_line.empty()) {
      ASSERT_FALSE(log.heads.empty());
      EXPECT_TRUE(log.heads.back().starts_with(k.request_line)) << log.heads.back();
    }
    if (k.opened != any) {
      EXPECT_EQ(c.stats().connections_opened, k.opened);
    }
    if (k.stale_retries != any) {
      EXPECT_EQ(c.stats().stale_retries, k.stale_retries);
    }
    if (k.idle != ~std::size_t{0}) {
      EXPECT_EQ(c.idle_connections(), k.idle);
    }
  }
}

RINGIO_ALL_BACKENDS(ClientHostile);

}  // namespace
