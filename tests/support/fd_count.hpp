// SPDX-License-Identifier: Apache-2.0
// fd_count — open descriptors of this process, to prove nothing leaks.
#pragma once

#include <dirent.h>

#include <cstddef>

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

}  // namespace ringio_test
