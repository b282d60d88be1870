// SPDX-License-Identifier: Apache-2.0
#include "ringio/net/listener_handover.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace ringio {
namespace {

constexpr std::array<char, 8> magic = {'R', 'I', 'N', 'G', 'I', 'O', 'L', 'S'};
constexpr std::uint32_t version = 1;

struct header {
  std::array<char, 8> magic;
  std::uint32_t version;
  std::uint32_t count;
};
static_assert(sizeof(header) == 16);

using clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events`, up to `deadline`: 0, or an error.
std::error_code wait_ready(int fd, short events, clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return std::make_error_code(std::errc::timed_out);
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r > 0) return {};
    if (r < 0 && errno != EINTR) return errno_code(-errno);
  }
}

// Control space for the most descriptors a message may carry.
union control_buffer {
  char bytes[CMSG_SPACE(sizeof(int) * max_handover_listeners)];
  cmsghdr align;
};

}  // namespace

result<void> send_listeners(int unix_socket, std::span<const int> listeners, std::chrono::milliseconds timeout) {
  if (listeners.empty() || listeners.size() > max_handover_listeners)
    return unexpected(std::make_error_code(std::errc::invalid_argument));
  for (int fd : listeners) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || listening == 0)
      return unexpected(errc::not_a_listener);
  }
  header h{magic, version, static_cast<std::uint32_t>(listeners.size())};
  iovec iov{&h, sizeof h};
  control_buffer control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * listeners.size());
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * listeners.size());
  std::memcpy(CMSG_DATA(c), listeners.data(), sizeof(int) * listeners.size());
  const auto deadline = clock::now() + timeout;
  for (;;) {
    if (auto ec = wait_ready(unix_socket, POLLOUT, deadline)) return unexpected(ec);
    ssize_t n = ::sendmsg(unix_socket, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(sizeof h)) return {};
    if (n >= 0) return unexpected(std::make_error_code(std::errc::io_error));  // (a 16-byte write is never split)
    if (errno != EAGAIN && errno != EINTR) return unexpected(errno_code(-errno));
  }
}

result<std::vector<stream_listener>> receive_listeners(int unix_socket, std::chrono::milliseconds timeout) {
  header h{};
  iovec iov{&h, sizeof h};
  control_buffer control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
  const auto deadline = clock::now() + timeout;
  ssize_t n = -1;
  for (;;) {
    if (auto ec = wait_ready(unix_socket, POLLIN, deadline)) return unexpected(ec);
    n = ::recvmsg(unix_socket, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n >= 0) break;
    if (errno != EAGAIN && errno != EINTR) return unexpected(errno_code(-errno));
  }
  // Every descriptor that came is ours to close until adopted.
  std::vector<int> fds;
  bool foreign_control = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
      foreign_control = true;
      continue;
    }
    const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < k; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  auto fail = [&fds](std::error_code ec) {
    for (int fd : fds) ::close(fd);
    return unexpected(ec);
  };
  if (n == 0 && fds.empty()) return fail(errc::end_of_stream);
  if (n != static_cast<ssize_t>(sizeof h) || h.magic != magic || h.version != version || h.count == 0 ||
      h.count > max_handover_listeners || (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0 || foreign_control ||
      fds.size() != h.count)
    return fail(errc::invalid_handover);
  std::vector<stream_listener> out;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    auto l = stream_listener::adopt(fds[i]);
    if (!l) {
      fds.erase(fds.begin(), fds.begin() + static_cast<std::ptrdiff_t>(i));  // the adopted close with `out`
      // Whatever else it is (a pipe, a UDP socket, one not listening): not a listener.
      return fail(l.error() == std::errc::bad_file_descriptor ? l.error() : make_error_code(errc::not_a_listener));
    }
    out.push_back(std::move(*l));
  }
  return out;
}

}  // namespace ringio
