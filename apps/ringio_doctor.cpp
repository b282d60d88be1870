// SPDX-License-Identifier: Apache-2.0
// ringio-doctor — what ringio finds on this host: the kernel's io_uring features, what
// keeps io_uring from starting and how to fix it, the backend ringio picks, and the
// limits that bound a server. Exit 0: io_uring (the preferred backend) is usable;
// 1: it is not (ringio falls back to epoll); 2: bad arguments.
#include <cstdio>
#include <exception>
#include <string_view>

#include "ringio/doctor/diagnose.hpp"

namespace {

constexpr const char* usage =
    "usage: ringio-doctor [--json]\n"
    "Reports the kernel's io_uring features (yes/no and why), what keeps io_uring from\n"
    "starting and its fix, the backend ringio picks, and the limits that bound a server.\n"
    "  --json    one JSON object instead of text\n"
    "exit status: 0 io_uring usable, 1 not usable (ringio falls back to epoll), 2 bad arguments\n";

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "ringio-doctor: unknown argument '%s'\n%s", argv[i], usage);
      return 2;
    }
  }
  try {
    const ringio::doctor::report r = ringio::doctor::diagnose();
    const std::string out = json ? ringio::doctor::to_json(r) : ringio::doctor::to_text(r);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return r.uring_usable ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringio-doctor: %s\n", e.what());
    return 1;
  }
}
