// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace ringio::http {
namespace {

[[noreturn]] void misuse(const char* what) { throw std::logic_error(std::string("json_writer: ") + what); }

// The length of the well-formed UTF-8 sequence at s[i] (2 to 4), or, when there is
// none, the negated length of its maximal invalid subpart (the lead byte and the
// continuation bytes that could still have followed it).
int utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto b = static_cast<unsigned char>(s[i]);
  int len;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b == 0xe0) lo = 0xa0;  // no overlong forms
    if (b == 0xed) hi = 0x9f;  // no surrogates
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b == 0xf0) lo = 0x90;  // no overlong forms
    if (b == 0xf4) hi = 0x8f;  // nothing beyond U+10FFFF
  } else {
    return -1;  // a continuation byte, C0, C1, F5 to FF
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) return -k;
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xbf)) return -k;
  }
  return len;
}

}  // namespace

void json_writer::before_value() {
  if (stack_.empty()) {
    if (done_) misuse("a second top-level value");
    done_ = true;
    return;
  }
  if (stack_.back() == level::object) {
    if (!after_key_) misuse("a value in an object needs a key first");
    after_key_ = false;
    return;
  }
  if (!first_) out_ += ',';
  first_ = false;
}

json_writer& json_writer::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back(level::object);
  first_ = true;
  return *this;
}

json_writer& json_writer::end_object() {
  if (stack_.empty() || stack_.back() != level::object) misuse("end_object without a matching begin_object");
  if (after_key_) misuse("end_object while a key waits for its value");
  out_ += '}';
  stack_.pop_back();
  first_ = false;
  return *this;
}

json_writer& json_writer::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back(level::array);
  first_ = true;
  return *this;
}

json_writer& json_writer::end_array() {
  if (stack_.empty() || stack_.back() != level::array) misuse("end_array without a matching begin_array");
  out_ += ']';
  stack_.pop_back();
  first_ = false;
  return *this;
}

json_writer& json_writer::key(std::string_view name) {
  if (stack_.empty() || stack_.back() != level::object) misuse("a key outside an object");
  if (after_key_) misuse("two keys in a row");
  if (!first_) out_ += ',';
  first_ = false;
  write_string(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  before_value();
  write_string(s);
  return *this;
}

json_writer& json_writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

json_writer& json_writer::value(double d) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  out_.append(buf, r.ptr);
  return *this;
}

json_writer& json_writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

json_writer& json_writer::write_signed(std::int64_t v) {
  before_value();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

json_writer& json_writer::write_unsigned(std::uint64_t v) {
  before_value();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

void json_writer::write_string(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out_ += '"';
  std::size_t plain = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    int len = c < 0x80 ? 0 : utf8_sequence(s, i);
    if (len > 0) {
      i += static_cast<std::size_t>(len);
      continue;
    }
    out_.append(s.substr(plain, i - plain));
    if (len < 0) {
      out_ += "\xef\xbf\xbd";  // U+FFFD
      i += static_cast<std::size_t>(-len);
    } else if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
      ++i;
    } else {
      out_ += "\\u00";
      out_ += hex[c >> 4];
      out_ += hex[c & 15];
      ++i;
    }
    plain = i;
  }
  out_.append(s.substr(plain));
  out_ += '"';
}

std::string json_writer::take() {
  if (!complete()) misuse("take() before the text is complete");
  std::string text = std::move(out_);
  clear();
  return text;
}

void json_writer::clear() noexcept {
  out_.clear();
  stack_.clear();
  first_ = true;
  after_key_ = false;
  done_ = false;
}

}  // namespace ringio::http
