// SPDX-License-Identifier: Apache-2.0
// loopback — helpers for tests that talk over 127.0.0.1.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"

namespace ringio_test {

/// A listener on 127.0.0.1 with a port chosen by the kernel.
inline ringio::stream_listener listen_loopback(ringio::listen_options opts = {}) {
  auto l = ringio::stream_listener::bind(ringio::socket_address::loopback(0), opts);
  EXPECT_TRUE(l) << l.error().message();
  return std::move(*l);
}

inline ringio::socket_address address_of(const ringio::stream_listener& l) {
  auto a = l.local_address();
  EXPECT_TRUE(a) << a.error().message();
  return *a;
}

/// Two connected Unix stream sockets (a socketpair), owned by ringio sockets.
struct socket_pair {
  ringio::stream_socket a, b;
  socket_pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a = ringio::stream_socket(ringio::detail::fd_handle(sv[0]));
    b = ringio::stream_socket(ringio::detail::fd_handle(sv[1]));
  }
};

/// Deterministic pseudo-random bytes.
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(rng() & 0xff);
  return v;
}

}  // namespace ringio_test
