// SPDX-License-Identifier: Apache-2.0
#include "mime_types.hpp"

#include <array>
#include <utility>

#include "ringio/http/header_list.hpp"

namespace ringio::http::detail {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 30> types = {{
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"txt", "text/plain; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"xml", "application/xml"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/vnd.microsoft.icon"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
    {"wasm", "application/wasm"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"mp3", "audio/mpeg"},
}};

}  // namespace

std::string_view mime_type_for(std::string_view filename) noexcept {
  auto slash = filename.rfind('/');
  if (slash != std::string_view::npos) filename.remove_prefix(slash + 1);
  auto dot = filename.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "application/octet-stream";
  std::string_view ext = filename.substr(dot + 1);
  for (const auto& [e, type] : types)
    if (iequals(e, ext)) return type;
  return "application/octet-stream";
}

}  // namespace ringio::http::detail
