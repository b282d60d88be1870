// SPDX-License-Identifier: Apache-2.0
#include "serve/accept_loop.hpp"

#include <chrono>
#include <optional>
#include <utility>

#include "ringio/log.hpp"
#include "ringio/net/multishot_acceptor.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "serve/accept_errors.hpp"

namespace ringio {
namespace detail {
namespace {

struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// While every loop is full in the acceptor dispatch, loop 0 looks again this often
// (closes happen on other threads, which do not wake it).
constexpr std::chrono::milliseconds full_recheck{5};

// Whether a wait ended by a cancellation that `token` did not ask for: the loop shutting
// down cancels every operation and refuses new ones at once, so waiting again would spin
// forever without suspending; the loop must end instead.
template <class T>
bool ended_from_outside(const result<T>& r, const std::stop_token& token) noexcept {
  return !r && r.error() == std::errc::operation_canceled && !token.stop_requested();
}

}  // namespace

bool acceptor_dispatch::all_full() const noexcept {
  for (const auto& s : slots_)
    if (static_cast<std::size_t>(s->counters.open.load(std::memory_order_relaxed)) < limit_) return false;
  return true;
}

bool acceptor_dispatch::hand_off(stream_socket& s) noexcept {
  std::size_t best = 0;
  int best_open = slots_[0]->counters.open.load(std::memory_order_relaxed);
  for (std::size_t i = 1; i < slots_.size(); ++i) {
    int open = slots_[i]->counters.open.load(std::memory_order_relaxed);
    if (open < best_open) {
      best = i;
      best_open = open;
    }
  }
  if (best == 0) return false;
  int fd = s.release();
  if (slots_[best]->inbox.try_send(fd)) return true;
  s = stream_socket(fd_handle(fd));  // inbox full: loop 0 serves it
  return false;
}

task<result<void>> accept_loop(stream_listener& listener, const connection_handler& handler,
                               const serve_options& options, std::stop_token graceful, loop_counters* counters,
                               acceptor_dispatch* dispatch) {
  // Accepting ends on `graceful` or on a stop of the awaiting task; the latter also
  // cancels the connections at once (the set obeys it).
  std::stop_token outer = co_await current_stop_token();
  std::stop_source accepting;
  std::stop_callback<forward_stop> on_graceful(graceful, forward_stop{&accepting});
  std::stop_callback<forward_stop> on_outer(outer, forward_stop{&accepting});
  const std::stop_token token = accepting.get_token();

  // Direct descriptors belong to this loop's ring: not with a dispatch to other loops.
  if (options.direct_descriptors && dispatch == nullptr) listener.set_direct_descriptors(true);
  connection_set conns(outer, options.max_connections, counters);
  // A multishot accept keeps accepting whether or not anyone asks: with a limit the
  // loop accepts one at a time, so that clients beyond it stay in the backlog.
  std::optional<multishot_acceptor> acceptor;
  if (options.multishot_accept && options.max_connections == unlimited_connections) acceptor.emplace(listener);
  accept_backoff backoff(options.accept_backoff_initial, options.accept_backoff_max);
  std::error_code failure;

  while (!token.stop_requested()) {
    if (conns.full()) {
      co_await conns.wait_for_room(token);
      if (conns.full() && !token.stop_requested()) break;  // the wait was cancelled: see ended_from_outside
      continue;
    }
    if (dispatch != nullptr && dispatch->all_full()) {
      auto slept = co_await sleep_for(full_recheck).with_stop(token);
      if (ended_from_outside(slept, token)) break;
      continue;
    }
    // (Two statements: GCC 12 mis-destroys temporaries of co_await inside ?:.)
    result<stream_socket> s;
    if (acceptor) s = co_await acceptor->next().with_stop(token);
    else s = co_await listener.accept().with_stop(token);
    if (s) {
      backoff.succeeded();
      if (dispatch != nullptr && dispatch->hand_off(*s)) continue;
      conns.start(handler, std::move(*s));
      continue;
    }
    if (ended_from_outside(s, token)) break;
    if (s.error() == std::errc::operation_canceled) continue;  // the loop condition decides
    const accept_failure kind = classify_accept_error(s.error());
    if (kind == accept_failure::connection) continue;
    if (kind == accept_failure::fatal) {
      failure = s.error();
      log(log_level::error, "serve: accept: %s; this loop no longer accepts", failure.message().c_str());
      break;
    }
    auto slept = co_await sleep_for(backoff.failed(s.error())).with_stop(token);
    if (ended_from_outside(slept, token)) break;
  }

  if (acceptor && !outer.stop_requested()) {
    // What the multishot request accepted until its cancel took effect is served, not
    // closed: a client that connected in that moment (to a socket that another process
    // goes on listening on, say) sees its connection answered.
    acceptor->stop();
    for (;;) {
      result<stream_socket> s = co_await acceptor->next().with_stop(outer);
      if (!s) break;
      if (dispatch != nullptr && dispatch->hand_off(*s)) continue;
      conns.start(handler, std::move(*s));
    }
  }
  acceptor.reset();
  listener.close();  // refuse new connections while the open ones finish
  if (options.on_drain) options.on_drain();
  co_await conns.drain(options.drain_timeout);
  if (failure) co_return unexpected(failure);
  co_return result<void>{};
}

task<result<void>> receive_loop(loop_slot& slot, const connection_handler& handler, const serve_options& options,
                                std::stop_token graceful) {
  std::stop_token outer = co_await current_stop_token();
  std::stop_source receiving;
  std::stop_callback<forward_stop> on_graceful(graceful, forward_stop{&receiving});
  std::stop_callback<forward_stop> on_outer(outer, forward_stop{&receiving});
  const std::stop_token token = receiving.get_token();

  connection_set conns(outer, options.max_connections, &slot.counters);
  while (!token.stop_requested()) {
    if (conns.full()) {
      co_await conns.wait_for_room(token);
      if (conns.full() && !token.stop_requested()) break;
      continue;
    }
    auto fd = co_await slot.inbox.receive(token);
    if (!fd && !token.stop_requested()) break;  // closed, or cancelled by the loop shutting down
    if (!fd) continue;
    conns.start(handler, stream_socket(fd_handle(*fd)));
  }
  while (auto fd = slot.inbox.try_receive()) fd_handle close_it(*fd);
  if (options.on_drain) options.on_drain();
  co_await conns.drain(options.drain_timeout);
  co_return result<void>{};
}

}  // namespace detail

task<result<void>> serve(stream_listener& listener, connection_handler handler, serve_options options,
                         std::stop_token stop) {
  auto r = co_await detail::accept_loop(listener, handler, options, std::move(stop), nullptr, nullptr);
  co_return r;
}

}  // namespace ringio
