// SPDX-License-Identifier: Apache-2.0
// ringio/sim/world.hpp — a simulated world: virtual time and an in-memory TCP network
// whose every choice (latency, order, faults) comes from one seed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ringio/net/socket_address.hpp"
#include "ringio/sim/fault_model.hpp"

namespace ringio::detail {
class sim_network;
}

namespace ringio::sim {

/// While a world exists, it is the current world of the thread that made it: an
/// io_context created there with `backend = backend_kind::sim` runs in it, TCP sockets
/// created there (IPv4 and IPv6 stream sockets) are simulated, and every ringio clock
/// (timers, deadlines, timeouts) reads its virtual time, which jumps to the next event
/// when nothing can run. Other descriptors (files, pipes, UDP, Unix sockets) stay real.
/// One world per thread at a time; destroy its io_contexts and sockets first.
class world {
 public:
  /// Makes the world and makes it the calling thread's current world. Throws
  /// std::logic_error when the thread has one already.
  explicit world(std::uint64_t seed, fault_model faults = {});
  /// Ends the world (the thread has none afterwards). Its io_contexts must be gone:
  /// destroying a world that still has one terminates the program with a message.
  ~world();
  world(const world&) = delete;
  world& operator=(const world&) = delete;

  /// The seed every choice of the world comes from.
  [[nodiscard]] std::uint64_t seed() const noexcept;
  /// The network and faults it was made with.
  [[nodiscard]] const fault_model& faults() const noexcept;
  /// Virtual time since the world began.
  [[nodiscard]] std::chrono::nanoseconds elapsed() const noexcept;
  /// A hash of every decision and event so far: equal for equal seeds and programs.
  [[nodiscard]] std::uint64_t trace_hash() const noexcept;
  /// The last `lines` events, one per line, with their virtual times.
  [[nodiscard]] std::string trace(std::size_t lines = 40) const;
  /// Simulated sockets still open (a leak check for the end of a run).
  [[nodiscard]] std::size_t open_sockets() const noexcept;
  /// Simulated operations so far (syscalls answered by the simulation).
  [[nodiscard]] std::uint64_t operations() const noexcept;
  /// Deadlocks so far: times a loop of this world found that nothing could ever happen
  /// (no timer, nothing in flight on the network, nothing outside the world to wait
  /// for) while operations waited. Those operations then fail with
  /// operation_canceled, so the program unwinds; run_seeds() reports the world.
  [[nodiscard]] std::uint64_t deadlocks() const noexcept;

  /// Cuts the network between hosts `a` and `b` (their IP addresses; ports are
  /// ignored): segments and connection attempts between them wait, as TCP
  /// retransmits, until heal(). Connections time out only through the program's own
  /// deadlines. Every address is a host of the world.
  void partition(const socket_address& a, const socket_address& b);
  /// Restores the link between `a` and `b`: what waited is delivered, in order.
  void heal(const socket_address& a, const socket_address& b);
  /// Restores every link.
  void heal_all();

  /// The world of the calling thread, or nullptr.
  static world* current() noexcept;

  /// @cond INTERNAL
  detail::sim_network& network() noexcept { return *net_; }
  /// @endcond

 private:
  std::unique_ptr<detail::sim_network> net_;
  world* previous_;
};

}  // namespace ringio::sim
