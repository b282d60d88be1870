// SPDX-License-Identifier: Apache-2.0
// sys — the socket syscalls ringio makes, routed to the thread's simulated network
// when a sim::world is current there and the descriptor is one of its sockets; to the
// kernel otherwise (one thread-local load and a branch).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include "sim/sim_network.hpp"

namespace ringio::detail {

/// The simulated network of the calling thread's sim::world, or null.
extern thread_local sim_network* current_sim_network;

namespace sys {

inline sim_network* sim_for(int fd) noexcept {
  sim_network* s = current_sim_network;
  if (s == nullptr) [[likely]]
    return nullptr;
  return s->is_virtual(fd) ? s : nullptr;
}

inline int socket(int domain, int type, int protocol) noexcept {
  if (sim_network* s = current_sim_network; s != nullptr && (domain == AF_INET || domain == AF_INET6) &&
                                            ((type & 0xf) == SOCK_STREAM || (type & 0xf) == SOCK_DGRAM))
    return s->socket(domain, type, protocol);
  return ::socket(domain, type, protocol);
}
inline int bind(int fd, const sockaddr* a, socklen_t n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->bind(fd, a, n);
  return ::bind(fd, a, n);
}
inline int listen(int fd, int backlog) noexcept {
  if (sim_network* s = sim_for(fd)) return s->listen(fd, backlog);
  return ::listen(fd, backlog);
}
inline int accept4(int fd, sockaddr* a, socklen_t* n, int flags) noexcept {
  if (sim_network* s = sim_for(fd)) return s->accept4(fd, a, n, flags);
  return ::accept4(fd, a, n, flags);
}
inline int connect(int fd, const sockaddr* a, socklen_t n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->connect(fd, a, n);
  return ::connect(fd, a, n);
}
inline ssize_t recv(int fd, void* b, std::size_t n, int flags) noexcept {
  if (sim_network* s = sim_for(fd)) return s->recv(fd, b, n, flags);
  return ::recv(fd, b, n, flags);
}
inline ssize_t send(int fd, const void* b, std::size_t n, int flags) noexcept {
  if (sim_network* s = sim_for(fd)) return s->send(fd, b, n, flags);
  return ::send(fd, b, n, flags);
}
inline ssize_t sendmsg(int fd, const msghdr* m, int flags) noexcept {
  if (sim_network* s = sim_for(fd)) return s->sendmsg(fd, m, flags);
  return ::sendmsg(fd, m, flags);
}
inline ssize_t recvmsg(int fd, msghdr* m, int flags) noexcept {
  if (sim_network* s = sim_for(fd)) return s->recvmsg(fd, m, flags);
  return ::recvmsg(fd, m, flags);
}
inline int shutdown(int fd, int how) noexcept {
  if (sim_network* s = sim_for(fd)) return s->shutdown(fd, how);
  return ::shutdown(fd, how);
}
inline int close(int fd) noexcept {
  if (sim_network* s = sim_for(fd)) return s->close(fd);
  return ::close(fd);
}
inline int getsockname(int fd, sockaddr* a, socklen_t* n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->getsockname(fd, a, n);
  return ::getsockname(fd, a, n);
}
inline int getpeername(int fd, sockaddr* a, socklen_t* n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->getpeername(fd, a, n);
  return ::getpeername(fd, a, n);
}
inline int getsockopt(int fd, int level, int name, void* v, socklen_t* n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->getsockopt(fd, level, name, v, n);
  return ::getsockopt(fd, level, name, v, n);
}
inline int setsockopt(int fd, int level, int name, const void* v, socklen_t n) noexcept {
  if (sim_network* s = sim_for(fd)) return s->setsockopt(fd, level, name, v, n);
  return ::setsockopt(fd, level, name, v, n);
}

}  // namespace sys
}  // namespace ringio::detail
