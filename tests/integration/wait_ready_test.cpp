// SPDX-License-Identifier: Apache-2.0
// Foreign descriptors: readiness waits on descriptors ringio does not own (pipes,
// sockets), with stops and deadlines; adopting sockets, listeners and files opened
// elsewhere, with the checks that refuse the wrong kind of descriptor.
#include "ringio/net/wait_ready.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class WaitReady : public backend_test {};
class Adopt : public backend_test {};

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int p[2];
    if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0) {
      r = p[0];
      w = p[1];
    }
  }
  ~pipe_pair() {
    for (int fd : {r, w}) {
      if (fd >= 0) {
        forget_descriptor(fd);
        ::close(fd);
      }
    }
  }
};

bool still_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

TEST_P(WaitReady, ReadableWhenAnotherTaskWritesAndWritableWhenThereIsRoom) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  run([](int r, int w) -> task<void> {
    scope s;
    s.spawn([](int w) -> task<void> {
      (void)co_await sleep_for(5ms);
      EXPECT_EQ(::write(w, "x", 1), 1);
    }(w));
    auto ready = co_await wait_readable(r);
    EXPECT_TRUE(ready.has_value());
    char c = 0;
    EXPECT_EQ(::read(r, &c, 1), 1);
    EXPECT_EQ(c, 'x');
    co_await s.join();
    // Already readable: completes at once, however the backend learned of earlier edges.
    EXPECT_EQ(::write(w, "y", 1), 1);
    EXPECT_TRUE((co_await wait_readable(r)).has_value());
    EXPECT_TRUE((co_await wait_readable(r)).has_value());  // not consumed: still readable
    EXPECT_EQ(::read(r, &c, 1), 1);
    EXPECT_TRUE((co_await wait_writable(w)).has_value());
  }(p.r, p.w));
}

TEST_P(WaitReady, DeadlinesAndStopsCancelTheWait) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  run([](int r, int w) -> task<void> {
    auto timed = co_await with_timeout(wait_readable(r), 20ms);
    EXPECT_EQ(timed.error(), std::errc::timed_out);
    // A full pipe is not writable until the reader drains it.
    std::array<char, 4096> block{};
    while (::write(w, block.data(), block.size()) > 0) {
    }
    std::stop_source stop;
    scope s;
    s.spawn([](std::stop_source& stop) -> task<void> {
      (void)co_await sleep_for(5ms);
      stop.request_stop();
    }(stop));
    auto stopped = co_await wait_writable(w).with_stop(stop.get_token());
    EXPECT_EQ(stopped.error(), std::errc::operation_canceled);
    co_await s.join();
    while (::read(r, block.data(), block.size()) > 0) {
    }
    EXPECT_TRUE((co_await with_timeout(wait_writable(w), 10s)).has_value());
  }(p.r, p.w));
}

TEST_P(WaitReady, HangUpCountsAsReadable) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  forget_descriptor(p.w);
  ::close(p.w);
  p.w = -1;
  run([](int r) -> task<void> {
    EXPECT_TRUE((co_await with_timeout(wait_readable(r), 10s)).has_value());
    char c;
    EXPECT_EQ(::read(r, &c, 1), 0);  // the end of the stream
  }(p.r));
}

TEST_P(Adopt, ConnectedSocketsOfBothFamiliesWorkAsRingioSockets) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  auto s = stream_socket::adopt(sv[0]);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->native_handle(), sv[0]);
  EXPECT_EQ(::fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0);  // ringio manages the mode
  run([](stream_socket& s, int peer) -> task<void> {
    EXPECT_EQ(::write(peer, "ping", 4), 4);
    std::array<char, 4> buf{};
    auto n = co_await s.recv_exact(mutable_buffer(buf.data(), buf.size()));
    EXPECT_TRUE(n && *n == 4);
    EXPECT_EQ(std::string(buf.data(), 4), "ping");
    auto sent = co_await s.send_all(const_buffer("pong", 4));
    EXPECT_TRUE(sent && *sent == 4);
  }(*s, sv[1]));
  char back[4];
  EXPECT_EQ(::read(sv[1], back, 4), 4);
  ::close(sv[1]);
}

TEST_P(Adopt, AListenerAndATcpClientOpenedElsewhere) {
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 16), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  auto listener = stream_listener::adopt(lfd);
  ASSERT_TRUE(listener) << listener.error().message();
  const int cfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);  // the backlog takes it
  auto client = stream_socket::adopt(cfd);
  ASSERT_TRUE(client) << client.error().message();
  run([](stream_listener& l, stream_socket& c) -> task<void> {
    auto server = co_await l.accept();
    EXPECT_TRUE(server.has_value());
    if (!server) co_return;
    auto sent = co_await c.send_all(const_buffer("hello", 5));
    EXPECT_TRUE(sent && *sent == 5);
    std::array<char, 5> buf{};
    auto n = co_await server->recv_exact(mutable_buffer(buf.data(), buf.size()));
    EXPECT_TRUE(n && *n == 5);
    EXPECT_EQ(std::string(buf.data(), 5), "hello");
  }(*listener, *client));
}

TEST_P(Adopt, TheWrongKindOfDescriptorIsRefusedAndStaysTheCallers) {
  pipe_pair p;
  auto not_socket = stream_socket::adopt(p.r);
  EXPECT_EQ(not_socket.error(), std::errc::not_a_socket);
  EXPECT_EQ(stream_listener::adopt(p.r).error(), std::errc::not_a_socket);
  EXPECT_TRUE(still_open(p.r));

  const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(stream_socket::adopt(udp).error(), std::errc::wrong_protocol_type);
  EXPECT_TRUE(still_open(udp));
  ::close(udp);

  const int unconnected = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(stream_socket::adopt(unconnected).error(), std::errc::not_connected);
  EXPECT_EQ(stream_listener::adopt(unconnected).error(), std::errc::invalid_argument);  // not listening
  EXPECT_TRUE(still_open(unconnected));
  ASSERT_EQ(::listen(unconnected, 4), 0);
  EXPECT_EQ(stream_socket::adopt(unconnected).error(), std::errc::invalid_argument);  // listening
  ::close(unconnected);

  EXPECT_EQ(stream_socket::adopt(-1).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(file::adopt(-1).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(file::adopt(p.r).error(), std::errc::invalid_argument);
  const int dir = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  EXPECT_EQ(file::adopt(dir).error(), std::errc::is_a_directory);
  EXPECT_TRUE(still_open(dir));
  ::close(dir);
}

TEST_P(Adopt, AFileOpenedElsewhereIsReadAtOffsets) {
  char path[] = "/tmp/ringio_adopt_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  auto f = file::adopt(fd);
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_EQ(f->native_handle(), fd);
  run([](file& f) -> task<void> {
    std::array<char, 4> buf{};
    auto n = co_await f.read_at(mutable_buffer(buf.data(), buf.size()), 3);
    EXPECT_TRUE(n && *n == 4);
    EXPECT_EQ(std::string(buf.data(), 4), "3456");
  }(*f));
}

RINGIO_ALL_BACKENDS_AND_SIM(WaitReady);
RINGIO_ALL_BACKENDS(Adopt);

}  // namespace
