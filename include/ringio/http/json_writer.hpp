// SPDX-License-Identifier: Apache-2.0
// ringio/http/json_writer.hpp — builds a JSON text (RFC 8259) for a response body:
//
//   http::json_writer j;
//   j.begin_object().key("id").value(42).key("tags").begin_array().value("a").end_array().end_object();
//   co_return http::response::json(200, j.take());
//
// Strings are escaped: '"' and '\' with a backslash, control characters (U+0000 to
// U+001F) as \u00XX; everything else, valid UTF-8 included, is copied as it is. Bytes
// that are not valid UTF-8 (a stray continuation byte, an overlong form, a surrogate,
// beyond U+10FFFF, a sequence cut short) become U+FFFD, one per maximal invalid
// subpart, the substitution Python's and browsers' decoders make. Doubles are written
// in the shortest form that reads back to the same value ("0.1", "1e+100", "-0");
// NaN and the infinities, which JSON cannot express, are written as null. Integers of
// any width are written exactly (readers that parse numbers as doubles lose precision
// beyond 2^53).
//
// Misuse throws std::logic_error and leaves the text as it was: a value in an object
// without a key before it, a key outside an object or twice in a row, an end that
// does not match the innermost begin, a second top-level value, take() before the
// text is complete. Nesting depth is not limited.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringio::http {

/// Builds one JSON text (see the top of this file).
class json_writer {
 public:
  /// Opens an object ('{') where a value may go. Throws std::logic_error where none may.
  json_writer& begin_object();
  /// Closes the innermost object. Throws std::logic_error when that is not an object
  /// or a key waits for its value.
  json_writer& end_object();
  /// Opens an array ('[') where a value may go. Throws std::logic_error where none may.
  json_writer& begin_array();
  /// Closes the innermost array. Throws std::logic_error when that is not an array.
  json_writer& end_array();
  /// Writes a member name; its value must follow. Throws std::logic_error outside an
  /// object or right after another key.
  json_writer& key(std::string_view name);

  /// Writes a string value. Throws std::logic_error where no value may go (so do all
  /// the value writers below).
  json_writer& value(std::string_view s);
  /// Writes a string value (a C string: not taken for a bool).
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  /// Writes true or false.
  json_writer& value(bool b);
  /// Writes an integer exactly (char types are not numbers: write them as strings).
  template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char> && !std::same_as<I, char8_t> &&
             !std::same_as<I, char16_t> && !std::same_as<I, char32_t> && !std::same_as<I, wchar_t>)
  json_writer& value(I v) {
    if constexpr (std::signed_integral<I>) return write_signed(v);
    else return write_unsigned(v);
  }
  /// Writes a finite double in its shortest exact form; NaN and infinities as null.
  json_writer& value(double d);
  /// Writes null.
  json_writer& null();

  /// Whether the text is one whole value (every begin has its end).
  [[nodiscard]] bool complete() const noexcept { return done_ && stack_.empty(); }
  /// The text written so far (complete or not).
  [[nodiscard]] std::string_view view() const noexcept { return out_; }
  /// Hands over the complete text and starts afresh. Throws std::logic_error when the
  /// text is not complete.
  [[nodiscard]] std::string take();
  /// Forgets everything written.
  void clear() noexcept;

 private:
  enum class level : std::uint8_t { object, array };
  void before_value();
  json_writer& write_signed(std::int64_t v);
  json_writer& write_unsigned(std::uint64_t v);
  void write_string(std::string_view s);

  std::string out_;
  std::vector<level> stack_;
  bool first_ = true;       // nothing written yet at the innermost level
  bool after_key_ = false;  // a key waits for its value
  bool done_ = false;       // the top-level value has begun
};

}  // namespace ringio::http
