// SPDX-License-Identifier: Apache-2.0
// ringio/exec/manual_lifetime.hpp — room for one object that is constructed and
// destroyed explicitly: how algorithms hold operation states, which cannot be moved.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ringio::exec::detail {

/// Storage for a T whose lifetime the owner manages (no flag: the owner knows).
template <class T>
class manual_lifetime {
 public:
  manual_lifetime() noexcept {}
  ~manual_lifetime() {}
  manual_lifetime(const manual_lifetime&) = delete;
  manual_lifetime& operator=(const manual_lifetime&) = delete;

  /// Constructs the object from what `make()` returns, without a move (guaranteed
  /// copy elision), so operation states returned by connect() fit.
  template <class F>
  T& construct_with(F&& make) {
    return *::new (static_cast<void*>(std::addressof(value_))) T(std::forward<F>(make)());
  }
  void destroy() noexcept { value_.~T(); }
  T& get() noexcept { return value_; }

 private:
  union {
    T value_;
  };
};

/// Constructs every element of `ops` (a tuple of manual_lifetime), in order, with
/// `make(element, std::integral_constant<std::size_t, index>{})`. When one throws (a
/// connect that fails), the elements already constructed are destroyed before the
/// exception goes on.
template <class Tuple, class F>
void construct_all(Tuple& ops, F&& make) {
  constexpr std::size_t n = std::tuple_size_v<Tuple>;
  std::size_t built = 0;
  try {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((make(std::get<I>(ops), std::integral_constant<std::size_t, I>{}), ++built), ...);
    }(std::make_index_sequence<n>{});
  } catch (...) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((I < built ? std::get<I>(ops).destroy() : void()), ...);
    }(std::make_index_sequence<n>{});
    throw;
  }
}

}  // namespace ringio::exec::detail
