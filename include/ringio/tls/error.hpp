// SPDX-License-Identifier: Apache-2.0
// ringio/tls/error.hpp — the errors of ringio's TLS layer: its own conditions
// (tls_errc), certificate verification failures and OpenSSL's reasons, all in one
// std::error_category whose message() names the reason.
#pragma once

#include <system_error>

namespace ringio::tls {

/// Conditions of ringio's TLS layer that no OpenSSL reason describes.
enum class tls_errc {
  truncated = 1,                ///< the peer closed the connection without a close_notify alert
  not_established,              ///< recv or send before handshake() succeeded (or after a failure)
  busy,                         ///< a second operation of the same direction while one is in flight
  protocol_error,               ///< OpenSSL failed without naming a reason
  configuration,                ///< a context setting was rejected (see the log for the file or value)
  ca_file_missing,              ///< the CA file does not exist
  ca_file_unreadable,           ///< the CA file cannot be read (permissions, a directory)
  ca_file_not_pem,              ///< the CA file is not PEM (no "-----BEGIN" line; DER is not taken)
  ca_file_without_certificate,  ///< the CA file is PEM but holds no certificate
};

/// The category of every TLS error ("ringio.tls"). Its codes are tls_errc values,
/// certificate verification failures (is_verification_error) and OpenSSL's packed
/// error codes (ERR_get_error, library and reason); message() gives the reason
/// in words, e.g. "certificate verify failed: hostname mismatch".
const std::error_category& tls_category() noexcept;

/// A tls_errc as an error_code of tls_category: `ec == tls_errc::truncated` works.
inline std::error_code make_error_code(tls_errc e) noexcept { return {static_cast<int>(e), tls_category()}; }

/// Whether `ec` is a failed verification of the peer's certificate (unknown CA,
/// hostname mismatch, expired, ...).
bool is_verification_error(const std::error_code& ec) noexcept;

/// The `X509_V_ERR_*` value of a verification error, else 0.
int verification_result(const std::error_code& ec) noexcept;

/// @cond INTERNAL
namespace detail {
/// The error of a failed verification with OpenSSL's `X509_V_ERR_*` value `v`.
std::error_code verify_error(long v) noexcept;
/// The error of OpenSSL's packed error code `e` (ERR_get_error).
std::error_code openssl_error(unsigned long e) noexcept;
}  // namespace detail
/// @endcond

}  // namespace ringio::tls

template <>
struct std::is_error_code_enum<ringio::tls::tls_errc> : std::true_type {};
