// SPDX-License-Identifier: Apache-2.0
#include "sim/host_scheduler.hpp"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/current_context.hpp"
#include "ringio/detail/promise_base.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/scope.hpp"
#include "ringio/sync_wait.hpp"
#include "sim/sim_network.hpp"

namespace ringio::detail {
namespace {

constexpr std::size_t host_stack_bytes = std::size_t{1} << 20;

// The program of a host, under a scope the scheduler can stop.
task<void> host_main(sim_host& h, io_context& ctx) {
  scope tasks{std::stop_token{}};
  h.tasks = &tasks;
  struct forget {
    sim_host& h;
    ~forget() { h.tasks = nullptr; }
  } guard{h};
  tasks.spawn(h.program(ctx));
  co_await tasks.join();
}

std::int64_t real_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

sim_host& host_scheduler::add(std::string name, const socket_address& address,
                              std::function<task<void>(io_context&)> program, bool client) {
  if (ran_) throw std::logic_error("ringio::sim::world: hosts are added before run()");
  for (const auto& h : hosts_)
    if (h->address.with_port(0) == address.with_port(0) || h->name == name)
      throw std::invalid_argument("ringio::sim::world: a host named " + name + " or at " + address.to_string() +
                                  " exists already");
  auto h = std::make_unique<sim_host>();
  h->name = std::move(name);
  h->address = address.with_port(0);
  h->program = std::move(program);
  h->client = client;
  h->id = static_cast<std::uint32_t>(hosts_.size() + 1);
  net_.add_host(h->id, h->address);
  sim_host& ref = *h;
  h->fiber = std::make_unique<host_fiber>(
      [&ref] {
        std::optional<io_context> ctx;
        try {
          ctx.emplace(io_context_options{.backend = backend_kind::sim, .quiet = true});
          sync_wait(*ctx, host_main(ref, *ctx));
        } catch (...) {
          ref.error = std::current_exception();
        }
        ref.program_done = true;
        while (!ref.released) ref.fiber->suspend();  // parked: no turns until run() ends
        if (ctx) ctx->shut_down();                   // cancels and drains, in turns like any loop
        ref.shut_down = true;
        // No context is freed before every host's has drained: a host that shuts down
        // may still post to another (a stop, a wake-up).
        while (!ref.may_destroy) ref.fiber->suspend();
        ctx.reset();
      },
      host_stack_bytes);
  hosts_.push_back(std::move(h));
  return ref;
}

// One turn: the host's stack runs until its loop ends the turn (or its program and
// its io_context are done). The thread's loop state is the host's during the turn.
void host_scheduler::take_turn(sim_host& h) {
  h.worked = false;
  h.idle = false;
  const bool was_drained = h.shut_down;
  running_ = &h;
  net_.set_current_host(h.id);
  io_context* const outer_ctx = exchange_current_context(h.current);
  promise_base* const outer_task = std::exchange(running_task, h.running_task);
  const resume_loop_state outer_resume = std::exchange(resume_loop, h.resume);
  h.fiber->resume();
  h.current = exchange_current_context(outer_ctx);
  h.running_task = std::exchange(running_task, outer_task);
  h.resume = std::exchange(resume_loop, outer_resume);
  net_.set_current_host(0);
  running_ = nullptr;
  if (h.program_done && !h.done_noted) {
    h.done_noted = true;
    h.worked = true;
    net_.note("host %u (%s) returned%s", h.id, h.name.c_str(), h.error ? " with an exception" : "");
  }
  if (h.fiber->finished() || h.shut_down != was_drained) h.worked = true;  // its context moved on
  if (h.worked) net_.mix(h.id);                                            // the order of the turns that did something
}

void host_scheduler::end_turn(sim_host& h) { h.fiber->suspend(); }

// A round: every host that has not finished takes a turn, in the seed's order.
// Returns whether any of them did something.
// Whether a host takes turns: its program runs, or its context is being destroyed.
bool host_scheduler::active(const sim_host& h) noexcept {
  if (h.fiber->finished()) return false;
  if (!h.program_done) return true;
  return h.released && (!h.shut_down || h.may_destroy);
}

bool host_scheduler::round() {
  std::vector<sim_host*> order;
  for (const auto& h : hosts_)
    if (active(*h)) order.push_back(h.get());
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[net_.below(i)]);
  bool any = false;
  for (sim_host* h : order) {
    take_turn(*h);
    any |= h->worked;
  }
  return any;
}

// Every host is idle: virtual time jumps to the next timer or network event; while a
// host waits on something outside the world, it runs at real speed instead; with
// nothing to wait for, the hosts are deadlocked.
void host_scheduler::move_time() {
  std::int64_t next = net_.next_event();
  bool real = false;
  for (const auto& h : hosts_) {
    if (!active(*h)) continue;
    if (h->next_at != 0 && (next == 0 || h->next_at < next)) next = h->next_at;
    real |= h->waits_real;
  }
  const std::int64_t now = net_.now();
  if (real) {
    // Wait for the real descriptors the hosts wait on (their wake-up eventfds among
    // them) until the next virtual event is due; the clock moves by the time that passed.
    std::vector<pollfd> fds;
    for (const auto& h : hosts_)
      if (active(*h) && h->waits_real) fds.insert(fds.end(), h->real_fds.begin(), h->real_fds.end());
    const std::int64_t gap = next == 0 ? -1 : std::max<std::int64_t>(next - now, 0);
    const int timeout_ms = gap < 0 ? 100 : static_cast<int>(std::min<std::int64_t>((gap + 999'999) / 1'000'000, 100));
    const std::int64_t began = real_ns();
    ::poll(fds.data(), fds.size(), timeout_ms);
    const std::int64_t passed = real_ns() - began;
    net_.advance_to(gap < 0 ? now + passed : now + std::min(passed, gap));
    return;
  }
  if (next != 0) {
    net_.advance_to(next);
    return;
  }
  // Nothing can ever happen: the hosts' waiting operations fail (their programs
  // unwind through their error paths). A deadlock again at the same instant with no
  // network operation since (a program that retries what failed) stops the programs;
  // if they still come back to it, no host can ever finish.
  const bool again = now == last_deadlock_at_ && net_.operations() == last_deadlock_operations_;
  deadlock_repeats_ = again ? deadlock_repeats_ + 1 : 0;
  last_deadlock_at_ = now;
  last_deadlock_operations_ = net_.operations();
  if (deadlock_repeats_ == 0) {
    net_.note_hosts_deadlock();
    for (const auto& h : hosts_) h->deadlock = true;
  } else if (deadlock_repeats_ <= 2) {
    for (const auto& h : hosts_) h->stop_asked = true;
  } else {
    log(log_level::error,
        "ringio::sim::world: the hosts wait for something that can never happen, again and "
        "again, even once stopped; they cannot finish");
    std::terminate();
  }
}

void host_scheduler::run() {
  if (ran_) throw std::logic_error("ringio::sim::world::run() runs once");
  ran_ = true;
  const bool any_client = std::any_of(hosts_.begin(), hosts_.end(), [](const auto& h) { return h->client; });
  bool stopping = false;
  for (;;) {
    bool left = false;
    bool clients_left = false;
    for (const auto& h : hosts_) {
      left |= active(*h);
      clients_left |= h->client && !h->program_done;
    }
    if (!left) {
      // Every program has returned: the hosts' contexts drain, in turns as well; once
      // all have, they are freed.
      const bool all_drained =
          std::all_of(hosts_.begin(), hosts_.end(), [](const auto& o) { return o->fiber->finished() || o->shut_down; });
      bool waiting = false;
      for (const auto& h : hosts_) {
        if (h->fiber->finished()) continue;
        waiting = true;
        h->released = true;
        if (all_drained) h->may_destroy = true;
      }
      if (!waiting) break;
      continue;
    }
    if (any_client && !clients_left && !stopping) {
      stopping = true;
      net_.note("every client finished: the other hosts are stopped");
      for (const auto& h : hosts_) h->stop_asked = true;
    }
    if (round()) continue;
    move_time();
  }
  for (const auto& h : hosts_)
    if (h->error) std::rethrow_exception(h->error);
}

}  // namespace ringio::detail
