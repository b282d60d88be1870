// SPDX-License-Identifier: Apache-2.0
// The blocking ringio::serve: listeners, a runtime, signals, the graceful stop.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <exception>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/runtime.hpp"
#include "ringio/serve.hpp"
#include "ringio/signal_set.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "serve/accept_loop.hpp"

namespace ringio {
namespace {

struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// File table slots per loop for serve_options::direct_descriptors.
constexpr unsigned default_direct_table = 65536;

result<std::vector<stream_listener>> bind_listeners(const socket_address& address, unsigned count, bool share_port) {
  // Listeners sharing a port with SO_REUSEPORT would also let a second server join
  // silently: check first that the port is free with a plain bind (unless joining is
  // what is asked for).
  if (count > 1 && address.port() != 0 && !share_port) {
    auto probe = stream_listener::bind(address);
    if (!probe) {
      log(log_level::error, "cannot listen on %s: %s", address.to_string().c_str(), probe.error().message().c_str());
      return unexpected(probe.error());
    }
  }
  std::vector<stream_listener> listeners;
  socket_address at = address;
  for (unsigned i = 0; i < count; ++i) {
    auto l = stream_listener::bind(at, {.reuse_port = count > 1 || share_port});
    if (!l) {
      log(log_level::error, "cannot listen on %s: %s", at.to_string().c_str(), l.error().message().c_str());
      return unexpected(l.error());
    }
    if (i == 0) at = l->local_address().value_or(at);  // port 0: every listener takes the chosen one
    listeners.push_back(std::move(*l));
  }
  return listeners;
}

// One descriptor per accepting loop: loop i serves listener i % M (a duplicate of it when
// several loops share one, as each loop closes its own when it stops accepting).
result<void> spread_listeners(std::vector<stream_listener>& listeners, unsigned loops) {
  const std::size_t m = listeners.size();
  if (m > loops) {
    log(log_level::error, "%zu listeners but %u loop threads: each needs a loop of its own", m, loops);
    return unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  for (std::size_t i = m; i < loops; ++i) {
    int copy = ::fcntl(listeners[i % m].native_handle(), F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return unexpected(errno_code(-errno));
    auto l = stream_listener::adopt(copy);
    if (!l) {
      ::close(copy);
      return unexpected(l.error());
    }
    listeners.push_back(std::move(*l));
  }
  return {};
}

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return n > 0 ? static_cast<unsigned>(n) : 1U;
}

// The calling thread's wait: a signal, or `wake` (the caller's stop, or the loops ended).
task<int> wait_for_stop(signal_set* signals, std::stop_token wake) {
  if (signals != nullptr) {
    auto got = co_await signals->wait().with_stop(wake);
    if (got) co_return *got;
    co_return 0;
  }
  while (!wake.stop_requested()) {
    auto slept = co_await sleep_for(std::chrono::hours(24)).with_stop(wake);
    (void)slept;
  }
  co_return 0;
}

// One loop's part: its resources, then its accept (or receive) loop.
task<void> serve_loop(io_context& ctx, unsigned index, const serve_options& options, const connection_handler& handler,
                      std::vector<stream_listener>& listeners, std::vector<std::unique_ptr<detail::loop_slot>>& slots,
                      detail::acceptor_dispatch* dispatch, std::stop_token graceful, std::error_code& loop_error) {
  std::shared_ptr<void> resources;
  if (options.loop_setup) resources = options.loop_setup(ctx, index);
  result<void> r;
  if (dispatch == nullptr)
    r = co_await detail::accept_loop(listeners[index], handler, options, graceful, &slots[index]->counters, nullptr);
  else if (index == 0)
    r = co_await detail::accept_loop(listeners[0], handler, options, graceful, &slots[0]->counters, dispatch);
  else r = co_await detail::receive_loop(*slots[index], handler, options, graceful);
  if (!r) loop_error = r.error();
  resources.reset();  // on the loop's thread, after its connections are gone
}

// Serves on `listeners` (bound, inherited or handed over; one per loop with the
// reuse_port dispatch, after spread_listeners).
result<serve_summary> serve_on(runtime& loops, result<std::vector<stream_listener>> listeners,
                               const connection_handler& handler, const serve_options& options, std::stop_token stop,
                               signal_set* signals) {
  const unsigned n = loops.size();
  const bool acceptor_mode = options.dispatch == serve_dispatch::acceptor && n > 1;
  if (!listeners) return unexpected(listeners.error());
  if (listeners->empty()) return unexpected(std::make_error_code(std::errc::invalid_argument));
  if (acceptor_mode && listeners->size() > 1) {
    log(log_level::error, "the acceptor dispatch serves one listener, not %zu", listeners->size());
    return unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  if (!acceptor_mode) {
    if (auto spread = spread_listeners(*listeners, n); !spread) return unexpected(spread.error());
  }
  serve_summary summary;
  summary.address = (*listeners)[0].local_address().value_or(socket_address{});

  std::vector<std::unique_ptr<detail::loop_slot>> slots;
  for (unsigned i = 0; i < n; ++i) slots.push_back(std::make_unique<detail::loop_slot>());
  detail::acceptor_dispatch dispatch(slots, options.max_connections == 0 ? 1 : options.max_connections);
  std::vector<std::error_code> loop_errors(n);
  std::stop_source graceful;
  std::stop_source wake;  // ends the calling thread's wait
  std::stop_callback<forward_stop> stop_wakes(stop, forward_stop{&wake});
  std::exception_ptr failure;
  // The calling thread waits on a small ring of its own: a signal, or `wake`.
  std::optional<io_context> waiter;
  try {
    waiter.emplace(
        io_context_options{.backend = loops.context(0).backend(), .sq_entries = 8, .cq_entries = 16, .quiet = true});
  } catch (const std::system_error& e) {
    log(log_level::error, "%s", e.what());
    return unexpected(e.code());
  }

  std::thread runner([&] {
    try {
      loops.run_on_each([&](io_context& ctx, unsigned i) {
        return serve_loop(ctx, i, options, handler, *listeners, slots, acceptor_mode ? &dispatch : nullptr,
                          graceful.get_token(), loop_errors[i]);
      });
    } catch (...) {
      failure = std::current_exception();
    }
    wake.request_stop();  // every loop has ended (errors, or a stop): nothing to wait for
  });

  if (options.on_listening) {
    try {
      options.on_listening(summary.address, loops);
    } catch (...) {
      graceful.request_stop();
      runner.join();
      throw;
    }
  }

  summary.signal_number = sync_wait(*waiter, wait_for_stop(signals, wake.get_token()));
  if (summary.signal_number != 0)
    log(log_level::info, "%s received, finishing open connections (up to %lld ms)",
        summary.signal_number == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(options.drain_timeout.count()));
  graceful.request_stop();
  if (options.on_stop) options.on_stop(summary.signal_number);
  runner.join();

  for (auto& s : slots) summary.connections_per_loop.push_back(s->counters.served.load());
  if (failure) std::rethrow_exception(failure);
  for (auto ec : loop_errors)
    if (ec) return unexpected(ec);
  return summary;
}

}  // namespace

result<serve_summary> serve(const socket_address& address, connection_handler handler, serve_options options,
                            std::stop_token stop) {
  std::optional<signal_set> signals;
  std::unique_ptr<runtime> loops;
  try {
    // Before any loop thread starts: the threads inherit the blocked signals.
    if (options.handle_signals) signals.emplace(std::initializer_list<int>{SIGINT, SIGTERM});
    if (options.direct_descriptors && options.context.direct_descriptors == 0)
      options.context.direct_descriptors = default_direct_table;
    loops = std::make_unique<runtime>(runtime_options{.threads = options.threads, .context = options.context});
  } catch (const std::system_error& e) {
    log(log_level::error, "%s", e.what());
    return unexpected(e.code());
  }
  const bool acceptor_mode = options.dispatch == serve_dispatch::acceptor && loops->size() > 1;
  return serve_on(*loops, bind_listeners(address, acceptor_mode ? 1 : loops->size(), options.share_port), handler,
                  options, std::move(stop), signals ? &*signals : nullptr);
}

result<std::vector<stream_listener>> serve_listeners(const socket_address& address, const serve_options& options) {
  unsigned n = options.threads == 0 ? usable_cpus() : options.threads;
  if (options.dispatch == serve_dispatch::acceptor) n = 1;
  return bind_listeners(address, n, options.share_port);
}

result<serve_summary> serve(std::vector<stream_listener> listeners, connection_handler handler, serve_options options,
                            std::stop_token stop) {
  if (listeners.empty()) return unexpected(std::make_error_code(std::errc::invalid_argument));
  // One loop per listener at least (reuse_port dispatch): none of them is left unserved.
  if (options.dispatch == serve_dispatch::reuse_port && options.threads != 0 && options.threads < listeners.size())
    options.threads = static_cast<unsigned>(listeners.size());
  std::optional<signal_set> signals;
  std::unique_ptr<runtime> loops;
  try {
    if (options.handle_signals) signals.emplace(std::initializer_list<int>{SIGINT, SIGTERM});
    if (options.direct_descriptors && options.context.direct_descriptors == 0)
      options.context.direct_descriptors = default_direct_table;
    loops = std::make_unique<runtime>(runtime_options{.threads = options.threads, .context = options.context});
  } catch (const std::system_error& e) {
    log(log_level::error, "%s", e.what());
    return unexpected(e.code());
  }
  return serve_on(*loops, std::move(listeners), handler, options, std::move(stop), signals ? &*signals : nullptr);
}

result<serve_summary> serve(runtime& loops, const socket_address& address, connection_handler handler,
                            serve_options options, std::stop_token stop) {
  std::optional<signal_set> signals;
  try {
    if (options.handle_signals) signals.emplace(std::initializer_list<int>{SIGINT, SIGTERM});
  } catch (const std::system_error& e) {
    log(log_level::error, "%s", e.what());
    return unexpected(e.code());
  }
  const bool acceptor_mode = options.dispatch == serve_dispatch::acceptor && loops.size() > 1;
  return serve_on(loops, bind_listeners(address, acceptor_mode ? 1 : loops.size(), options.share_port), handler,
                  options, std::move(stop), signals ? &*signals : nullptr);
}

}  // namespace ringio
