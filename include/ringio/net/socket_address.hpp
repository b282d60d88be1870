// SPDX-License-Identifier: Apache-2.0
// ringio/net/socket_address.hpp — an IPv4, IPv6 or Unix-domain socket address.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "ringio/result.hpp"

namespace ringio {

/// An IPv4, IPv6 or Unix-domain socket address (a sockaddr_storage and its length).
class socket_address {
 public:
  /// An empty address (family AF_UNSPEC).
  socket_address() noexcept;

  /// Parses "1.2.3.4:80", "[::1]:80", "localhost:80", "unix:/run/x.sock", "/run/x.sock"
  /// or "@name" (abstract Unix socket). Errors: errc::invalid_address,
  /// errc::invalid_port, errc::address_too_long.
  static result<socket_address> parse(std::string_view text);
  /// A numeric IPv4 or IPv6 host (without brackets) and a port.
  static result<socket_address> from_host(std::string_view host, std::uint16_t port);
  /// A Unix-domain socket path; a leading '@' names an abstract socket.
  static result<socket_address> unix_path(std::string_view path);
  /// 0.0.0.0:port.
  static socket_address any(std::uint16_t port) noexcept;
  /// `[::]:port`.
  static socket_address any_ipv6(std::uint16_t port) noexcept;
  /// 127.0.0.1:port.
  static socket_address loopback(std::uint16_t port) noexcept;
  /// Copies a native address (len bytes of it).
  static socket_address from_native(const sockaddr* sa, socklen_t len) noexcept;

  /// AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC when empty.
  [[nodiscard]] int family() const noexcept { return storage_.ss_family; }
  /// Whether it is an IPv4 address.
  [[nodiscard]] bool is_ipv4() const noexcept { return family() == AF_INET; }
  /// Whether it is an IPv6 address.
  [[nodiscard]] bool is_ipv6() const noexcept { return family() == AF_INET6; }
  /// Whether it is a Unix-domain address.
  [[nodiscard]] bool is_unix() const noexcept { return family() == AF_UNIX; }
  /// The port of an IP address (0 for Unix addresses).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The same address with another port (IP only).
  [[nodiscard]] socket_address with_port(std::uint16_t port) const noexcept;

  /// "1.2.3.4:80", "[::1]:80", "unix:/path", "unix:@name", or "<unspecified>".
  [[nodiscard]] std::string to_string() const;

  /// The address for system calls.
  /// @{
  [[nodiscard]] const sockaddr* native() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  sockaddr* native() noexcept { return reinterpret_cast<sockaddr*>(&storage_); }
  /// @}
  /// Its length for system calls.
  [[nodiscard]] socklen_t size() const noexcept { return size_; }
  /// For system calls that fill the address in: capacity in, length out.
  socklen_t* size_ptr() noexcept { return &size_; }
  /// The largest length (sizeof(sockaddr_storage)).
  static constexpr socklen_t capacity = sizeof(sockaddr_storage);

  /// Same family, same bytes.
  friend bool operator==(const socket_address& a, const socket_address& b) noexcept;

 private:
  sockaddr_storage storage_;
  socklen_t size_;
};

std::ostream& operator<<(std::ostream& os, const socket_address& a);

}  // namespace ringio
