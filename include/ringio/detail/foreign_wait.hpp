// SPDX-License-Identifier: Apache-2.0
// ringio/detail/foreign_wait.hpp — a task of this loop parked while its child runs on
// another loop (spawn_on). The loop counts it as live work, and stops the child when
// the loop shuts down, so the task is neither abandoned nor resumed on a dead loop.
#pragma once

#include <stop_token>

namespace ringio::detail {

struct foreign_wait {
  foreign_wait* next = nullptr;
  foreign_wait* prev = nullptr;
  std::stop_source* child_stop = nullptr;  ///< requested when the home loop shuts down
};

}  // namespace ringio::detail
