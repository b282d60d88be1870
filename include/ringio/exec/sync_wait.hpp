// SPDX-License-Identifier: Apache-2.0
// ringio/exec/sync_wait.hpp — sync_wait(ctx, s): runs an io_context on the calling
// thread until sender s completes, and returns its values.
#pragma once

#include <exception>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ringio/detail/remote_item.hpp"
#include "ringio/exec/connect.hpp"
#include "ringio/exec/env.hpp"
#include "ringio/exec/manual_lifetime.hpp"
#include "ringio/exec/outcome.hpp"
#include "ringio/exec/scheduler.hpp"
#include "ringio/exec/sender_traits.hpp"
#include "ringio/io_context.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

/// The environment sync_wait's receiver gives: get_scheduler answers the loop's.
using sync_wait_env = env_with<empty_env, get_scheduler_t, scheduler>;

template <class S>
struct sync_wait_state {
  outcome<value_tuple_of_t<S, sync_wait_env>, error_types_of_t<S, sync_wait_env>> result;
  io_context* loop;
  bool done = false;  // loop thread only
  ringio::detail::remote_item wake;

  void finish() noexcept {
    if (io_context::current() == loop) {
      done = true;
      return;
    }
    // Completed on another thread (continues_on elsewhere): let the loop see it.
    wake.arg = this;
    wake.run = [](ringio::detail::remote_item& it, io_context&) noexcept {
      static_cast<sync_wait_state*>(it.arg)->done = true;
    };
    loop->post_remote(wake);
  }
};

template <class S>
struct sync_wait_receiver {
  using receiver_concept = receiver_t;
  sync_wait_state<S>* st;
  template <class... A>
  void set_value(A&&... a) noexcept {
    st->result.set_value(std::forward<A>(a)...);
    st->finish();
  }
  template <class E>
  void set_error(E&& e) noexcept {
    st->result.set_error(std::forward<E>(e));
    st->finish();
  }
  void set_stopped() noexcept { st->finish(); }
  sync_wait_env get_env() const noexcept { return exec::with_scheduler(empty_env{}, scheduler(*st->loop)); }
};

template <class E>
[[noreturn]] void throw_error(E&& e) {
  using T = std::decay_t<E>;
  if constexpr (std::is_same_v<T, std::exception_ptr>) std::rethrow_exception(e);
  else if constexpr (std::is_same_v<T, std::error_code>) throw std::system_error(e);
  else throw std::forward<E>(e);
}

}  // namespace detail
/// @endcond

/// Starts `s` on the thread of `ctx` and runs `ctx` on the calling thread until `s`
/// has completed (other work of the loop runs meanwhile). Returns its values as a
/// tuple, or std::nullopt when it completed with set_stopped(). An error is thrown:
/// std::error_code as std::system_error, std::exception_ptr rethrown, any other error
/// thrown as it is. The receiver's environment has no stop token and answers
/// get_scheduler with a scheduler for `ctx`. `ctx` must not be running (on this thread
/// or another): sync_wait runs it, on the calling thread.
template <class S>
std::optional<value_tuple_of_t<S, detail::sync_wait_env>> sync_wait(io_context& ctx, S&& s) {
  using op_t = connect_result_t<S, detail::sync_wait_receiver<S>>;
  detail::sync_wait_state<S> st;
  st.loop = &ctx;
  detail::manual_lifetime<op_t> op;
  op.construct_with([&] { return exec::connect(std::forward<S>(s), detail::sync_wait_receiver<S>{&st}); });
  ringio::detail::remote_item start_item;
  start_item.arg = &op.get();
  start_item.run = [](ringio::detail::remote_item& it, io_context&) noexcept { static_cast<op_t*>(it.arg)->start(); };
  ctx.post_remote(start_item);
  ctx.run_until([](void* p) { return static_cast<detail::sync_wait_state<S>*>(p)->done; }, &st);
  op.destroy();
  if (st.result.value) return std::move(st.result.value);
  if (st.result.has_error()) {
    std::visit(
        [](auto& e) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(e)>, std::monostate>) detail::throw_error(std::move(e));
        },
        st.result.error);
  }
  return std::nullopt;
}

/// The same on a fresh io_context (the default backend), destroyed before it returns.
template <class S>
std::optional<value_tuple_of_t<S, detail::sync_wait_env>> sync_wait(S&& s) {
  io_context ctx;
  return exec::sync_wait(ctx, std::forward<S>(s));
}

}  // namespace ringio::exec
