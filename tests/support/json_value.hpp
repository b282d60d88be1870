// SPDX-License-Identifier: Apache-2.0
// json_value — a small strict JSON reader for tests that check a program's JSON output
// or a shipped JSON file (no \u escapes beyond ASCII; numbers kept as text).
#pragma once

#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringio_test {

struct json_value {
  enum class type { null, boolean, number, string, array, object } kind = type::null;
  bool flag = false;
  std::string text;  ///< a string's contents, or a number as written
  std::vector<json_value> items;
  std::map<std::string, json_value> members;

  /// The member `key` of an object, or nullptr.
  [[nodiscard]] const json_value* get(const std::string& key) const {
    auto it = members.find(key);
    return it == members.end() ? nullptr : &it->second;
  }

  /// Parses the whole of `s`; nullopt on any syntax error or trailing text.
  static std::optional<json_value> parse(std::string_view s) {
    std::size_t at = 0;
    json_value v;
    if (!read(s, at, v, 0)) return std::nullopt;
    skip(s, at);
    if (at != s.size()) return std::nullopt;
    return v;
  }

 private:
  static void skip(std::string_view s, std::size_t& at) {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\n' || s[at] == '\t' || s[at] == '\r')) ++at;
  }
  static bool literal(std::string_view s, std::size_t& at, std::string_view word) {
    if (s.substr(at, word.size()) != word) return false;
    at += word.size();
    return true;
  }
  static bool read_string(std::string_view s, std::size_t& at, std::string& out) {
    if (at >= s.size() || s[at] != '"') return false;
    for (++at; at < s.size(); ++at) {
      char c = s[at];
      if (c == '"') {
        ++at;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++at >= s.size()) return false;
      switch (s[at]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (at + 4 >= s.size()) return false;
          unsigned code = std::stoul(std::string(s.substr(at + 1, 4)), nullptr, 16);
          out += static_cast<char>(code < 0x80 ? code : '?');
          at += 4;
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  static bool read(std::string_view s, std::size_t& at, json_value& v, int depth) {
    skip(s, at);
    if (at >= s.size() || depth > 64) return false;
    char c = s[at];
    if (c == '{') {
      v.kind = type::object;
      ++at;
      skip(s, at);
      if (at < s.size() && s[at] == '}') return ++at, true;
      for (;;) {
        std::string key;
        skip(s, at);
        if (!read_string(s, at, key)) return false;
        skip(s, at);
        if (at >= s.size() || s[at++] != ':') return false;
        if (!read(s, at, v.members[key], depth + 1)) return false;
        skip(s, at);
        if (at < s.size() && s[at] == ',') {
          ++at;
          continue;
        }
        return at < s.size() && s[at++] == '}';
      }
    }
    if (c == '[') {
      v.kind = type::array;
      ++at;
      skip(s, at);
      if (at < s.size() && s[at] == ']') return ++at, true;
      for (;;) {
        v.items.emplace_back();
        if (!read(s, at, v.items.back(), depth + 1)) return false;
        skip(s, at);
        if (at < s.size() && s[at] == ',') {
          ++at;
          continue;
        }
        return at < s.size() && s[at++] == ']';
      }
    }
    if (c == '"') return v.kind = type::string, read_string(s, at, v.text);
    if (literal(s, at, "true")) return v.kind = type::boolean, v.flag = true, true;
    if (literal(s, at, "false")) return v.kind = type::boolean, true;
    if (literal(s, at, "null")) return true;
    std::size_t start = at;
    while (at < s.size() && (std::isdigit(static_cast<unsigned char>(s[at])) ||
                             std::string_view("+-.eE").find(s[at]) != std::string_view::npos))
      ++at;
    if (at == start) return false;
    v.kind = type::number;
    v.text = std::string(s.substr(start, at - start));
    return true;
  }
};

}  // namespace ringio_test
