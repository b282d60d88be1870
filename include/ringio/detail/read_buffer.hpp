// SPDX-License-Identifier: Apache-2.0
// ringio/detail/read_buffer.hpp — the input buffer of a buffered_stream: one block
// allocated up front; bytes [begin, end) have been received and not yet handed out.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "ringio/buffer.hpp"

namespace ringio::detail {

/// Received bytes waiting to be read, in a block of fixed capacity.
class read_buffer {
 public:
  /// Allocates `capacity` bytes (at least one) once; `deferred` is the socket's slot
  /// for an error hidden by a short count.
  read_buffer(std::size_t capacity, int& deferred)
      : deferred_error(&deferred),
        capacity_(capacity == 0 ? 1 : capacity),
        data_(std::make_unique_for_overwrite<std::byte[]>(capacity_)) {}

  /// The bytes received and not yet consumed.
  [[nodiscard]] std::string_view unread() const noexcept {
    return {reinterpret_cast<const char*>(data_.get()) + begin_, end_ - begin_};
  }
  /// Drops the first n unread bytes (all of them if n is larger). The bytes stay in
  /// place until the next receive, so views of them remain valid until then.
  void consume(std::size_t n) noexcept {
    begin_ += n < end_ - begin_ ? n : end_ - begin_;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  /// Moves the unread bytes to the front so that all free space is at the end.
  void compact() noexcept {
    if (begin_ == 0) return;
    std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  /// Where the next receive writes.
  [[nodiscard]] mutable_buffer space() const noexcept { return {data_.get() + end_, capacity_ - end_}; }
  /// Appends n bytes just received into space().
  void commit(std::size_t n) noexcept { end_ += n; }
  /// Copies up to dst.size() unread bytes to dst and consumes them; returns the count.
  std::size_t take(mutable_buffer dst) noexcept {
    std::size_t n = dst.size() < end_ - begin_ ? dst.size() : end_ - begin_;
    if (n != 0) std::memcpy(dst.data(), data_.get() + begin_, n);
    consume(n);
    return n;
  }
  /// The size of the block.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  /// The peer closed its side: a receive returned 0.
  bool ended = false;
  /// A receive error (negative errno) not reported yet because the read that met it
  /// returned a short count instead. The kernel reports some errors (ECONNRESET) only
  /// once, so it is kept for the next read: in the socket's own slot, which its recv
  /// and recv_exact report too, so switching to raw reads does not lose it.
  int* deferred_error;
  /// Takes the deferred error, leaving none.
  int take_error() noexcept { return std::exchange(*deferred_error, 0); }

 private:
  std::size_t capacity_;
  std::unique_ptr<std::byte[]> data_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

}  // namespace ringio::detail
