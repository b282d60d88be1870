// SPDX-License-Identifier: Apache-2.0
// sigpipe — writes that cannot say MSG_NOSIGNAL (sendfile, a write to a pipe) would
// raise SIGPIPE when the reader is gone, and its default action ends the process.
#pragma once

#include <csignal>

namespace ringio::detail {

/// Sets SIGPIPE to SIG_IGN, once per process, if nobody chose an action for it.
inline void ignore_sigpipe_once() noexcept {
  static const bool done = [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

}  // namespace ringio::detail
