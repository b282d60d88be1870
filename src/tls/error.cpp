// SPDX-License-Identifier: Apache-2.0
#include "ringio/tls/error.hpp"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <string>

namespace ringio::tls {
namespace {

// Codes of tls_category: tls_errc values below verify_base, verification results in
// [verify_base, openssl_base), OpenSSL's packed codes (library << 23 | reason) above.
constexpr int verify_base = 1000;
constexpr int openssl_base = 1 << 23;

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ringio.tls"; }
  std::string message(int v) const override {
    if (v >= openssl_base) {
      char text[256];
      ERR_error_string_n(static_cast<unsigned long>(v), text, sizeof text);
      const char* reason = ERR_reason_error_string(static_cast<unsigned long>(v));
      return reason != nullptr ? std::string("TLS: ") + reason : std::string("TLS: ") + text;
    }
    if (v >= verify_base)
      return std::string("certificate verify failed: ") + X509_verify_cert_error_string(v - verify_base);
    switch (static_cast<tls_errc>(v)) {
      case tls_errc::truncated:
        return "TLS: the peer closed the connection without close_notify (truncated)";
      case tls_errc::not_established:
        return "TLS: no session established (handshake not done or failed)";
      case tls_errc::busy:
        return "TLS: another operation of the same direction is in flight";
      case tls_errc::protocol_error:
        return "TLS: protocol error";
      case tls_errc::configuration:
        return "TLS: invalid configuration";
      case tls_errc::ca_file_missing:
        return "TLS: the CA file does not exist";
      case tls_errc::ca_file_unreadable:
        return "TLS: the CA file cannot be read";
      case tls_errc::ca_file_not_pem:
        return "TLS: the CA file is not PEM (no -----BEGIN line)";
      case tls_errc::ca_file_without_certificate:
        return "TLS: the CA file holds no certificate";
    }
    return "TLS: unknown error";
  }
};

}  // namespace

const std::error_category& tls_category() noexcept {
  static const category c;
  return c;
}

bool is_verification_error(const std::error_code& ec) noexcept {
  return ec.category() == tls_category() && ec.value() >= verify_base && ec.value() < openssl_base;
}

int verification_result(const std::error_code& ec) noexcept {
  return is_verification_error(ec) ? ec.value() - verify_base : 0;
}

namespace detail {

std::error_code verify_error(long v) noexcept { return {verify_base + static_cast<int>(v), tls_category()}; }

std::error_code openssl_error(unsigned long e) noexcept {
  // System errors (ERR_SYSTEM_FLAG) carry an errno; other codes fit an int.
  if (ERR_SYSTEM_ERROR(e) || ERR_GET_LIB(e) == ERR_LIB_SYS)
    return {static_cast<int>(ERR_GET_REASON(e)), std::system_category()};
  unsigned long packed = ERR_PACK(ERR_GET_LIB(e), 0, ERR_GET_REASON(e));
  if (packed < static_cast<unsigned long>(openssl_base) || packed > 0x7fffffffUL)
    return make_error_code(tls_errc::protocol_error);
  return {static_cast<int>(packed), tls_category()};
}

}  // namespace detail
}  // namespace ringio::tls
