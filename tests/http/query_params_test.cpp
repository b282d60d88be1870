// SPDX-License-Identifier: Apache-2.0
// percent_decode and query_params on their own: escapes, '+', empty and repeated
// pieces, malformed escapes, caller buffers, and a seeded randomized comparison with a
// plain reference decoder.
#include "ringio/http/query_params.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ringio/http/percent_decode.hpp"

using namespace ringio::http;

namespace {

using pairs = std::vector<std::pair<std::string, std::string>>;

pairs all(const query_params& q) {
  pairs out;
  for (const query_param& p : q) out.emplace_back(p.name, p.value);
  return out;
}

TEST(PercentDecode, DecodesEscapesOfEitherCase) {
  EXPECT_EQ(percent_decode("a%20b%2fc%2F").value(), "a b/c/");
  EXPECT_EQ(percent_decode("%e2%82%AC").value(), "\xe2\x82\xac");
  EXPECT_EQ(percent_decode("").value(), "");
  EXPECT_EQ(percent_decode("a+b").value(), "a+b") << "'+' is not a space outside form data";
  EXPECT_EQ(percent_decode("%00").value(), std::string(1, '\0'));
  EXPECT_EQ(percent_decode("%25%32%35").value(), "%25") << "decoded once, not twice";
}

TEST(PercentDecode, MalformedEscapesAreErrors) {
  for (const char* bad : {"%", "%4", "a%", "%zz", "%g1", "%1g", "%%41", "x%2"}) {
    auto r = percent_decode(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error(), std::errc::invalid_argument) << bad;
  }
}

TEST(PercentDecode, IntoACallerBufferAllocatesNothingAndChecksRoom) {
  std::array<char, 4> out{};
  auto n = percent_decode("%41%42cd", out);
  ASSERT_TRUE(n);
  EXPECT_EQ(std::string_view(out.data(), *n), "ABcd");
  auto too_long = percent_decode("abcde", out);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error(), std::errc::no_buffer_space);
  auto bad = percent_decode("a%x", out);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), std::errc::invalid_argument);
  auto empty = percent_decode("", std::span<char>{});
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, 0u);
}

TEST(QueryParams, EmptyQueryHasNoPairs) {
  query_params q("");
  EXPECT_EQ(q.begin(), q.end());
  EXPECT_FALSE(q.find("a").has_value());
  EXPECT_TRUE(all(query_params("&&&")).empty());
}

TEST(QueryParams, SplitsPairsAndDecodes) {
  query_params q("a=1&b=two+words&c=%41%2B%26%3D&d");
  EXPECT_EQ(all(q), (pairs{{"a", "1"}, {"b", "two words"}, {"c", "A+&="}, {"d", ""}}));
  EXPECT_EQ(q.find("b").value(), "two words");
  EXPECT_EQ(q.find("d").value(), "") << "present without '=': empty value";
  EXPECT_FALSE(q.find("e").has_value());
  EXPECT_FALSE(q.find("A").has_value()) << "names are case-sensitive";
}

TEST(QueryParams, EdgeCasesOfSeparators) {
  EXPECT_EQ(all(query_params("a=1&&b=2&")), (pairs{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(all(query_params("=x&y=")), (pairs{{"", "x"}, {"y", ""}}));
  EXPECT_EQ(all(query_params("a=b=c")), (pairs{{"a", "b=c"}}));
  EXPECT_EQ(all(query_params("=")), (pairs{{"", ""}}));
  EXPECT_EQ(all(query_params("a+b=c+d")), (pairs{{"a b", "c d"}})) << "names are decoded too";
  EXPECT_EQ(all(query_params("a%3Db=1")), (pairs{{"a=b", "1"}})) << "an encoded '=' is no separator";
  EXPECT_EQ(all(query_params("a=1;b=2")), (pairs{{"a", "1;b=2"}})) << "';' is no separator";
}

TEST(QueryParams, RepeatedNamesAreAllKeptInOrderAndFindTakesTheFirst) {
  query_params q("tag=x&id=1&tag=y&tag=");
  EXPECT_EQ(all(q), (pairs{{"tag", "x"}, {"id", "1"}, {"tag", "y"}, {"tag", ""}}));
  EXPECT_EQ(q.find("tag").value(), "x");
  int tags = 0;
  for (const auto& p : q) tags += p.name == "tag";
  EXPECT_EQ(tags, 3);
}

TEST(QueryParams, MalformedEscapesAreKeptLiterallyAndFlagged) {
  std::vector<query_param> got;
  query_params q("a=%zz&b=%4&c=%&d=ok%21&%=1&e=%%41");
  for (const auto& p : q) got.push_back(p);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].value, "%zz");
  EXPECT_TRUE(got[0].malformed);
  EXPECT_EQ(got[1].value, "%4");
  EXPECT_TRUE(got[1].malformed);
  EXPECT_EQ(got[2].value, "%");
  EXPECT_TRUE(got[2].malformed);
  EXPECT_EQ(got[3].value, "ok!");
  EXPECT_FALSE(got[3].malformed);
  EXPECT_EQ(got[4].name, "%");
  EXPECT_TRUE(got[4].malformed);
  EXPECT_EQ(got[5].value, "%A") << "the first '%' starts no escape; the second does";
  EXPECT_TRUE(got[5].malformed);
}

TEST(QueryParams, ViewsOfEveryPairStayValidTogether) {
  query_params q("first=%41%41%41&second=bbb&third=c+c");
  std::vector<query_param> kept(q.begin(), q.end());
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].value, "AAA");
  EXPECT_EQ(kept[1].value, "bbb");
  EXPECT_EQ(kept[2].value, "c c");
  EXPECT_EQ(q.find("third").value(), "c c");
  EXPECT_EQ(kept[0].value, "AAA") << "decoding again leaves the earlier views as they were";
}

TEST(QueryParams, CallerScratchBuffer) {
  std::string query = "x=%31&y=2";
  std::vector<char> scratch(query.size());
  query_params q(query, scratch);
  EXPECT_EQ(q.find("x").value(), "1");
  EXPECT_GE(q.find("x")->data(), scratch.data());
  EXPECT_LT(q.find("x")->data(), scratch.data() + scratch.size());
  std::vector<char> small(query.size() - 1);
  EXPECT_THROW(query_params(query, small), std::invalid_argument);
}

// Reference: split, then decode char by char.
pairs reference(const std::string& q) {
  auto decode = [](const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out += ' ';
      } else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  pairs out;
  std::size_t at = 0;
  while (at <= q.size()) {
    std::size_t amp = q.find('&', at);
    std::string piece = q.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    if (!piece.empty()) {
      std::size_t eq = piece.find('=');
      out.emplace_back(decode(piece.substr(0, eq)), eq == std::string::npos ? "" : decode(piece.substr(eq + 1)));
    }
    if (amp == std::string::npos) break;
    at = amp + 1;
  }
  return out;
}

TEST(QueryParams, RandomQueriesAgreeWithAReferenceDecoder) {
  const auto seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("RandomQueriesAgreeWithAReferenceDecoder seed %u\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string alphabet = "ab=&+%%%0123456789AaFfGz\x01\xff";
  for (int round = 0; round < 20000; ++round) {
    std::string q;
    int len = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int i = 0; i < len; ++i)
      q += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
    query_params parsed(q);
    ASSERT_EQ(all(parsed), reference(q)) << "query " << q;
  }
}

}  // namespace
