// SPDX-License-Identifier: Apache-2.0
// Differential test: ringio's request parser against Boost.Beast's on a corpus of
// valid and invalid requests, hand-written and mutated. Where they disagree the
// difference must be one of ringio's documented, deliberate ones (docs/http.md);
// anything else fails. Both parsers see every input whole; ringio also byte by byte.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "http/parse_outcome.hpp"

using namespace ringio_test;

namespace {

const std::vector<std::string> valid_seeds = {
    "GET / HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: wrk\r\n\r\n",
    "GET /a/b/c?x=1&y=%20z HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\n\r\n",
    "GET / HTTP/1.0\r\n\r\n",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\nUser-Agent: ApacheBench/2.3\r\n\r\n",
    "HEAD /index.html HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"abc\"\r\n\r\n",
    "POST /form HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\n"
    "a=1&b=2&c=3",
    "PUT /f HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n",
    "POST /t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\nX-Sum: 1\r\n\r\n",
    "DELETE /item/7 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET http://example.com/p?q HTTP/1.1\r\nHost: example.com\r\n\r\n",
    "PATCH /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{}",
    "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=b; c=d\r\nX-Empty:\r\nX-Tab:\tv\t\r\n\r\n",
    "GET /%E2%82%AC HTTP/1.1\r\nHost: h\r\nAccept-Language: en-US,en;q=0.9\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "GET / HTTP/1.1\r\nhost: h\r\nX-UTF8: \xc3\xa9t\xc3\xa9\r\n\r\n",
    "TRACE / HTTP/1.1\r\nHost: h\r\nMax-Forwards: 0\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"q\\\"x\";b\r\nz\r\n0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
    // Beast refuses versions above 1.1; ringio serves HTTP/1.2-1.9 as 1.1 (RFC 9110 2.5).
    "GET / HTTP/1.2\r\nHost: h\r\n\r\n",
};

const std::vector<std::string> invalid_seeds = {
    "GET / HTTP/1.1\nHost: h\n\n",
    "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET / HTTP/1.1 \r\nHost: h\r\n\r\n",
    " GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET / HTTP/1.1\r\nHost : h\r\n\r\n",
    "GET / HTTP/1.1\r\n Host: h\r\n\r\n",
    "GET / HTTP/1.1\r\n:h\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\x01\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\x7f\r\n\r\n",
    "GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;\r\nabc\r\n0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nbad trailer\r\n\r\n",
    "GET / HTTP/2.0\r\nHost: h\r\n\r\n",
    "GET / http/1.1\r\nHost: h\r\n\r\n",
    // Beast accepts these; ringio refuses what it cannot serve or what is no authority.
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "GET hello HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET * HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: x:99999\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: x/y\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
};

// Whether a quoted chunk-extension value in the body holds a control character (Beast
// lets a bare LF or a NUL through there: a request-smuggling vector).
bool control_in_quoted_extension(const std::string& in) {
  std::size_t body = in.find("\r\n\r\n");
  bool quoted = false;
  for (std::size_t i = body == std::string::npos ? in.size() : body + 4; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c == '"') quoted = !quoted;
    else if (quoted && c == '\\') ++i;
    else if (quoted && ((c < 0x20 && c != '\t') || c == 0x7f)) return true;
  }
  return false;
}

// Whether `a` breaks RFC 3986's host [":" port] (reg-name or bracketed IP literal, a
// port up to 65535), judged independently of the parser. An absolute-form target must
// name a host; a Host field may be empty.
bool bad_authority(std::string_view a, bool host_required) {
  std::string_view host = a, port;
  if (a.starts_with('[')) {
    auto close = a.find(']');
    if (close == std::string_view::npos) return true;
    std::string inside(a.substr(1, close - 1));
    in6_addr addr{};
    if (!inside.starts_with('v') && inet_pton(AF_INET6, inside.c_str(), &addr) != 1) return true;
    if (close + 1 < a.size() && a[close + 1] != ':') return true;
    port = close + 1 < a.size() ? a.substr(close + 2) : std::string_view{};
  } else {
    auto colon = a.find(':');
    host = a.substr(0, colon);
    port = colon == std::string_view::npos ? std::string_view{} : a.substr(colon + 1);
    for (char c : host)
      if (!std::isalnum(static_cast<unsigned char>(c)) &&
          std::string_view("-._~!$&'()*+,;=%").find(c) == std::string_view::npos)
        return true;
  }
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return true;
  if (!port.empty() && std::stoi(std::string(port)) > 65535) return true;
  return host_required && host.empty();
}

// Whether ringio serves no request with this method and target: only origin form
// ("/p"), absolute form ("scheme://authority/p") and "*" for OPTIONS are served;
// CONNECT (authority form) is refused, since ringio opens no tunnels.
bool unserved_target(const std::string& method, std::string_view target) {
  if (method == "CONNECT") return true;
  if (target == "*") return method != "OPTIONS";
  std::string_view path = target.substr(0, target.find('?'));
  if (path.starts_with('/')) return false;
  auto sep = path.find("://");
  if (sep == std::string_view::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(path[0]))) return true;
  for (char c : path.substr(0, sep))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return true;
  std::string_view rest = path.substr(sep + 3);
  return bad_authority(rest.substr(0, rest.find('/')), true);
}

// Whether the request line asks for HTTP/1.2 to HTTP/1.9.
bool higher_http1_minor(const std::string& in) {
  std::string line = in.substr(0, in.find("\r\n"));
  auto v = line.rfind(" HTTP/1.");
  return v != std::string::npos && v + 9 == line.size() && line[v + 8] >= '2' && line[v + 8] <= '9';
}

// Every documented way ringio deliberately differs from Beast; returns the rule's name.
const char* explain(const std::string& in, const parse_outcome& beast, const parse_outcome& ours, int depth = 0) {
  using k = parse_outcome;
  if ((beast.kind == k::accepted || beast.head_complete) && ours.kind == k::rejected) {
    std::string te;
    for (const auto& f : beast.fields)
      if (ringio::http::iequals(f.first, "transfer-encoding")) te += (te.empty() ? "" : ",") + f.second;
    std::string head = in.substr(0, in.find("\r\n\r\n"));
    if (ours.status == 501 && ringio::http::parse_method(beast.method) == ringio::http::method::unknown)
      return "unknown or lower-case method: 501";
    if (ours.status == 400 && beast.version == 11 && !beast.has_field("host")) return "HTTP/1.1 without Host: 400";
    if (ours.status == 400 && beast.count_field("host") > 1) return "several Host fields: 400";
    if (ours.status == 400 && (head.find("\r\n ") != std::string::npos || head.find("\r\n\t") != std::string::npos))
      return "obs-fold: 400";
    if ((ours.status == 400 || ours.status == 501) && !te.empty() &&
        (beast.version == 10 || !ringio::http::iequals(te, "chunked")))
      return "transfer coding other than a single chunked, or from HTTP/1.0";
    for (const auto& f : beast.fields)
      if (ours.status == 400 && ringio::http::iequals(f.first, "content-length") &&
          f.second.find(',') != std::string::npos)
        return "Content-Length as a list: 400";
    if (ours.status == 417 && beast.has_field("expect")) return "expectation other than 100-continue: 417";
    // Beast accepts such an extension, or waits for the quote to close.
    if (ours.status == 400 && control_in_quoted_extension(in))
      return "control character in a quoted chunk extension: 400";
    if (ours.status == 400 && beast.target.find('#') != std::string::npos) return "fragment in the target: 400";
    if (ours.status == 400 && unserved_target(beast.method, beast.target))
      return "target in neither origin nor absolute form, \"*\" but for OPTIONS, or CONNECT: 400";
    for (const auto& f : beast.fields)
      if (ours.status == 400 && ringio::http::iequals(f.first, "host") && bad_authority(f.second, false))
        return "Host that is no host[:port]: 400";
  }
  if (beast.kind == k::rejected && beast.error == "bad version" && ours.kind == k::accepted && higher_http1_minor(in))
    return "HTTP/1.2 to 1.9 served as HTTP/1.1";
  if (beast.kind == k::rejected && ours.kind != k::rejected) {
    if (in.starts_with("\r\n") && beast.error == "bad method") return "empty lines before the request line ignored";
    auto has_any = [](std::string_view s, std::string_view set) { return s.find_first_of(set) != s.npos; };
    if (beast.error == "bad target" && has_any(ours.target, "\"<>\\^`{|}\x80\x81\xff"))
      return "any visible ASCII or obs-text in the target";
    for (const auto& f : ours.fields)
      if (beast.error == "bad field" && has_any(f.first, "!#$%&'*+.^_`|~")) return "field names with every tchar";
  }
  // Each parser rejects at its own moment: ringio when a line is complete, Beast at a
  // bad byte or only after more input (all 8 bytes of a version, the whole head).
  // Completed with more bytes, both must reject, or differ by a rule above.
  if (depth == 0 && (beast.kind == k::incomplete) != (ours.kind == k::incomplete)) {
    for (const std::string& pad : {std::string("\r\n\r\n"), "\r\n\r\n\r\n" + std::string(64, 'x')}) {
      auto b2 = beast_parse(in + pad), o2 = ringio_parse(in + pad);
      if (ours.kind == k::rejected && (o2.kind != k::rejected || o2.status != ours.status)) continue;
      if (beast.kind == k::rejected && b2.kind != k::rejected) continue;
      if (b2.kind == k::rejected && o2.kind == k::rejected) return "rejected at different bytes of the same input";
      if (const char* rule = explain(in + pad, b2, o2, 1)) return rule;
    }
  }
  return nullptr;
}

std::vector<std::string> mutants(std::size_t count) {
  static const char alphabet[] = {' ', '\r', '\n', ':',    '\t',   '\0', 'a', '0',
                                  '-', ';',  '"',  '\x80', '\x7f', ',',  'Z', '9'};
  std::mt19937_64 rng(20240917);
  std::vector<std::string> all = valid_seeds, out;
  all.insert(all.end(), invalid_seeds.begin(), invalid_seeds.end());
  for (std::size_t i = 0; i < count; ++i) {
    std::string s = all[rng() % all.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      std::size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[at] = alphabet[rng() % sizeof alphabet];
          break;
        case 1:
          s.erase(at, 1 + rng() % 3);
          break;
        case 2:
          s.insert(at, 1, alphabet[rng() % sizeof alphabet]);
          break;
        case 3:
          s.insert(at, s.substr(at, 1 + rng() % 8));
          break;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

void compare(const std::string& in, std::map<std::string, int>& explained) {
  parse_outcome beast = beast_parse(in), ours = ringio_parse(in);
  if (beast.kind == ours.kind && beast.kind != parse_outcome::accepted) return;
  if (beast.kind == parse_outcome::accepted && ours.kind == parse_outcome::accepted) {
    EXPECT_EQ(ours.method, beast.method);
    EXPECT_EQ(ours.target, beast.target);
    EXPECT_EQ(ours.version, beast.version);
    EXPECT_EQ(ours.fields, beast.fields);
    EXPECT_EQ(ours.body, beast.body);
    EXPECT_EQ(ours.consumed, beast.consumed);
    return;
  }
  const char* rule = explain(in, beast, ours);
  if (rule == nullptr) {
    ADD_FAILURE() << "unexplained difference: beast " << beast.kind << " (" << beast.error << "), ringio " << ours.kind
                  << " (" << ours.status << ")";
    return;
  }
  ++explained[rule];
}

TEST(ParserDifferential, HandWrittenCorpusAgreesWithBeast) {
  std::map<std::string, int> explained;
  for (const auto& in : valid_seeds) {
    SCOPED_TRACE(::testing::PrintToString(in));
    EXPECT_EQ(ringio_parse(in).kind, parse_outcome::accepted);
    compare(in, explained);
  }
  for (const auto& in : invalid_seeds) {
    SCOPED_TRACE(::testing::PrintToString(in));
    EXPECT_EQ(ringio_parse(in).kind, parse_outcome::rejected);
    compare(in, explained);
  }
}

TEST(ParserDifferential, MutatedCorpusAgreesWithBeastOrADocumentedRule) {
  std::map<std::string, int> explained;
  int agreed_accept = 0;
  for (const auto& in : mutants(20000)) {
    SCOPED_TRACE(::testing::PrintToString(in));
    compare(in, explained);
    if (ringio_parse(in).kind == parse_outcome::accepted) ++agreed_accept;
    if (::testing::Test::HasFailure()) break;
  }
  for (const auto& [rule, n] : explained) std::printf("  %5d x %s\n", n, rule.c_str());
  EXPECT_GT(agreed_accept, 1000) << "the mutants should still hold many valid requests";
}

TEST(ParserDifferential, ByteByByteParsingMatchesWholeParsing) {
  auto corpus = mutants(2000);
  corpus.insert(corpus.end(), valid_seeds.begin(), valid_seeds.end());
  for (const auto& in : corpus) {
    auto whole = ringio_parse(in), pieces = ringio_parse(in, 1);
    ASSERT_EQ(whole.kind, pieces.kind) << ::testing::PrintToString(in);
    EXPECT_EQ(whole.status, pieces.status);
    EXPECT_EQ(whole.fields, pieces.fields);
    EXPECT_EQ(whole.body, pieces.body);
  }
}

}  // namespace
