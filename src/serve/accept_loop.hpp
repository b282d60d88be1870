// SPDX-License-Identifier: Apache-2.0
// accept_loop — the body of ringio::serve on one loop: accept (or receive handed-over
// sockets), start handlers, survive accept errors, drain on stop.
#pragma once

#include <memory>
#include <stop_token>
#include <vector>

#include "ringio/channel.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/result.hpp"
#include "ringio/serve.hpp"
#include "ringio/task.hpp"
#include "serve/connection_set.hpp"

namespace ringio::detail {

/// One loop's share in the acceptor dispatch: the descriptors loop 0 hands it, and its
/// counters (open connections decide who gets the next one).
struct loop_slot {
  channel<int> inbox{4096};
  loop_counters counters;
};

/// Loop 0's view of every loop in the acceptor dispatch.
class acceptor_dispatch {
 public:
  acceptor_dispatch(std::vector<std::unique_ptr<loop_slot>>& slots, std::size_t limit) noexcept
      : slots_(slots), limit_(limit) {}
  /// Every loop is at max_connections.
  [[nodiscard]] bool all_full() const noexcept;
  /// Hands `s` to the least-loaded loop; false when that is loop 0 (or its inbox is
  /// full): serve it here.
  bool hand_off(stream_socket& s) noexcept;

 private:
  std::vector<std::unique_ptr<loop_slot>>& slots_;
  std::size_t limit_;
};

/// Accepts on `listener` until `graceful` (or the awaiting task's token) is stopped,
/// then drains. `counters` and `dispatch` may be null.
task<result<void>> accept_loop(stream_listener& listener, const connection_handler& handler,
                               const serve_options& options, std::stop_token graceful, loop_counters* counters,
                               acceptor_dispatch* dispatch);

/// Acceptor dispatch, loops 1..N-1: serves what loop 0 hands over until `graceful`.
task<result<void>> receive_loop(loop_slot& slot, const connection_handler& handler, const serve_options& options,
                                std::stop_token graceful);

}  // namespace ringio::detail
