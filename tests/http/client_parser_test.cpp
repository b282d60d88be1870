// SPDX-License-Identifier: Apache-2.0
// The client's parsers without sockets: URLs, Location resolution, response heads and
// chunked bodies (split at every byte).
#include <gtest/gtest.h>

#include <string>

#include "ringio/http/chunked_reader.hpp"
#include "ringio/http/client_error.hpp"
#include "ringio/http/response_head.hpp"
#include "ringio/http/url.hpp"

namespace {

namespace http = ringio::http;

TEST(ClientUrl, ParsesTheUsualForms) {
  auto u = http::parse_url("http://example.com/a/b?x=1#frag");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/a/b?x=1");
  auto s = http::parse_url("HTTPS://Example.com:8443");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->tls);
  EXPECT_EQ(s->port, 8443);
  EXPECT_TRUE(s->explicit_port);
  EXPECT_EQ(s->target, "");
  auto v6 = http::parse_url("http://[::1]:8080?q");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->ipv6_literal);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8080);
  EXPECT_EQ(v6->target, "?q");
  EXPECT_TRUE(http::parse_url("http://h/%41%2f"));
  for (const char* bad :
       {"", "http:/x", "mailto:x", "http://", "http://a@b/", "http://h:0/", "http://h:65536/", "http://h:/",
        "http://[::1", "http://[::1]x/", "http://h_/\x01", "http://h/\xc3\xa9", "http://h/%4"}) {
    auto r = http::parse_url(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error(), http::client_errc::bad_url) << bad;
    }
  }
}

TEST(ClientUrl, ResolvesLocations) {
  auto base = http::parse_url("http://h:81/dir/page?x=1");
  ASSERT_TRUE(base);
  EXPECT_EQ(*http::resolve_location(*base, "https://other/p"), "https://other/p");
  EXPECT_EQ(*http::resolve_location(*base, "//other:9/p"), "http://other:9/p");
  EXPECT_EQ(*http::resolve_location(*base, "/root"), "http://h:81/root");
  EXPECT_EQ(*http::resolve_location(*base, "next"), "http://h:81/dir/next");
  EXPECT_EQ(*http::resolve_location(*base, "?y=2"), "http://h:81/dir/page?y=2");
  EXPECT_FALSE(http::resolve_location(*base, ""));
  EXPECT_FALSE(http::resolve_location(*base, "ftp://x/"));
}

// RFC 3986 section 5.4: the reference resolution examples against its base URI.
TEST(ClientUrl, ResolvesTheExamplesOfRfc3986) {
  auto base = http::parse_url("http://a/b/c/d;p?q");
  ASSERT_TRUE(base);
  const std::pair<const char*, const char*> rows[] = {
      // 5.4.1 normal examples ("g:h" names another scheme: refused below)
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
      // 5.4.2 abnormal examples
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
      // absolute references lose their dot segments too
      {"http://x/a/./b/../c", "http://x/a/c"},
      {"HTTPS://x:8/../p?q", "HTTPS://x:8/p?q"},
  };
  for (const auto& [reference, expected] : rows) {
    auto r = http::resolve_location(*base, reference);
    ASSERT_TRUE(r) << reference;
    EXPECT_EQ(*r, expected) << reference;
  }
  // "g:h" (another scheme) and "http:g" (http without an authority, read strictly)
  // name nothing the client can fetch; "" would be the base itself, a redirect loop.
  for (const char* refused : {"g:h", "http:g", ""}) {
    auto r = http::resolve_location(*base, refused);
    ASSERT_FALSE(r) << refused;
    EXPECT_EQ(r.error(), http::client_errc::bad_redirect) << refused;
  }
}

TEST(ClientResponseHead, FramingRules) {
  struct row {
    const char* text;
    bool head_request;
    http::body_framing framing;
    bool keep_alive;
  };
  const row rows[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false, http::body_framing::content_length, true},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", false, http::body_framing::content_length, true},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, http::body_framing::none, true},
      {"HTTP/1.1 204 No Content\r\n\r\n", false, http::body_framing::none, true},
      {"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, http::body_framing::none, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", false, http::body_framing::chunked, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", true, http::body_framing::none, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", false, http::body_framing::chunked,
       false},
      {"HTTP/1.1 200 OK\r\n\r\n", false, http::body_framing::until_close, false},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false, http::body_framing::none, false},
      {"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", false, http::body_framing::content_length, false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n", false,
       http::body_framing::content_length, true},
      {"HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\n", false, http::body_framing::content_length, true},
  };
  for (const row& r : rows) {
    http::response_head head;
    auto n = http::parse_response_head(r.text, r.head_request, head);
    ASSERT_TRUE(n) << r.text << n.error().message();
    EXPECT_EQ(*n, std::string_view(r.text).size()) << r.text;
    EXPECT_EQ(head.framing, r.framing) << r.text;
    EXPECT_EQ(head.keep_alive, r.keep_alive) << r.text;
  }
}

TEST(ClientResponseHead, RejectsWhatIsMalformed) {
  const std::pair<const char*, http::client_errc> rows[] = {
      {"HTTP/2 200 OK\r\n\r\n", http::client_errc::bad_status_line},
      {"HTTP/1.1 20 OK\r\n\r\n", http::client_errc::bad_status_line},
      {"HTTP/1.1 099 X\r\n\r\n", http::client_errc::bad_status_line},
      {"HTTP/1.1 200OK\r\n\r\n", http::client_errc::bad_status_line},
      {"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nA: b\r\n\tc\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n", http::client_errc::bad_header},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", http::client_errc::bad_content_length},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", http::client_errc::bad_content_length},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", http::client_errc::bad_content_length},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", http::client_errc::bad_content_length},
      {"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
       http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
       http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", http::client_errc::bad_transfer_encoding},
      {"HTTP/1.1 200 OK\nA: b\n\n", http::client_errc::bad_header},
  };
  for (const auto& [text, expected] : rows) {
    http::response_head head;
    auto n = http::parse_response_head(text, false, head);
    ASSERT_FALSE(n) << text;
    EXPECT_EQ(n.error(), expected) << text;
  }
  http::response_head head;
  EXPECT_EQ(*http::parse_response_head("HTTP/1.1 200 OK\r\nA: b\r\n", false, head), 0u);  // incomplete
  std::string huge = "HTTP/1.1 200 OK\r\n" + std::string(20000, 'a');
  auto too_large = http::parse_response_head(huge, false, head, 16 * 1024);
  ASSERT_FALSE(too_large);
  EXPECT_EQ(too_large.error(), http::client_errc::head_too_large);
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 150; ++i) many += "F" + std::to_string(i) + ": v\r\n";
  many += "\r\n";
  auto too_many = http::parse_response_head(many, false, head);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error(), http::client_errc::head_too_large);
}

// Decodes `raw` fed in two pieces split at `split`, into an output buffer of `out_size`.
ringio::result<std::string> decode_split(std::string_view raw, std::size_t split, std::size_t out_size) {
  http::chunked_reader reader;
  std::string body;
  std::string out(out_size, '\0');
  std::string pending;
  for (std::string_view piece : {raw.substr(0, split), raw.substr(split)}) {
    pending.append(piece);
    for (;;) {
      std::size_t produced = 0;
      auto used = reader.decode(pending, std::span<char>(out.data(), out.size()), produced);
      if (!used) return ringio::unexpected(used.error());
      body.append(out.data(), produced);
      pending.erase(0, *used);
      if (reader.done() || (produced == 0 && pending.empty()) || (*used == 0 && produced == 0)) break;
    }
  }
  if (!reader.done()) return ringio::unexpected(std::make_error_code(std::errc::resource_unavailable_try_again));
  return body;
}

TEST(ClientChunkedReader, DecodesAtEverySplitAndBufferSize) {
  const std::string raw = "5;name=value\r\nhello\r\n1A\r\n abcdefghijklmnopqrstuvwxy\r\n0\r\nT: 1\r\nU: 2\r\n\r\n";
  for (std::size_t split = 0; split <= raw.size(); ++split) {
    for (std::size_t out_size : {1u, 3u, 64u}) {
      auto body = decode_split(raw, split, out_size);
      ASSERT_TRUE(body) << split << " " << out_size << " " << body.error().message();
      EXPECT_EQ(*body, "hello abcdefghijklmnopqrstuvwxy") << split;
    }
  }
}

TEST(ClientChunkedReader, RejectsBadFraming) {
  for (const char* raw : {"x\r\n", "5\r\nhelloX\r\n", "5\nhello\r\n", "\r\n", "0\r\n folded: x\r\n\r\n",
                          "0\r\nNoColon\r\n\r\n", "1234567890abcdef0\r\n", "5\r\nhello\r\n0\r\n\n"}) {
    auto body = decode_split(raw, 0, 64);
    ASSERT_FALSE(body) << raw;
    EXPECT_EQ(body.error(), http::client_errc::bad_chunk) << raw;
  }
}

}  // namespace
