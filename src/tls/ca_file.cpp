// SPDX-License-Identifier: Apache-2.0
#include "ca_file.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <unistd.h>

#include <cerrno>

#include "ringio/log.hpp"
#include "ringio/tls/error.hpp"

namespace ringio::tls::detail {
namespace {

std::error_code check_ca_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error_code(errno == ENOENT ? tls_errc::ca_file_missing : tls_errc::ca_file_unreadable);
  std::string text;
  char buf[16384];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (n < 0) return make_error_code(tls_errc::ca_file_unreadable);  // a directory, an I/O error
  if (text.find("-----BEGIN ") == std::string::npos) return make_error_code(tls_errc::ca_file_not_pem);
  // OpenSSL takes "CERTIFICATE", "TRUSTED CERTIFICATE" and "X509 CERTIFICATE" blocks.
  if (text.find("CERTIFICATE-----") == std::string::npos) return make_error_code(tls_errc::ca_file_without_certificate);
  return {};
}

}  // namespace

std::error_code load_ca_file(SSL_CTX* ctx, const std::string& path) {
  std::error_code ec = check_ca_file(path);
  if (!ec && SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) != 1) {
    const unsigned long e = ERR_peek_error();  // the first error is the cause
    ERR_clear_error();
    ec = e != 0 ? openssl_error(e) : make_error_code(tls_errc::configuration);
  }
  if (ec) log(log_level::error, "tls: CA file %s: %s", path.c_str(), ec.message().c_str());
  return ec;
}

}  // namespace ringio::tls::detail
