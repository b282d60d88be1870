// SPDX-License-Identifier: Apache-2.0
// ringio/sim/run_seeds.hpp — runs one program in many seeded worlds and reports the
// first that fails, with its seed and trace, so it can be replayed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "ringio/sim/fault_model.hpp"
#include "ringio/sim/world.hpp"

namespace ringio::sim {

/// A world whose program failed.
struct seed_failure {
  std::uint64_t seed = 0;  ///< the world's seed (replay: RINGIO_SIM_SEED)
  std::string what;        ///< the exception's message
  std::string trace;       ///< the world's last events
};

/// What run_seeds() did.
struct seeds_summary {
  std::size_t worlds = 0;                   ///< worlds run
  std::uint64_t operations = 0;             ///< simulated operations in all of them
  std::chrono::nanoseconds virtual_time{};  ///< virtual time in all of them
  std::chrono::nanoseconds real_time{};     ///< wall-clock time of the whole run
  std::optional<seed_failure> failure;      ///< the first failing world, if any
  /// With check_determinism: false when the first seed, run twice, gave two traces.
  bool deterministic = true;
};

/// How run_seeds() runs.
struct seeds_options {
  std::uint64_t first_seed = 1;  ///< the first world's seed; the others follow
  std::size_t count = 100;       ///< worlds to run
  fault_model faults{};          ///< every world's network and faults
  /// Runs the first seed twice and compares the trace hashes.
  bool check_determinism = true;
  /// Trace lines kept in a failure report.
  std::size_t trace_lines = 60;
};

/// Runs `program` once per seed, each time in a fresh world made on this thread
/// (`program` creates its io_context with backend_kind::sim, its sockets and tasks,
/// and checks its invariants, throwing on a violation). Stops at the first failure.
/// When RINGIO_SIM_SEED is set, runs that seed alone (the replay of a failure).
/// RINGIO_SIM_FIRST_SEED moves the range; RINGIO_SIM_SECONDS runs seeds for that many
/// seconds instead of `count` (the soak mode: `make soak-sim`).
seeds_summary run_seeds(const seeds_options& opts, const std::function<void(world&)>& program);

/// "seed N: what" and the trace, for a test's failure message.
std::ostream& operator<<(std::ostream& os, const seed_failure& f);

}  // namespace ringio::sim
