// SPDX-License-Identifier: Apache-2.0
// blocking_echo_hooked — an echo server written as plain blocking POSIX code (socket,
// bind, listen, accept4, read, write, close), run on ringio fibers made cooperative by
// the system-call hooks (ringio::fiber_hooks): one fiber accepts, one fiber per
// connection echoes. The only ringio calls start the loop and spawn the fibers; the
// per-connection code is what a thread-per-connection server would run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "common/cli.hpp"
#include "ringio/fiber.hpp"
#include "ringio/io_context.hpp"

namespace {

const std::string usage =
    "usage: blocking_echo_hooked --port P [options]\n"
    "Echoes every byte back on every TCP connection of 127.0.0.1:P, one thread: a fiber\n"
    "per connection running blocking read/write/close, made cooperative by the hooks.\n"
    "SIGTERM stops it at once.\n"
    "options:\n"
    "  --backend B          uring, epoll or uring-poll (default: RINGIO_BACKEND or uring)\n"
    "  --fiber-stack-kib N  stack of each connection's fiber (default 64, at least 32: the\n"
    "                       connection's 16 KiB buffer is on it)\n";

// Writes all of buf, as a blocking server does; false on an error.
bool write_all(int fd, const char* buf, std::size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

// The whole life of one connection, as in any thread-per-connection echo server.
void serve_connection(int fd) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!write_all(fd, buf, static_cast<std::size_t>(n))) break;
  }
  ::close(fd);
}

// socket, bind, listen on 127.0.0.1:port (0: any free port); -1 on an error (printed).
int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // inherited by accepted sockets
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4096) != 0) {
    std::fprintf(stderr, "blocking_echo_hooked: cannot listen on 127.0.0.1:%d: %s\n", port, std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage);
  const auto port = static_cast<int>(args.required_integer("port", 0, 65535));
  const auto backend = args.backend();
  const auto stack_kib = args.integer("fiber-stack-kib", 64, 32, 64 * 1024);
  args.done();
  apps::raise_fd_limit();
  const int listener = listen_on(port);
  if (listener < 0) return 1;
  try {
    ringio::io_context ctx(apps::context_options(backend));
    const ringio::fiber_options per_connection{.stack_size = static_cast<std::size_t>(stack_kib) * 1024};
    std::printf(
        "blocking_echo_hooked: listening on 127.0.0.1:%d, 1 thread (a hooked fiber per connection), backend %s\n",
        bound_port(listener), ctx.describe().c_str());
    std::fflush(stdout);
    ringio::spawn_fiber(ctx, [&ctx, listener, per_connection] {
      for (;;) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE) {  // out of descriptors: let connections close
            ::usleep(1000);
            continue;
          }
          std::fprintf(stderr, "blocking_echo_hooked: accept: %s\n", std::strerror(errno));
          ctx.stop();
          return;
        }
        ringio::spawn_fiber(
            ctx, [fd] { serve_connection(fd); }, per_connection);
      }
    });
    ctx.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blocking_echo_hooked: %s\n", e.what());
    return 1;
  }
  return 0;
}
