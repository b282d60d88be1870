// SPDX-License-Identifier: Apache-2.0
// The request parser and the chunked decoder on their own: fields, framing flags,
// incremental input (byte by byte, moved buffers), and the limits.
#include <gtest/gtest.h>

#include <string>

#include "ringio/http/chunked_decoder.hpp"
#include "ringio/http/request_parser.hpp"

using namespace ringio::http;

namespace {

parse_result parse_all(std::string_view text, request& req, std::size_t max = 16 * 1024) {
  request_parser p(max);
  req.clear();
  return p.parse(text, req);
}

TEST(RequestParser, ParsesRequestLineFieldsAndFlags) {
  request req;
  std::string text =
      "POST /a/b?x=1&y HTTP/1.1\r\nHost: example\r\nX-Spaces:   padded value \t\r\ncontent-length: 5\r\n"
      "Connection: keep-alive, Close\r\n\r\nhello";
  auto r = parse_all(text, req);
  ASSERT_EQ(r.state, parse_state::complete);
  EXPECT_EQ(r.size, text.size() - 5);
  EXPECT_EQ(req.method(), method::post);
  EXPECT_EQ(req.target(), "/a/b?x=1&y");
  EXPECT_EQ(req.path(), "/a/b");
  EXPECT_EQ(req.query(), "x=1&y");
  EXPECT_EQ(req.version_minor(), 1);
  EXPECT_EQ(req.headers().size(), 4u);
  EXPECT_EQ(req.header("x-spaces"), "padded value");
  EXPECT_EQ(req.content_length(), 5);
  EXPECT_FALSE(req.keep_alive()) << "close wins";
}

TEST(RequestParser, AbsoluteFormTargetHasAPath) {
  request req;
  ASSERT_EQ(parse_all("GET http://host:8080/p/q?z HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/p/q");
  EXPECT_EQ(req.query(), "z");
  ASSERT_EQ(parse_all("GET http://host HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/");
}

TEST(RequestParser, KeepAliveDefaultsByVersion) {
  request req;
  ASSERT_EQ(parse_all("GET / HTTP/1.0\r\n\r\n", req).state, parse_state::complete);
  EXPECT_FALSE(req.keep_alive());
  ASSERT_EQ(parse_all("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", req).state, parse_state::complete);
  EXPECT_TRUE(req.keep_alive());
  ASSERT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_TRUE(req.keep_alive());
}

TEST(RequestParser, IgnoresEmptyLinesBeforeTheRequestLine) {
  request req;
  auto r = parse_all("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", req);
  ASSERT_EQ(r.state, parse_state::complete);
  EXPECT_EQ(req.method(), method::get);
}

TEST(RequestParser, ByteByByteGivesTheSameResultAsAllAtOnce) {
  std::string text = "GET /x HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n";
  request req;
  request_parser p;
  parse_result r;
  for (std::size_t n = 1; n <= text.size(); ++n) {
    r = p.parse(std::string_view(text).substr(0, n), req);
    if (n < text.size()) {
      ASSERT_EQ(r.state, parse_state::incomplete) << n;
    }
  }
  ASSERT_EQ(r.state, parse_state::complete);
  EXPECT_EQ(r.size, text.size());
  EXPECT_EQ(req.header("B"), "2");
}

TEST(RequestParser, ViewsFollowTheBytesWhenTheyMove) {
  std::string a = "GET /moved HTTP/1.1\r\nHost: h\r\nX: ", b;
  b.reserve(256);
  request req;
  request_parser p;
  ASSERT_EQ(p.parse(a, req).state, parse_state::incomplete);
  b.assign(a);  // the connection moved its buffer
  req.rebase(a.data(), a.size(), b.data());
  a.assign(a.size(), '#');
  b += "y\r\n\r\n";
  ASSERT_EQ(p.parse(b, req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/moved");
  EXPECT_EQ(req.header("host"), "h");
  EXPECT_EQ(req.header("x"), "y");
}

TEST(RequestParser, GarbageIsRefusedBeforeALineEnds) {
  request req;
  auto r = parse_all(std::string("\x16\x03\x01", 3), req);
  EXPECT_EQ(r.state, parse_state::error);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(parse_all("GET / HT", req).state, parse_state::incomplete);
}

TEST(RequestParser, LimitsGive431) {
  request req;
  std::string big = "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(200, 'a') + "\r\n\r\n";
  auto r = parse_all(big, req, 100);
  EXPECT_EQ(r.status, 431);
  r = parse_all("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(200, 'a'), req, 100);  // incomplete and too big
  EXPECT_EQ(r.status, 431);
  std::string fields = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 100; ++i) fields += "F: v\r\n";
  EXPECT_EQ(parse_all(fields + "\r\n", req).status, 431);
}

TEST(RequestParser, StatusForEachKindOfError) {
  request req;
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", req).status, 501);
  EXPECT_EQ(parse_all("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", req).state,
            parse_state::complete);
  EXPECT_EQ(parse_all("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", req).status, 400);
  EXPECT_EQ(parse_all("GET / HTTP/1.1\r\nHost: h\r\n:empty\r\n\r\n", req).status, 400);
}

TEST(RequestParser, HostMustBeAnAuthority) {
  request req;
  for (const char* good :
       {"h", "example.com", "example.com:8080", "127.0.0.1:80", "[::1]", "[::1]:8080", "[2001:db8::7]:65535",
        "[::ffff:192.0.2.1]", "[v1.fe:x]", "a.b-c_d~e!$&'()*+,;=", "%41bc", "h:", ""}) {
    EXPECT_EQ(parse_all(std::string("GET / HTTP/1.1\r\nHost: ") + good + "\r\n\r\n", req).state, parse_state::complete)
        << good;
  }
  for (const char* bad :
       {"a b", "x/y", "x:abc", "x:99999", "x:65536", "x:-1", "x:1:2", "a@b",          "x?y",  "x#y",
        "%zz", "::1", "[::1",  "[::1]x",  "[::g]",   "[]",   "[v1]",  "[::1%25eth0]", "a\"b", "<x>"}) {
    EXPECT_EQ(parse_all(std::string("GET / HTTP/1.1\r\nHost: ") + bad + "\r\n\r\n", req).status, 400) << bad;
  }
  EXPECT_EQ(parse_all("GET / HTTP/1.0\r\nHost: x:abc\r\n\r\n", req).status, 400) << "HTTP/1.0 too";
}

TEST(RequestParser, TargetMustBeInOriginOrAbsoluteForm) {
  request req;
  for (const char* bad : {"GET hello", "GET *", "HEAD *", "GET x:80", "CONNECT x:80", "CONNECT example.com:443",
                          "CONNECT /", "GET http://", "GET http:///p", "GET http://u@h/p", "GET http://h:99999/p",
                          "GET http://h:x/", "GET 1http://h/", "GET ://h/", "GET http:/h/p", "GET ?q"}) {
    EXPECT_EQ(parse_all(std::string(bad) + " HTTP/1.1\r\nHost: h\r\n\r\n", req).status, 400) << bad;
  }
  ASSERT_EQ(parse_all("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.method(), method::options);
  EXPECT_EQ(req.path(), "*");
  ASSERT_EQ(parse_all("GET HTTPS://[::1]:8443/x?y HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/x");
  EXPECT_EQ(req.query(), "y");
  ASSERT_EQ(parse_all("GET http://h?y HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/");
  EXPECT_EQ(parse_all("BREW hello HTTP/1.1\r\nHost: h\r\n\r\n", req).status, 501) << "the method is judged first";
}

TEST(RequestParser, FragmentInTheTargetIs400) {
  request req;
  for (const char* bad : {"GET /#frag", "GET /#", "GET /p?q#f", "GET http://h/p#f", "OPTIONS *#x", "GET #"}) {
    EXPECT_EQ(parse_all(std::string(bad) + " HTTP/1.1\r\nHost: h\r\n\r\n", req).status, 400) << bad;
  }
  ASSERT_EQ(parse_all("GET /%23frag HTTP/1.1\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
  EXPECT_EQ(req.path(), "/%23frag") << "an encoded '#' is part of the path";
}

TEST(RequestParser, HigherHttp1MinorVersionsAreServedAsHttp11) {
  request req;
  for (const char* version : {"HTTP/1.2", "HTTP/1.9"}) {
    ASSERT_EQ(parse_all(std::string("GET / ") + version + "\r\nHost: h\r\n\r\n", req).state, parse_state::complete);
    EXPECT_EQ(req.version_minor(), 1);
    EXPECT_TRUE(req.keep_alive());
    EXPECT_EQ(parse_all(std::string("GET / ") + version + "\r\n\r\n", req).status, 400) << "Host is required as in 1.1";
  }
  for (const char* version : {"HTTP/2.0", "HTTP/3.0", "HTTP/0.9", "HTTP/2.1"})
    EXPECT_EQ(parse_all(std::string("GET / ") + version + "\r\nHost: h\r\n\r\n", req).status, 505) << version;
}

TEST(RequestParser, RequestLineOverTheLimitGives414) {
  request req;
  std::string target = "/" + std::string(200, 'a');
  EXPECT_EQ(parse_all("GET " + target + " HTTP/1.1\r\nHost: h\r\n\r\n", req, 100).status, 414);
  EXPECT_EQ(parse_all("GET " + target, req, 100).status, 414) << "still arriving";
  EXPECT_EQ(
      parse_all("GET /" + std::string(80, 'a') + " HTTP/1.1\r\nHost: h\r\nX: " + std::string(50, 'b'), req, 100).status,
      431)
      << "the request line fits; the fields do not";
}

std::string decode(const std::string& raw, chunked_decoder::status& st, chunked_decoder& d) {
  std::string buf = raw;
  st = d.decode(buf.data(), buf.size());
  return buf.substr(0, d.body_size());
}

TEST(ChunkedDecoder, DecodesInPlaceWithExtensionsAndTrailers) {
  chunked_decoder d;
  chunked_decoder::status st;
  std::string raw = "4;a=b;c=\"q\\\"x\"\r\nWiki\r\n5 ; n\r\npedia\r\n0\r\nT: v\r\n\r\nNEXT";
  EXPECT_EQ(decode(raw, st, d), "Wikipedia");
  EXPECT_EQ(st, chunked_decoder::status::done);
  EXPECT_EQ(d.consumed(), raw.size() - 4) << "stops where the next request begins";
}

TEST(ChunkedDecoder, ByteByByte) {
  std::string raw = "3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
  std::string buf = raw;
  chunked_decoder d;
  auto st = chunked_decoder::status::need_more;
  for (std::size_t n = 1; n <= buf.size(); ++n) {
    st = d.decode(buf.data(), n);
    if (n < buf.size()) {
      ASSERT_EQ(st, chunked_decoder::status::need_more) << n;
    }
  }
  EXPECT_EQ(st, chunked_decoder::status::done);
  EXPECT_EQ(buf.substr(0, d.body_size()), "abc0123456789abcdef");
}

TEST(ChunkedDecoder, RejectsBadFramingAndLimits) {
  for (std::string bad : {"x\r\n", "3 \r\nabc\r\n", "3;\r\nabc\r\n", "3\nabc", "3\r\nabcd\r\n",
                          "3\r\nabc\r\n0\r\nbad\r\n", "fffffffffffffffff\r\n"}) {
    chunked_decoder d;
    chunked_decoder::status st;
    decode(bad, st, d);
    EXPECT_EQ(st, chunked_decoder::status::error) << bad;
    EXPECT_EQ(d.error_status(), 400) << bad;
  }
  chunked_decoder small(4);
  chunked_decoder::status st;
  decode("5\r\nhello\r\n", st, small);
  EXPECT_EQ(small.error_status(), 413);
}

}  // namespace
