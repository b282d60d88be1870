// SPDX-License-Identifier: Apache-2.0
// host_scheduler — runs the hosts of a sim::world on one thread: each host's program
// runs on its own stack with its own io_context, and gets a turn of one loop pass at a
// time, in an order the seed draws anew for every round. Virtual time moves only when
// a whole round found every host idle; then it jumps to the earliest timer of any host
// or event of the network. Cross-host posts and wake-ups are ordinary calls between
// turns, so the whole run is a function of the seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/sim_host.hpp"

namespace ringio::detail {

class sim_network;

class host_scheduler {
 public:
  explicit host_scheduler(sim_network& net) : net_(net) {}
  host_scheduler(const host_scheduler&) = delete;
  host_scheduler& operator=(const host_scheduler&) = delete;

  sim_host& add(std::string name, const socket_address& address, std::function<task<void>(io_context&)> program,
                bool client);
  /// Runs every host until the clients' programs have returned (all programs when there
  /// is no client), then stops the others and waits for them; rethrows the first
  /// exception a program threw.
  void run();
  /// The host whose turn it is, or nullptr (outside run(), or between turns).
  [[nodiscard]] sim_host* running() const noexcept { return running_; }
  /// From the running host's loop: ends its turn.
  void end_turn(sim_host& h);
  [[nodiscard]] bool empty() const noexcept { return hosts_.empty(); }

 private:
  void take_turn(sim_host& h);
  static bool active(const sim_host& h) noexcept;
  bool round();
  void move_time();

  sim_network& net_;
  std::vector<std::unique_ptr<sim_host>> hosts_;
  sim_host* running_ = nullptr;
  bool ran_ = false;
  std::int64_t last_deadlock_at_ = -1;  // virtual time of the last deadlock
  std::uint64_t last_deadlock_operations_ = 0;
  int deadlock_repeats_ = 0;  // deadlocks in a row at that instant
};

}  // namespace ringio::detail
