// SPDX-License-Identifier: Apache-2.0
// ringio/doctor/limit.hpp — one host limit that matters to a server.
#pragma once

#include <string>

namespace ringio::doctor {

/// One host setting that bounds a server (open files, listen backlog, TCP memory,
/// ports, CPUs), with a warning when its value is likely to bite.
struct limit {
  /// The setting, e.g. "RLIMIT_NOFILE" or "net.core.somaxconn".
  std::string name;
  /// Its value as the host reports it, e.g. "soft 1024, hard 524288".
  std::string value;
  /// Empty when the value is fine for a server; otherwise what it costs and how to
  /// raise it.
  std::string warning;
};

}  // namespace ringio::doctor
