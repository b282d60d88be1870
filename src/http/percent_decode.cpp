// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/percent_decode.hpp"

#include "percent_coding.hpp"

namespace ringio::http {

result<std::string> percent_decode(std::string_view encoded) {
  std::string out(encoded.size(), '\0');
  std::size_t n = detail::decode_strict(encoded, out.data(), out.size());
  if (n == detail::bad_escape) return unexpected(std::errc::invalid_argument);
  out.resize(n);
  return out;
}

result<std::size_t> percent_decode(std::string_view encoded, std::span<char> out) noexcept {
  std::size_t n = detail::decode_strict(encoded, out.data(), out.size());
  if (n == detail::bad_escape) return unexpected(std::errc::invalid_argument);
  if (n == detail::no_room) return unexpected(std::errc::no_buffer_space);
  return n;
}

}  // namespace ringio::http
