// SPDX-License-Identifier: Apache-2.0
// ringio/detail/stream_ops.hpp — operations on a connected stream socket (and any fd
// that behaves like one): recv, send, send_all, recv_exact, shutdown, close.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <utility>

#include "ringio/buffer.hpp"
#include "ringio/detail/io_operation.hpp"

namespace ringio::detail {

/// Errors that end the connection and that the kernel reports only once: a short count
/// of recv_exact that hid one keeps it for the socket's next receive.
inline bool lost_connection(int res) noexcept {
  return res == -ECONNRESET || res == -EPIPE || res == -ECONNABORTED || res == -ENETRESET;
}

extern const op_vtable recv_vtable;
extern const op_vtable recv_exact_vtable;
extern const op_vtable send_vtable;
extern const op_vtable send_all_vtable;
extern const op_vtable shutdown_vtable;
extern const op_vtable close_vtable;

/// The kernel reports a byte count in an int: larger requests are capped.
constexpr std::size_t max_io_size = 0x7ffff000;

/// One recv(2): up to buf.size() bytes; 0 means the peer closed its side.
class recv_op : public io_operation<recv_op> {
 public:
  /// `stream`: a byte stream (a short read means the socket is empty), not datagrams.
  recv_op(int fd_, mutable_buffer b, int flags_, bool stream_ = true) noexcept
      : io_operation(&recv_vtable), buf(b.first(max_io_size)), flags(flags_), stream(stream_) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }
  result<std::size_t> get_result() const noexcept {
    if (res == 0 && deferred_error != nullptr && *deferred_error != 0)
      return unexpected(errno_code(std::exchange(*deferred_error, 0)));
    return size_result(*this);
  }

  /// Expect no data yet (the peer is between messages): on io_uring the receive
  /// waits for readiness before it tries (IORING_RECVSEND_POLL_FIRST). Then a loop
  /// with many connections serves their arrivals in order; a receive that tries at
  /// once would let a connection whose data came during submission overtake those
  /// queued before it (measured: HTTP keep-alive, 1,000 connections, p99 18-30 ms
  /// -> 14-16 ms; docs/performance.md). No effect on the readiness backends.
  [[nodiscard]] recv_op poll_first() && noexcept {
    wait_first = true;
    return std::move(*this);
  }

  mutable_buffer buf;
  /// The socket's slot for an error hidden by a short count (see stream_socket).
  int* deferred_error = nullptr;
  int flags;
  bool stream;
  bool wait_first = false;
};

/// recv(2) until buf is full or the peer closes. Like read(2), it never loses a count:
/// if it stops early (end of stream, a stop or cancel(), a timeout, an error) after
/// some bytes arrived, the result is the short count of bytes received (they are at
/// the start of buf); the error (operation_canceled, timed_out, ...) is reported only
/// when nothing was received.
class recv_exact_op : public io_operation<recv_exact_op> {
 public:
  recv_exact_op(int fd_, mutable_buffer b) noexcept : io_operation(&recv_exact_vtable), buf(b) {
    fd = fd_;
    want = interest::readable;
    counts_bytes = true;
  }
  result<std::size_t> get_result() const noexcept {
    if (res < 0 && done == 0) return unexpected(op_error(*this));
    if (deferred_error != nullptr) {
      if (res == 0 && done == 0 && *deferred_error != 0)
        return unexpected(errno_code(std::exchange(*deferred_error, 0)));
      if (res < 0 && lost_connection(res)) *deferred_error = res;  // for the next receive
    }
    return done;
  }

  mutable_buffer buf;
  std::size_t done = 0;
  /// The socket's slot for an error hidden by a short count (see stream_socket).
  int* deferred_error = nullptr;
};

/// One send(2) (MSG_NOSIGNAL): may send fewer bytes than given.
class send_op : public io_operation<send_op> {
 public:
  send_op(int fd_, const_buffer b, int flags_) noexcept
      : io_operation(&send_vtable), buf(b.first(max_io_size)), flags(flags_ | MSG_NOSIGNAL) {
    fd = fd_;
    want = interest::writable;
    counts_bytes = true;
  }
  result<std::size_t> get_result() const noexcept { return size_result(*this); }

  const_buffer buf;
  int flags;
};

/// send(2) until every byte is sent. Like write(2), it never loses a count: if it stops
/// early (a stop or cancel(), a timeout, an error such as broken_pipe) after some bytes
/// were sent, the result is the short count of bytes handed to the kernel (the first
/// ones of buf); the error is reported only when nothing was sent.
class send_all_op : public io_operation<send_all_op> {
 public:
  send_all_op(int fd_, const_buffer b) noexcept : io_operation(&send_all_vtable), buf(b) {
    fd = fd_;
    want = interest::writable;
    counts_bytes = true;
  }
  result<std::size_t> get_result() const noexcept {
    if (res < 0 && done == 0) return unexpected(op_error(*this));
    return done;
  }

  const_buffer buf;
  std::size_t done = 0;
};

/// shutdown(2).
class shutdown_op : public io_operation<shutdown_op> {
 public:
  shutdown_op(int fd_, int how_) noexcept : io_operation(&shutdown_vtable), how(how_) { fd = fd_; }
  result<void> get_result() const noexcept { return void_result(*this); }
  int how;
};

/// close(2) through the ring. The descriptor is released whatever the outcome: a close
/// obeys no stop token (the descriptor was already taken from its owner), and one that
/// the loop refuses (it is shutting down) is done with close(2) right away. A direct
/// descriptor (`direct_`) is closed with the close operation's file_index; one refused
/// that way stays in the table, which goes away with the ring.
class close_op : public io_operation<close_op> {
 public:
  explicit close_op(int fd_, bool direct_ = false) noexcept : io_operation(&close_vtable), direct(direct_) { fd = fd_; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return start_operation(*this, h, nullptr);
  }
  result<void> get_result() noexcept {
    if (res == -ECANCELED && fd >= 0) {  // refused at the start: close(2) cannot say ECANCELED
      res = direct ? 0 : close_now();
      fd = -1;
    }
    return void_result(*this);
  }

  bool direct;

 private:
  int close_now() noexcept;
};

}  // namespace ringio::detail
