// SPDX-License-Identifier: Apache-2.0
// loop_stall_meter — how long a loop went without running its tasks: a task that wakes
// every millisecond while `running` and records the longest gap between wake-ups, over
// the whole run and once `started` (spawning runs each new fiber up to its first wait
// inside one turn of the loop, so a test usually judges the gaps after that).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>

#include "ringio/ringio.hpp"

namespace ringio_test {

struct stall_record {
  std::chrono::nanoseconds longest{0};
  std::chrono::nanoseconds longest_after_start{0};
  long ticks = 0;
};

inline ringio::task<void> stall_meter(const std::atomic<bool>& running, const std::atomic<bool>& started,
                                      stall_record& rec) {
  using namespace std::chrono_literals;
  auto last = std::chrono::steady_clock::now();
  bool last_after_start = false;
  while (running.load()) {
    auto slept = co_await ringio::sleep_for(1ms);
    if (!slept) co_return;
    const auto now = std::chrono::steady_clock::now();
    rec.longest = std::max<std::chrono::nanoseconds>(rec.longest, now - last);
    if (last_after_start)
      rec.longest_after_start = std::max<std::chrono::nanoseconds>(rec.longest_after_start, now - last);
    last = now;
    last_after_start = started.load();
    ++rec.ticks;
  }
}

}  // namespace ringio_test
