// SPDX-License-Identifier: Apache-2.0
// ringio/exec/tags.hpp — the vocabulary of the sender interface: concept tags, completion
// tags, environment queries and completion_signatures. ringio defines its own; a program
// built with RINGIO_EXEC_STDEXEC defined (and stdexec on its include path) uses stdexec's
// instead, so that ringio senders and receivers are stdexec ones too (docs/senders.md).
// Every translation unit of a program must agree on that macro.
#pragma once

#include <stop_token>
#include <type_traits>
#include <utility>

#if defined(RINGIO_EXEC_STDEXEC)
#include <stdexec/execution.hpp>
#endif

namespace ringio::exec {

#if defined(RINGIO_EXEC_STDEXEC)
using sender_t = stdexec::sender_t;
using receiver_t = stdexec::receiver_t;
using operation_state_t = stdexec::operation_state_t;
/// Marks a scheduler (stdexec recognises schedulers by what they do, not by this tag,
/// and older stdexec releases have no name for it).
struct scheduler_t {};
using set_value_t = stdexec::set_value_t;
using set_error_t = stdexec::set_error_t;
using set_stopped_t = stdexec::set_stopped_t;
using get_stop_token_t = stdexec::get_stop_token_t;
using get_scheduler_t = stdexec::get_scheduler_t;
template <class... Sigs>
using completion_signatures = stdexec::completion_signatures<Sigs...>;
using empty_env = stdexec::env<>;
#else
/// Marks a sender: `using sender_concept = ringio::exec::sender_t;`.
struct sender_t {};
/// Marks a receiver: `using receiver_concept = ringio::exec::receiver_t;`.
struct receiver_t {};
/// Marks an operation state (the result of connect).
struct operation_state_t {};
/// Marks a scheduler.
struct scheduler_t {};
/// The value completion, as it appears in completion signatures: `set_value_t(T)`.
struct set_value_t {};
/// The error completion: `set_error_t(std::error_code)`.
struct set_error_t {};
/// The stopped completion: `set_stopped_t()`.
struct set_stopped_t {};
/// Environment query: the stop token an operation obeys (`env.query(get_stop_token_t{})`).
struct get_stop_token_t {};
/// Environment query: the scheduler the receiver runs on.
struct get_scheduler_t {};
/// The list of ways a sender may complete, each as a function type `Tag(Args...)`.
template <class... Sigs>
struct completion_signatures {};
/// An environment that answers no query.
struct empty_env {};
#endif

/// The environment of receiver `r`: `r.get_env()`, or empty_env when it has none.
template <class R>
decltype(auto) get_env(const R& r) noexcept {
#if defined(RINGIO_EXEC_STDEXEC)
  return stdexec::get_env(r);
#else
  if constexpr (requires { r.get_env(); }) return r.get_env();
  else return empty_env{};
#endif
}

/// The environment type of receiver type `R`.
template <class R>
using env_of_t = std::decay_t<decltype(exec::get_env(std::declval<const R&>()))>;

/// The stop token of environment `e`, or a std::stop_token that can never stop (with
/// stdexec: stdexec::get_stop_token, whose default is a never_stop_token).
template <class Env>
auto get_stop_token(const Env& e) noexcept {
#if defined(RINGIO_EXEC_STDEXEC)
  return stdexec::get_stop_token(e);
#else
  if constexpr (requires { e.query(get_stop_token_t{}); }) return e.query(get_stop_token_t{});
  else return std::stop_token{};
#endif
}

/// The stop token type of environment `Env`.
template <class Env>
using stop_token_of_t = std::decay_t<decltype(exec::get_stop_token(std::declval<const Env&>()))>;

/// @cond INTERNAL
namespace detail {
template <class Token>
struct callback_for {
  template <class F>
  using type = typename Token::template callback_type<F>;
};
template <>
struct callback_for<std::stop_token> {
  template <class F>
  using type = std::stop_callback<F>;
};
}  // namespace detail
/// @endcond

/// The stop callback type that runs `F` when `Token` is stopped.
template <class Token, class F>
using stop_callback_for_t = typename detail::callback_for<Token>::template type<F>;

}  // namespace ringio::exec
