// SPDX-License-Identifier: Apache-2.0
// seed_env — a seed (or count) from an environment variable: all digits, or an error
// that names the variable, never a silent prefix ("12abc" is not seed 12).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringio::detail {

inline std::optional<std::uint64_t> number_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  std::string_view text(v);
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(name) + ": not a number: '" + v + "'");
  return n;
}

}  // namespace ringio::detail
