// SPDX-License-Identifier: Apache-2.0
#include "handshake.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace ringio::http::detail {

namespace {

constexpr std::string_view websocket_guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string base64(const unsigned char* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

bool is_base64_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

std::string websocket_accept_value(std::string_view key) {
  std::string text;
  text.reserve(key.size() + websocket_guid.size());
  text.append(key).append(websocket_guid);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha1(), nullptr) != 1)
    throw std::runtime_error("websocket: SHA-1 unavailable");
  return base64(digest, size);
}

std::string websocket_random_key() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) throw std::runtime_error("websocket: no random bytes");
  return base64(bytes, sizeof(bytes));
}

bool valid_websocket_key(std::string_view key) noexcept {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (std::size_t i = 0; i < 22; ++i) {
    if (!is_base64_char(key[i])) return false;
  }
  // The last character before "==" carries 2 bits of data; the other 4 must be zero.
  return std::string_view("AQgw").find(key[21]) != std::string_view::npos;
}

bool header_has_token(const header_list& headers, std::string_view name, std::string_view token) noexcept {
  bool found = false;
  for (const header& h : headers) {
    if (!iequals(h.name, name)) continue;
    for_each_token(h.value, [&](std::string_view t) { found = found || iequals(t, token); });
  }
  return found;
}

}  // namespace ringio::http::detail
