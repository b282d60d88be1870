// SPDX-License-Identifier: Apache-2.0
#include "file_path.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "percent_coding.hpp"

namespace ringio::http::detail {

int decode_relative_path(std::string_view encoded, char* out, std::size_t cap, std::size_t& len) noexcept {
  len = 0;
  std::size_t segment = 0;  // where the current segment starts in out
  auto end_segment = [&]() -> int {
    std::string_view seg(out + segment, len - segment);
    if (seg == "..") return 404;
    if (seg.empty() || seg == ".") {
      len = segment;  // drop it (and keep no trailing '/')
    } else {
      if (len + 1 >= cap) return 414;
      out[len++] = '/';
    }
    segment = len;
    return 0;
  };
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    char c = encoded[i];
    if (c == '/') {
      if (int st = end_segment()) return st;
      continue;
    }
    if (c == '%') {
      int v = escape_at(encoded, i);
      if (v < 0) return 400;
      c = static_cast<char>(v);
      if (c == '/') return 400;  // an encoded '/' would hide a segment boundary
      i += 2;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return 400;  // NUL and other controls
    if (len + 1 >= cap) return 414;
    out[len++] = c;
  }
  if (int st = end_segment()) return st;
  if (len > 0 && out[len - 1] == '/') --len;  // "a/b/" names the directory a/b
  out[len] = '\0';
  return 0;
}

bool names_directory(std::string_view encoded) noexcept {
  auto slash = encoded.rfind('/');
  std::string_view last = slash == std::string_view::npos ? encoded : encoded.substr(slash + 1);
  return last.empty() || last == "." || last == "%2e" || last == "%2E";
}

int open_beneath(int root_fd, const char* rel) noexcept {
  open_how how{};
  how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, root_fd, rel[0] == '\0' ? "." : rel, &how, sizeof how);
  return fd >= 0 ? static_cast<int>(fd) : -errno;
}

}  // namespace ringio::http::detail
