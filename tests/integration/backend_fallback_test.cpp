// SPDX-License-Identifier: Apache-2.0
// Falling back to epoll when io_uring cannot start, tested for real: a child process
// installs a seccomp filter that makes io_uring_setup (or io_uring_register) fail with
// EPERM, as a container runtime's profile or kernel.io_uring_disabled would.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;

namespace {

// Denies one syscall with EPERM for this process from now on.
bool deny_syscall(long nr) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

struct child_result {
  int status = -1;
  std::string err;  // the child's stderr
};

// Runs `body` in a forked child whose stderr is captured; body's return is the exit code.
child_result in_child(const std::function<int()>& body) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    int code = 99;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uncaught: %s\n", e.what());
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(pipefd[1]);
  child_result r;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) r.err.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// One echo-free round trip through the context: accept + connect + send + recv.
bool round_trip(io_context& ctx) {
  auto l = stream_listener::bind(socket_address::loopback(0));
  if (!l) return false;
  auto at = *l->local_address();
  return sync_wait(ctx, [](stream_listener& l, socket_address at) -> task<bool> {
    auto [a, c] = co_await when_all(l.accept(), stream_socket::connect(at));
    if (!a || !c) co_return false;
    auto w = co_await c->send_all(std::string_view("hi"));
    std::array<char, 2> buf;
    auto r = co_await a->recv_exact(buf);
    co_return w&& r&&* r == 2;
  }(*l, at));
}

TEST(BackendFallback, DeniedIoUringSetupFallsBackToEpollWithOneWarning) {
  auto r = in_child([] {
    if (!deny_syscall(__NR_io_uring_setup)) return 10;
    io_context first;
    io_context second;  // the warning is printed once per process
    if (first.backend() != backend_kind::epoll || second.backend() != backend_kind::epoll) return 11;
    return round_trip(first) ? 0 : 12;
  });
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("io_uring unavailable (io_uring_setup: Operation not permitted); falling back to epoll"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("falling back"), r.err.rfind("falling back")) << "warned more than once:\n" << r.err;
}

TEST(BackendFallback, DeniedProbeFallsBackAndNamesTheFailingCall) {
  auto r = in_child([] {
    if (!deny_syscall(__NR_io_uring_register)) return 10;
    io_context ctx;
    return ctx.backend() == backend_kind::epoll && round_trip(ctx) ? 0 : 11;
  });
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("IORING_REGISTER_PROBE"), std::string::npos) << r.err;
}

TEST(BackendFallback, ForcedUringThatCannotStartIsAnError) {
  for (auto kind : {backend_kind::uring, backend_kind::uring_poll}) {
    auto r = in_child([kind] {
      if (!deny_syscall(__NR_io_uring_setup)) return 10;
      try {
        io_context ctx(io_context_options{.backend = kind});
        return 11;  // no silent fallback
      } catch (const std::system_error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return e.code() == std::errc::operation_not_permitted ? 0 : 12;
      }
    });
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("forced by io_context_options"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("falling back"), std::string::npos) << r.err;
  }
}

TEST(BackendFallback, ForcedByEnvironmentIsAnErrorToo) {
  auto r = in_child([] {
    if (!deny_syscall(__NR_io_uring_setup)) return 10;
    ::setenv("RINGIO_BACKEND", "uring", 1);
    try {
      io_context ctx;
      return 11;
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 0;
    }
  });
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("forced by RINGIO_BACKEND"), std::string::npos) << r.err;
}

TEST(BackendFallback, EpollNeedsNoIoUringAtAll) {
  auto r = in_child([] {
    if (!deny_syscall(__NR_io_uring_setup)) return 10;
    io_context ctx(io_context_options{.backend = backend_kind::epoll});
    return round_trip(ctx) ? 0 : 11;
  });
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "") << "no warning expected when epoll is chosen";
}

}  // namespace
