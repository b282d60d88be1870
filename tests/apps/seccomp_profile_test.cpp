// SPDX-License-Identifier: Apache-2.0
// deploy/seccomp/ringio-io_uring.json, the fragment that lets a container use io_uring:
// it allows exactly the io_uring syscalls, and echo_server runs on the uring backend
// under a filter built from it (the io_uring syscalls it does not name denied with EPERM,
// as a runtime's default profile denies them), and falls back to epoll without it.
#include "support/seccomp_profile.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include "ringio/ringio.hpp"
#include "support/confined_process.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* fragment = SECCOMP_FRAGMENT_PATH;
constexpr const char* server = ECHO_SERVER_PATH;

// A blocking client: sends `msg` to 127.0.0.1:port and reads it back.
bool echoes(std::uint16_t port, const std::string& msg) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto at = ringio::socket_address::loopback(port);
  timeval limit{5, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  bool ok = ::connect(s, at.native(), at.size()) == 0 &&
            ::send(s, msg.data(), msg.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size());
  std::string back;
  char buf[256];
  while (ok && back.size() < msg.size()) {
    ssize_t n = ::recv(s, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;  // a child's SIGCHLD, say
    if (n <= 0) break;
    back.append(buf, static_cast<std::size_t>(n));
  }
  ::close(s);
  return ok && back == msg;
}

struct server_run {
  std::string banner;  // the "listening on ..., backend ..." line
  bool echoed = false;
  int status = -1;
  std::string err;
};

// Runs echo_server under `filter`, echoes one message, stops it with SIGTERM.
server_run run_server(const syscall_filter& filter) {
  confined_process p({server, "--port", "0", "--threads", "1"}, [&filter] { return filter.install(); });
  server_run r;
  r.banner = p.read_line(10s).value_or("");
  if (auto pos = r.banner.find("127.0.0.1:"); pos != std::string::npos)
    r.echoed = echoes(static_cast<std::uint16_t>(std::stoi(r.banner.substr(pos + 10))), "through the filter");
  p.signal(SIGTERM);
  r.status = p.wait(10s).value_or(-1);
  r.err = p.stderr_text();
  return r;
}

bool uring_runs_here() {
  ringio::io_context ctx(ringio::io_context_options{.quiet = true});
  return ctx.backend() == ringio::backend_kind::uring;
}

TEST(SeccompProfile, AllowsExactlyTheIoUringSyscalls) {
  auto allowed = allowed_syscalls(fragment);
  ASSERT_TRUE(allowed.has_value()) << fragment << " is missing or not a seccomp profile";
  EXPECT_EQ(*allowed, (std::set<std::string>{"io_uring_setup", "io_uring_enter", "io_uring_register"}));
}

TEST(SeccompProfile, EchoServerRunsOnUringUnderTheFragment) {
  if (std::getenv("RINGIO_BACKEND") != nullptr) GTEST_SKIP() << "RINGIO_BACKEND overrides the backend";
  if (!uring_runs_here()) GTEST_SKIP() << "io_uring is unavailable on this host";
  auto allowed = allowed_syscalls(fragment);
  ASSERT_TRUE(allowed.has_value());
  auto r = run_server(io_uring_filter(*allowed));
  EXPECT_NE(r.banner.find("backend uring ("), std::string::npos) << r.banner << r.err;
  EXPECT_TRUE(r.echoed) << r.banner << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("falling back"), std::string::npos) << r.err;
}

TEST(SeccompProfile, WithoutTheFragmentEchoServerFallsBackToEpoll) {
  if (std::getenv("RINGIO_BACKEND") != nullptr) GTEST_SKIP() << "RINGIO_BACKEND overrides the backend";
  auto r = run_server(io_uring_filter({}));
  EXPECT_NE(r.banner.find("backend epoll"), std::string::npos) << r.banner << r.err;
  EXPECT_NE(r.err.find("falling back to epoll"), std::string::npos) << r.err;
  EXPECT_TRUE(r.echoed) << r.banner << r.err;
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(SeccompProfile, EachIoUringSetupOrProbeCallItAllowsIsNeeded) {
  if (std::getenv("RINGIO_BACKEND") != nullptr) GTEST_SKIP() << "RINGIO_BACKEND overrides the backend";
  for (const char* missing : {"io_uring_setup", "io_uring_register"}) {
    SCOPED_TRACE(missing);
    std::set<std::string> allowed{"io_uring_setup", "io_uring_enter", "io_uring_register"};
    allowed.erase(missing);
    auto r = run_server(io_uring_filter(allowed));
    EXPECT_NE(r.banner.find("backend epoll"), std::string::npos) << r.banner << r.err;
    EXPECT_TRUE(r.echoed) << r.banner << r.err;
  }
}

}  // namespace
