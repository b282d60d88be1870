// SPDX-License-Identifier: Apache-2.0
// Loading a file of trusted CA certificates, with an error that says what is wrong
// with it (missing, unreadable, not PEM, no certificate) before OpenSSL sees it.
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <system_error>

namespace ringio::tls::detail {

/// Adds the certificates of the PEM file `path` to the trust of `ctx`. Returns an
/// empty code, a tls_errc ca_file_* code, or OpenSSL's reason for a file it rejects.
std::error_code load_ca_file(SSL_CTX* ctx, const std::string& path);

}  // namespace ringio::tls::detail
