// SPDX-License-Identifier: Apache-2.0
// ringio/buffer.hpp — byte views that operations read into and write from. Any
// contiguous range of char, unsigned char or std::byte converts implicitly.
#pragma once

#include <cstddef>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>

namespace ringio {

namespace detail {
template <class T>
concept byte_like = sizeof(T) == 1 && std::is_trivially_copyable_v<T>;
}

/// A writable byte range: where received data goes.
class mutable_buffer {
 public:
  constexpr mutable_buffer() noexcept = default;
  /// `size` bytes at `data`.
  constexpr mutable_buffer(void* data, std::size_t size) noexcept : data_(static_cast<std::byte*>(data)), size_(size) {}
  /// The bytes of a contiguous range of byte-sized elements (std::array, std::vector, std::span, ...).
  template <std::ranges::contiguous_range R>
    requires(detail::byte_like<std::ranges::range_value_t<R>> &&
             !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>)
  constexpr mutable_buffer(R&& r) noexcept  // NOLINT(google-explicit-constructor)
      : data_(reinterpret_cast<std::byte*>(std::ranges::data(r))), size_(std::ranges::size(r)) {}

  /// The first byte.
  [[nodiscard]] constexpr std::byte* data() const noexcept { return data_; }
  /// The length in bytes.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  /// The first n bytes (n is clamped to size()).
  [[nodiscard]] constexpr mutable_buffer first(std::size_t n) const noexcept { return {data_, n < size_ ? n : size_}; }
  /// Everything after the first n bytes.
  [[nodiscard]] constexpr mutable_buffer skip(std::size_t n) const noexcept {
    return n < size_ ? mutable_buffer{data_ + n, size_ - n} : mutable_buffer{data_ + size_, 0};
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A read-only byte range: what is sent.
class const_buffer {
 public:
  constexpr const_buffer() noexcept = default;
  /// `size` bytes at `data`.
  constexpr const_buffer(const void* data, std::size_t size) noexcept
      : data_(static_cast<const std::byte*>(data)), size_(size) {}
  /// The same bytes, read-only.
  constexpr const_buffer(mutable_buffer b) noexcept : data_(b.data()), size_(b.size()) {}  // NOLINT
  /// The bytes of a contiguous range of byte-sized elements (std::string_view, std::string, std::array, std::span,
  /// ...).
  template <std::ranges::contiguous_range R>
    requires detail::byte_like<std::ranges::range_value_t<R>>
  constexpr const_buffer(R&& r) noexcept  // NOLINT(google-explicit-constructor)
      : data_(reinterpret_cast<const std::byte*>(std::ranges::data(r))), size_(std::ranges::size(r)) {}

  /// The first byte.
  [[nodiscard]] constexpr const std::byte* data() const noexcept { return data_; }
  /// The length in bytes.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  /// The first n bytes (n is clamped to size()).
  [[nodiscard]] constexpr const_buffer first(std::size_t n) const noexcept { return {data_, n < size_ ? n : size_}; }
  /// Everything after the first n bytes.
  [[nodiscard]] constexpr const_buffer skip(std::size_t n) const noexcept {
    return n < size_ ? const_buffer{data_ + n, size_ - n} : const_buffer{data_ + size_, 0};
  }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ringio
