// SPDX-License-Identifier: Apache-2.0
// Incremental chunked-body decoding for the client.
#include "ringio/http/chunked_reader.hpp"

#include <algorithm>
#include <cstring>

#include "ringio/http/client_error.hpp"

namespace ringio::http {
namespace {

constexpr std::size_t max_size_line = 4096;
constexpr std::size_t max_trailer = 16 * 1024;

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

result<std::size_t> chunked_reader::decode(std::string_view in, std::span<char> out, std::size_t& produced) noexcept {
  const auto bad = unexpected(make_error_code(client_errc::bad_chunk));
  std::size_t i = 0;
  std::size_t written = 0;
  while (i < in.size() && state_ != state::done) {
    if (state_ == state::data) {
      if (written == out.size()) break;
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(left_, std::min(in.size() - i, out.size() - written)));
      std::memcpy(out.data() + written, in.data() + i, n);
      written += n;
      i += n;
      left_ -= n;
      if (left_ == 0) state_ = state::data_cr;
      continue;
    }
    const char c = in[i++];
    switch (state_) {
      case state::size: {
        const int h = hex_value(c);
        if (h >= 0) {
          if (++digits_ > 15) return bad;
          left_ = left_ * 16 + static_cast<std::uint64_t>(h);
          ++line_;
          break;
        }
        if (digits_ == 0) return bad;
        if (c == '\r') {
          state_ = state::size_lf;
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = state::size_rest;
        } else {
          return bad;
        }
        break;
      }
      case state::size_rest:  // chunk extensions: skipped, but bounded and printable
        if (++line_ > max_size_line) return bad;
        if (c == '\r') state_ = state::size_lf;
        else if (c == '\n' || (static_cast<unsigned char>(c) < 0x20 && c != '\t')) return bad;
        break;
      case state::size_lf:
        if (c != '\n') return bad;
        digits_ = 0;
        line_ = 0;
        state_ = left_ == 0 ? state::trailer_start : state::data;
        break;
      case state::data_cr:
        if (c != '\r') return bad;
        state_ = state::data_lf;
        break;
      case state::data_lf:
        if (c != '\n') return bad;
        state_ = state::size;
        left_ = 0;
        break;
      case state::trailer_start:
        if (c == '\r') {
          state_ = state::final_lf;
        } else if (c == ' ' || c == '\t' || c == ':' || c == '\n') {
          return bad;  // obs-fold, empty name, bare LF
        } else {
          trailer_colon_ = false;
          state_ = state::trailer;
          if (++trailer_bytes_ > max_trailer) return bad;
        }
        break;
      case state::trailer:
        if (++trailer_bytes_ > max_trailer) return bad;
        if (c == ':') trailer_colon_ = true;
        if (c == '\r') {
          if (!trailer_colon_) return bad;
          state_ = state::trailer_lf;
        } else if (c == '\n') {
          return bad;
        }
        break;
      case state::trailer_lf:
        if (c != '\n') return bad;
        state_ = state::trailer_start;
        break;
      case state::final_lf:
        if (c != '\n') return bad;
        state_ = state::done;
        break;
      case state::data:
      case state::done:
        break;
    }
  }
  produced += written;
  return i;
}

}  // namespace ringio::http
