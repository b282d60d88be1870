// SPDX-License-Identifier: Apache-2.0
// What the two attack suites of the fiber hooks share: the stack of a fiber that runs C
// code through the hooks, and a fixture that runs functions as fibers of the test's
// loop with a time limit (a hang is a failure, not a stuck test).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

namespace ringio_test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr std::size_t hook_stack_scale = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr std::size_t hook_stack_scale = 4;
#else
inline constexpr std::size_t hook_stack_scale = 1;
#endif
#else
inline constexpr std::size_t hook_stack_scale = 1;
#endif

/// The stack of a fiber running C code through the hooks (sanitizers need more).
inline const ringio::fiber_options hook_stack{.stack_size = 256 * 1024 * hook_stack_scale};

/// Whether the hooks are linked in or preloaded.
inline bool hooks_present() { return ::dlsym(RTLD_DEFAULT, "ringio_fiber_hooks_attach") != nullptr; }

/// A backend test that skips where the hooks cannot run and runs fibers with a limit.
class hooks_attack_test : public backend_test {
 protected:
  void SetUp() override {
    backend_test::SetUp();
    if (IsSkipped()) return;
    if (GetParam() == ringio::backend_kind::sim) GTEST_SKIP() << "the hooks wait on real descriptors";
    if (!hooks_present()) GTEST_SKIP() << "the hooks are neither linked in nor preloaded";
  }
  /// Runs the functions as fibers of one scope on the test's loop. Fibers still waiting
  /// after `limit` are stopped (their calls fail) so that a hang is a failure.
  void in_fibers(const std::vector<std::function<void()>>& fns, std::chrono::seconds limit = std::chrono::seconds(10)) {
    run([](const std::vector<std::function<void()>>& fns, std::chrono::seconds limit) -> ringio::task<void> {
      ringio::scope s;
      for (const auto& fn : fns)
        ringio::spawn_fiber(
            s, [&fn] { fn(); }, hook_stack);
      ringio::scope w;
      w.spawn([](ringio::scope& s, std::chrono::seconds limit) -> ringio::task<void> {
        auto slept = co_await ringio::sleep_for(limit);
        if (slept) {
          ADD_FAILURE() << "the fibers still waited after " << limit.count() << " s: stopped";
          s.request_stop();
        }
      }(s, limit));
      co_await s.join();
      w.request_stop();
      co_await w.join();
    }(fns, limit));
  }
  void in_fiber(const std::function<void()>& fn, std::chrono::seconds limit = std::chrono::seconds(10)) {
    in_fibers({fn}, limit);
  }
};

}  // namespace ringio_test
