// SPDX-License-Identifier: Apache-2.0
// json_writer: structure, commas, escaping, UTF-8 checking, number forms, misuse; and
// its output read back by Python's json module (strict), fixed cases and seeded
// random strings and numbers.
#include "ringio/http/json_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringio/http/response.hpp"

using namespace ringio::http;

namespace {

std::string string_json(std::string_view s) {
  json_writer j;
  j.value(s);
  return j.take();
}

TEST(JsonWriter, ObjectsArraysAndCommas) {
  json_writer j;
  j.begin_object()
      .key("id")
      .value(42)
      .key("name")
      .value("ringio")
      .key("tags")
      .begin_array()
      .value("a")
      .value(true)
      .null()
      .begin_object()
      .end_object()
      .begin_array()
      .end_array()
      .end_array()
      .key("ok")
      .value(false)
      .end_object();
  EXPECT_TRUE(j.complete());
  EXPECT_EQ(j.take(), R"({"id":42,"name":"ringio","tags":["a",true,null,{},[]],"ok":false})");
  EXPECT_FALSE(j.complete()) << "take() starts afresh";
  j.begin_array().end_array();
  EXPECT_EQ(j.take(), "[]");
  j.value(7);
  EXPECT_EQ(j.take(), "7") << "a scalar is a whole JSON text";
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(string_json("say \"hi\" \\ bye"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(string_json(std::string_view("\0\x01\n\r\t\x1f\x7f", 7)), R"("\u0000\u0001\u000a\u000d\u0009\u001f)"
                                                                      "\x7f\"");
  EXPECT_EQ(string_json("/</script>"), "\"/</script>\"") << "'/' needs no escape";
  json_writer j;
  j.begin_object().key("a\"b\n").value("").end_object();
  EXPECT_EQ(j.take(), R"({"a\"b\u000a":""})") << "keys are escaped as strings";
}

TEST(JsonWriter, ValidUtf8PassesThroughAndInvalidBecomesReplacementCharacters) {
  EXPECT_EQ(string_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8\"");
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(string_json("\x80"), "\"" + fffd + "\"") << "a stray continuation byte";
  EXPECT_EQ(string_json("\xc0\xaf"), "\"" + fffd + fffd + "\"") << "an overlong '/'";
  EXPECT_EQ(string_json("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"") << "a surrogate";
  EXPECT_EQ(string_json("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"") << "beyond U+10FFFF";
  EXPECT_EQ(string_json("a\xe2\x82"), "\"a" + fffd + "\"") << "cut short: one replacement for the subpart";
  EXPECT_EQ(string_json("\xe2\x82x"), "\"" + fffd + "x\"");
  EXPECT_EQ(string_json("\xff\xfe"), "\"" + fffd + fffd + "\"");
}

TEST(JsonWriter, NumbersInTheirShortestExactForm) {
  auto num = [](auto v) {
    json_writer j;
    j.value(v);
    return j.take();
  };
  EXPECT_EQ(num(0), "0");
  EXPECT_EQ(num(-17), "-17");
  EXPECT_EQ(num(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(num(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(num(static_cast<unsigned char>(200)), "200");
  EXPECT_EQ(num(short{-3}), "-3");
  EXPECT_EQ(num(0.1), "0.1");
  EXPECT_EQ(num(1.5), "1.5");
  EXPECT_EQ(num(1e100), "1e+100");
  EXPECT_EQ(num(-0.0), "-0");
  EXPECT_EQ(num(5e-324), "5e-324");
  EXPECT_EQ(num(1.0f), "1");
  EXPECT_EQ(num(std::nan("")), "null");
  EXPECT_EQ(num(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(num(-std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(num(true), "true");
  EXPECT_EQ(num("text"), "\"text\"") << "a C string is a string, not a bool";
}

TEST(JsonWriter, MisuseThrowsAndLeavesTheTextAsItWas) {
  json_writer j;
  EXPECT_THROW(j.key("k"), std::logic_error) << "a key outside an object";
  EXPECT_THROW(j.end_object(), std::logic_error);
  EXPECT_THROW((void)j.take(), std::logic_error) << "nothing written";
  j.begin_object();
  EXPECT_THROW(j.value(1), std::logic_error) << "a value without a key";
  EXPECT_THROW(j.begin_array(), std::logic_error);
  EXPECT_THROW(j.end_array(), std::logic_error) << "mismatched end";
  j.key("a");
  EXPECT_THROW(j.key("b"), std::logic_error) << "two keys in a row";
  EXPECT_THROW(j.end_object(), std::logic_error) << "a key waits for its value";
  EXPECT_THROW((void)j.take(), std::logic_error) << "incomplete";
  EXPECT_EQ(j.view(), R"({"a":)");
  j.value(1).end_object();
  EXPECT_THROW(j.value(2), std::logic_error) << "a second top-level value";
  EXPECT_THROW(j.begin_object(), std::logic_error);
  EXPECT_EQ(j.view(), R"({"a":1})");
  json_writer arr;
  arr.begin_array();
  EXPECT_THROW(arr.key("k"), std::logic_error) << "a key in an array";
  EXPECT_THROW(arr.end_object(), std::logic_error);
  arr.clear();
  arr.value("fresh");
  EXPECT_EQ(arr.take(), "\"fresh\"");
}

TEST(JsonWriter, DeepNestingIsBalanced) {
  json_writer j;
  for (int i = 0; i < 1000; ++i) j.begin_array();
  EXPECT_FALSE(j.complete());
  for (int i = 0; i < 1000; ++i) j.end_array();
  EXPECT_EQ(j.take(), std::string(1000, '[') + std::string(1000, ']'));
}

TEST(JsonWriter, ResponseJsonSetsTheContentType) {
  json_writer j;
  j.begin_object().key("x").value(1).end_object();
  response r = response::json(201, j.take());
  EXPECT_EQ(r.status(), 201);
  EXPECT_EQ(r.content_type(), "application/json");
  EXPECT_EQ(r.body(), R"({"x":1})");
}

std::string hex(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// Python reads every line with json.loads (NaN, Infinity and duplicate keys refused)
// and compares with what the line's writer was given: strings (as hex bytes, decoded
// with Python's own UTF-8 'replace' rule), doubles (exact, via float.hex, sign of zero
// included) and integers.
constexpr const char* checker = R"PY(
import json, math, sys
def no_constant(name): raise ValueError("constant " + name)
def no_dupes(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)): raise ValueError("duplicate key")
    return dict(pairs)
bad = 0
for n, line in enumerate(open(sys.argv[1], encoding="utf-8", newline="\n")):
    kind, expected, text = line.rstrip("\n").split("\t", 2)
    try:
        got = json.loads(text, parse_constant=no_constant, object_pairs_hook=no_dupes,
                         parse_int=float if kind == "d" else int)
    except Exception as e:
        print("line", n, "does not parse:", e, repr(text)); bad += 1; continue
    if kind == "s":
        want = {"k" + bytes.fromhex(expected).decode("utf-8", "replace"): [bytes.fromhex(expected).decode("utf-8", "replace")]}
    elif kind == "d":
        want = [float.fromhex(expected)]
    else:
        want = [int(expected)]
    if got != want or (kind == "d" and math.copysign(1, got[0]) != math.copysign(1, want[0])):
        print("line", n, "differs:", repr(got), "!=", repr(want)); bad += 1
print("checked", n + 1, "lines,", bad, "bad")
sys.exit(1 if bad else 0)
)PY";

TEST(JsonWriter, PythonReadsBackRandomStringsAndNumbers) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not installed";
  const auto seed = static_cast<std::uint32_t>(std::random_device{}());
  std::printf("PythonReadsBackRandomStringsAndNumbers seed %u\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  char dir_template[] = "/tmp/ringio-json-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  std::ofstream lines(dir + "/lines.txt", std::ios::binary);
  std::ofstream(dir + "/check.py") << checker;
  // Strings: fixed hard cases, then random bytes biased towards UTF-8 lead and
  // continuation bytes, controls, quotes and backslashes.
  std::vector<std::string> strings = {"",
                                      "\"",
                                      "\\",
                                      std::string(1, '\0'),
                                      "\x7f",
                                      "\xe2\x80\xa8\xe2\x80\xa9",
                                      "\xf0\x9f\x98\x80",
                                      "\xed\xa0\x80",
                                      "\xc0\x80",
                                      "\xf8\x88\x80\x80\x80"};
  const std::string bias =
      "\"\\\x01\x1f\x7f\x80\xbf\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff"
      "aZ ";
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    int len = static_cast<int>(rng() % 20);
    for (int k = 0; k < len; ++k) s += rng() % 2 ? bias[rng() % bias.size()] : static_cast<char>(rng() % 256);
    strings.push_back(s);
  }
  for (const auto& s : strings) {
    json_writer j;
    j.begin_object().key("k" + s).begin_array().value(s).end_array().end_object();
    lines << "s\t" << hex(s) << "\t" << j.take() << "\n";
  }
  std::vector<double> doubles = {0.0, -0.0, 0.1, 1e308, -1e-308, 5e-324, 1.7976931348623157e308, 123456789.0, 2.5};
  for (int i = 0; i < 3000; ++i) {
    std::uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d)) doubles.push_back(d);
  }
  for (double d : doubles) {
    json_writer j;
    j.begin_array().value(d).end_array();
    char h[64];
    std::snprintf(h, sizeof h, "%a", d);
    lines << "d\t" << h << "\t" << j.take() << "\n";
  }
  std::vector<std::int64_t> ints = {0, -1, std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max()};
  for (int i = 0; i < 1000; ++i) ints.push_back(static_cast<std::int64_t>(rng()));
  for (std::int64_t v : ints) {
    json_writer j;
    j.begin_array().value(v).end_array();
    lines << "i\t" << v << "\t" << j.take() << "\n";
  }
  lines.close();
  std::string command = "python3 " + dir + "/check.py " + dir + "/lines.txt";
  int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << "python's json module disagreed (see the lines above); kept in " << dir;
  if (status == 0) {
    std::remove((dir + "/lines.txt").c_str());
    std::remove((dir + "/check.py").c_str());
    ::rmdir(dir.c_str());
  }
}

}  // namespace
