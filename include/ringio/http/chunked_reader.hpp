// SPDX-License-Identifier: Apache-2.0
// ringio/http/chunked_reader.hpp — decodes a chunked response body incrementally into
// the caller's buffer (RFC 9112 section 7.1), trailers checked and discarded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ringio/result.hpp"

namespace ringio::http {

/// An incremental decoder of chunked framing that copies chunk data out.
class chunked_reader {
 public:
  /// Decodes from `in` into `out`: returns how many bytes of `in` it consumed and adds
  /// the data bytes it wrote to `produced`. It stops when `in` is used up, `out` is
  /// full, or the body (with its trailer section) is complete (see done()). Errors
  /// (client_errc::bad_chunk): a size that is not hex or too large, a missing CRLF, a
  /// size line or trailer section over its limit (4 KiB, 16 KiB), a malformed trailer
  /// field. Not asynchronous: nothing to cancel.
  [[nodiscard]] result<std::size_t> decode(std::string_view in, std::span<char> out, std::size_t& produced) noexcept;
  /// Whether the last chunk and the trailer section have been read.
  [[nodiscard]] bool done() const noexcept { return state_ == state::done; }
  /// Ready for a new body.
  void reset() noexcept { *this = chunked_reader(); }

 private:
  /// @cond INTERNAL
  enum class state : std::uint8_t {
    size,
    size_rest,
    size_lf,
    data,
    data_cr,
    data_lf,
    trailer_start,
    trailer,
    trailer_lf,
    final_lf,
    done
  };
  state state_ = state::size;
  std::uint64_t left_ = 0;
  unsigned digits_ = 0;
  std::size_t line_ = 0;
  std::size_t trailer_bytes_ = 0;
  bool trailer_colon_ = false;
  /// @endcond
};

}  // namespace ringio::http
