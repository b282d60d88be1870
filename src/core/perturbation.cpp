// SPDX-License-Identifier: Apache-2.0
#include "core/perturbation.hpp"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace ringio::detail {
namespace {

struct process_seed {
  bool on = false;
  std::uint64_t seed = 0;
  unsigned kinds = 15;
  process_seed() noexcept {
    const char* v = std::getenv("RINGIO_PERTURB");
    if (v == nullptr || *v == '\0') return;
    char* end = nullptr;
    seed = std::strtoull(v, &end, 10);
    on = end != v;
    // RINGIO_PERTURB=<seed>:<kinds> or RINGIO_PERTURB_KINDS=<kinds>
    const char* k = on && *end == ':' ? end + 1 : std::getenv("RINGIO_PERTURB_KINDS");
    if (k == nullptr || *k == '\0') return;
    const std::string_view list(k);
    kinds = 0;
    const char* names[] = {"reorder", "defer", "short", "multishot"};
    for (unsigned i = 0; i < 4; ++i)
      if (list.find(names[i]) != std::string_view::npos) kinds |= 1u << i;
  }
};

std::atomic<std::uint64_t> contexts_made{0};

}  // namespace

perturbation::perturbation() noexcept {
  static const process_seed process;
  if (!process.on) return;
  on_ = true;
  seed_ = process.seed;
  kinds_ = process.kinds;
  const std::uint64_t nth = contexts_made.fetch_add(1, std::memory_order_relaxed);
  rng_.seed(process.seed * 0x9e3779b97f4a7c15ULL + nth);
}

}  // namespace ringio::detail
