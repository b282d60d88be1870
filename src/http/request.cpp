// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/request.hpp"

#include <cstdint>

namespace ringio::http {

void request::clear() noexcept {
  method_name_ = target_ = path_ = query_ = body_ = route_rest_ = {};
  headers_.clear();
  content_length_ = -1;
  method_ = http::method::unknown;
  version_minor_ = 1;
  host_count_ = 0;
  chunked_ = expect_continue_ = connection_close_ = connection_keep_alive_ = false;
  transfer_encoding_ = other_coding_ = expect_unknown_ = prefix_routed_ = false;
  keep_alive_ = true;
  param_count_ = 0;  // param_text_ keeps its capacity: no allocation next time
}

std::string_view request::param(std::string_view name) const noexcept {
  for (const route_param& p : params())
    if (p.name == name) return p.value;
  return {};
}

bool request::has_param(std::string_view name) const noexcept {
  for (const route_param& p : params())
    if (p.name == name) return true;
  return false;
}

namespace {
struct mover {
  std::uintptr_t begin, end;
  const char* to;
  // Views into the region move; others (the static "/" of "http://host") stay.
  void operator()(std::string_view& v) const noexcept {
    auto p = reinterpret_cast<std::uintptr_t>(v.data());
    if (v.data() == nullptr || p < begin || p > end) return;
    v = std::string_view(to + (p - begin), v.size());
  }
};
}  // namespace

void request::rebase(const char* from, std::size_t size, const char* to) noexcept {
  if (from == to) return;
  auto begin = reinterpret_cast<std::uintptr_t>(from);
  mover move{begin, begin + size, to};
  for (std::string_view* v : {&method_name_, &target_, &path_, &query_, &body_, &route_rest_}) move(*v);
  http::header* h = headers_.data();
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    move(h[i].name);
    move(h[i].value);
  }
}

}  // namespace ringio::http
