// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/chunked_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "char_class.hpp"

namespace ringio::http {

using detail::cc_qdtext;
using detail::cc_token;
using detail::cc_value;
using detail::is;
using detail::is_ws;

namespace {
constexpr std::size_t max_size_line = 4096;  // chunk size plus extensions
}

chunked_decoder::status chunked_decoder::decode(char* raw, std::size_t size) noexcept {
  while (state_ != st::done && in_ < size) {
    if (state_ == st::data) {
      // Chunk data: one move down over the framing that preceded it.
      auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_, size - in_));
      if (out_ != in_) std::memmove(raw + out_, raw + in_, n);
      out_ += n;
      in_ += n;
      chunk_ -= n;
      if (chunk_ == 0) state_ = st::data_cr;
      continue;
    }
    // Fast paths for the usual framing: "HEX\r\n" whole, and the CRLF after data.
    if (state_ == st::size && digits_ == 0) {
      std::size_t i = in_;
      std::uint64_t v = 0;
      for (int h; i < size && i - in_ < 16 && (h = detail::hex_value(raw[i])) >= 0; ++i)
        v = v * 16 + static_cast<unsigned>(h);
      if (i > in_ && i + 1 < size && raw[i] == '\r' && raw[i + 1] == '\n') {
        chunk_ = v;
        in_ = i + 2;
        if (end_size_line() == status::error) return status::error;
        continue;
      }
    } else if (state_ == st::data_cr && size - in_ >= 2 && raw[in_] == '\r' && raw[in_ + 1] == '\n') {
      in_ += 2;
      begin_size_line();
      continue;
    }
    if (step_framing(raw, raw[in_++]) == status::error) return status::error;
  }
  return state_ == st::done ? status::done : status::need_more;
}

void chunked_decoder::begin_size_line() noexcept {
  state_ = st::size;
  chunk_ = 0;
  digits_ = 0;
  line_start_ = in_;
}

chunked_decoder::status chunked_decoder::end_size_line() noexcept {
  if (chunk_ == 0) {
    state_ = st::trailer_start;
    line_start_ = in_;
  } else {
    if (chunk_ > max_body_ - out_) return fail(413);
    state_ = st::data;
  }
  return status::need_more;
}

// One byte of framing: chunk-size [ chunk-ext ] CRLF, the CRLF after data, trailer
// fields, the final CRLF. chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ).
chunked_decoder::status chunked_decoder::step_framing(char* raw, char c) noexcept {
  switch (state_) {
    case st::size:
      if (int h = detail::hex_value(c); h >= 0) {
        if (chunk_ > (~std::uint64_t{0} >> 4)) return fail(400);
        chunk_ = chunk_ * 16 + static_cast<unsigned>(h);
        ++digits_;
      } else if (digits_ == 0) {
        return fail(400);
      } else if (c == ';') {
        state_ = st::ext_name_start;
      } else if (is_ws(c)) {
        state_ = st::size_ws;
      } else if (c == '\r') {
        state_ = st::size_lf;
      } else {
        return fail(400);
      }
      break;
    case st::size_ws:
      if (c == ';') state_ = st::ext_name_start;
      else if (!is_ws(c)) return fail(400);
      break;
    case st::ext_name_start:
      if (is(c, cc_token)) state_ = st::ext_name;
      else if (!is_ws(c)) return fail(400);
      break;
    // Whitespace (BWS) may come only before ';' or '=' or after '=', never before CRLF.
    case st::ext_name:
      if (is(c, cc_token)) break;
      if (c == '\r') state_ = st::size_lf;
      else if (c == '=') state_ = st::ext_value_start;
      else if (c == ';') state_ = st::ext_name_start;
      else if (is_ws(c)) state_ = st::ext_after_name;
      else return fail(400);
      break;
    case st::ext_after_name:
      if (c == '=') state_ = st::ext_value_start;
      else if (c == ';') state_ = st::ext_name_start;
      else if (!is_ws(c)) return fail(400);
      break;
    case st::ext_value_start:
      if (c == '"') state_ = st::ext_quoted;
      else if (is(c, cc_token)) state_ = st::ext_token;
      else if (!is_ws(c)) return fail(400);
      break;
    case st::ext_token:
    case st::ext_value_end:
      if (state_ == st::ext_token && is(c, cc_token)) break;
      if (c == '\r') state_ = st::size_lf;
      else if (c == ';') state_ = st::ext_name_start;
      else if (is_ws(c)) state_ = st::ext_after_value;
      else return fail(400);
      break;
    case st::ext_after_value:
      if (c == ';') state_ = st::ext_name_start;
      else if (!is_ws(c)) return fail(400);
      break;
    case st::ext_quoted:
      if (c == '"') state_ = st::ext_value_end;
      else if (c == '\\') state_ = st::ext_quoted_pair;
      else if (!is(c, cc_qdtext)) return fail(400);
      break;
    case st::ext_quoted_pair:
      if (!is(c, cc_value)) return fail(400);
      state_ = st::ext_quoted;
      break;
    case st::size_lf:
      if (c != '\n') return fail(400);
      return end_size_line();
    case st::data_cr:
      if (c != '\r') return fail(400);
      state_ = st::data_lf;
      break;
    case st::data_lf:
      if (c != '\n') return fail(400);
      begin_size_line();
      return status::need_more;
    case st::trailer_start:
      if (++trailer_bytes_ > max_trailer_) return fail(431);
      if (c == '\r') state_ = st::final_lf;
      else if (c == '\n') return fail(400);
      else state_ = st::trailer_line;
      break;
    case st::trailer_line: {
      if (++trailer_bytes_ > max_trailer_) return fail(431);
      if (c != '\n') break;
      // A trailer field: same grammar as a header field; its value is not kept.
      std::string_view line(raw + line_start_, in_ - 1 - line_start_);
      std::string_view name, value;
      if (line.back() != '\r' || !detail::split_field_line(line.substr(0, line.size() - 1), name, value))
        return fail(400);
      state_ = st::trailer_start;
      line_start_ = in_;
      return status::need_more;
    }
    case st::final_lf:
      if (c != '\n') return fail(400);
      state_ = st::done;
      return status::done;
    case st::data:
    case st::done:
      break;
  }
  if (state_ < st::size_lf && in_ - line_start_ > max_size_line) return fail(400);
  return status::need_more;
}

}  // namespace ringio::http
