// SPDX-License-Identifier: Apache-2.0
// ringio/doctor/diagnose.hpp — examining the host ringio runs on (ringio-doctor's
// library call) and writing the result as text or JSON.
#pragma once

#include <string>

#include "ringio/doctor/report.hpp"

namespace ringio::doctor {

/// Examines this process's host: creates an io_uring ring exactly as an io_context
/// does (same flags, same probe), asks the kernel about each optional feature,
/// explains a failure (io_uring_disabled, seccomp, RLIMIT_MEMLOCK, a missing opcode),
/// constructs a default io_context to learn the backend it picks, and reads the
/// server limits. Takes a few milliseconds; opens and closes a few rings and sockets.
[[nodiscard]] report diagnose();

/// The report as lines for a person: kernel, backend, blocker and fix, features
/// (yes/no and why), limits with their warnings.
[[nodiscard]] std::string to_text(const report& r);

/// The report as one JSON object: {"kernel", "uring_usable", "blocker" (null or
/// {"kind", "error", "cause", "fix"}), "backend" (null or a name), "backend_reason",
/// "features": [{"name", "available", "used_by_ringio", "reason"}], "limits":
/// [{"name", "value", "warning"}]}.
[[nodiscard]] std::string to_json(const report& r);

}  // namespace ringio::doctor
