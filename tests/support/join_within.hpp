// SPDX-License-Identifier: Apache-2.0
// join_within — waits for a scope's children, but stops them after a limit, so that a
// helper (a test server waiting for a client that already failed) cannot hang a test.
#pragma once

#include <chrono>

#include "ringio/scope.hpp"
#include "ringio/task.hpp"
#include "ringio/time/sleep.hpp"

namespace ringio_test {

/// True when every child finished by itself within `limit`; the rest are stopped and
/// awaited either way.
inline ringio::task<bool> join_within(ringio::scope& s, std::chrono::milliseconds limit) {
  using namespace std::chrono_literals;
  for (auto waited = 0ms; s.size() > 0 && waited < limit; waited += 10ms) (void)co_await ringio::sleep_for(10ms);
  const bool in_time = s.size() == 0;
  s.request_stop();
  co_await s.join();
  co_return in_time;
}

}  // namespace ringio_test
