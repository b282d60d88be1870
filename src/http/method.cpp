// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/method.hpp"

#include <array>

namespace ringio::http {
namespace {

constexpr std::array<std::string_view, 9> names = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                   "CONNECT", "OPTIONS", "TRACE", "PATCH"};

}  // namespace

std::string_view to_string(method m) noexcept {
  auto i = static_cast<std::size_t>(m);
  return i < names.size() ? names[i] : std::string_view{};
}

method parse_method(std::string_view name) noexcept {
  // GET first: it is nearly every request.
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<method>(i);
  return method::unknown;
}

}  // namespace ringio::http
