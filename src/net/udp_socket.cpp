// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/udp_socket.hpp"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>

#include "core/sys.hpp"
#include "net/socket_util.hpp"

namespace ringio {
namespace detail {
namespace {

void fill_send(send_to_op& op) noexcept {
  op.iov = {const_cast<std::byte*>(op.buf.data()), op.buf.size()};
  op.msg = {};
  op.msg.msg_name = const_cast<sockaddr*>(op.to.native());
  op.msg.msg_namelen = op.to.size();
  op.msg.msg_iov = &op.iov;
  op.msg.msg_iovlen = 1;
}

void fill_recv(recv_from_op& op) noexcept {
  op.iov = {op.buf.data(), op.buf.size()};
  op.msg = {};
  op.msg.msg_name = op.from.native();
  op.msg.msg_namelen = socket_address::capacity;
  op.msg.msg_iov = &op.iov;
  op.msg.msg_iovlen = 1;
}

void send_to_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<send_to_op&>(b);
  fill_send(op);
  io_uring_prep_sendmsg(&sqe, op.fd, &op.msg, MSG_NOSIGNAL);
}
int send_to_attempt(op_base& b) noexcept {
  auto& op = static_cast<send_to_op&>(b);
  fill_send(op);
  ssize_t r = sys::sendmsg(op.fd, &op.msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  return r >= 0 ? static_cast<int>(r) : -errno;
}
void recv_from_prepare(op_base& b, io_uring_sqe& sqe) noexcept {
  auto& op = static_cast<recv_from_op&>(b);
  fill_recv(op);
  io_uring_prep_recvmsg(&sqe, op.fd, &op.msg, 0);
}
int recv_from_attempt(op_base& b) noexcept {
  auto& op = static_cast<recv_from_op&>(b);
  fill_recv(op);
  ssize_t r = sys::recvmsg(op.fd, &op.msg, MSG_DONTWAIT);
  return r >= 0 ? static_cast<int>(r) : -errno;
}

}  // namespace

const op_vtable send_to_vtable = {.prepare = send_to_prepare,
                                  .attempt = send_to_attempt,
                                  .on_cqe = nullptr,
                                  .step = nullptr,
                                  .complete = resume_waiter};
const op_vtable recv_from_vtable = {.prepare = recv_from_prepare,
                                    .attempt = recv_from_attempt,
                                    .on_cqe = nullptr,
                                    .step = nullptr,
                                    .complete = resume_waiter};

result<datagram> recv_from_op::get_result() noexcept {
  if (res < 0) return unexpected(op_error(*this));
  *from.size_ptr() = msg.msg_namelen;
  return datagram{static_cast<std::size_t>(res), from, (msg.msg_flags & MSG_TRUNC) != 0};
}

}  // namespace detail

result<udp_socket> udp_socket::open(const socket_address& like) {
  int s = detail::sys::socket(like.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return unexpected(errno_code(-errno));
  return udp_socket(detail::fd_handle(s));
}

result<udp_socket> udp_socket::bind(const socket_address& at) {
  auto sock = open(at);
  if (!sock) return sock;
  if (detail::sys::bind(sock->fd_.get(), at.native(), at.size()) < 0) return unexpected(errno_code(-errno));
  return sock;
}

result<void> udp_socket::connect(const socket_address& peer) noexcept {
  if (detail::sys::connect(fd_.get(), peer.native(), peer.size()) < 0) return unexpected(errno_code(-errno));
  return {};
}

result<socket_address> udp_socket::local_address() const { return detail::address_of(fd_.get(), false); }

}  // namespace ringio
