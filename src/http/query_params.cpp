// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/query_params.hpp"

#include <stdexcept>

#include "percent_coding.hpp"

namespace ringio::http {

query_params::query_params(std::string_view query, std::span<char> scratch) : query_(query), scratch_(scratch.data()) {
  if (scratch.size() < query.size()) throw std::invalid_argument("query_params: scratch buffer smaller than the query");
}

query_params::query_params(std::string_view query) : query_(query), own_(query.size(), '\0'), scratch_(own_.data()) {}

void query_params::iterator::advance(std::size_t from) noexcept {
  while (from < query_.size() && query_[from] == '&') ++from;  // empty pieces
  if (from >= query_.size()) {
    at_ = std::string_view::npos;
    current_ = {};
    return;
  }
  std::size_t end = query_.find('&', from);
  if (end == std::string_view::npos) end = query_.size();
  std::string_view piece = query_.substr(from, end - from);
  std::size_t eq = piece.find('=');
  std::string_view name = piece.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view{} : piece.substr(eq + 1);
  bool malformed = false;
  // Each part is decoded over its own raw offsets: no overlap with any other part.
  char* name_out = scratch_ + from;
  std::size_t name_len = detail::decode_form(name, name_out, malformed);
  char* value_out = eq == std::string_view::npos ? name_out + name_len : name_out + eq + 1;
  std::size_t value_len = detail::decode_form(value, value_out, malformed);
  current_ = {{name_out, name_len}, {value_out, value_len}, malformed};
  at_ = from;
  next_ = end;
}

std::optional<std::string_view> query_params::find(std::string_view name) const noexcept {
  for (const query_param& p : *this)
    if (p.name == name) return p.value;
  return std::nullopt;
}

}  // namespace ringio::http
