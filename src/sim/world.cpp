// SPDX-License-Identifier: Apache-2.0
#include "ringio/sim/world.hpp"

#include <exception>
#include <stdexcept>

#include "core/sys.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/log.hpp"
#include "sim/host_scheduler.hpp"
#include "sim/sim_network.hpp"

namespace ringio {
namespace detail {

thread_local sim_network* current_sim_network = nullptr;
thread_local const std::int64_t* virtual_clock_ns = nullptr;

}  // namespace detail

namespace sim {
namespace {

thread_local world* current_world = nullptr;

}  // namespace

world::world(std::uint64_t seed, fault_model faults)
    : net_(std::make_unique<detail::sim_network>(seed, faults)),
      hosts_(std::make_unique<detail::host_scheduler>(*net_)),
      previous_(current_world) {
  if (previous_ != nullptr) throw std::logic_error("ringio::sim::world: this thread already has a world");
  current_world = this;
  detail::current_sim_network = net_.get();
  detail::virtual_clock_ns = net_->clock();
}

world::~world() {
  if (net_->loops != 0) {
    // Its io_contexts would go on reading a freed network: a bug in the program.
    log(log_level::error, "ringio::sim::world destroyed while %zu io_context(s) of it still exist: destroy them first",
        net_->loops);
    std::terminate();
  }
  current_world = nullptr;
  detail::current_sim_network = nullptr;
  detail::virtual_clock_ns = nullptr;
}

std::uint64_t world::seed() const noexcept { return net_->seed(); }
const fault_model& world::faults() const noexcept { return net_->model(); }
std::chrono::nanoseconds world::elapsed() const noexcept {
  return std::chrono::nanoseconds(net_->now() - net_->start());
}
std::uint64_t world::trace_hash() const noexcept { return net_->trace_hash(); }
std::string world::trace(std::size_t lines) const { return net_->trace(lines); }
std::size_t world::open_sockets() const noexcept { return net_->open_sockets(); }
std::uint64_t world::operations() const noexcept { return net_->operations(); }
std::uint64_t world::deadlocks() const noexcept { return net_->deadlocks(); }
world* world::current() noexcept { return current_world; }
void world::partition(const socket_address& a, const socket_address& b) { net_->partition(a, b, true); }
void world::heal(const socket_address& a, const socket_address& b) { net_->partition(a, b, false); }
void world::heal_all() { net_->heal_all(); }
void world::add_host(std::string name, const socket_address& address, host_program program) {
  hosts_->add(std::move(name), address, std::move(program), false);
}
void world::add_client(std::string name, const socket_address& address, host_program program) {
  hosts_->add(std::move(name), address, std::move(program), true);
}
void world::run() {
  if (current_world != this) throw std::logic_error("ringio::sim::world::run(): not on the world's thread");
  hosts_->run();
}

}  // namespace sim
}  // namespace ringio
