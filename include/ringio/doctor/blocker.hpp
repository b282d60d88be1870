// SPDX-License-Identifier: Apache-2.0
// ringio/doctor/blocker.hpp — what keeps io_uring from starting, and its fix.
#pragma once

#include <string>

namespace ringio::doctor {

/// The reason io_uring cannot start on this host, as precise as the kernel lets it
/// be told, and what an operator changes to remove it.
struct blocker {
  /// "io_uring_disabled" (the kernel.io_uring_disabled sysctl), "seccomp" (a seccomp
  /// filter denies an io_uring syscall), "memlock" (RLIMIT_MEMLOCK on kernels that
  /// charge rings to it), "not_built" (a kernel without CONFIG_IO_URING),
  /// "missing_feature" (an opcode or feature ringio needs) or "other".
  std::string kind;
  /// The failing call and its error as ringio met them, e.g.
  /// "io_uring_setup: Operation not permitted".
  std::string error;
  /// The reading of that error: which setting or filter produced it.
  std::string cause;
  /// What to change to make io_uring usable.
  std::string fix;
};

}  // namespace ringio::doctor
