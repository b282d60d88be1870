// SPDX-License-Identifier: Apache-2.0
// watchdog — turns a hang into a test failure: if the guarded section has not ended
// within its limit, `on_fire` runs on the watchdog's thread (it should unblock the
// section, e.g. stop a loop), and fired() tells the test.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ringio_test {

class watchdog {
 public:
  watchdog(std::chrono::milliseconds limit, std::function<void()> on_fire)
      : thread_([this, limit, f = std::move(on_fire)] {
          std::unique_lock lock(m_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            fired_ = true;
            lock.unlock();
            f();
          }
        }) {}
  ~watchdog() { disarm(); }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// Ends the guarded section; returns true if the watchdog had fired.
  bool disarm() {
    {
      std::lock_guard lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return fired_;
  }
  [[nodiscard]] bool fired() const noexcept { return fired_; }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace ringio_test
