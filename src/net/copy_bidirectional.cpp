// SPDX-License-Identifier: Apache-2.0
// copy_bidirectional: two pumps and an optional idle watcher in one scope, sharing one
// record of counts and the first error.
#include "ringio/net/copy_bidirectional.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <span>

#include "core/sys.hpp"
#include "ringio/error.hpp"
#include "ringio/scope.hpp"
#include "ringio/time/deadline.hpp"

namespace ringio {
namespace {

struct copy_state {
  stream_socket& a;
  stream_socket& b;
  scope& children;
  std::chrono::nanoseconds idle_timeout;  // zero: none
  deadline idle;
  copy_result out;
  int pumps_running = 2;

  // The first failure ends everything. A stop (operation_canceled while nothing else
  // failed) leaves the sockets alone; the idle timeout shuts both down (each peer
  // reads end of stream); an error aborts both (abort_stream), so that neither peer
  // can take the broken stream for a complete one.
  void fail(std::error_code ec) noexcept {
    if (out.error) return;
    out.error = ec;
    if (ec == std::errc::timed_out) {
      ::ringio::detail::sys::shutdown(a.native_handle(), SHUT_RDWR);
      ::ringio::detail::sys::shutdown(b.native_handle(), SHUT_RDWR);
    } else if (ec != std::errc::operation_canceled) {
      abort_stream(a);
      abort_stream(b);
    }
    children.request_stop();
  }
  // TCP: SO_LINGER 0, so the close that follows sends a reset (the peer reads
  // connection_reset), and no end of stream before it. Other stream sockets can only
  // say end of stream: shut down.
  static void abort_stream(stream_socket& s) noexcept {
    const int fd = s.native_handle();
    int domain = 0;
    socklen_t len = sizeof domain;
    if (::ringio::detail::sys::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
        (domain == AF_INET || domain == AF_INET6)) {
      linger l{1, 0};
      ::ringio::detail::sys::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    } else {
      ::ringio::detail::sys::shutdown(fd, SHUT_RDWR);
    }
  }
  void moved() noexcept {
    if (idle_timeout.count() > 0) idle.extend(idle_timeout);
  }
  void pump_done() noexcept {
    if (--pumps_running == 0) idle.cancel();  // ends the watcher's wait
  }
};

task<void> pump(copy_state& st, stream_socket& from, stream_socket& to, std::span<std::byte> buf,
                std::uint64_t& count) {
  for (;;) {
    auto n = co_await from.recv(buf);
    if (!n) {
      st.fail(n.error());
      break;
    }
    if (*n == 0) {  // end of stream: pass it on, the other direction goes on
      // shutdown(2) never blocks; done directly it cannot be lost to a stop.
      if (::ringio::detail::sys::shutdown(to.native_handle(), SHUT_WR) != 0) st.fail(errno_code(-errno));
      break;
    }
    st.moved();
    // A short send_all stopped early (a stop, an error after some bytes): send the rest
    // so that the cause comes back as the error of the next attempt.
    std::span<const std::byte> rest = buf.first(*n);
    std::error_code send_error;
    while (!rest.empty()) {
      auto sent = co_await to.send_all(rest);
      if (!sent) {
        send_error = sent.error();
        break;
      }
      count += *sent;
      rest = rest.subspan(*sent);
    }
    if (send_error) {
      st.fail(send_error);
      break;
    }
    st.moved();
  }
  st.pump_done();
}

task<void> watch_idle(copy_state& st) {
  auto passed = co_await st.idle.wait();  // cancelled when both pumps are done
  if (passed && st.pumps_running > 0) st.fail(std::make_error_code(std::errc::timed_out));
}

}  // namespace

task<result<copy_result>> copy_bidirectional(stream_socket& a, stream_socket& b, copy_options opts) {
  if (!a.is_open() || !b.is_open()) co_return unexpected(std::errc::bad_file_descriptor);
  if (opts.buffer_size == 0 || a.native_handle() == b.native_handle())
    co_return unexpected(std::errc::invalid_argument);
  const std::size_t size = opts.buffer_size;
  auto buffers = std::make_unique_for_overwrite<std::byte[]>(2 * size);
  scope children;  // obeys this task's stop token
  const std::chrono::nanoseconds timeout =
      opts.idle_timeout && opts.idle_timeout->count() > 0 ? *opts.idle_timeout : std::chrono::nanoseconds::zero();
  copy_state st{a, b, children, timeout, {}, {}, 2};
  if (timeout.count() > 0) {
    st.idle.extend(timeout);
    children.spawn(watch_idle(st));  // first: a pump may finish before spawn returns
  }
  children.spawn(pump(st, a, b, std::span<std::byte>(buffers.get(), size), st.out.a_to_b));
  children.spawn(pump(st, b, a, std::span<std::byte>(buffers.get() + size, size), st.out.b_to_a));
  co_await children.join();
  co_return st.out;
}

}  // namespace ringio
