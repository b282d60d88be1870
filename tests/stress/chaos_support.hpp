// SPDX-License-Identifier: Apache-2.0
// chaos_support — what the randomized stress run needs besides ringio itself: its
// configuration from the environment, a watchdog that turns a hang into an abort that
// names the seed, and the deterministic byte pattern every connection carries.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ringio_test::chaos {

/// Work is scaled down in sanitizer builds (RINGIO_SANITIZED comes from the build).
#if defined(RINGIO_SANITIZED)
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif

/// RINGIO_CHAOS_SEED (first seed), RINGIO_CHAOS_SEEDS (how many), RINGIO_CHAOS_SECONDS
/// (time budget per backend: seeds left when it runs out are skipped, and said so),
/// RINGIO_CHAOS_DISABLE (comma-separated perturbations to leave out, e.g.
/// "task_timeout,shutdown"), RINGIO_CHAOS_TRACE=1 (print the event trace of every
/// connection of a failing scenario), RINGIO_CHAOS_HANG_SECONDS (watchdog, default 60).
struct config {
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = sanitized ? 20 : 40;
  double seconds = sanitized ? 30.0 : 5.0;
  double hang_seconds = 60.0;
  bool trace = false;
  std::set<std::string> disabled;

  [[nodiscard]] bool enabled(const std::string& what) const { return disabled.count(what) == 0; }

  static config from_env() {
    config c;
    if (const char* s = std::getenv("RINGIO_CHAOS_SEED")) c.first_seed = std::strtoull(s, nullptr, 10);
    if (const char* s = std::getenv("RINGIO_CHAOS_SEEDS")) c.seeds = std::strtoull(s, nullptr, 10);
    if (const char* s = std::getenv("RINGIO_CHAOS_SECONDS")) c.seconds = std::strtod(s, nullptr);
    if (const char* s = std::getenv("RINGIO_CHAOS_HANG_SECONDS")) c.hang_seconds = std::strtod(s, nullptr);
    if (const char* s = std::getenv("RINGIO_CHAOS_TRACE")) c.trace = *s != '\0' && *s != '0';
    if (const char* s = std::getenv("RINGIO_CHAOS_DISABLE")) {
      std::stringstream in(s);
      std::string item;
      while (std::getline(in, item, ','))
        if (!item.empty()) c.disabled.insert(item);
    }
    return c;
  }
};

/// Aborts the process, naming what it was running, if a scenario outlives its limit.
class watchdog {
 public:
  watchdog() : thread_([this] { watch(); }) {}
  ~watchdog() {
    {
      std::lock_guard lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// `dump` runs on the watchdog's thread just before the abort (racy by nature: the
  /// process is about to die anyway); it prints what the hung run was doing.
  void arm(std::string what, double seconds, std::function<void()> dump = {}) {
    std::lock_guard lk(mu_);
    what_ = std::move(what);
    dump_ = std::move(dump);
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    armed_ = true;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard lk(mu_);
    armed_ = false;
  }

 private:
  void watch() {
    std::unique_lock lk(mu_);
    while (!quit_) {
      if (!armed_) {
        cv_.wait(lk);
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline_) {
        std::fprintf(stderr, "\nchaos: HANG: %s did not finish in time; aborting\n", what_.c_str());
        if (dump_) dump_();
        std::fflush(stderr);
        std::abort();
      }
      cv_.wait_until(lk, deadline_);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
  bool armed_ = false;
  std::string what_;
  std::function<void()> dump_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The bytes of connection `conn` of scenario `seed` (offset i is byte i of the
/// stream): any loss, duplication or reordering shows as a mismatch at a known offset.
inline std::vector<std::byte> stream_pattern(std::uint64_t seed, std::uint64_t conn, std::size_t n) {
  std::vector<std::byte> v(n);
  std::uint64_t base = splitmix64(seed * 0x100000001b3ULL ^ (conn + 1) * 0x9e3779b97f4a7c15ULL);
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t w = splitmix64(base + i / 8);
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<std::byte>((w >> (8 * k)) & 0xff);
  }
  return v;
}

/// SO_LINGER {on, 0}: the next close sends a TCP RST instead of a FIN.
inline void arm_reset_on_close(int fd) {
  linger lg{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

}  // namespace ringio_test::chaos
