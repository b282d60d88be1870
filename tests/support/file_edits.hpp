// SPDX-License-Identifier: Apache-2.0
// file_edits — files written, replaced by rename, and counted open, for the tests of
// static files and their open-file cache.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace ringio_test {

/// Writes `data` to `p` (created or truncated).
inline void write_file(const std::filesystem::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

/// Writes `data` to a temporary file beside `p`, then renames it over `p`.
inline void replace_file(const std::filesystem::path& p, const std::string& data) {
  std::filesystem::path tmp = p;
  tmp += ".tmp";
  write_file(tmp, data);
  std::filesystem::rename(tmp, p);
}

/// How many of this process's descriptors are open on files below `dir` (-1: none left
/// to look).
inline int fds_below(const std::filesystem::path& dir) {
  const std::string prefix = dir.string() + "/";
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d)) {
    char target[4096];
    std::string link = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    if (std::string_view(target, static_cast<std::size_t>(len)).starts_with(prefix)) ++n;
  }
  ::closedir(d);
  return n;
}

}  // namespace ringio_test
