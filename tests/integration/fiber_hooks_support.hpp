// SPDX-License-Identifier: Apache-2.0
// What the system-call hook tests share: the fixture (skips sim, and a program where
// the hooks are neither linked nor preloaded), a blocking socket pair, and a ticker
// task that proves the loop ran while a fiber sat in a blocking call.
#pragma once

#include <dlfcn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

namespace ringio_test {

class fiber_hooks_test : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == ringio::backend_kind::sim)
      GTEST_SKIP() << "the hooks wait on real descriptors; sim is not a loop for them";
    if (::dlsym(RTLD_DEFAULT, "ringio_fiber_hooks_attach") == nullptr)
      GTEST_SKIP() << "the hooks are neither linked in nor preloaded (LD_PRELOAD=libringio_fiber_hooks.so)";
  }
};

/// A connected pair of blocking Unix stream sockets, closed (if still open) at the end.
struct blocking_pair {
  int a = -1, b = -1;
  blocking_pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      a = fds[0];
      b = fds[1];
    }
  }
  ~blocking_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
  blocking_pair(const blocking_pair&) = delete;
  blocking_pair& operator=(const blocking_pair&) = delete;
};

/// Wakes every millisecond while `running` and counts its wake-ups: proof that the loop
/// ran while a fiber sat in a blocking call.
inline ringio::task<void> ticker(const std::atomic<bool>& running, int& ticks) {
  using namespace std::chrono_literals;
  while (running.load()) {
    auto slept = co_await ringio::sleep_for(1ms);
    if (!slept) co_return;
    ++ticks;
  }
}

inline constexpr ringio::fiber_options small_stack{.stack_size = 128 * 1024};

}  // namespace ringio_test
