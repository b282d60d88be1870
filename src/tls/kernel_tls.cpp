// SPDX-License-Identifier: Apache-2.0
// Whether kernel TLS can be used here: OpenSSL built with it, and a kernel that accepts
// the "tls" upper-layer protocol on a connected TCP socket. Checked once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/opensslconf.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ringio/log.hpp"
#include "ringio/tls/stream.hpp"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

namespace ringio::tls {
namespace {

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

// Empty when kernel TLS works, else why not.
std::string probe_kernel_tls() {
#ifdef OPENSSL_NO_KTLS
  return "OpenSSL was built without kernel TLS support (OPENSSL_NO_KTLS)";
#else
  fd_closer listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  fd_closer client{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (listener.fd < 0 || client.fd < 0) return std::string("socket: ") + std::strerror(errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener.fd, 1) != 0 ||
      ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      ::connect(client.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return std::string("loopback probe: ") + std::strerror(errno);
  fd_closer accepted{::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC)};
  if (::setsockopt(client.fd, SOL_TCP, TCP_ULP, "tls", sizeof "tls") != 0) {
    int e = errno;
    if (e == ENOENT) return "the kernel has no tls module (TCP_ULP \"tls\": ENOENT)";
    return std::string("TCP_ULP \"tls\" refused: ") + std::strerror(e);
  }
  return {};
#endif
}

}  // namespace

bool stream::kernel_tls_available(std::string* why) {
  static const std::string reason = [] {
    std::string r = probe_kernel_tls();
    // Debug level: a normal run says nothing (set_log_level(log_level::debug) shows it).
    if (r.empty()) log(log_level::debug, "tls: kernel TLS is available");
    else log(log_level::debug, "tls: records in user space: %s", r.c_str());
    return r;
  }();
  if (why != nullptr) *why = reason;
  return reason.empty();
}

}  // namespace ringio::tls
