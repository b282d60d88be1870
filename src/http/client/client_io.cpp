// The client's two ways of moving bytes: a plain socket (one operation with a kernel
// deadline, gather sends) or a tls::stream (a task bounded by with_timeout).
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

task<result<std::size_t>> send_parts(client_connection& c, std::span<const const_buffer> parts, std::int64_t deadline_ns) {
  if (!c.secure) {
    auto op = c.socket.send_all(parts);
    op.set_deadline(deadline_ns);
    auto sent = co_await op;
    co_return sent;
  }
  std::size_t total = 0;
  for (const const_buffer& part : parts) {
    if (part.size() == 0) continue;
    auto sent = co_await with_timeout(c.secure->send_all(part), time_left(deadline_ns));
    if (!sent) {
      if (total > 0) co_return total;
      co_return unexpected(sent.error());
    }
    total += *sent;
    if (*sent != part.size()) co_return total;
  }
  co_return total;
}

}  // namespace ringio::http::detail
