// SPDX-License-Identifier: Apache-2.0
// echo_exchange — the client's side of an echo over a connected socket: sends `data`
// and half-closes while it reads until end of stream, both at once.
#pragma once

#include <array>
#include <span>
#include <string>

#include "ringio/ringio.hpp"

namespace ringio_test {

struct echo_outcome {
  bool sent = false;  ///< every byte sent (send_all reports a failure part-way as a short count) and shut down
  ringio::result<std::string> got;  ///< what came back before end of stream, or the error
};

inline ringio::task<echo_outcome> echo_exchange(ringio::stream_socket& s, const std::string& data) {
  auto sender = [](ringio::stream_socket& s, const std::string& d) -> ringio::task<bool> {
    auto w = co_await s.send_all(std::as_bytes(std::span(d)));
    auto sh = co_await s.shutdown();
    co_return w&&* w == d.size() && sh;
  };
  auto reader = [](ringio::stream_socket& s) -> ringio::task<ringio::result<std::string>> {
    std::string got;
    std::array<char, 4000> buf;
    for (;;) {
      auto n = co_await s.recv(std::as_writable_bytes(std::span(buf)));
      if (!n) co_return ringio::unexpected(n.error());
      if (*n == 0) co_return got;
      got.append(buf.data(), *n);
    }
  };
  auto [sent, got] = co_await ringio::when_all(sender(s, data), reader(s));
  co_return echo_outcome{sent, std::move(got)};
}

}  // namespace ringio_test
