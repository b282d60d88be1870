// SPDX-License-Identifier: Apache-2.0
// output_buffer — a connection's growable send buffer, reused for every response:
// heads are formatted straight into it, pipelined responses gather in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace ringio::http::detail {

class output_buffer {
 public:
  explicit output_buffer(std::size_t initial = 4096) : cap_(initial) {}

  /// At least n writable bytes at the end (grows by doubling).
  char* reserve(std::size_t n) {
    if (cap_ - size_ < n || !data_) grow(size_ + n);
    return data_.get() + size_;
  }
  void commit(std::size_t n) noexcept { size_ += n; }

  void append(std::string_view s) {
    if (s.empty()) return;  // its data() may be null, which memcpy must not get
    std::memcpy(reserve(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void append_decimal(std::uint64_t v) {
    char tmp[20];
    std::size_t n = 0;
    do {
      tmp[sizeof tmp - ++n] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    append({tmp + sizeof tmp - n, n});
  }
  void append_hex(std::uint64_t v) {
    char tmp[16];
    std::size_t n = 0;
    do {
      tmp[sizeof tmp - ++n] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    append({tmp + sizeof tmp - n, n});
  }

  [[nodiscard]] std::string_view view() const noexcept { return {data_.get(), size_}; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }
  void clear() noexcept { size_ = 0; }

 private:
  void grow(std::size_t need) {
    std::size_t cap = cap_ < 4096 ? 4096 : cap_;
    while (cap < need) cap *= 2;
    auto fresh = std::make_unique_for_overwrite<char[]>(cap);
    if (size_ != 0) std::memcpy(fresh.get(), data_.get(), size_);
    data_ = std::move(fresh);
    cap_ = cap;
  }

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t cap_;
};

}  // namespace ringio::http::detail
