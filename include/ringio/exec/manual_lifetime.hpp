// ringio/exec/manual_lifetime.hpp — room for one object that is constructed and
// destroyed explicitly: how algorithms hold operation states, which cannot be moved.
#pragma once

#include <memory>
#include <new>
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

}  // namespace ringio::exec::detail
