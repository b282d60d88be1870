// SPDX-License-Identifier: Apache-2.0
// ringio/http/chunked_decoder.hpp — decodes a chunked request body in place: chunk
// data is moved down over the framing, so the body ends up contiguous right where the
// raw bytes began, without a second buffer. Incremental: call decode() again with
// more bytes after need_more. Offsets, not pointers, are kept, so the caller may move
// the whole region between calls.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringio::http {

/// Decodes a chunked request body in place (RFC 9112 section 7.1), incrementally:
/// feed it what has arrived so far.
class chunked_decoder {
 public:
  /// The outcome of decode(): the body is complete, more bytes are needed, or the
  /// body is invalid (see error_status()).
  enum class status : std::uint8_t { done, need_more, error };

  /// Bodies over `max_body` fail with 413; trailer sections over `max_trailer` with
  /// 431; chunk-size lines (with extensions) over 4 KiB with 400.
  explicit chunked_decoder(std::uint64_t max_body = 1 << 20, std::size_t max_trailer = 16 * 1024) noexcept
      : max_body_(max_body), max_trailer_(max_trailer) {}

  /// `raw` is where the body's first byte is (right after the head); `size` bytes
  /// have arrived there. Decoded data is written to raw[0, body_size()).
  status decode(char* raw, std::size_t size) noexcept;

  /// Decoded bytes so far, at the start of the region.
  [[nodiscard]] std::size_t body_size() const noexcept { return out_; }
  /// Raw bytes consumed; after done, the next request starts there.
  [[nodiscard]] std::size_t consumed() const noexcept { return in_; }
  /// After error: 400, 413 or 431.
  [[nodiscard]] int error_status() const noexcept { return error_; }

  /// Ready for another body, with the same limits.
  void reset() noexcept { *this = chunked_decoder(max_body_, max_trailer_); }

 private:
  enum class st : std::uint8_t {
    size,
    size_ws,
    ext_name_start,
    ext_name,
    ext_after_name,
    ext_value_start,
    ext_token,
    ext_quoted,
    ext_quoted_pair,
    ext_value_end,
    ext_after_value,
    size_lf,
    data,
    data_cr,
    data_lf,
    trailer_start,
    trailer_line,
    final_lf,
    done,
  };
  status fail(int code) noexcept {
    error_ = code;
    return status::error;
  }
  status step_framing(char* raw, char c) noexcept;
  void begin_size_line() noexcept;
  status end_size_line() noexcept;

  std::uint64_t max_body_;
  std::size_t max_trailer_;
  std::size_t out_ = 0;         // decoded bytes
  std::size_t in_ = 0;          // raw bytes consumed
  std::uint64_t chunk_ = 0;     // size of the current chunk, then bytes left in it
  std::size_t line_start_ = 0;  // raw offset where the current size/trailer line began
  std::size_t trailer_bytes_ = 0;
  unsigned digits_ = 0;
  st state_ = st::size;
  int error_ = 0;
};

}  // namespace ringio::http
