// SPDX-License-Identifier: Apache-2.0
// proc_files — reading the one-line files of /proc and /sys the doctor looks at.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace ringio::doctor::detail {

/// The whole file without its trailing newline; nullopt when it cannot be read.
inline std::optional<std::string> read_text(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

/// The file's first number; nullopt when it cannot be read or holds none.
inline std::optional<long> read_number(const char* path) {
  std::ifstream in(path);
  long v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

/// The number after "Key:" in a "Key:\tvalue" file such as /proc/self/status.
inline std::optional<long> read_keyed_number(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::istringstream rest(line.substr(key.size() + 1));
    long v = 0;
    if (rest >> v) return v;
  }
  return std::nullopt;
}

}  // namespace ringio::doctor::detail
