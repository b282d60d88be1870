// SPDX-License-Identifier: Apache-2.0
// terminal — the interactive screen of ringio-top with plain ANSI escapes: the
// alternate screen without echo or line buffering, keys as they are typed, whole-screen
// redraws. The terminal is put back as it was when the object goes.
#pragma once

#include <termios.h>

#include <optional>
#include <string>
#include <vector>

namespace top {

/// The controlling terminal in ringio-top's mode (stdin and stdout must be terminals).
class terminal {
 public:
  terminal();
  ~terminal();
  terminal(const terminal&) = delete;
  terminal& operator=(const terminal&) = delete;

  /// A key typed within `timeout_ms` (the arrow keys left and right come as '<' and
  /// '>'), nullopt when none was, or when a signal interrupted the wait.
  std::optional<char> read_key(int timeout_ms);
  /// Replaces the screen with `lines` (cut to the terminal's width when it is known).
  void draw(const std::vector<std::string>& lines);

 private:
  termios saved_{};
};

}  // namespace top
