// SPDX-License-Identifier: Apache-2.0
// missed_wakeup_sweep — a safety net for a kernel race: an armed multishot recv can miss
// the wake-up of the peer's close or reset (reported upstream for AF_UNIX and seen here
// on TCP too, Linux 6.18: the socket polls readable/HUP, yet no CQE ever comes). While
// receivers of a pool wait on armed requests, the loop looks at their sockets every
// half second with one poll(2) (an io_context check, not an operation: it keeps no loop
// busy); a receiver that has waited a whole interval on a socket with something to
// report has its request cancelled, and the re-armed request reports it. Costs nothing
// while no receiver waits; the readiness backends have no multishot request.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "ringio/detail/op_base.hpp"

namespace ringio::detail {

class multishot_recv_state;

class missed_wakeup_sweep {
 public:
  static constexpr std::chrono::milliseconds interval{500};

  missed_wakeup_sweep() noexcept;
  missed_wakeup_sweep(const missed_wakeup_sweep&) = delete;
  missed_wakeup_sweep& operator=(const missed_wakeup_sweep&) = delete;

  /// `r` waits on its armed request (loop thread).
  void watch(multishot_recv_state& r);
  void unwatch(multishot_recv_state& r) noexcept;
  /// The pool leaves its context: no more checks.
  void stop() noexcept;

 private:
  struct entry {
    multishot_recv_state* receiver;
    std::uint64_t since;  // the round it started waiting in
  };
  struct check_op : op_base {
    missed_wakeup_sweep* self = nullptr;
  };
  static void on_check(op_base& op) noexcept;
  void schedule() noexcept;
  void sweep() noexcept;

  std::vector<entry> watched_;
  std::vector<pollfd> fds_;
  std::vector<multishot_recv_state*> suspects_;
  std::uint64_t round_ = 0;
  check_op check_;
  bool scheduled_ = false;
};

}  // namespace ringio::detail
