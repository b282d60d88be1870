// SPDX-License-Identifier: Apache-2.0
#include "ringio/sim/run_seeds.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <ostream>

#include "sim/seed_env.hpp"

namespace ringio::sim {
namespace {

struct one_run {
  std::optional<seed_failure> failure;
  std::uint64_t hash = 0;
  std::uint64_t operations = 0;
  std::chrono::nanoseconds elapsed{};
};

one_run run_one(std::uint64_t seed, const seeds_options& opts, const std::function<void(world&)>& program) {
  world w(seed, opts.faults);
  one_run r;
  try {
    program(w);
  } catch (const std::exception& e) {
    r.failure = seed_failure{seed, e.what(), w.trace(opts.trace_lines)};
  } catch (...) {
    r.failure = seed_failure{seed, "an exception of unknown type", w.trace(opts.trace_lines)};
  }
  if (!r.failure && w.deadlocks() != 0)
    r.failure =
        seed_failure{seed, "a deadlock: nothing could ever happen while operations waited (they were cancelled)",
                     w.trace(opts.trace_lines)};
  r.hash = w.trace_hash();
  r.operations = w.operations();
  r.elapsed = w.elapsed();
  return r;
}

}  // namespace

seeds_summary run_seeds(const seeds_options& opts, const std::function<void(world&)>& program) {
  seeds_summary s;
  auto began = std::chrono::steady_clock::now();
  std::uint64_t first = opts.first_seed;
  std::size_t count = opts.count;
  // The soak mode: RINGIO_SIM_FIRST_SEED moves the range, RINGIO_SIM_SECONDS runs
  // seeds for that long instead of `count`.
  std::chrono::steady_clock::time_point until{};
  if (auto f = detail::number_from_env("RINGIO_SIM_FIRST_SEED")) first = *f;
  if (auto t = detail::number_from_env("RINGIO_SIM_SECONDS")) {
    until = began + std::chrono::seconds(*t);
    count = SIZE_MAX;
  }
  if (auto replay = detail::number_from_env("RINGIO_SIM_SEED")) {
    first = *replay;
    count = 1;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (until != std::chrono::steady_clock::time_point{} && std::chrono::steady_clock::now() >= until) break;
    std::uint64_t seed = first + i;
    one_run r = run_one(seed, opts, program);
    ++s.worlds;
    s.operations += r.operations;
    s.virtual_time += r.elapsed;
    if (r.failure) {
      s.failure = std::move(r.failure);
      break;
    }
    if (i == 0 && opts.check_determinism) {
      one_run again = run_one(seed, opts, program);
      if (again.hash != r.hash) {
        s.deterministic = false;
        s.failure = seed_failure{seed, "the same seed gave two different traces", ""};
        break;
      }
    }
  }
  s.real_time = std::chrono::steady_clock::now() - began;
  return s;
}

std::ostream& operator<<(std::ostream& os, const seed_failure& f) {
  return os << "seed " << f.seed << ": " << f.what << "\n(replay: RINGIO_SIM_SEED=" << f.seed << ")\nlast events:\n"
            << f.trace;
}

}  // namespace ringio::sim
