// SPDX-License-Identifier: Apache-2.0
// ringio/exec/env.hpp — environments that algorithms give their children: the parent's
// environment with one query answered differently (the stop token, the scheduler).
#pragma once

#include <concepts>
#include <utility>

#include "ringio/exec/inplace_stop_token.hpp"
#include "ringio/exec/tags.hpp"

namespace ringio::exec {

/// `Parent` (an environment, held by value) with the query `Query` answered by `value`;
/// every other query goes to `Parent`.
template <class Parent, class Query, class Value>
struct env_with {
  Parent parent;  ///< The environment that answers the other queries.
  Value value;    ///< What `Query` answers.

  /// The overridden query.
  Value query(Query) const noexcept { return value; }
  /// Any other query, forwarded to the parent environment.
  template <class Q>
    requires(!std::same_as<Q, Query>) && requires(const Parent& p) { p.query(Q{}); }
  decltype(auto) query(Q q) const noexcept {
    return parent.query(q);
  }
};

/// `parent` with get_stop_token answered by `token`.
template <class Parent, class Token>
env_with<Parent, get_stop_token_t, Token> with_stop_token(Parent parent, Token token) noexcept {
  return {std::move(parent), std::move(token)};
}

/// `parent` with get_scheduler answered by `sched`.
template <class Parent, class Sched>
env_with<Parent, get_scheduler_t, Sched> with_scheduler(Parent parent, Sched sched) noexcept {
  return {std::move(parent), std::move(sched)};
}

/// @cond INTERNAL
namespace detail {
/// What each child of when_all and when_any sees: the parent's environment `Env` with
/// the algorithm's own stop token.
template <class Env>
using stop_child_env_t = env_with<Env, get_stop_token_t, inplace_stop_token>;
}  // namespace detail
/// @endcond

}  // namespace ringio::exec
