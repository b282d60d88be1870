// SPDX-License-Identifier: Apache-2.0
// ringio/exec/yield_sender.hpp — exec::yield(): a sender that completes on a later
// iteration of whichever loop starts it.
#pragma once

#include <system_error>
#include <type_traits>
#include <utility>

#include "ringio/exec/scheduler.hpp"

namespace ringio::exec {

/// The sender of exec::yield(). Like schedule_sender, but its loop is only known when
/// it starts, so its environment names no completion scheduler.
class yield_sender {
 public:
  using sender_concept = sender_t;  ///< Marks it a sender.
  /// How it completes (error: started on a thread that runs no loop).
  using completion_signatures =
      exec::completion_signatures<set_value_t(), set_error_t(std::error_code), set_stopped_t()>;

  /// The operation state: queued on the loop running the thread that starts it.
  template <class Receiver>
  detail::schedule_state<std::decay_t<Receiver>> connect(Receiver&& r) const {
    return {nullptr, std::forward<Receiver>(r)};
  }
};

/// A sender that completes on a later iteration of the loop that starts it (after
/// the work already queued there): set_value(), or set_stopped() after a stop.
[[nodiscard]] inline yield_sender yield() noexcept { return {}; }

}  // namespace ringio::exec
