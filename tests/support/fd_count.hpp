// SPDX-License-Identifier: Apache-2.0
// fd_count — open descriptors of this process, to prove nothing leaks.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstddef>
#include <string>

namespace ringio_test {

inline std::size_t open_fd_count() {
  std::size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
    --n;  // the directory stream itself
  }
  return n;
}

/// The open descriptors, each as "N -> target", for a failure message.
inline std::string open_fd_list() {
  std::string out;
  if (DIR* d = opendir("/proc/self/fd")) {
    const int own = dirfd(d);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' || std::stoi(e->d_name) == own) continue;
      char target[256] = {};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
      out += std::string(e->d_name) + " -> " + (n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?") + "\n";
    }
    closedir(d);
  }
  return out;
}

}  // namespace ringio_test
