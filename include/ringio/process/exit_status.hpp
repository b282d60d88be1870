// SPDX-License-Identifier: Apache-2.0
// ringio/process/exit_status.hpp — how a child process ended.
#pragma once

namespace ringio::process {

/// How a child process ended: it exited with a code, or a signal ended it.
struct exit_status {
  /// The exit code (0–255) when the child exited; -1 when a signal ended it.
  int code = -1;
  /// The signal that ended the child (SIGKILL, SIGTERM, ...); 0 when it exited.
  int signal = 0;
  /// Whether the child called exit() (or returned from main) rather than being killed.
  [[nodiscard]] bool exited() const noexcept { return signal == 0; }
  /// Whether the child exited with code 0.
  [[nodiscard]] bool success() const noexcept { return signal == 0 && code == 0; }
  /// Equal when both the code and the signal are.
  friend bool operator==(const exit_status&, const exit_status&) = default;
};

}  // namespace ringio::process
