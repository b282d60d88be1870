// SPDX-License-Identifier: Apache-2.0
// Listeners from elsewhere: stream_listener::adopt, the SCM_RIGHTS handover between two
// ends of a Unix socket, and socket activation's environment (LISTEN_PID, LISTEN_FDS,
// LISTEN_FDNAMES) with every malformed form rejected, and the blocking serve on listeners
// bound elsewhere.
#include "ringio/net/listener_handover.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ringio/error.hpp"
#include "ringio/net/inherited_listeners.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/serve.hpp"
#include "ringio/task.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

struct unix_pair {
  int a = -1, b = -1;
  unix_pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a = sv[0];
    b = sv[1];
  }
  ~unix_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

stream_listener loopback_listener() {
  auto l = stream_listener::bind(socket_address::loopback(0));
  EXPECT_TRUE(l) << l.error().message();
  return std::move(*l);
}

// Connects to `l`'s address and accepts on `on`: the two are one socket when it works.
bool reaches(const stream_listener& l, const stream_listener& on) {
  auto at = l.local_address();
  if (!at) return false;
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = ::connect(c, at->native(), at->size()) == 0;
  int accepted = ok ? ::accept4(on.native_handle(), nullptr, nullptr, SOCK_CLOEXEC) : -1;
  ::close(c);
  if (accepted >= 0) ::close(accepted);
  return accepted >= 0;
}

bool cloexec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }
bool open_fd(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

// Sends the handover header with chosen fields and descriptors.
void send_raw(int sock, const char* magic8, std::uint32_t version, std::uint32_t count, const std::vector<int>& fds,
              std::size_t bytes = 16) {
  std::array<char, 16> h{};
  std::memcpy(h.data(), magic8, 8);
  std::memcpy(h.data() + 8, &version, 4);
  std::memcpy(h.data() + 12, &count, 4);
  iovec iov{h.data(), bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ASSERT_EQ(::sendmsg(sock, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(bytes));
}

TEST(StreamListenerAdopt, TakesAListeningSocketAndSetsCloexec) {
  auto l = loopback_listener();
  int copy = ::fcntl(l.native_handle(), F_DUPFD, 0);  // no FD_CLOEXEC
  ASSERT_FALSE(cloexec(copy));
  auto adopted = stream_listener::adopt(copy);
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_TRUE(cloexec(copy));
  EXPECT_EQ(adopted->native_handle(), copy);
  EXPECT_EQ(adopted->local_address()->port(), l.local_address()->port());
  EXPECT_TRUE(reaches(l, *adopted));
}

TEST(StreamListenerAdopt, RefusesWhatIsNotAListeningStreamSocket) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  auto r = stream_listener::adopt(p[0]);
  EXPECT_EQ(r.error(), std::errc::not_a_socket);
  EXPECT_TRUE(open_fd(p[0]));  // still the caller's
  ::close(p[0]);
  ::close(p[1]);

  int unbound = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(stream_listener::adopt(unbound).error(), std::errc::invalid_argument);  // not listening
  ::close(unbound);
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(stream_listener::adopt(udp).error(), std::errc::wrong_protocol_type);
  ::close(udp);

  int closed = ::dup(0);
  ::close(closed);
  EXPECT_EQ(stream_listener::adopt(closed).error(), std::errc::bad_file_descriptor);
  EXPECT_EQ(stream_listener::adopt(-1).error(), std::errc::bad_file_descriptor);
}

TEST(ListenerHandover, ListenersCrossAUnixSocketAndStayTheSameSockets) {
  auto l1 = loopback_listener();
  auto l2 = loopback_listener();
  unix_pair u;
  std::vector<int> fds{l1.native_handle(), l2.native_handle()};
  ASSERT_TRUE(send_listeners(u.a, fds));
  auto got = receive_listeners(u.b, 5s);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 2U);
  EXPECT_TRUE(cloexec((*got)[0].native_handle()));
  EXPECT_EQ((*got)[1].local_address()->port(), l2.local_address()->port());
  // A connection to the sender's listener waits in the backlog both ends share.
  EXPECT_TRUE(reaches(l1, (*got)[0]));
  EXPECT_TRUE(reaches(l2, (*got)[1]));
  // The sender closing its own descriptor leaves the socket listening.
  auto at = l1.local_address();
  l1.close();
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(c, at->native(), at->size()), 0);
  ::close(c);
}

TEST(ListenerHandover, SendRefusesNothingTooManyAndNonListeners) {
  unix_pair u;
  EXPECT_EQ(send_listeners(u.a, {}).error(), std::errc::invalid_argument);
  std::vector<int> many(max_handover_listeners + 1, 0);
  EXPECT_EQ(send_listeners(u.a, many).error(), std::errc::invalid_argument);
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::vector<int> one{udp};
  EXPECT_EQ(send_listeners(u.a, one).error(), errc::not_a_listener);
  ::close(udp);
  ::close(u.b);
  u.b = -1;
  auto l = loopback_listener();
  std::vector<int> gone{l.native_handle()};
  EXPECT_EQ(send_listeners(u.a, gone).error(), std::errc::broken_pipe);
}

TEST(ListenerHandover, ReceiveTimesOutAndSeesTheEnd) {
  unix_pair u;
  EXPECT_EQ(receive_listeners(u.b, 50ms).error(), std::errc::timed_out);
  ::close(u.a);
  u.a = -1;
  EXPECT_EQ(receive_listeners(u.b, 1s).error(), errc::end_of_stream);
}

TEST(ListenerHandover, MalformedMessagesAreRejectedAndTheirDescriptorsClosed) {
  constexpr const char* good = "RINGIOLS";
  struct bad_case {
    const char* what;
    const char* magic;
    std::uint32_t version;
    std::uint32_t count;
    int fds;
    std::size_t bytes;
  };
  const bad_case cases[] = {
      {"wrong magic", "NOTRIGHT", 1, 1, 1, 16}, {"unknown version", good, 2, 1, 1, 16},
      {"count zero", good, 1, 0, 1, 16},        {"count above fds", good, 1, 2, 1, 16},
      {"count below fds", good, 1, 1, 2, 16},   {"no descriptors", good, 1, 1, 0, 16},
      {"short header", good, 1, 1, 1, 10},      {"count too large", good, 1, 1000, 1, 16},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    unix_pair u;
    auto l = loopback_listener();
    std::vector<int> fds(static_cast<std::size_t>(c.fds), l.native_handle());
    send_raw(u.a, c.magic, c.version, c.count, fds, c.bytes);
    int before = ::fcntl(0, F_DUPFD_CLOEXEC, 0);  // the lowest free descriptor now
    ::close(before);
    auto r = receive_listeners(u.b, 1s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::invalid_handover) << r.error().message();
    int after = ::fcntl(0, F_DUPFD_CLOEXEC, 0);  // every received descriptor was closed
    ::close(after);
    EXPECT_EQ(after, before);
  }
}

TEST(ListenerHandover, ANonListenerInTheMessageIsRejected) {
  unix_pair u;
  auto l = loopback_listener();
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  send_raw(u.a, "RINGIOLS", 1, 2, {l.native_handle(), udp});
  ::close(udp);
  int before = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
  ::close(before);
  auto r = receive_listeners(u.b, 1s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::not_a_listener);
  int after = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
  ::close(after);
  EXPECT_EQ(after, before);
}

// Socket activation's variables, restored after each test.
class ListenFds : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
  }
  static void set(const char* pid, const char* fds, const char* names = nullptr) {
    if (pid != nullptr) ::setenv("LISTEN_PID", pid, 1);
    if (fds != nullptr) ::setenv("LISTEN_FDS", fds, 1);
    if (names != nullptr) ::setenv("LISTEN_FDNAMES", names, 1);
  }
  static std::string self() { return std::to_string(::getpid()); }
};

TEST_F(ListenFds, NoVariablesMeansNoListeners) {
  auto r = listeners_from_environment();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

TEST_F(ListenFds, AnotherProcessesSocketsAreNotTakenAndTheVariablesGo) {
  set(std::to_string(::getpid() + 1).c_str(), "1");
  auto r = listeners_from_environment();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(std::getenv("LISTEN_PID"), nullptr);
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
}

TEST_F(ListenFds, MalformedVariablesAreErrorsAndAreUnset) {
  const std::string me = self();
  struct bad_case {
    const char* what;
    const char* pid;
    const char* fds;
    const char* names;
  };
  const bad_case cases[] = {
      {"pid not a number", "12x", "1", nullptr},
      {"pid empty", "", "1", nullptr},
      {"pid zero", "0", "1", nullptr},
      {"pid negative", "-5", "1", nullptr},
      {"fds missing", me.c_str(), nullptr, nullptr},
      {"fds not a number", me.c_str(), "one", nullptr},
      {"fds zero", me.c_str(), "0", nullptr},
      {"fds negative", me.c_str(), "-1", nullptr},
      {"fds with space", me.c_str(), " 1", nullptr},
      {"fds huge", me.c_str(), "99999999999", nullptr},
      {"too few names", me.c_str(), "2", "a"},
      {"too many names", me.c_str(), "1", "a:b"},
      {"empty name", me.c_str(), "2", "a:"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    TearDown();
    set(c.pid, c.fds, c.names);
    auto r = listeners_from_environment();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::invalid_listen_fds);
    EXPECT_EQ(std::getenv("LISTEN_PID"), nullptr);
    EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
    EXPECT_EQ(std::getenv("LISTEN_FDNAMES"), nullptr);
  }
}

TEST_F(ListenFds, KeepsTheVariablesWhenAsked) {
  set("not-a-pid", "1");
  EXPECT_FALSE(listeners_from_environment(false));
  EXPECT_NE(std::getenv("LISTEN_PID"), nullptr);
}

// The descriptors start at 3, which the test process may use: a child arranges them.
int in_child(int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

TEST_F(ListenFds, TakesTheSocketsWithNamesAndCloexec) {
  int code = in_child([] {
    auto a = stream_listener::bind(socket_address::loopback(0));
    auto b = stream_listener::bind(socket_address::loopback(0));
    if (!a || !b) return 10;
    const auto port_b = b->local_address()->port();
    // Out of the way first: either may be descriptor 3 or 4 itself.
    int high_a = ::fcntl(a->native_handle(), F_DUPFD, 100);
    int high_b = ::fcntl(b->native_handle(), F_DUPFD, 100);
    a->close();
    b->close();
    if (::dup2(high_a, 3) != 3 || ::dup2(high_b, 4) != 4) return 11;  // (no CLOEXEC)
    ::close(high_a);
    ::close(high_b);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "2", 1);
    ::setenv("LISTEN_FDNAMES", "web:admin", 1);
    auto r = listeners_from_environment();
    if (!r || r->size() != 2) return 12;
    if ((*r)[0].name != "web" || (*r)[1].name != "admin") return 13;
    if ((*r)[0].listener.native_handle() != 3 || !cloexec(3) || !cloexec(4)) return 14;
    if ((*r)[1].listener.local_address()->port() != port_b) return 15;
    if (std::getenv("LISTEN_FDS") != nullptr || std::getenv("LISTEN_FDNAMES") != nullptr) return 16;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

TEST_F(ListenFds, ANonListenerAmongTheDescriptorsIsAnErrorAndNothingIsClosed) {
  int code = in_child([] {
    auto a = stream_listener::bind(socket_address::loopback(0));
    if (!a) return 10;
    int high_a = ::fcntl(a->native_handle(), F_DUPFD, 100);
    a->close();
    int udp = ::fcntl(::socket(AF_INET, SOCK_DGRAM, 0), F_DUPFD, 100);
    if (::dup2(high_a, 3) != 3 || ::dup2(udp, 4) != 4) return 11;
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "2", 1);
    auto r = listeners_from_environment();
    if (r || r.error() != errc::not_a_listener) return 12;
    if (!open_fd(3) || !open_fd(4)) return 13;
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "3", 1);  // 4 listens now, 5 is not open
    if (::dup2(high_a, 4) != 4) return 15;
    ::close(5);
    auto closed = listeners_from_environment();
    if (closed || closed.error() != std::errc::bad_file_descriptor) return 14;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

}  // namespace

namespace {

// Each connection gets one byte and is closed.
ringio::task<void> greet(ringio::stream_socket s) {
  const char x = 'x';
  (void)co_await s.send_all(std::as_bytes(std::span(&x, 1)));
}

// A client's view: one byte arrives from `port`.
bool greeted(std::uint16_t port) {
  auto at = socket_address::loopback(port);
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{10, 0};
  ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b = 0;
  bool ok = ::connect(c, at.native(), at.size()) == 0 && ::recv(c, &b, 1, 0) == 1 && b == 'x';
  ::close(c);
  return ok;
}

TEST(ServeOnListeners, LoopsShareAListenerAndThreadsRiseToTheListenerCount) {
  for (auto [listeners, threads, loops] : {std::tuple{1U, 3U, 3U}, std::tuple{2U, 1U, 2U}}) {
    SCOPED_TRACE(std::to_string(listeners) + " listeners, " + std::to_string(threads) + " threads");
    std::vector<stream_listener> ls;
    for (unsigned i = 0; i < listeners; ++i) ls.push_back(loopback_listener());
    std::vector<std::uint16_t> ports;
    for (auto& l : ls) ports.push_back(l.local_address()->port());
    std::stop_source stop;
    ringio::result<serve_summary> summary;
    std::thread server([&] {
      summary =
          serve(std::move(ls), greet, serve_options{.threads = threads, .handle_signals = false}, stop.get_token());
    });
    for (int i = 0; i < 20; ++i)
      for (auto p : ports) EXPECT_TRUE(greeted(p));
    stop.request_stop();
    server.join();
    ASSERT_TRUE(summary) << summary.error().message();
    EXPECT_EQ(summary->connections_per_loop.size(), loops);
    std::uint64_t total = 0;
    for (auto n : summary->connections_per_loop) total += n;
    EXPECT_EQ(total, 20U * ports.size());
    EXPECT_EQ(summary->address.port(), ports[0]);
  }
}

TEST(ServeOnListeners, NoListenerOrSeveralForTheAcceptorAreRefused) {
  EXPECT_EQ(serve(std::vector<stream_listener>{}, greet, serve_options{.handle_signals = false}).error(),
            std::errc::invalid_argument);
  std::vector<stream_listener> two;
  two.push_back(loopback_listener());
  two.push_back(loopback_listener());
  auto r = serve(std::move(two), greet,
                 serve_options{.threads = 2, .dispatch = serve_dispatch::acceptor, .handle_signals = false});
  EXPECT_EQ(r.error(), std::errc::invalid_argument);
}

TEST(ServeOnListeners, ServeListenersBindsWhatTheAddressFormWould) {
  auto ls = serve_listeners(socket_address::loopback(0), serve_options{.threads = 3});
  ASSERT_TRUE(ls) << ls.error().message();
  EXPECT_EQ(ls->size(), 3U);
  EXPECT_EQ((*ls)[1].local_address()->port(), (*ls)[0].local_address()->port());
  auto one =
      serve_listeners(socket_address::loopback(0), serve_options{.threads = 3, .dispatch = serve_dispatch::acceptor});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->size(), 1U);
  // Taken port: refused without share_port, joined with it.
  const auto port = (*one)[0].local_address()->port();
  EXPECT_EQ(serve_listeners(socket_address::loopback(port), serve_options{.threads = 2}).error(),
            std::errc::address_in_use);
}

}  // namespace
