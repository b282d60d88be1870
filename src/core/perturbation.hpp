// SPDX-License-Identifier: Apache-2.0
// perturbation — a seeded test mode of the backends (RINGIO_PERTURB=<seed>): it changes
// what the kernel is allowed to change anyway, so that code which depends on one order
// or one size fails in tests. io_uring: the completions of a reaped batch come in
// another order (those of one request keep theirs), some wait for a later iteration (a
// batch split at a random point, single ones deferred), receives and sends ask for
// fewer bytes (short transfers), and multishot requests are ended by a cancel nobody
// asked for. Readiness: events in another order, and repeated (spurious readiness).
// Off (one predictable branch) when the variable is unset. RINGIO_PERTURB=<seed>:<kinds>
// or RINGIO_PERTURB_KINDS=<kinds> (a comma list of reorder, defer, short, multishot;
// all by default) narrows it down.
#pragma once

#include <cstdint>
#include <random>

namespace ringio::detail {

class perturbation {
 public:
  /// Reads RINGIO_PERTURB once per process (silently: programs that check their
  /// output run under it too; io_context::describe() says it is on); each context of
  /// the process draws its own stream from the seed and the order contexts were made.
  perturbation() noexcept;

  [[nodiscard]] bool on() const noexcept { return on_; }
  /// Which perturbations RINGIO_PERTURB_KINDS lets through (all by default).
  [[nodiscard]] bool reorders() const noexcept { return (kinds_ & reorder_kind) != 0; }
  [[nodiscard]] bool defers() const noexcept { return (kinds_ & defer_kind) != 0; }
  [[nodiscard]] bool shortens() const noexcept { return (kinds_ & short_kind) != 0; }
  [[nodiscard]] bool ends_multishot() const noexcept { return (kinds_ & multishot_kind) != 0; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  /// True once in `n` draws.
  bool one_in(unsigned n) noexcept { return n != 0 && rng_() % n == 0; }
  /// A number in [0, n).
  std::uint64_t below(std::uint64_t n) noexcept { return n == 0 ? 0 : rng_() % n; }
  /// A shorter length for a transfer of `len` bytes (sometimes `len` itself).
  std::uint32_t shorten(std::uint32_t len) noexcept {
    if (len < 2 || !shortens() || !one_in(4)) return len;
    // Half of them very short (at most 16 bytes), the rest anywhere below `len`.
    const std::uint64_t limit = one_in(2) && len > 16 ? 16 : len - 1;
    return 1 + static_cast<std::uint32_t>(below(limit));
  }

 private:
  static constexpr unsigned reorder_kind = 1, defer_kind = 2, short_kind = 4, multishot_kind = 8;
  bool on_ = false;
  unsigned kinds_ = 0;
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace ringio::detail
