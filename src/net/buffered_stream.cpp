// SPDX-License-Identifier: Apache-2.0
// buffered_stream and its two operations on every backend.
#include "ringio/net/buffered_stream.hpp"

#include <liburing.h>
#include <sys/socket.h>

#include <cassert>
#include <cerrno>

#include "core/sys.hpp"
#include "ringio/detail/stream_ops.hpp"
#include "ringio/io_context.hpp"

namespace ringio {

buffered_stream::buffered_stream(stream_socket& socket, std::size_t capacity)
    : socket_(&socket), buffer_(capacity, socket.deferred_error_slot()) {}

namespace detail {

bool read_message_op::settle() noexcept {
  if (out != outcome::pending) return true;
  const std::string_view have = buffer->unread();
  std::size_t length = 0;
  if (counted) {
    if (limit > buffer->capacity()) {
      out = outcome::too_long;
      return true;
    }
    if (have.size() < limit) return need_more();
    length = limit;
  } else {
    if (delim.empty()) {
      out = outcome::invalid;
      return true;
    }
    const std::string_view window = have.substr(0, limit);
    // A delimiter may straddle the end of what was searched before.
    const std::size_t from = scanned >= delim.size() ? scanned - delim.size() + 1 : 0;
    const std::size_t at = window.find(delim, from);
    if (at == std::string_view::npos) {
      scanned = window.size();
      if (have.size() >= limit) {
        out = outcome::too_long;
        return true;
      }
      return need_more();
    }
    length = at + delim.size();
  }
  message = have.substr(0, length);
  buffer->consume(length);
  if (strip_line_end) {
    message.remove_suffix(1);  // the "\n"
    if (!message.empty() && message.back() == '\r') message.remove_suffix(1);
  }
  out = outcome::found;
  return true;
}

// The buffered bytes are not enough: the outcome is decided only if no more can come.
bool read_message_op::need_more() noexcept {
  if (buffer->ended) {
    out = outcome::ended;
    return true;
  }
  if (*buffer->deferred_error != 0) {
    res = buffer->take_error();  // reported as the error of this read
    return true;
  }
  return false;
}

result<std::string_view> read_message_op::get_result() const noexcept {
  switch (out) {
    case outcome::found:
      return message;
    case outcome::too_long:
      return unexpected(errc::message_too_long);
    case outcome::ended:
      return unexpected(errc::end_of_stream);
    case outcome::invalid:
      return unexpected(std::errc::invalid_argument);
    case outcome::pending:
      break;
  }
  assert(res < 0);
  return unexpected(op_error(*this));
}

result<std::size_t> read_into_op::get_result() const noexcept {
  if (done != 0 || (!exact && res >= 0) || dst.size() == 0) return done;
  if (res < 0) return unexpected(op_error(*this));
  return unexpected(errc::end_of_stream);
}

namespace {

// ---- read_message: receive into the buffer's free space ----
void read_message_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<read_message_op&>(b);
  mutable_buffer space = op.buffer->space().first(max_io_size);
  io_uring_prep_recv(&sqe, op.fd, space.data(), space.size(), 0);
}
int read_message_attempt(op_base& b) noexcept {
  auto& op = static_cast<read_message_op&>(b);
  mutable_buffer space = op.buffer->space().first(max_io_size);
  long r = ::ringio::detail::sys::recv(op.fd, space.data(), space.size(), MSG_DONTWAIT);
  op.drained = r > 0 && static_cast<std::size_t>(r) < space.size();
  return r >= 0 ? static_cast<int>(r) : -errno;
}
// Keeps receiving until the message is complete, too long, or the stream ends. An
// unfinished message always leaves free space: it is shorter than limit <= capacity.
bool read_message_step(op_base& b) noexcept {
  auto& op = static_cast<read_message_op&>(b);
  for (;;) {
    if (op.res < 0) return false;  // what arrived before stays buffered
    if (op.res == 0) {
      op.buffer->ended = true;
      op.settle();
      return false;
    }
    op.buffer->commit(static_cast<std::size_t>(op.res));
    if (op.settle()) return false;
    if (!op.ctx->start(op)) return true;
  }
}

// ---- read_into: receive straight into the caller's buffer ----
mutable_buffer read_into_rest(const read_into_op& op) noexcept { return op.dst.skip(op.done).first(max_io_size); }
void read_into_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<read_into_op&>(b);
  mutable_buffer rest = read_into_rest(op);
  io_uring_prep_recv(&sqe, op.fd, rest.data(), rest.size(), 0);
}
int read_into_attempt(op_base& b) noexcept {
  auto& op = static_cast<read_into_op&>(b);
  mutable_buffer rest = read_into_rest(op);
  long r = ::ringio::detail::sys::recv(op.fd, rest.data(), rest.size(), MSG_DONTWAIT);
  op.drained = r > 0 && static_cast<std::size_t>(r) < rest.size();
  return r >= 0 ? static_cast<int>(r) : -errno;
}
bool read_into_step(op_base& b) noexcept {
  auto& op = static_cast<read_into_op&>(b);
  for (;;) {
    if (op.res < 0) {
      // A short count hides the error: keep it for the next read, unless it is a stop.
      if (op.done != 0 && op.res != -ECANCELED && !op.cancel_requested) *op.buffer->deferred_error = op.res;
      return false;
    }
    if (op.res == 0) {
      op.buffer->ended = true;
      return false;
    }
    op.done += static_cast<std::size_t>(op.res);
    if (!op.exact || op.done >= op.dst.size()) return false;
    if (!op.ctx->start(op)) return true;
  }
}

}  // namespace

const op_vtable read_message_vtable = {.prepare = read_message_prepare,
                                       .attempt = read_message_attempt,
                                       .on_cqe = nullptr,
                                       .step = read_message_step,
                                       .complete = resume_waiter};
const op_vtable read_into_vtable = {.prepare = read_into_prepare,
                                    .attempt = read_into_attempt,
                                    .on_cqe = nullptr,
                                    .step = read_into_step,
                                    .complete = resume_waiter};

}  // namespace detail
}  // namespace ringio
