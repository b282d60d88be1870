// SPDX-License-Identifier: Apache-2.0
// ringio/http/header_list.hpp — the header fields of a request, as views into the
// connection's receive buffer: no allocation, no copy. Names keep the client's case;
// lookups ignore case.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace ringio::http {

/// One field line: name and value (without surrounding whitespace).
struct header {
  /// The field name as received.
  std::string_view name;
  /// The field value, without leading or trailing whitespace.
  std::string_view value;
};

/// ASCII case-insensitive equality (field names, tokens such as "close").
bool iequals(std::string_view a, std::string_view b) noexcept;

/// A fixed-capacity list of fields in the order received. A request with more fields
/// than `capacity` is answered 431.
class header_list {
 public:
  /// The most fields a request may have.
  static constexpr std::size_t capacity = 100;

  /// The value of the first field called `name` (any case); empty if there is none.
  [[nodiscard]] std::string_view get(std::string_view name) const noexcept;
  /// Whether a field called `name` is present.
  [[nodiscard]] bool contains(std::string_view name) const noexcept;

  /// The number of fields.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Whether there are none.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Iteration in the order received.
  /// @{
  [[nodiscard]] const header* begin() const noexcept { return items_.data(); }
  [[nodiscard]] const header* end() const noexcept { return items_.data() + size_; }
  /// @}
  /// Field `i` (0 <= i < size()).
  const header& operator[](std::size_t i) const noexcept { return items_[i]; }

  /// Appends a field; false when the list is full.
  bool push(header h) noexcept {
    if (size_ == capacity) return false;
    items_[size_++] = h;
    return true;
  }
  /// Removes every field.
  void clear() noexcept { size_ = 0; }
  /// The fields (the parser rebases their views when the buffer moves).
  header* data() noexcept { return items_.data(); }

 private:
  std::array<header, capacity> items_{};
  std::size_t size_ = 0;
};

}  // namespace ringio::http
