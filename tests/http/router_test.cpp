// SPDX-License-Identifier: Apache-2.0
// The router on its own: path parameters (matching, percent-decoding, what does not
// match), precedence of exact over pattern over prefix routes, 404/405/Allow,
// OPTIONS *, has_route, pattern validation, and a seeded randomized comparison with a
// plain reference matcher.
#include "ringio/http/router.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ringio/http/request_parser.hpp"
#include "ringio/io_context.hpp"
#include "ringio/sync_wait.hpp"

using namespace ringio;
using namespace ringio::http;

namespace {

// A request's strings point into its connection's buffers and its own parameter
// storage: a copy would keep pointing there, so it cannot be copied.
static_assert(!std::is_copy_constructible_v<ringio::http::request>);
static_assert(!std::is_copy_assignable_v<ringio::http::request>);

// A handler answering its own name and the parameters it received: "name|id=7|x=y".
handler tag(std::string name) {
  return [name](request& r) -> task<response> {
    std::string body = name;
    for (const route_param& p : r.params()) body.append("|").append(p.name).append("=").append(p.value);
    co_return response::text(200, std::move(body));
  };
}

struct outcome {
  int status = 0;
  std::string body;
  std::string allow;
  bool has_route = false;
};

class RouterTest : public ::testing::Test {
 protected:
  outcome dispatch(const router& routes, std::string_view method_name, std::string_view target) {
    text_ = std::string(method_name) + " " + std::string(target) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    req_.clear();
    request_parser parser;
    auto parsed = parser.parse(text_, req_);
    EXPECT_EQ(parsed.state, parse_state::complete) << text_;
    outcome o;
    o.has_route = routes.has_route(req_);
    response r = sync_wait(ctx_, routes(req_));
    o.status = r.status();
    o.body = std::string(r.body());
    std::string_view fields = r.extra_headers();
    if (auto at = fields.find("Allow: "); at != std::string_view::npos)
      o.allow = std::string(fields.substr(at + 7, fields.find("\r\n", at) - at - 7));
    return o;
  }

  io_context ctx_{io_context_options{.backend = backend_kind::epoll, .quiet = true}};
  std::string text_;
  request req_;
};

TEST_F(RouterTest, OneParameterCapturesOneSegment) {
  router r;
  r.get("/items/{id}", tag("item"));
  EXPECT_EQ(dispatch(r, "GET", "/items/42").body, "item|id=42");
  EXPECT_EQ(req_.param("id"), "42");
  EXPECT_TRUE(req_.has_param("id"));
  EXPECT_EQ(req_.param("other"), "");
  EXPECT_FALSE(req_.has_param("other"));
  EXPECT_EQ(dispatch(r, "GET", "/items/42?x=1").body, "item|id=42") << "the query is not part of the path";
  EXPECT_EQ(dispatch(r, "GET", "/items/").status, 404) << "a parameter never captures an empty segment";
  EXPECT_EQ(dispatch(r, "GET", "/items").status, 404);
  EXPECT_EQ(dispatch(r, "GET", "/items/42/").status, 404) << "a trailing empty segment is a segment";
  EXPECT_EQ(dispatch(r, "GET", "/items/4/2").status, 404);
  EXPECT_EQ(dispatch(r, "GET", "/Items/42").status, 404) << "literal segments are case-sensitive";
  EXPECT_EQ(dispatch(r, "GET", "http://host/items/9").body, "item|id=9") << "absolute-form target";
}

TEST_F(RouterTest, SeveralParametersAreCapturedInPatternOrder) {
  router r;
  r.get("/users/{user}/posts/{post}", tag("post"));
  r.get("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", tag("eight"));
  EXPECT_EQ(dispatch(r, "GET", "/users/ann/posts/7").body, "post|user=ann|post=7");
  EXPECT_EQ(req_.params().size(), 2u);
  EXPECT_EQ(req_.param("post"), "7");
  EXPECT_EQ(dispatch(r, "GET", "/1/2/3/4/5/6/7/8").body, "eight|a=1|b=2|c=3|d=4|e=5|f=6|g=7|h=8");
  EXPECT_EQ(dispatch(r, "GET", "/users/ann/posts").status, 404);
}

TEST_F(RouterTest, CapturesArePercentDecoded) {
  router r;
  r.get("/f/{name}", tag("f"));
  EXPECT_EQ(dispatch(r, "GET", "/f/a%20b").body, "f|name=a b");
  EXPECT_EQ(dispatch(r, "GET", "/f/%E2%82%AC").body, "f|name=\xe2\x82\xac");
  EXPECT_EQ(dispatch(r, "GET", "/f/a+b").body, "f|name=a+b") << "'+' is a plus in a path";
  EXPECT_EQ(dispatch(r, "GET", "/f/%25").body, "f|name=%");
  EXPECT_EQ(dispatch(r, "GET", "/f/%2e%2E").body, "f|name=..") << "dots are only text here";
  EXPECT_EQ(dispatch(r, "GET", "/f/%7Bx%7D").body, "f|name={x}");
}

TEST_F(RouterTest, CapturesThatDecodeBadlyDoNotMatch) {
  router r;
  r.get("/f/{name}", tag("f"));
  r.prefix("/f/", tag("prefix"));
  for (const char* bad : {"/f/a%2Fb", "/f/a%2fb", "/f/%00", "/f/x%00y", "/f/%zz", "/f/%4", "/f/%", "/f/%g0"}) {
    outcome o = dispatch(r, "GET", bad);
    EXPECT_EQ(o.body, "prefix") << bad << ": falls through to the prefix route";
  }
  router alone;
  alone.get("/f/{name}", tag("f"));
  EXPECT_EQ(dispatch(alone, "GET", "/f/a%2Fb").status, 404);
  EXPECT_FALSE(dispatch(alone, "GET", "/f/%zz").has_route);
}

TEST_F(RouterTest, RestCaptureTakesTheRemainingPath) {
  router r;
  r.get("/files/{path...}", tag("files"));
  EXPECT_EQ(dispatch(r, "GET", "/files/a/b/c.txt").body, "files|path=a/b/c.txt");
  EXPECT_EQ(dispatch(r, "GET", "/files/").body, "files|path=");
  EXPECT_TRUE(req_.has_param("path"));
  EXPECT_EQ(req_.param("path"), "");
  EXPECT_EQ(dispatch(r, "GET", "/files/a%20b/c").body, "files|path=a b/c");
  EXPECT_EQ(dispatch(r, "GET", "/files").status, 404);
  EXPECT_EQ(dispatch(r, "GET", "/files/a%2Fb").status, 404) << "an encoded '/' in a rest capture";
  EXPECT_EQ(dispatch(r, "GET", "/filesx/a").status, 404);
}

TEST_F(RouterTest, ExactBeatsPatternBeatsPrefix) {
  router r;
  r.prefix("/items/", tag("prefix"));
  r.get("/items/{id}", tag("param"));
  r.get("/items/new", tag("exact"));
  EXPECT_EQ(dispatch(r, "GET", "/items/new").body, "exact");
  EXPECT_EQ(dispatch(r, "GET", "/items/5").body, "param|id=5");
  EXPECT_EQ(dispatch(r, "GET", "/items/5/edit").body, "prefix");
  EXPECT_TRUE(req_.prefix_routed());
  EXPECT_EQ(req_.route_rest(), "5/edit");
  EXPECT_TRUE(req_.params().empty()) << "a prefix route captures nothing";
}

TEST_F(RouterTest, TheMoreSpecificPatternWinsLeftToRight) {
  router r;
  r.get("/{a}/{b}", tag("pp"));
  r.get("/{a}/x", tag("pl"));
  r.get("/x/{b}", tag("lp"));
  r.get("/{rest...}", tag("rest"));
  r.get("/x/{b}/{c...}", tag("lpr"));
  EXPECT_EQ(dispatch(r, "GET", "/x/x").body, "lp|b=x") << "the first differing segment decides";
  EXPECT_EQ(dispatch(r, "GET", "/y/x").body, "pl|a=y");
  EXPECT_EQ(dispatch(r, "GET", "/y/z").body, "pp|a=y|b=z");
  EXPECT_EQ(dispatch(r, "GET", "/y").body, "rest|rest=y");
  EXPECT_EQ(dispatch(r, "GET", "/x/y/z/w").body, "lpr|b=y|c=z/w");
  EXPECT_EQ(dispatch(r, "GET", "/y/z/w").body, "rest|rest=y/z/w");
  // Same shape: the first added wins, whatever the names.
  router same;
  same.get("/a/{one}", tag("first"));
  same.get("/a/{two}", tag("second"));
  EXPECT_EQ(dispatch(same, "GET", "/a/b").body, "first|one=b");
}

TEST_F(RouterTest, OwnMethodBeatsHeadFallbackOnlyWithinEqualSpecificity) {
  router r;
  r.get("/a/{x}", tag("get"));
  r.head("/{y}/{x}", tag("head"));
  EXPECT_EQ(dispatch(r, "HEAD", "/a/b").body, "get|x=b") << "specificity first";
  r.head("/a/{z}", tag("head2"));
  EXPECT_EQ(dispatch(r, "HEAD", "/a/b").body, "head2|z=b");
  EXPECT_EQ(dispatch(r, "HEAD", "/b/c").body, "head|y=b|x=c");
}

TEST_F(RouterTest, ParameterisedPathWithOtherMethodsGets405AndAllow) {
  router r;
  r.get("/items/{id}", tag("get"));
  r.del("/items/{id}", tag("delete"));
  r.post("/items", tag("create"));
  outcome o = dispatch(r, "PUT", "/items/3");
  EXPECT_EQ(o.status, 405);
  EXPECT_FALSE(o.has_route);
  EXPECT_EQ(o.allow, "GET, HEAD, DELETE, OPTIONS");
  EXPECT_EQ(dispatch(r, "PUT", "/items/3/4").status, 404);
  EXPECT_EQ(dispatch(r, "PUT", "/items/%2F").status, 404) << "an unclean capture is no known path";
  EXPECT_TRUE(dispatch(r, "DELETE", "/items/3").has_route);
  EXPECT_EQ(dispatch(r, "HEAD", "/items/3").body, "get|id=3");
}

TEST_F(RouterTest, OptionsAsteriskListsTheMethodsOfPatternRoutes) {
  router r;
  r.put("/items/{id}", tag("put"));
  r.patch("/items/{id}/{field}", tag("patch"));
  outcome o = dispatch(r, "OPTIONS", "*");
  EXPECT_EQ(o.status, 200);
  EXPECT_EQ(o.allow, "PUT, OPTIONS, PATCH");
  EXPECT_FALSE(o.has_route);
  router rest;
  rest.get("/{all...}", tag("all"));
  EXPECT_EQ(dispatch(rest, "OPTIONS", "*").allow, "GET, HEAD, OPTIONS") << "a rest pattern never takes *";
}

TEST_F(RouterTest, OptionsOnAKnownPathListsItsMethods) {
  router r;
  r.post("/items/{id}", tag("post"));
  r.get("/items/{id}", tag("get"));
  r.put("/items", tag("create"));
  outcome o = dispatch(r, "OPTIONS", "/items/3");
  EXPECT_EQ(o.status, 200);
  EXPECT_FALSE(o.has_route) << "the router answers it";
  EXPECT_EQ(o.allow, "POST, GET, HEAD, OPTIONS");
  EXPECT_EQ(o.body, "");
  EXPECT_EQ(dispatch(r, "OPTIONS", "/nowhere").status, 404);
  r.route(method::options, "/items", tag("own"));
  EXPECT_EQ(dispatch(r, "OPTIONS", "/items").body, "own") << "a route for OPTIONS takes it";
}

TEST_F(RouterTest, ParametersOfOneRequestDoNotLeakIntoTheNext) {
  router r;
  r.get("/a/{x}", tag("a"));
  r.get("/b", tag("b"));
  dispatch(r, "GET", "/a/1");
  EXPECT_EQ(req_.param("x"), "1");
  EXPECT_EQ(dispatch(r, "GET", "/b").body, "b");
  EXPECT_TRUE(req_.params().empty());
  EXPECT_FALSE(req_.has_param("x"));
}

TEST_F(RouterTest, ParameterStorageGrowsForLongerPathsAndKeepsEarlierValuesIntact) {
  router r;
  r.get("/{a}/{b}", tag("ab"));
  std::string longer(3000, 'q');
  EXPECT_EQ(dispatch(r, "GET", "/x/y").body, "ab|a=x|b=y");
  EXPECT_EQ(dispatch(r, "GET", "/" + longer + "/%41").body, "ab|a=" + longer + "|b=A");
  EXPECT_EQ(req_.param("a").size(), 3000u);
}

TEST_F(RouterTest, BadPatternsAreRejectedWhenAdded) {
  router r;
  auto h = tag("x");
  for (const char* bad : {"items/{id}", "/items/{id", "/items/id}", "/items/x{id}", "/items/{id}x", "/{}", "/{a-b}",
                          "/{a}/{a}", "/{rest...}/x", "/{...}", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", "/{ a }"})
    EXPECT_THROW(r.get(bad, h), std::invalid_argument) << bad;
  EXPECT_NO_THROW(r.get("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{rest...}", h)) << "eight captures, the maximum";
  EXPECT_NO_THROW(r.get("/{_x9}/", h));
}

// ---- randomized: random route tables and paths against a plain reference matcher ----

struct ref_route {
  std::string pattern;
  std::vector<std::string> segments;  // "{x}" / "{x...}" / literal
  method m;
  bool is_prefix;
  std::size_t index;
};

std::vector<std::string> split(std::string_view path) {  // "/a/b" → {"a", "b"}; "/" → {""}
  std::vector<std::string> out;
  std::size_t at = 1;
  for (;;) {
    std::size_t slash = path.find('/', at);
    out.emplace_back(path.substr(at, slash == std::string_view::npos ? std::string_view::npos : slash - at));
    if (slash == std::string_view::npos) return out;
    at = slash + 1;
  }
}

// Decodes one capture: nullopt for a bad escape, or one standing for '/' or NUL.
std::optional<std::string> ref_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
      return std::nullopt;
    char c = static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
    if (c == '/' || c == '\0') return std::nullopt;
    out += c;
    i += 2;
  }
  return out;
}

bool is_param(const std::string& s) { return s.front() == '{' && !s.ends_with("...}"); }
bool is_rest(const std::string& s) { return s.ends_with("...}"); }

// Whether `route` takes `path`; fills the expected "|name=value" text.
bool ref_matches(const ref_route& route, const std::string& path, std::string& params) {
  params.clear();
  if (route.is_prefix) return path.starts_with(route.pattern);
  if (route.segments.empty()) return path == route.pattern;
  std::vector<std::string> got = split(path);
  const auto& pat = route.segments;
  bool rest = is_rest(pat.back());
  if (rest ? got.size() < pat.size() : got.size() != pat.size()) return false;
  for (std::size_t i = 0; i < pat.size(); ++i) {
    std::string piece = got[i];
    if (is_rest(pat[i]))
      for (std::size_t k = i + 1; k < got.size(); ++k) piece += "/" + got[k];
    if (pat[i].front() != '{') {
      if (piece != pat[i]) return false;
      continue;
    }
    if (is_param(pat[i]) && piece.empty()) return false;
    auto decoded = ref_decode(piece);
    if (!decoded) return false;
    std::string name = pat[i].substr(1, pat[i].size() - 2);
    if (is_rest(pat[i])) name.resize(name.size() - 3);
    params += "|" + name + "=" + *decoded;
  }
  return true;
}

// Higher is better: tier, then (patterns) kinds from the left, (prefixes) length.
std::vector<int> ref_rank(const ref_route& r, bool direct) {
  std::vector<int> key;
  if (r.is_prefix) {
    key = {0, static_cast<int>(r.pattern.size())};
  } else if (r.segments.empty()) {
    key = {2};
  } else {
    key = {1};
    for (const auto& s : r.segments) key.push_back(s.front() != '{' ? 2 : is_param(s) ? 1 : 0);
    key.resize(12, 3);  // a shorter pattern never ties a longer one unless a rest ended it first
  }
  key.push_back(direct ? 1 : 0);
  return key;
}

TEST_F(RouterTest, RandomRouteTablesAgreeWithAReferenceMatcher) {
  const auto seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("RandomRouteTablesAgreeWithAReferenceMatcher seed %u\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto pick = [&rng](auto const& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]; };
  const std::vector<std::string> literals = {"a", "b", "ab", ""};
  const std::vector<std::string> path_pieces = {"a", "b", "ab", "", "c", "%61", "x%20y", "%2F", "%zz", "%00", "q%2e"};
  const std::vector<method> methods = {method::get, method::post, method::head};
  int counts[3] = {};  // routed to a pattern, 405, 404: the run must reach each
  for (int table = 0; table < 200; ++table) {
    router r;
    std::vector<ref_route> refs;
    int n_routes = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int i = 0; i < n_routes; ++i) {
      ref_route rr;
      rr.index = refs.size();
      rr.m = pick(methods);
      int kind = std::uniform_int_distribution<int>(0, 9)(rng);  // 0-1 prefix, 2-3 exact, else pattern
      int n_seg = std::uniform_int_distribution<int>(1, 3)(rng);
      std::vector<std::string> segs;
      int names = 0;
      for (int k = 0; k < n_seg; ++k) {
        int what = std::uniform_int_distribution<int>(0, 3)(rng);
        if (kind >= 4 && what >= 2) {
          bool rest = k == n_seg - 1 && what == 3;
          segs.push_back("{p" + std::to_string(names++) + (rest ? "...}" : "}"));
        } else {
          segs.push_back(pick(literals));
        }
      }
      for (const auto& s : segs) rr.pattern += "/" + s;
      rr.is_prefix = kind <= 1;
      bool pattern = std::any_of(segs.begin(), segs.end(), [](const std::string& s) { return s.front() == '{'; });
      if (pattern) rr.segments = segs;
      std::string name = "r" + std::to_string(rr.index);
      if (rr.is_prefix) r.prefix(rr.m, rr.pattern, tag(name));
      else r.route(rr.m, rr.pattern, tag(name));
      refs.push_back(rr);
    }
    for (int probe = 0; probe < 40; ++probe) {
      std::string path;
      int n = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int k = 0; k < n; ++k) path += "/" + pick(path_pieces);
      method m = pick(methods);
      // The reference's answer.
      const ref_route* best = nullptr;
      std::vector<int> best_rank;
      std::string best_params, params;
      bool known = false;
      std::set<std::string> allow = {"OPTIONS"};
      for (const ref_route& rr : refs) {
        bool hit = ref_matches(rr, path, params);
        if (!hit) continue;
        known = true;
        allow.insert(std::string(to_string(rr.m)));
        if (rr.m == method::get) allow.insert("HEAD");
        bool direct = rr.m == m;
        if (!direct && !(m == method::head && rr.m == method::get)) continue;
        auto rank = ref_rank(rr, direct);
        if (best == nullptr || rank > best_rank) {
          best = &rr;
          best_rank = rank;
          best_params = params;
        }
      }
      outcome o = dispatch(r, to_string(m), path);
      SCOPED_TRACE(std::string(to_string(m)) + " " + path);
      if (best != nullptr) {
        EXPECT_EQ(o.status, 200);
        EXPECT_TRUE(o.has_route);
        std::string expected = "r" + std::to_string(best->index) + (best->is_prefix ? "" : best_params);
        EXPECT_EQ(o.body, expected) << "route " << best->pattern;
        counts[0] += !best->segments.empty();
      } else if (known) {
        EXPECT_EQ(o.status, 405);
        EXPECT_FALSE(o.has_route);
        std::set<std::string> got;
        for (std::string_view a = o.allow; !a.empty();) {
          auto comma = a.find(", ");
          got.emplace(a.substr(0, comma));
          a = comma == std::string_view::npos ? std::string_view{} : a.substr(comma + 2);
        }
        EXPECT_EQ(got, allow);
        ++counts[1];
      } else {
        EXPECT_EQ(o.status, 404);
        EXPECT_FALSE(o.has_route);
        ++counts[2];
      }
      if (HasFailure()) return;
    }
  }
  std::printf("pattern-routed %d, 405 %d, 404 %d\n", counts[0], counts[1], counts[2]);
  EXPECT_GT(counts[0], 100);
  EXPECT_GT(counts[1], 100);
  EXPECT_GT(counts[2], 100);
}

}  // namespace
