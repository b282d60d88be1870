// SPDX-License-Identifier: Apache-2.0
#include "serve/connection_set.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "ringio/log.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/sleep.hpp"

namespace ringio::detail {
namespace {

struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// Requests the stop of every connection once `grace` has passed (unless stopped).
task<void> deadline(std::stop_source& conns, std::chrono::milliseconds grace) {
  auto fired = co_await sleep_for(grace);  // bound first: see docs/toolchain.md
  if (fired) conns.request_stop();
}

// Longer than any server runs; keeps the deadline arithmetic far from overflow.
constexpr std::chrono::milliseconds longest_wait = std::chrono::hours(24 * 365 * 10);

}  // namespace

connection_set::connection_set(std::stop_token parent, std::size_t limit, loop_counters* counters)
    : limit_(limit == 0 ? 1 : limit), counters_(counters) {
  if (parent.stop_possible()) parent_link_.emplace(parent, forward_stop{&stop_});
}

connection_set::~connection_set() {
  if (open_ != 0) {
    log(log_level::error, "serve: connection set destroyed with %zu running connections", open_);
    std::terminate();
  }
}

void connection_set::start(const connection_handler& handler, stream_socket s) {
  ++open_;
  if (counters_ != nullptr) {
    counters_->open.fetch_add(1, std::memory_order_relaxed);
    counters_->served.fetch_add(1, std::memory_order_relaxed);
  }
  task<void> t;
  try {
    t = handler(std::move(s));
  } catch (...) {
    report(std::current_exception());
    closed();
    return;
  }
  // The task itself is the connection's only frame: this set receives it when it ends.
  auto h = t.release();
  h.promise().set_sink(this);
  h.promise().set_stop_token(&token_);
  resume_inline(h);
}

std::coroutine_handle<> connection_set::on_task_done(std::coroutine_handle<> h, promise_base& p) noexcept {
  if (p.failed()) report(p.exception());
  h.destroy();
  closed();
  if (open_ == 0 && joiner_) return std::exchange(joiner_, {});
  return std::noop_coroutine();
}

void connection_set::report(const std::exception_ptr& error) noexcept {
  if (!log_enabled(log_level::error) || !handler_errors_.due()) return;
  const auto more = static_cast<unsigned long long>(handler_errors_.take_suppressed());
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    log(log_level::error, "serve: a connection handler threw: %s (%llu more since the last report)", e.what(), more);
  } catch (...) {
    log(log_level::error,
        "serve: a connection handler threw a non-standard exception (%llu more since the last report)", more);
  }
}

void connection_set::closed() noexcept {
  --open_;
  if (counters_ != nullptr) counters_->open.fetch_sub(1, std::memory_order_relaxed);
  if (room_waiter_ != nullptr && open_ < limit_) std::exchange(room_waiter_, nullptr)->request_stop();
}

task<void> connection_set::wait_for_room(std::stop_token stop) {
  while (full() && !stop.stop_requested()) {
    // A closing connection or `stop` ends the sleep early (the usual way).
    std::stop_source room;
    room_waiter_ = &room;
    std::stop_callback<forward_stop> on_stop(stop, forward_stop{&room});
    auto slept = co_await sleep_for(longest_wait).with_stop(room.get_token());
    room_waiter_ = nullptr;
    // Cancelled by neither `stop` nor a closing connection: the loop is shutting down
    // and every further sleep would be cancelled at once too.
    if (!slept && !room.stop_requested()) co_return;
  }
}

task<void> connection_set::drain(std::chrono::milliseconds grace) {
  if (open_ != 0) {
    scope timer;
    timer.spawn(deadline(stop_, std::min(grace, longest_wait)));
    co_await join();
    timer.request_stop();
    co_await timer.join();
  }
  co_await join();
}

}  // namespace ringio::detail
