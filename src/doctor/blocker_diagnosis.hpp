// SPDX-License-Identifier: Apache-2.0
// blocker_diagnosis — reading why io_uring failed to start from the error and the
// host's settings (sysctls, seccomp, rlimits).
#pragma once

#include <string>
#include <system_error>

#include "ringio/doctor/blocker.hpp"

namespace ringio::doctor::detail {

/// The blocker behind `error` (the failing call and its errno, as creating the ring
/// reported them): kernel.io_uring_disabled and kernel.io_uring_group, this
/// process's seccomp mode, RLIMIT_MEMLOCK, a missing opcode or feature.
blocker explain(std::error_code code, const std::string& error);

}  // namespace ringio::doctor::detail
