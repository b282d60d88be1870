// SPDX-License-Identifier: Apache-2.0
// The resolver: getaddrinfo(3) runs on the loop's blocking pool (spawn_blocking), and
// its answer comes back to the loop through the loop's inbox.
#include "ringio/http/resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <utility>

#include "ringio/blocking/spawn_blocking.hpp"
#include "ringio/http/client_error.hpp"
#include "ringio/io_context.hpp"

namespace ringio::http {
namespace {

struct lookup_answer {
  int gai_error = 0;
  std::vector<socket_address> addresses;
};

// Runs on a pool thread: may block for as long as the DNS server takes.
lookup_answer lookup(const std::string& host, std::uint16_t port) {
  lookup_answer out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  out.gai_error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (out.gai_error != 0) return out;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next)
    if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
      out.addresses.push_back(socket_address::from_native(a->ai_addr, a->ai_addrlen));
  ::freeaddrinfo(list);
  return out;
}

// An IPv4 or IPv6 literal, converted on the spot.
bool numeric_address(const std::string& host, std::uint16_t port, socket_address& out) {
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    out = socket_address::from_native(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
    return true;
  }
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    out = socket_address::from_native(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
    return true;
  }
  return false;
}

}  // namespace

task<result<std::vector<socket_address>>> resolve(std::string host, std::uint16_t port) {
  socket_address literal;
  if (numeric_address(host, port, literal)) co_return std::vector<socket_address>{literal};
  if (io_context::current() == nullptr) co_return unexpected(make_error_code(ringio::errc::no_current_context));
  auto work = [host = std::move(host), port] { return lookup(host, port); };
  auto answer = co_await spawn_blocking(std::move(work));
  if (!answer) co_return unexpected(answer.error());
  if (answer->gai_error != 0 || answer->addresses.empty())
    co_return unexpected(make_error_code(client_errc::resolve_failed));
  co_return std::move(answer->addresses);
}

}  // namespace ringio::http
