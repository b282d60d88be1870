// SPDX-License-Identifier: Apache-2.0
// ringio/result.hpp — result<T>: a value or a std::error_code, with the interface of
// std::expected<T, std::error_code> (which clang-16 cannot use with libstdc++ 12).
#pragma once

#include <cassert>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "ringio/error.hpp"

namespace ringio {

/// Wraps an error to construct a failed result: `return unexpected(ec);`.
class unexpected {
 public:
  /// The error to carry: a std::error_code, a std::errc or one of ringio's errc.
  ///@{
  explicit unexpected(std::error_code ec) noexcept : ec_(ec) {}
  explicit unexpected(std::errc e) noexcept : ec_(std::make_error_code(e)) {}
  explicit unexpected(errc e) noexcept : ec_(make_error_code(e)) {}
  ///@}
  /// The carried error.
  [[nodiscard]] const std::error_code& error() const noexcept { return ec_; }

 private:
  std::error_code ec_;
};

/// Thrown by result<T>::value() when the result holds an error.
class bad_result_access : public std::system_error {
 public:
  using std::system_error::system_error;
};

/// A value of type T or an error. `if (r) use(*r); else log(r.error().message());`
template <class T>
class [[nodiscard]] result {
 public:
  using value_type = T;                ///< The value's type.
  using error_type = std::error_code;  ///< The error's type.

  /// A default-constructed value.
  result()
    requires std::is_default_constructible_v<T>
      : v_(std::in_place_index<0>) {}
  /// A value (implicit, so `co_return value;` works).
  ///@{
  result(const T& v) : v_(std::in_place_index<0>, v) {}        // NOLINT
  result(T&& v) : v_(std::in_place_index<0>, std::move(v)) {}  // NOLINT
  ///@}
  /// A value constructed from `v`.
  template <class U>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
             !std::is_same_v<std::remove_cvref_t<U>, result> && !std::is_same_v<std::remove_cvref_t<U>, unexpected>)
  result(U&& v) : v_(std::in_place_index<0>, std::forward<U>(v)) {}  // NOLINT
  /// An error: `co_return unexpected(std::errc::timed_out);`.
  result(const unexpected& u) : v_(std::in_place_index<1>, u.error()) {}  // NOLINT

  /// Whether it holds a value.
  ///@{
  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}

  /// The value, unchecked (asserted in debug builds): test the result first.
  ///@{
  T& operator*() & noexcept {
    assert(has_value());
    return *std::get_if<0>(&v_);
  }
  const T& operator*() const& noexcept {
    assert(has_value());
    return *std::get_if<0>(&v_);
  }
  T&& operator*() && noexcept {
    assert(has_value());
    return std::move(*std::get_if<0>(&v_));
  }
  T* operator->() noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }
  const T* operator->() const noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }
  ///@}

  /// The value; throws bad_result_access carrying the error when there is none.
  ///@{
  T& value() & {
    check();
    return *std::get_if<0>(&v_);
  }
  const T& value() const& {
    check();
    return *std::get_if<0>(&v_);
  }
  T&& value() && {
    check();
    return std::move(*std::get_if<0>(&v_));
  }
  ///@}

  /// The error; an empty error_code when the result holds a value.
  [[nodiscard]] std::error_code error() const noexcept {
    return has_value() ? std::error_code{} : *std::get_if<1>(&v_);
  }
  /// The value, or `fallback` converted to T when it holds an error.
  template <class U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    return has_value() ? **this : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void check() const {
    if (!has_value()) throw bad_result_access(*std::get_if<1>(&v_));
  }
  std::variant<T, std::error_code> v_;
};

/// result<void>: success or an error.
template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;             ///< No value.
  using error_type = std::error_code;  ///< The error's type.

  /// Success.
  result() noexcept = default;
  /// An error.
  result(const unexpected& u) noexcept : ec_(u.error()) {}  // NOLINT

  /// Whether it succeeded.
  ///@{
  [[nodiscard]] bool has_value() const noexcept { return !ec_; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}
  /// Nothing (for generic code that writes `*r`).
  void operator*() const noexcept {}
  /// Throws bad_result_access carrying the error if it failed.
  void value() const {
    if (ec_) throw bad_result_access(ec_);
  }
  /// The error; an empty error_code on success.
  [[nodiscard]] std::error_code error() const noexcept { return ec_; }

 private:
  std::error_code ec_;
};

}  // namespace ringio
