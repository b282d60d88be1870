// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/header_list.hpp"

#include "char_class.hpp"

namespace ringio::http {

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Folding with |0x20 is exact for letters; other bytes must then match exactly.
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;
    if ((x | 0x20) != (y | 0x20) || (x | 0x20) < 'a' || (x | 0x20) > 'z') return false;
  }
  return true;
}

std::string_view header_list::get(std::string_view name) const noexcept {
  for (const header& h : *this)
    if (iequals(h.name, name)) return h.value;
  return {};
}

bool header_list::contains(std::string_view name) const noexcept {
  for (const header& h : *this)
    if (iequals(h.name, name)) return true;
  return false;
}

namespace detail {

bool split_field_line(std::string_view line, std::string_view& name, std::string_view& value) noexcept {
  std::size_t i = 0;
  while (i < line.size() && is(line[i], cc_token)) ++i;
  if (i == 0 || i == line.size() || line[i] != ':') return false;
  name = line.substr(0, i);
  std::string_view v = trim_ows(line.substr(i + 1));
  if (!valid_value(v)) return false;
  value = v;
  return true;
}

}  // namespace detail
}  // namespace ringio::http
