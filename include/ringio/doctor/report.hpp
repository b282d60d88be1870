// SPDX-License-Identifier: Apache-2.0
// ringio/doctor/report.hpp — everything ringio::doctor::diagnose() found.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ringio/backend_kind.hpp"
#include "ringio/doctor/blocker.hpp"
#include "ringio/doctor/feature.hpp"
#include "ringio/doctor/limit.hpp"

namespace ringio::doctor {

/// The host as ringio sees it: the kernel, the io_uring features it offers, what (if
/// anything) keeps io_uring from starting, the backend an io_context would pick, and
/// the limits that bite servers.
struct report {
  /// The kernel's release (uname -r).
  std::string kernel;
  /// The preferred backend (backend_kind::uring) starts here: the same ring setup and
  /// probe as an io_context's succeeded.
  bool uring_usable = false;
  /// Why io_uring cannot start; nullopt when uring_usable.
  std::optional<doctor::blocker> blocker;
  /// The io_uring features, each with yes/no and why (empty when io_uring cannot start).
  std::vector<feature> features;
  /// The backend an io_context with default options picks in this process
  /// (RINGIO_BACKEND included); nullopt when it would fail to start at all.
  std::optional<backend_kind> backend;
  /// Why that backend: the default, a fall-back and its reason, or RINGIO_BACKEND.
  std::string backend_reason;
  /// Host limits that bound a server.
  std::vector<limit> limits;
};

}  // namespace ringio::doctor
