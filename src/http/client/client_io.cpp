// SPDX-License-Identifier: Apache-2.0
// The client's two ways of moving bytes: a plain socket (one operation with a kernel
// deadline, gather sends) or a tls::stream (a task bounded by with_timeout).
#include <algorithm>
#include <array>
#include <chrono>

#include "client_connection.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/http/byte_stream.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http::detail {

static_assert(byte_stream<stream_socket>);
static_assert(byte_stream<tls::stream>);

namespace {

std::chrono::nanoseconds time_left(std::int64_t deadline_ns) noexcept {
  const std::int64_t left = deadline_ns - ringio::detail::monotonic_ns();
  return std::chrono::nanoseconds(left > 0 ? left : 1);
}

}  // namespace

task<result<std::size_t>> receive_some(client_connection& c, mutable_buffer b, std::int64_t deadline_ns) {
  if (c.secure) {
    auto n = co_await with_timeout(c.secure->recv(b), time_left(deadline_ns));
    co_return n;
  }
  auto op = c.socket.recv(b);
  op.set_deadline(deadline_ns);
  auto n = co_await op;
  co_return n;
}

task<result<std::size_t>> send_parts(client_connection& c, std::span<const const_buffer> parts,
                                     std::int64_t deadline_ns) {
  // One send at a time, so that an error after a partial send is not lost.
  std::array<const_buffer, 4> rest{};
  std::size_t count = 0;
  std::size_t total = 0;
  for (const const_buffer& part : parts) {
    if (part.size() == 0) continue;
    if (count == rest.size()) co_return unexpected(std::make_error_code(std::errc::invalid_argument));
    rest[count++] = part;
  }
  std::size_t first = 0;
  while (first < count) {
    result<std::size_t> sent = std::size_t{0};
    if (c.secure) {
      auto n = co_await with_timeout(c.secure->send(rest[first]), time_left(deadline_ns));
      sent = n;
    } else {
      auto op = c.socket.send(std::span<const const_buffer>(rest.data() + first, count - first));
      op.set_deadline(deadline_ns);
      auto n = co_await op;
      sent = n;
    }
    if (!sent) co_return unexpected(sent.error());
    if (*sent == 0) co_return unexpected(std::make_error_code(std::errc::broken_pipe));
    total += *sent;
    for (std::size_t n = *sent; n > 0 && first < count;) {
      const std::size_t take = std::min(n, rest[first].size());
      rest[first] = const_buffer(rest[first].data() + take, rest[first].size() - take);
      n -= take;
      if (rest[first].size() == 0) ++first;
    }
  }
  co_return total;
}

}  // namespace ringio::http::detail
