// SPDX-License-Identifier: Apache-2.0
// ringio/doctor/feature.hpp — one io_uring feature as the running kernel offers it.
#pragma once

#include <string>

namespace ringio::doctor {

/// Whether the kernel offers one io_uring feature, found by asking the kernel (its
/// opcode probe, a setup flag it accepts, a registration it takes).
struct feature {
  /// The feature's name, e.g. "DEFER_TASKRUN" or "IORING_OP_SEND_ZC".
  std::string name;
  /// The kernel offers it.
  bool available = false;
  /// ringio uses it when available (false: listed for the operator's information).
  bool used_by_ringio = true;
  /// Why it is available or not: what was asked of the kernel and what it answered,
  /// and the Linux release that brought the feature.
  std::string reason;
};

}  // namespace ringio::doctor
