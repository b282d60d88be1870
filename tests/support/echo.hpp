// SPDX-License-Identifier: Apache-2.0
// echo — the server side most integration tests need: write back every byte until EOF.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"

namespace ringio_test {

inline ringio::task<void> echo_until_eof(ringio::stream_socket s) {
  std::array<std::byte, 16384> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n || *n == 0) co_return;
    auto w = co_await s.send_all(std::span(buf).first(*n));
    if (!w) co_return;
  }
}

}  // namespace ringio_test
