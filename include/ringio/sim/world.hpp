// SPDX-License-Identifier: Apache-2.0
// ringio/sim/world.hpp — a simulated world: virtual time and an in-memory TCP/UDP network
// whose every choice (latency, order, faults) comes from one seed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ringio/net/socket_address.hpp"
#include "ringio/sim/fault_model.hpp"
#include "ringio/task.hpp"

namespace ringio {
class io_context;
}

namespace ringio::detail {
class sim_network;
class host_scheduler;
}  // namespace ringio::detail

namespace ringio::sim {

/// While a world exists, it is the current world of the thread that made it: an
/// io_context created there with `backend = backend_kind::sim` runs in it, TCP sockets
/// created there (IPv4 and IPv6 stream sockets) are simulated, and every ringio clock
/// (timers, deadlines, timeouts) reads its virtual time, which jumps to the next event
/// when nothing can run. UDP sockets are simulated too; other descriptors (files, pipes,
/// Unix sockets) stay real.
/// One world per thread at a time; destroy its io_contexts and sockets first.
///
/// A world may also hold several hosts (add_host(), add_client(), then run()): machines
/// with their own address and io_context, all on the world's thread, each running its
/// program on its own stack. They take turns of one loop pass in an order the seed
/// draws for every round, so cross-host posts, channels and wake-ups are as
/// deterministic as the network.
class world {
 public:
  /// A host's program: a task on the host's own io_context (backend_kind::sim).
  using host_program = std::function<task<void>(io_context& ctx)>;

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

  /// Adds a host named `name` at `address` (an IP address; the port is ignored) whose
  /// program run() starts on a fresh io_context of the host. On the host, the wildcard
  /// and loopback addresses of its family mean `address`: a server that binds
  /// 0.0.0.0:80 is reached at `address`:80 from the other hosts, and a socket that
  /// connects gets `address` as its local address. A host's program runs until it
  /// returns or, once every client (add_client()) has returned, until it is stopped:
  /// its tasks are cancelled (they see operation_canceled) and waited for. Throws
  /// std::invalid_argument for a name or address already taken, std::logic_error after
  /// run().
  void add_host(std::string name, const socket_address& address, host_program program);
  /// Adds a client: a host whose program's return is what run() waits for.
  void add_client(std::string name, const socket_address& address, host_program program);
  /// Runs the hosts on the calling thread (the world's) until every client has returned
  /// (every host, when there is no client), then stops the other hosts and waits for
  /// them. Each round gives every host that has not finished one loop pass, in the
  /// seed's order; virtual time moves only when a whole round found every host idle.
  /// Rethrows the first exception a host's program threw (in the order hosts were
  /// added). Runs once.
  void run();

  /// The world of the calling thread, or nullptr.
  static world* current() noexcept;

  /// @cond INTERNAL
  detail::sim_network& network() noexcept { return *net_; }
  detail::host_scheduler& hosts() noexcept { return *hosts_; }
  /// @endcond

 private:
  std::unique_ptr<detail::sim_network> net_;
  std::unique_ptr<detail::host_scheduler> hosts_;
  world* previous_;
};

}  // namespace ringio::sim
