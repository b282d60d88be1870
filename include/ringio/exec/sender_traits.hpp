// SPDX-License-Identifier: Apache-2.0
// ringio/exec/sender_traits.hpp — what a sender's completion signatures say: its value
// types, error types, and whether it may complete stopped; and building new lists.
#pragma once

#include <exception>
#include <tuple>
#include <type_traits>
#include <variant>

#include "ringio/exec/tags.hpp"

namespace ringio::exec {

/// @cond INTERNAL
namespace detail {

template <class... Ts>
struct type_list {};

template <class... Lists>
struct concat;
template <>
struct concat<> {
  using type = type_list<>;
};
template <class... A>
struct concat<type_list<A...>> {
  using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat<type_list<A...>, type_list<B...>, Rest...> {
  using type = typename concat<type_list<A..., B...>, Rest...>::type;
};
template <class... Lists>
using concat_t = typename concat<Lists...>::type;

template <class List, class Seen = type_list<>>
struct unique;
template <class... Seen>
struct unique<type_list<>, type_list<Seen...>> {
  using type = type_list<Seen...>;
};
template <class T, class... Rest, class... Seen>
struct unique<type_list<T, Rest...>, type_list<Seen...>> {
  using type = typename unique<type_list<Rest...>, std::conditional_t<(std::is_same_v<T, Seen> || ...),
                                                                      type_list<Seen...>, type_list<Seen..., T>>>::type;
};
template <class List>
using unique_t = typename unique<List>::type;

template <class Sig>
struct sig_parts {
  using values = type_list<>;  // a list of argument lists, one per value signature
  using errors = type_list<>;
  static constexpr bool stopped = false;
};
template <class... A>
struct sig_parts<set_value_t(A...)> {
  using values = type_list<type_list<std::decay_t<A>...>>;
  using errors = type_list<>;
  static constexpr bool stopped = false;
};
template <class E>
struct sig_parts<set_error_t(E)> {
  using values = type_list<>;
  using errors = type_list<std::decay_t<E>>;
  static constexpr bool stopped = false;
};
template <>
struct sig_parts<set_stopped_t()> {
  using values = type_list<>;
  using errors = type_list<>;
  static constexpr bool stopped = true;
};

template <class Sigs>
struct sigs_info;
template <template <class...> class L, class... S>
struct sigs_info<L<S...>> {
  using values = unique_t<concat_t<typename sig_parts<S>::values...>>;
  using errors = unique_t<concat_t<typename sig_parts<S>::errors...>>;
  static constexpr bool stopped = (sig_parts<S>::stopped || ...);
};

// A sender names its completions with a member `completion_signatures` (the same in
// every environment) or a member `get_completion_signatures(env)` (they depend on the
// receiver's environment: ringio's algorithms, whose children may be such senders).
template <class S, class Env>
struct completions_of {
#if defined(RINGIO_EXEC_STDEXEC)
  using type = stdexec::completion_signatures_of_t<S, Env>;
#endif
};
template <class S, class Env>
  requires requires { typename std::remove_cvref_t<S>::completion_signatures; }
struct completions_of<S, Env> {
  using type = typename std::remove_cvref_t<S>::completion_signatures;
};
#if !defined(RINGIO_EXEC_STDEXEC)
template <class S, class Env>
  requires(!requires { typename std::remove_cvref_t<S>::completion_signatures; }) &&
          requires(const std::remove_cvref_t<S>& s, const Env& e) { s.get_completion_signatures(e); }
struct completions_of<S, Env> {
  using type =
      decltype(std::declval<const std::remove_cvref_t<S>&>().get_completion_signatures(std::declval<const Env&>()));
};
#endif

template <class Values>
struct single_value {
  static_assert(sizeof(Values) == 0, "ringio::exec: the sender must have exactly one value signature");
};
template <>
struct single_value<type_list<>> {  // never completes with a value
  using type = type_list<>;
};
template <class Args>
struct single_value<type_list<Args>> {
  using type = Args;
};

template <class Args>
struct args_tuple;
template <class... A>
struct args_tuple<type_list<A...>> {
  using type = std::tuple<A...>;
};

template <class Args, class Errors>
struct make_completions;
template <class... A, class... E>
struct make_completions<type_list<A...>, type_list<E...>> {
  using type = completion_signatures<set_value_t(A...), set_error_t(E)..., set_stopped_t()>;
};

template <class Errors>
struct error_variant;
template <class... E>
struct error_variant<type_list<E...>> {
  using type = std::variant<std::monostate, E...>;
};

}  // namespace detail
/// @endcond

/// The completion signatures of sender `S` connected to a receiver whose environment
/// is of type `Env`.
template <class S, class Env = empty_env>
using completion_signatures_of_t = typename detail::completions_of<S, Env>::type;

/// The arguments of the value completion of `S` in `Env`, as a detail::type_list (empty
/// when it never completes with a value).
template <class S, class Env = empty_env>
using value_args_of_t =
    typename detail::single_value<typename detail::sigs_info<completion_signatures_of_t<S, Env>>::values>::type;

/// The value completion of `S` in `Env` as a std::tuple of its arguments.
template <class S, class Env = empty_env>
using value_tuple_of_t = typename detail::args_tuple<value_args_of_t<S, Env>>::type;

/// The error types of `S` in `Env`, as a detail::type_list.
template <class S, class Env = empty_env>
using error_types_of_t = typename detail::sigs_info<completion_signatures_of_t<S, Env>>::errors;

}  // namespace ringio::exec
