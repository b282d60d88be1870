// SPDX-License-Identifier: Apache-2.0
// The system-call hooks (ringio::fiber_hooks) held to their promises: inside a fiber
// each hooked call gives the result and errno libc gives (successful calls leave errno
// alone), honours SO_RCVTIMEO/SO_SNDTIMEO, O_NONBLOCK, MSG_WAITALL and partial counts,
// survives close, stops and the loop's destruction; outside fibers each is libc's.
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fiber_hooks_attack_fixture.hpp"
#include "ringio/fiber.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t stack_scale = hook_stack_scale;

class FiberHooksAttack : public hooks_attack_test {
 protected:
  void in_two_fibers(const std::function<void()>& a, const std::function<void()>& b, std::chrono::seconds limit = 10s) {
    in_fibers({a, b}, limit);
  }
  // Runs `fn` in a fiber and stops the fiber's scope after `after`.
  void stopped_after(std::chrono::milliseconds after, const std::function<void()>& fn) {
    run([](std::chrono::milliseconds after, const std::function<void()>& fn) -> task<void> {
      scope s;
      spawn_fiber(
          s, [&fn] { fn(); }, hook_stack);
      (void)co_await sleep_for(after);
      s.request_stop();
      co_await s.join();
    }(after, fn));
  }
};

struct fd_pair {
  int a = -1, b = -1;
  explicit fd_pair(int type = SOCK_STREAM) {
    int fds[2];
    if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) == 0) {
      a = fds[0];
      b = fds[1];
    }
  }
  ~fd_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      r = fds[0];
      w = fds[1];
    }
  }
  ~pipe_pair() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

// A loopback TCP listener on a free port.
struct tcp_listener {
  int fd = -1;
  sockaddr_in addr{};
  explicit tcp_listener(int backlog = 16) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, backlog);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  }
  ~tcp_listener() {
    if (fd >= 0) ::close(fd);
  }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

// A loopback port with nothing listening on it.
sockaddr_in refused_address() {
  tcp_listener l;
  sockaddr_in a = l.addr;
  return a;  // the listener closes here: connecting to it is refused
}

std::atomic<int> sigpipes{0};
std::atomic<int> sigusr1s{0};
extern "C" void count_sigpipe(int) { sigpipes.fetch_add(1); }
extern "C" void count_sigusr1(int) { sigusr1s.fetch_add(1); }

// Counts SIGPIPE while alive instead of letting it end the process.
struct sigpipe_counter {
  struct sigaction old {};
  sigpipe_counter() {
    struct sigaction sa {};
    sa.sa_handler = count_sigpipe;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGPIPE, &sa, &old);
  }
  ~sigpipe_counter() { ::sigaction(SIGPIPE, &old, nullptr); }
};

// What a call gave: its return value, errno after it (4242 when it was left alone)
// and the SIGPIPEs it raised, plus anything else the scenario checks.
struct outcome {
  long ret = 0;
  int err = 0;
  int pipes = 0;
  std::string extra;
  bool operator==(const outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const outcome& o) {
  return os << "{ret " << o.ret << ", errno " << o.err << " (" << std::strerror(o.err) << "), SIGPIPEs " << o.pipes
            << ", " << o.extra << "}";
}

constexpr int untouched = 4242;

struct scenario {
  const char* name;
  std::function<outcome()> run;
};

// Each scenario makes its own descriptors, makes one call that needs no waiting, and
// reports what it gave. Outside fibers the hooked names are libc's; inside a fiber the
// same scenario must give the same outcome.
template <class Call>
outcome measure(Call&& call) {
  const int pipes_before = sigpipes.load();
  errno = untouched;
  const long r = static_cast<long>(call());
  outcome o;
  o.err = errno;
  o.ret = r;
  o.pipes = sigpipes.load() - pipes_before;
  return o;
}

std::vector<scenario> immediate_scenarios() {
  std::vector<scenario> v;
  v.push_back({"read(-1)", [] {
                 return measure([] {
                   char c;
                   return ::read(-1, &c, 1);
                 });
               }});
  v.push_back({"read of a closed number", [] {
                 int fd = ::eventfd(0, EFD_CLOEXEC);
                 ::close(fd);
                 return measure([fd] {
                   char c[8];
                   return ::read(fd, c, 8);
                 });
               }});
  v.push_back({"recv on an unconnected TCP socket", [] {
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([fd] {
                   char c;
                   return ::recv(fd, &c, 1, 0);
                 });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"send on an unconnected TCP socket", [] {
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([fd] { return ::send(fd, "x", 1, 0); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"write to a pipe without reader", [] {
                 pipe_pair p;
                 ::close(p.r);
                 p.r = -1;
                 return measure([&] { return ::write(p.w, "x", 1); });
               }});
  v.push_back({"send to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 return measure([&] { return ::send(p.a, "x", 1, 0); });
               }});
  v.push_back({"send MSG_NOSIGNAL to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 return measure([&] { return ::send(p.a, "x", 1, MSG_NOSIGNAL); });
               }});
  v.push_back({"write to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 return measure([&] { return ::write(p.a, "x", 1); });
               }});
  v.push_back({"writev to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 char x = 'x';
                 iovec iov{&x, 1};
                 return measure([&] { return ::writev(p.a, &iov, 1); });
               }});
  v.push_back({"sendmsg to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 char x = 'x';
                 iovec iov{&x, 1};
                 msghdr m{};
                 m.msg_iov = &iov;
                 m.msg_iovlen = 1;
                 return measure([&] { return ::sendmsg(p.a, &m, 0); });
               }});
  v.push_back({"sendto to a closed peer", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 return measure([&] { return ::sendto(p.a, "x", 1, 0, nullptr, 0); });
               }});
  v.push_back({"accept on a socket that does not listen", [] {
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([fd] { return ::accept(fd, nullptr, nullptr); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"accept on a pipe", [] {
                 pipe_pair p;
                 return measure([&] { return ::accept(p.r, nullptr, nullptr); });
               }});
  v.push_back({"accept4 with invalid flags", [] {
                 tcp_listener l;
                 return measure([&] { return ::accept4(l.fd, nullptr, nullptr, 0x40000000); });
               }});
  v.push_back({"connect refused", [] {
                 const sockaddr_in a = refused_address();
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([&] { return ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"connect to a missing Unix path", [] {
                 sockaddr_un a{};
                 a.sun_family = AF_UNIX;
                 std::strcpy(a.sun_path, "/nonexistent/ringio-hooks-attack");
                 int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([&] { return ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"connect of a connected socket", [] {
                 fd_pair p;
                 sockaddr_un a{};
                 a.sun_family = AF_UNIX;
                 return measure([&] { return ::connect(p.a, reinterpret_cast<const sockaddr*>(&a), sizeof a); });
               }});
  v.push_back({"connect with a short address length", [] {
                 tcp_listener l;
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 auto o = measure([&] { return ::connect(fd, l.sa(), 3); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"connect of a socket the program made non-blocking", [] {
                 const sockaddr_in a = refused_address();
                 int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                 // Refused at once on loopback, or in progress: both are libc's answers;
                 // the hooks must not wait for the refusal.
                 auto o = measure([&] { return ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a); });
                 if (o.err == EINPROGRESS) o.err = ECONNREFUSED;
                 ::close(fd);
                 return o;
               }});
  v.push_back({"read of a directory", [] {
                 int fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                 auto o = measure([fd] {
                   char c[8];
                   return ::read(fd, c, 8);
                 });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"write to a read-only descriptor", [] {
                 int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
                 auto o = measure([fd] { return ::write(fd, "x", 1); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"read of an eventfd into 4 bytes", [] {
                 int fd = ::eventfd(1, EFD_CLOEXEC);
                 auto o = measure([fd] {
                   char c[4];
                   return ::read(fd, c, 4);
                 });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"write of an invalid eventfd value", [] {
                 int fd = ::eventfd(0, EFD_CLOEXEC);
                 const std::uint64_t bad = ~std::uint64_t{0};
                 auto o = measure([&] { return ::write(fd, &bad, sizeof bad); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"write of 0 bytes to a socket", [] {
                 fd_pair p;
                 return measure([&] { return ::write(p.a, "", 0); });
               }});
  v.push_back({"read of 0 bytes from an empty socket", [] {
                 fd_pair p;
                 return measure([&] {
                   char c;
                   return ::read(p.a, &c, 0);
                 });
               }});
  v.push_back({"recv into an invalid buffer", [] {
                 fd_pair p;
                 ::write(p.b, "abc", 3);
                 return measure([&] { return ::recv(p.a, reinterpret_cast<void*>(8), 3, 0); });
               }});
  v.push_back({"readv with 1025 iovecs", [] {
                 fd_pair p;
                 ::write(p.b, "abc", 3);
                 std::vector<char> b(1025);
                 std::vector<iovec> iov(1025);
                 for (std::size_t i = 0; i < iov.size(); ++i) iov[i] = {&b[i], 1};
                 return measure([&] { return ::readv(p.a, iov.data(), static_cast<int>(iov.size())); });
               }});
  v.push_back({"writev with 1025 iovecs", [] {
                 fd_pair p;
                 std::vector<char> b(1025, 'x');
                 std::vector<iovec> iov(1025);
                 for (std::size_t i = 0; i < iov.size(); ++i) iov[i] = {&b[i], 1};
                 return measure([&] { return ::writev(p.a, iov.data(), static_cast<int>(iov.size())); });
               }});
  v.push_back({"writev with a negative count", [] {
                 fd_pair p;
                 char x = 'x';
                 iovec iov{&x, 1};
                 volatile int negative = -1;
                 return measure([&] { return ::writev(p.a, &iov, negative); });
               }});
  v.push_back({"sendto on an unconnected UDP socket without address", [] {
                 int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                 auto o = measure([fd] { return ::sendto(fd, "x", 1, 0, nullptr, 0); });
                 ::close(fd);
                 return o;
               }});
  v.push_back({"recvfrom of a waiting datagram, with its address", [] {
                 int r = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                 int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                 sockaddr_in a{};
                 a.sin_family = AF_INET;
                 a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                 socklen_t len = sizeof a;
                 ::bind(r, reinterpret_cast<sockaddr*>(&a), sizeof a);
                 ::getsockname(r, reinterpret_cast<sockaddr*>(&a), &len);
                 ::sendto(s, "hello", 5, 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
                 sockaddr_in from{};
                 socklen_t flen = sizeof from;
                 char buf[2];
                 auto o = measure([&] {
                   return ::recvfrom(r, buf, sizeof buf, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &flen);
                 });
                 o.extra = "fromlen " + std::to_string(flen) + " family " + std::to_string(from.sin_family);
                 ::close(r);
                 ::close(s);
                 return o;
               }});
  v.push_back({"recv of a closed stream", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 return measure([&] {
                   char c;
                   return ::recv(p.a, &c, 1, 0);
                 });
               }});
  v.push_back({"recv MSG_DONTWAIT on an empty socket", [] {
                 fd_pair p;
                 return measure([&] {
                   char c;
                   return ::recv(p.a, &c, 1, MSG_DONTWAIT);
                 });
               }});
  v.push_back({"recv MSG_WAITALL|MSG_DONTWAIT with part of the buffer there", [] {
                 fd_pair p;
                 ::write(p.b, "ab", 2);
                 return measure([&] {
                   char buf[4];
                   return ::recv(p.a, buf, sizeof buf, MSG_WAITALL | MSG_DONTWAIT);
                 });
               }});
  v.push_back({"recv MSG_WAITALL of a datagram that is there", [] {
                 fd_pair p(SOCK_DGRAM);
                 ::send(p.b, "ab", 2, 0);
                 return measure([&] {
                   char buf[4];
                   return ::recv(p.a, buf, sizeof buf, MSG_WAITALL);
                 });
               }});
  v.push_back({"recv MSG_PEEK then recv", [] {
                 fd_pair p;
                 ::write(p.b, "abc", 3);
                 char buf[8] = {};
                 auto o = measure([&] { return ::recv(p.a, buf, 2, MSG_PEEK); });
                 const ssize_t n = ::recv(p.a, buf, sizeof buf, 0);
                 o.extra =
                     "then " + std::to_string(n) + " " + std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
                 return o;
               }});
  v.push_back({"recvmsg of a descriptor (SCM_RIGHTS)", [] {
                 fd_pair p;
                 int passed = ::eventfd(7, EFD_CLOEXEC);
                 char x = 'x';
                 iovec iov{&x, 1};
                 alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
                 msghdr m{};
                 m.msg_iov = &iov;
                 m.msg_iovlen = 1;
                 m.msg_control = ctl;
                 m.msg_controllen = sizeof ctl;
                 cmsghdr* c = CMSG_FIRSTHDR(&m);
                 c->cmsg_level = SOL_SOCKET;
                 c->cmsg_type = SCM_RIGHTS;
                 c->cmsg_len = CMSG_LEN(sizeof(int));
                 std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
                 ::sendmsg(p.b, &m, 0);
                 ::close(passed);
                 char y = 0;
                 iovec riov{&y, 1};
                 alignas(cmsghdr) char rctl[CMSG_SPACE(sizeof(int))] = {};
                 msghdr rm{};
                 rm.msg_iov = &riov;
                 rm.msg_iovlen = 1;
                 rm.msg_control = rctl;
                 rm.msg_controllen = sizeof rctl;
                 auto o = measure([&] { return ::recvmsg(p.a, &rm, MSG_CMSG_CLOEXEC); });
                 std::uint64_t value = 0;
                 cmsghdr* rc = CMSG_FIRSTHDR(&rm);
                 if (rc != nullptr && rc->cmsg_type == SCM_RIGHTS) {
                   int got = -1;
                   std::memcpy(&got, CMSG_DATA(rc), sizeof got);
                   if (::read(got, &value, sizeof value) != sizeof value) value = 0;
                   ::close(got);
                 }
                 o.extra = "flags " + std::to_string(rm.msg_flags) + " value " + std::to_string(value);
                 return o;
               }});
  v.push_back({"recvmsg with a control buffer too small", [] {
                 fd_pair p;
                 int passed = ::eventfd(0, EFD_CLOEXEC);
                 char x = 'x';
                 iovec iov{&x, 1};
                 alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
                 msghdr m{};
                 m.msg_iov = &iov;
                 m.msg_iovlen = 1;
                 m.msg_control = ctl;
                 m.msg_controllen = sizeof ctl;
                 cmsghdr* c = CMSG_FIRSTHDR(&m);
                 c->cmsg_level = SOL_SOCKET;
                 c->cmsg_type = SCM_RIGHTS;
                 c->cmsg_len = CMSG_LEN(sizeof(int));
                 std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
                 ::sendmsg(p.b, &m, 0);
                 ::close(passed);
                 char y = 0;
                 iovec riov{&y, 1};
                 msghdr rm{};
                 rm.msg_iov = &riov;
                 rm.msg_iovlen = 1;
                 auto o = measure([&] { return ::recvmsg(p.a, &rm, 0); });
                 o.extra = "flags " + std::to_string(rm.msg_flags);
                 return o;
               }});
  v.push_back({"send on a listening socket", [] {
                 tcp_listener l;
                 return measure([&] { return ::send(l.fd, "x", 1, MSG_NOSIGNAL); });
               }});
  v.push_back({"accept of a pending connection, with its address", [] {
                 tcp_listener l;
                 int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 ::connect(c, l.sa(), sizeof l.addr);
                 sockaddr_in from{};
                 socklen_t flen = sizeof from;
                 auto o = measure([&] { return ::accept(l.fd, reinterpret_cast<sockaddr*>(&from), &flen); });
                 if (o.ret >= 0) {
                   o.extra =
                       "nonblocking " + std::to_string((::fcntl(static_cast<int>(o.ret), F_GETFL) & O_NONBLOCK) != 0) +
                       " cloexec " + std::to_string((::fcntl(static_cast<int>(o.ret), F_GETFD) & FD_CLOEXEC) != 0);
                   ::close(static_cast<int>(o.ret));
                   o.ret = 0;
                 }
                 o.extra += " fromlen " + std::to_string(flen) + " listener nonblocking " +
                            std::to_string((::fcntl(l.fd, F_GETFL) & O_NONBLOCK) != 0);
                 ::close(c);
                 return o;
               }});
  v.push_back({"accept4 SOCK_NONBLOCK|SOCK_CLOEXEC", [] {
                 tcp_listener l;
                 int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 ::connect(c, l.sa(), sizeof l.addr);
                 auto o = measure([&] { return ::accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC); });
                 if (o.ret >= 0) {
                   o.extra =
                       "nonblocking " + std::to_string((::fcntl(static_cast<int>(o.ret), F_GETFL) & O_NONBLOCK) != 0) +
                       " cloexec " + std::to_string((::fcntl(static_cast<int>(o.ret), F_GETFD) & FD_CLOEXEC) != 0);
                   ::close(static_cast<int>(o.ret));
                   o.ret = 0;
                 }
                 ::close(c);
                 return o;
               }});
  v.push_back({"accept on a listener the program made non-blocking", [] {
                 tcp_listener l;
                 ::fcntl(l.fd, F_SETFL, ::fcntl(l.fd, F_GETFL) | O_NONBLOCK);
                 return measure([&] { return ::accept(l.fd, nullptr, nullptr); });
               }});
  v.push_back({"read of a regular file", [] {
                 int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
                 char buf[4] = {};
                 auto o = measure([&] { return ::read(fd, buf, 4); });
                 o.extra = std::string(buf + 1, 3) + " offset " + std::to_string(::lseek(fd, 0, SEEK_CUR));
                 ::close(fd);
                 return o;
               }});
  v.push_back({"write to a full pipe the program made non-blocking", [] {
                 pipe_pair p;
                 ::fcntl(p.w, F_SETFL, O_NONBLOCK);
                 std::vector<char> big(1 << 20, 'x');
                 while (::write(p.w, big.data(), big.size()) > 0) {
                 }
                 auto o = measure([&] { return ::write(p.w, "x", 1); });
                 return o;
               }});
  v.push_back({"partial write to a nearly full pipe the program made non-blocking", [] {
                 pipe_pair p;
                 ::fcntl(p.w, F_SETFL, O_NONBLOCK);
                 std::vector<char> big(1 << 20, 'x');
                 while (::write(p.w, big.data(), big.size()) > 0) {
                 }
                 char drain[4096 * 2];
                 ::read(p.r, drain, sizeof drain);
                 return measure([&] { return ::write(p.w, big.data(), 65536); });
               }});
  v.push_back({"partial send to a nearly full socket the program made non-blocking", [] {
                 fd_pair p;
                 ::fcntl(p.a, F_SETFL, O_NONBLOCK);
                 std::vector<char> big(1 << 20, 'x');
                 while (::write(p.a, big.data(), big.size()) > 0) {
                 }
                 std::vector<char> drain(300000);
                 ::recv(p.b, drain.data(), drain.size(), MSG_DONTWAIT);
                 auto o = measure([&] { return ::send(p.a, big.data(), big.size(), 0); });
                 o.ret = o.ret > 0 ? 1 : o.ret;  // the count depends on the buffer: positive
                 return o;
               }});
  v.push_back({"partial writev to a nearly full socket the program made non-blocking", [] {
                 fd_pair p;
                 ::fcntl(p.a, F_SETFL, O_NONBLOCK);
                 std::vector<char> big(1 << 20, 'x');
                 while (::write(p.a, big.data(), big.size()) > 0) {
                 }
                 std::vector<char> drain(300000);
                 ::recv(p.b, drain.data(), drain.size(), MSG_DONTWAIT);
                 iovec iov[2] = {{big.data(), big.size() / 2}, {big.data() + big.size() / 2, big.size() / 2}};
                 auto o = measure([&] { return ::writev(p.a, iov, 2); });
                 o.ret = o.ret > 0 ? 1 : o.ret;
                 return o;
               }});
  v.push_back({"poll with nfds beyond RLIMIT_NOFILE", [] {
                 rlimit rl{};
                 ::getrlimit(RLIMIT_NOFILE, &rl);
                 const std::size_t n = std::min<std::size_t>(rl.rlim_cur, std::size_t{1} << 22) + 1;
                 std::vector<pollfd> pf(n, pollfd{-1, POLLIN, 0});
                 return measure([&] { return ::poll(pf.data(), rl.rlim_cur + 1, 10); });
               }});
  v.push_back({"poll of a closed number (POLLNVAL)", [] {
                 int fd = ::eventfd(0, EFD_CLOEXEC);
                 ::close(fd);
                 pollfd pf{fd, POLLIN, 0};
                 auto o = measure([&] { return ::poll(&pf, 1, 1000); });
                 o.extra = "revents " + std::to_string(pf.revents);
                 return o;
               }});
  v.push_back({"poll of negative descriptors only", [] {
                 pollfd pf[2] = {{-1, POLLIN, 77}, {-5, POLLOUT, 77}};
                 auto o = measure([&] { return ::poll(pf, 2, 30); });
                 o.extra = "revents " + std::to_string(pf[0].revents) + " " + std::to_string(pf[1].revents);
                 return o;
               }});
  v.push_back({"poll with a regular file and an idle socket", [] {
                 fd_pair p;
                 int f = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
                 pollfd pf[2] = {{p.a, POLLIN, 0}, {f, POLLIN, 0}};
                 auto o = measure([&] { return ::poll(pf, 2, 5000); });
                 o.extra = "revents " + std::to_string(pf[0].revents) + " " + std::to_string(pf[1].revents);
                 ::close(f);
                 return o;
               }});
  v.push_back({"poll POLLOUT of a writable socket", [] {
                 fd_pair p;
                 pollfd pf{p.a, POLLOUT, 0};
                 auto o = measure([&] { return ::poll(&pf, 1, -1); });
                 o.extra = "revents " + std::to_string(pf.revents);
                 return o;
               }});
  v.push_back({"poll of a socket whose peer closed", [] {
                 fd_pair p;
                 ::close(p.b);
                 p.b = -1;
                 pollfd pf{p.a, POLLIN | POLLRDHUP, 0};
                 auto o = measure([&] { return ::poll(&pf, 1, -1); });
                 o.extra = "revents " + std::to_string(pf.revents);
                 return o;
               }});
  v.push_back({"poll with timeout 0 of an idle socket", [] {
                 fd_pair p;
                 pollfd pf{p.a, POLLIN, 0};
                 return measure([&] { return ::poll(&pf, 1, 0); });
               }});
  v.push_back({"nanosleep with tv_nsec out of range", [] {
                 timespec ts{0, 2000000000L};
                 return measure([&] { return ::nanosleep(&ts, nullptr); });
               }});
  v.push_back({"nanosleep with a negative time", [] {
                 timespec ts{-1, 0};
                 return measure([&] { return ::nanosleep(&ts, nullptr); });
               }});
  v.push_back({"nanosleep of zero", [] {
                 timespec ts{0, 0};
                 timespec rem{9, 9};
                 auto o = measure([&] { return ::nanosleep(&ts, &rem); });
                 return o;
               }});
  v.push_back({"clock_nanosleep with tv_nsec out of range (returns the error)", [] {
                 timespec ts{0, 2000000000L};
                 return measure([&] { return ::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr); });
               }});
  v.push_back({"clock_nanosleep on the thread's CPU clock", [] {
                 timespec ts{0, 1000};
                 return measure([&] { return ::clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, nullptr); });
               }});
  v.push_back({"clock_nanosleep on an invalid clock", [] {
                 timespec ts{0, 1000};
                 return measure([&] { return ::clock_nanosleep(static_cast<clockid_t>(12345), 0, &ts, nullptr); });
               }});
  v.push_back({"clock_nanosleep until a time in the past", [] {
                 timespec ts{1, 0};
                 return measure([&] { return ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr); });
               }});
  v.push_back({"sleep(0)", [] { return measure([] { return ::sleep(0); }); }});
  v.push_back({"usleep(0)", [] { return measure([] { return ::usleep(0); }); }});
  v.push_back({"close(-1)", [] { return measure([] { return ::close(-1); }); }});
  v.push_back({"close of a closed number", [] {
                 int fd = ::eventfd(0, EFD_CLOEXEC);
                 ::close(fd);
                 return measure([fd] { return ::close(fd); });
               }});
  return v;
}

// Every immediate scenario gives, inside a fiber, what libc gives outside: the same
// return value, the same errno (left alone on success) and the same SIGPIPEs.
TEST_P(FiberHooksAttack, ImmediateCallsGiveLibcResultsAndErrno) {
  sigpipe_counter counting;
  const auto scenarios = immediate_scenarios();
  std::vector<outcome> outside;
  for (const auto& s : scenarios) outside.push_back(s.run());
  std::vector<outcome> inside;
  for (const auto& s : scenarios) {
    SCOPED_TRACE(s.name);
    in_fiber([&] { inside.push_back(s.run()); }, 3s);
  }
  ASSERT_EQ(inside.size(), outside.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i)
    EXPECT_EQ(inside[i], outside[i]) << scenarios[i].name << ": inside a fiber vs libc";
}

// The same scenarios on a plain thread that never ran a loop: libc's results.
TEST(FiberHooksAttackOutsideFibers, PlainThreadGivesTheSameResultsAsTheLoopThreadOutsideFibers) {
  sigpipe_counter counting;
  const auto scenarios = immediate_scenarios();
  std::vector<outcome> here;
  for (const auto& s : scenarios) here.push_back(s.run());
  std::vector<outcome> there;
  std::thread t([&] {
    for (const auto& s : scenarios) there.push_back(s.run());
  });
  t.join();
  for (std::size_t i = 0; i < scenarios.size(); ++i) EXPECT_EQ(there[i], here[i]) << scenarios[i].name;
}

// ---- calls that wait: errno is left alone when they succeed ----

TEST_P(FiberHooksAttack, SuccessfulCallsThatWaitedLeaveErrnoAlone) {
  fd_pair p;
  pipe_pair pp;
  tcp_listener l;
  ASSERT_GE(p.a, 0);
  ASSERT_GE(pp.r, 0);
  struct result_row {
    const char* name;
    long ret;
    int err;
  };
  std::vector<result_row> rows;
  auto note = [&](const char* name, long ret) { rows.push_back({name, ret, errno}); };
  in_two_fibers(
      [&] {
        char buf[16];
        errno = untouched;
        note("read", ::read(p.a, buf, 1));
        errno = untouched;
        note("recv", ::recv(p.a, buf, 1, 0));
        errno = untouched;
        note("recvfrom", ::recvfrom(p.a, buf, 1, 0, nullptr, nullptr));
        iovec iov{buf, 1};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        errno = untouched;
        note("recvmsg", ::recvmsg(p.a, &m, 0));
        errno = untouched;
        note("readv", ::readv(p.a, &iov, 1));
        errno = untouched;
        note("read of a pipe", ::read(pp.r, buf, 1));
        pollfd pf{p.a, POLLIN, 0};
        errno = untouched;
        note("poll", ::poll(&pf, 1, 5000));
        ::recv(p.a, buf, 1, 0);
        errno = untouched;
        note("accept", ::accept(l.fd, nullptr, nullptr));
        if (rows.back().ret >= 0) ::close(static_cast<int>(rows.back().ret));
        timespec ts{0, 1000000};
        errno = untouched;
        note("nanosleep", ::nanosleep(&ts, nullptr));
        errno = untouched;
        note("usleep", ::usleep(1000));
        errno = untouched;
        note("clock_nanosleep", ::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr));
        errno = untouched;
        note("poll(NULL, 0, 5)", ::poll(nullptr, 0, 5));
        errno = untouched;
        const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        note("connect", ::connect(c, l.sa(), sizeof l.addr));
        ::close(c);
        // A write that has to wait for the peer to drain the socket.
        std::string big(1 << 20, 'w');
        errno = untouched;
        note("write of 1 MiB", ::write(p.a, big.data(), big.size()));
      },
      [&] {
        for (int i = 0; i < 5; ++i) {
          ::usleep(3000);
          ::write(p.b, "x", 1);
        }
        ::usleep(3000);
        ::write(pp.w, "y", 1);
        ::usleep(3000);
        ::write(p.b, "z", 1);
        ::usleep(3000);
        const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ::connect(c, l.sa(), sizeof l.addr);
        std::vector<char> buf(65536);
        std::size_t got = 0;
        while (got < (1u << 20)) {
          const ssize_t n = ::read(p.b, buf.data(), buf.size());
          if (n <= 0) break;
          got += static_cast<std::size_t>(n);
        }
        ::close(c);
      });
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) {
    EXPECT_GE(r.ret, 0) << r.name;
    EXPECT_EQ(r.err, untouched) << r.name << " succeeded (" << r.ret << ") but changed errno to " << r.err << " ("
                                << std::strerror(r.err) << ")";
  }
}

// ---- timeouts ----

TEST_P(FiberHooksAttack, SendTimeoutReturnsThePartialCountAndThenEagain) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
  ssize_t first = 0, second = 0;
  int err2 = 0;
  std::chrono::steady_clock::duration took{};
  in_fiber([&] {
    std::string big(8u << 20, 'x');
    first = ::write(p.a, big.data(), big.size());
    const auto t0 = std::chrono::steady_clock::now();
    second = ::send(p.a, big.data(), big.size(), 0);
    err2 = errno;
    took = std::chrono::steady_clock::now() - t0;
  });
  EXPECT_GT(first, 0) << "a timed-out send that moved bytes returns their count";
  EXPECT_LT(first, 8 << 20);
  EXPECT_EQ(second, -1);
  EXPECT_EQ(err2, EAGAIN) << std::strerror(err2);
  EXPECT_GE(took, 45ms);
}

TEST_P(FiberHooksAttack, WaitallReceiveReturnsWhatCameWhenTheTimeoutPasses) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  timeval tv{0, 60 * 1000};
  ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  ssize_t n = 0;
  in_two_fibers(
      [&] {
        char buf[10];
        n = ::recv(p.a, buf, sizeof buf, MSG_WAITALL);
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "abc", 3);
      });
  EXPECT_EQ(n, 3);
}

TEST_P(FiberHooksAttack, AcceptHonoursTheReceiveTimeout) {
  tcp_listener l;
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(::setsockopt(l.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  int r = 0, err = 0;
  std::chrono::steady_clock::duration took{};
  in_fiber([&] {
    const auto t0 = std::chrono::steady_clock::now();
    r = ::accept(l.fd, nullptr, nullptr);
    err = errno;
    took = std::chrono::steady_clock::now() - t0;
  });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EAGAIN) << std::strerror(err);
  EXPECT_GE(took, 45ms);
  EXPECT_LT(took, 5s);
  EXPECT_EQ(::fcntl(l.fd, F_GETFL) & O_NONBLOCK, 0) << "the listener's mode is restored";
}

TEST_P(FiberHooksAttack, ConnectHonoursTheSendTimeoutWithEinprogress) {
  // A Unix listener whose backlog is full: a blocking connect waits for room.
  char dir[] = "/tmp/ringio-hook-attack-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  const int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 64; ++i) {
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(c);
      break;
    }
    fillers.push_back(c);
  }
  const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
  // libc on this thread: the timeout of a blocking connect.
  const int c0 = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::setsockopt(c0, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
  errno = 0;
  const int libc_r = ::connect(c0, reinterpret_cast<sockaddr*>(&a), sizeof a);
  const int libc_err = errno;
  ::close(c0);
  int r = 0, err = 0;
  in_fiber([&] {
    r = ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    err = errno;
  });
  // Documented: a connect that times out fails with EINPROGRESS (libc on a Unix socket
  // reports its own errno, accepted too).
  EXPECT_EQ(r, -1);
  EXPECT_EQ(libc_r, -1);
  EXPECT_TRUE(err == EINPROGRESS || err == libc_err)
      << "fiber: " << std::strerror(err) << ", libc: " << std::strerror(libc_err);
  ::close(c);
  for (int f : fillers) ::close(f);
  ::close(l);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

// ---- behaviour libc has and the hooks must keep ----

// A blocking connect to a Unix listener with a full backlog waits until there is room
// (an accept); it does not fail with EAGAIN as a non-blocking one does.
TEST_P(FiberHooksAttack, BlockingUnixConnectWaitsForRoomInTheBacklog) {
  char dir[] = "/tmp/ringio-hook-attack-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  const int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 64; ++i) {
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(c);
      break;
    }
    fillers.push_back(c);
  }
  int r = -2, err = 0;
  in_two_fibers(
      [&] {
        const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        r = ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
        err = errno;
        ::close(c);
      },
      [&] {
        ::usleep(20000);
        for (std::size_t i = 0; i <= fillers.size(); ++i) {
          const int s = ::accept(l, nullptr, nullptr);
          if (s >= 0) ::close(s);
        }
      });
  EXPECT_EQ(r, 0) << "connect failed with " << std::strerror(err);
  for (int f : fillers) ::close(f);
  ::close(l);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

// recvmsg with MSG_WAITALL on a blocking stream waits until the buffer is full.
TEST_P(FiberHooksAttack, RecvmsgWaitallFillsTheBuffer) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t n = 0;
  in_two_fibers(
      [&] {
        char buf[6];
        iovec iov{buf, sizeof buf};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        n = ::recvmsg(p.a, &m, MSG_WAITALL);
      },
      [&] {
        ::write(p.b, "abc", 3);
        ::usleep(10000);
        ::write(p.b, "def", 3);
      });
  EXPECT_EQ(n, 6) << "libc's recvmsg(MSG_WAITALL) on a blocking stream returns when the buffer is full";
}

// recv with MSG_WAITALL|MSG_PEEK: peeks, waiting until the whole buffer is there.
TEST_P(FiberHooksAttack, PeekWaitsForDataAndLeavesItThere) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t peeked = 0, got = 0;
  std::string s;
  in_two_fibers(
      [&] {
        char buf[8];
        peeked = ::recv(p.a, buf, 3, MSG_PEEK);
        char all[8];
        got = ::recv(p.a, all, 3, MSG_WAITALL);
        if (got > 0) s.assign(all, static_cast<std::size_t>(got));
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "a", 1);
        ::usleep(10000);
        ::write(p.b, "bc", 2);
      });
  EXPECT_GE(peeked, 1);
  EXPECT_EQ(got, 3);
  EXPECT_EQ(s, "abc");
}

// A descriptor that is switched to non-blocking and back, with fcntl and FIONBIO,
// gets EAGAIN while non-blocking and waits while blocking.
TEST_P(FiberHooksAttack, ModeSwitchedMidwayIsFollowed) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r1 = 0, r2 = 0, r3 = 0, r4 = 0;
  int e1 = 0, e3 = 0;
  in_two_fibers(
      [&] {
        char c;
        int on = 1;
        ::ioctl(p.a, FIONBIO, &on);
        r1 = ::read(p.a, &c, 1);
        e1 = errno;
        on = 0;
        ::ioctl(p.a, FIONBIO, &on);
        r2 = ::read(p.a, &c, 1);  // waits for the peer's byte
        ::fcntl(p.a, F_SETFL, ::fcntl(p.a, F_GETFL) | O_NONBLOCK);
        r3 = ::recv(p.a, &c, 1, 0);
        e3 = errno;
        ::fcntl(p.a, F_SETFL, ::fcntl(p.a, F_GETFL) & ~O_NONBLOCK);
        r4 = ::recv(p.a, &c, 1, 0);  // waits again
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "1", 1);
        ::usleep(10000);
        ::write(p.b, "2", 1);
      });
  EXPECT_EQ(r1, -1);
  EXPECT_EQ(e1, EAGAIN);
  EXPECT_EQ(r2, 1);
  EXPECT_EQ(r3, -1);
  EXPECT_EQ(e3, EAGAIN);
  EXPECT_EQ(r4, 1);
}

// A pipe's read end keeps its mode after hooked reads, and sees EOF and POLLHUP when
// the writer closes while it waits.
TEST_P(FiberHooksAttack, PipeWriterClosingEndsAWaitingReadAndPoll) {
  pipe_pair p1, p2;
  ASSERT_GE(p1.r, 0);
  ssize_t n = -2;
  int pr = -2;
  short revents = 0;
  in_two_fibers(
      [&] {
        char c;
        n = ::read(p1.r, &c, 1);
        pollfd pf{p2.r, POLLIN, 0};
        pr = ::poll(&pf, 1, 5000);
        revents = pf.revents;
      },
      [&] {
        ::usleep(10000);
        ::close(p1.w);
        p1.w = -1;
        ::usleep(10000);
        ::close(p2.w);
        p2.w = -1;
      });
  EXPECT_EQ(n, 0) << "end of file";
  EXPECT_EQ(pr, 1);
  EXPECT_EQ(revents, POLLHUP);
  EXPECT_EQ(::fcntl(p1.r, F_GETFL) & O_NONBLOCK, 0);
}

// A writer blocked on a full pipe whose reader goes away gets EPIPE (and SIGPIPE).
TEST_P(FiberHooksAttack, BlockedPipeWriteFailsWithEpipeWhenTheReaderCloses) {
  sigpipe_counter counting;
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  ssize_t n = -2;
  int err = 0;
  const int before = sigpipes.load();
  in_two_fibers(
      [&] {
        std::string big(1 << 20, 'x');
        n = ::write(p.w, big.data(), big.size());
        err = errno;
      },
      [&] {
        ::usleep(20000);
        ::close(p.r);
        p.r = -1;
      });
  // Linux: a blocking write that moved bytes returns their count; one that moved none
  // fails with EPIPE.
  EXPECT_TRUE(n > 0 || (n == -1 && err == EPIPE)) << n << " " << std::strerror(err);
  EXPECT_EQ(sigpipes.load() - before, 1);
}

// poll with the same descriptor twice, and with events 0.
TEST_P(FiberHooksAttack, PollWithTheSameDescriptorTwice) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  int r = -2;
  short re0 = 0, re1 = 0;
  in_two_fibers(
      [&] {
        pollfd pf[2] = {{p.a, POLLIN, 0}, {p.a, POLLIN, 0}};
        r = ::poll(pf, 2, 5000);
        re0 = pf[0].revents;
        re1 = pf[1].revents;
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "x", 1);
      });
  EXPECT_EQ(r, 2);
  EXPECT_EQ(re0, POLLIN);
  EXPECT_EQ(re1, POLLIN);
}

TEST_P(FiberHooksAttack, PollWithTheSameDescriptorForBothDirections) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  // Fill a's send buffer so that POLLOUT is not ready.
  ::fcntl(p.a, F_SETFL, O_NONBLOCK);
  std::vector<char> big(1 << 20, 'x');
  while (::write(p.a, big.data(), big.size()) > 0) {
  }
  ::fcntl(p.a, F_SETFL, 0);
  int r = -2;
  short re0 = 0, re1 = 0;
  in_two_fibers(
      [&] {
        pollfd pf[2] = {{p.a, POLLOUT, 0}, {p.a, POLLIN, 0}};
        r = ::poll(pf, 2, 5000);
        re0 = pf[0].revents;
        re1 = pf[1].revents;
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "x", 1);
      });
  EXPECT_EQ(r, 1);
  EXPECT_EQ(re0, 0);
  EXPECT_EQ(re1, POLLIN);
}

TEST_P(FiberHooksAttack, PollWithNoEventsTimesOut) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  int r = -2;
  std::chrono::steady_clock::duration took{};
  in_fiber([&] {
    pollfd pf{p.a, 0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    r = ::poll(&pf, 1, 40);
    took = std::chrono::steady_clock::now() - t0;
  });
  EXPECT_EQ(r, 0);
  EXPECT_GE(took, 35ms);
}

TEST_P(FiberHooksAttack, PollMixOfNegativeAndReadyLater) {
  fd_pair p, q;
  ASSERT_GE(p.a, 0);
  int r = -2;
  short re[4] = {};
  in_two_fibers(
      [&] {
        pollfd pf[4] = {{-1, POLLIN, 0}, {p.a, POLLIN, 0}, {-3, POLLOUT, 0}, {q.a, POLLIN | POLLPRI, 0}};
        r = ::poll(pf, 4, -1);
        for (int i = 0; i < 4; ++i) re[i] = pf[i].revents;
      },
      [&] {
        ::usleep(10000);
        ::write(q.b, "x", 1);
      });
  EXPECT_EQ(r, 1);
  EXPECT_EQ(re[0], 0);
  EXPECT_EQ(re[1], 0);
  EXPECT_EQ(re[2], 0);
  EXPECT_EQ(re[3], POLLIN);
}

TEST_P(FiberHooksAttack, PollOutWaitsUntilThePeerDrains) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ::fcntl(p.a, F_SETFL, O_NONBLOCK);
  std::vector<char> big(1 << 20, 'x');
  while (::write(p.a, big.data(), big.size()) > 0) {
  }
  ::fcntl(p.a, F_SETFL, 0);
  int r = -2;
  short re = 0;
  in_two_fibers(
      [&] {
        pollfd pf{p.a, POLLOUT, 0};
        r = ::poll(&pf, 1, 5000);
        re = pf.revents;
      },
      [&] {
        ::usleep(10000);
        std::vector<char> buf(1 << 20);
        ::recv(p.b, buf.data(), buf.size(), MSG_DONTWAIT);
      });
  EXPECT_EQ(r, 1);
  EXPECT_EQ(re, POLLOUT);
}

// ---- close, descriptor reuse ----

// A fiber waiting on a descriptor that is closed and whose number is reused at once
// fails with EBADF and takes nothing from the new descriptor.
TEST_P(FiberHooksAttack, NumberReusedAfterCloseIsNotReadByTheOldWait) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2;
  int err = 0;
  int reused = -1, reused_peer = -1;
  ssize_t later = -2;
  in_two_fibers(
      [&] {
        char c;
        r = ::read(p.a, &c, 1);
        err = errno;
      },
      [&] {
        ::usleep(10000);
        const int old = p.a;
        ::close(p.a);
        p.a = -1;
        int fds[2];
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
        reused = fds[0];
        reused_peer = fds[1];
        if (reused != old) {
          // Put the new socket on the old number.
          ::dup2(fds[0], old);
          ::close(fds[0]);
          reused = old;
        }
        ::write(reused_peer, "n", 1);
        ::usleep(10000);
        char c;
        later = ::recv(reused, &c, 1, MSG_DONTWAIT);
      });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF);
  EXPECT_EQ(later, 1) << "the byte sent to the new descriptor is still there";
  ::close(reused);
  ::close(reused_peer);
}

TEST_P(FiberHooksAttack, CloseOfADescriptorAFiberPollsDoesNotHang) {
  fd_pair p, q;
  ASSERT_GE(p.a, 0);
  int r1 = -2, r2 = -2;
  int e1 = 0, e2 = 0;
  std::chrono::steady_clock::duration took{};
  in_two_fibers(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        pollfd pf{p.a, POLLIN, 0};
        r1 = ::poll(&pf, 1, 10000);
        e1 = errno;
        pollfd pf2[2] = {{q.a, POLLIN, 0}, {q.b, POLLIN, 0}};
        r2 = ::poll(pf2, 2, 10000);
        e2 = errno;
        took = std::chrono::steady_clock::now() - t0;
      },
      [&] {
        ::usleep(10000);
        ::close(p.a);
        p.a = -1;
        ::usleep(10000);
        ::close(q.a);
        q.a = -1;
      });
  EXPECT_LT(took, 9s) << "a poll of a descriptor closed by another fiber waited for its timeout; r1 " << r1 << " ("
                      << std::strerror(e1) << ") r2 " << r2 << " (" << std::strerror(e2) << ")";
}

TEST_P(FiberHooksAttack, CloseOfADescriptorAFiberWritesToFailsTheWrite) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2;
  int err = 0;
  in_two_fibers(
      [&] {
        std::string big(4 << 20, 'x');
        r = ::write(p.a, big.data(), big.size());
        err = errno;
      },
      [&] {
        ::usleep(10000);
        ::close(p.a);
        p.a = -1;
      });
  // A write that moved bytes returns their count; one that did not fails with EBADF.
  EXPECT_TRUE(r > 0 || (r == -1 && err == EBADF)) << r << " " << std::strerror(err);
}

// ---- a stop of the fiber in each blocking call ----

TEST_P(FiberHooksAttack, StopInterruptsEachBlockingCallWithEintr) {
  struct row {
    std::string name;
    long ret;
    int err;
  };
  const auto check = [&](const char* name, const std::function<long()>& call, long expect_ret, int expect_err) {
    long ret = -2;
    int err = 0;
    std::chrono::steady_clock::duration took{};
    stopped_after(20ms, [&] {
      const auto t0 = std::chrono::steady_clock::now();
      errno = 0;
      ret = call();
      err = errno;
      took = std::chrono::steady_clock::now() - t0;
    });
    EXPECT_EQ(ret, expect_ret) << name;
    EXPECT_EQ(err, expect_err) << name << ": " << std::strerror(err);
    EXPECT_LT(took, 5s) << name;
  };
  fd_pair p;
  ASSERT_GE(p.a, 0);
  char buf[16];
  check(
      "read", [&] { return static_cast<long>(::read(p.a, buf, 1)); }, -1, EINTR);
  check(
      "readv",
      [&] {
        iovec iov{buf, 1};
        return static_cast<long>(::readv(p.a, &iov, 1));
      },
      -1, EINTR);
  check(
      "recvfrom", [&] { return static_cast<long>(::recvfrom(p.a, buf, 1, 0, nullptr, nullptr)); }, -1, EINTR);
  check(
      "recvmsg",
      [&] {
        iovec iov{buf, 1};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        return static_cast<long>(::recvmsg(p.a, &m, 0));
      },
      -1, EINTR);
  pipe_pair pp;
  check(
      "read of a pipe", [&] { return static_cast<long>(::read(pp.r, buf, 1)); }, -1, EINTR);
  EXPECT_EQ(::fcntl(pp.r, F_GETFL) & O_NONBLOCK, 0) << "the pipe's mode after a stopped read";
  tcp_listener l;
  check(
      "accept", [&] { return static_cast<long>(::accept(l.fd, nullptr, nullptr)); }, -1, EINTR);
  EXPECT_EQ(::fcntl(l.fd, F_GETFL) & O_NONBLOCK, 0) << "the listener's mode after a stopped accept";
  check(
      "accept4", [&] { return static_cast<long>(::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC)); }, -1, EINTR);
  check(
      "poll",
      [&] {
        pollfd pf{p.a, POLLIN, 0};
        return static_cast<long>(::poll(&pf, 1, -1));
      },
      -1, EINTR);
  check(
      "poll of two",
      [&] {
        pollfd pf[2] = {{p.a, POLLIN, 0}, {pp.r, POLLIN, 0}};
        return static_cast<long>(::poll(pf, 2, -1));
      },
      -1, EINTR);
  check(
      "poll(NULL, 0, -1)", [&] { return static_cast<long>(::poll(nullptr, 0, -1)); }, -1, EINTR);
  check(
      "usleep", [&] { return static_cast<long>(::usleep(2000000)); }, -1, EINTR);
  check(
      "nanosleep",
      [&] {
        timespec ts{2, 0};
        return static_cast<long>(::nanosleep(&ts, nullptr));
      },
      -1, EINTR);
  // clock_nanosleep returns the error number and leaves errno alone.
  check(
      "clock_nanosleep",
      [&] {
        timespec ts{2, 0};
        errno = 0;
        return static_cast<long>(::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr));
      },
      EINTR, 0);
  // A write on a full socket with nothing moved fails; one that moved bytes returns them.
  {
    fd_pair w;
    ::fcntl(w.a, F_SETFL, O_NONBLOCK);
    std::vector<char> big(1 << 20, 'x');
    while (::write(w.a, big.data(), big.size()) > 0) {
    }
    ::fcntl(w.a, F_SETFL, 0);
    check(
        "write to a full socket", [&] { return static_cast<long>(::write(w.a, big.data(), big.size())); }, -1, EINTR);
    check(
        "send to a full socket", [&] { return static_cast<long>(::send(w.a, big.data(), 100, 0)); }, -1, EINTR);
  }
}

// nanosleep stopped midway fills in the time that remained; sleep returns the seconds
// that remained.
TEST_P(FiberHooksAttack, StoppedSleepsReportTheTimeThatRemained) {
  int rc = -2, err = 0;
  timespec rem{0, 0};
  stopped_after(20ms, [&] {
    timespec ts{3, 0};
    rc = ::nanosleep(&ts, &rem);
    err = errno;
  });
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(err, EINTR);
  EXPECT_GE(rem.tv_sec, 1) << "nanosleep interrupted after 20 ms of 3 s: rem " << rem.tv_sec << "." << rem.tv_nsec;
  unsigned left = 0;
  stopped_after(20ms, [&] { left = ::sleep(3); });
  EXPECT_GE(left, 2u) << "sleep(3) interrupted after 20 ms returns the seconds left";
  timespec crem{0, 0};
  int crc = -2;
  stopped_after(20ms, [&] {
    timespec ts{3, 0};
    crc = ::clock_nanosleep(CLOCK_REALTIME, 0, &ts, &crem);
  });
  EXPECT_EQ(crc, EINTR);
  EXPECT_GE(crem.tv_sec, 1) << "clock_nanosleep (relative) interrupted: rem " << crem.tv_sec << "." << crem.tv_nsec;
}

// A partial write stopped midway returns the bytes sent so far.
TEST_P(FiberHooksAttack, StoppedLargeWriteReturnsTheBytesSent) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t n = -2;
  int err = 0;
  std::atomic<bool> reading{true};
  std::thread reader([&] {
    // A slow reader on another thread: at most 4 KiB a millisecond, so the 64 MiB
    // cannot all go out before the stop, however fast the machine.
    char buf[4096];
    while (reading.load()) {
      (void)::recv(p.b, buf, sizeof buf, MSG_DONTWAIT);
      std::this_thread::sleep_for(1ms);
    }
  });
  stopped_after(50ms, [&] {
    std::string big(64u << 20, 'x');
    n = ::write(p.a, big.data(), big.size());
    err = errno;
  });
  reading = false;
  reader.join();
  EXPECT_GT(n, 0) << std::strerror(err);
  EXPECT_LT(n, 64 << 20);
}

// A stop before the call: a call that need not wait still succeeds.
TEST_P(FiberHooksAttack, CallsThatNeedNotWaitSucceedAfterAStop) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t first = -2, ready = -2, wrote = -2;
  int e_first = 0, e_ready = 0;
  run([](fd_pair& p, ssize_t& first, int& e_first, ssize_t& ready, int& e_ready, ssize_t& wrote) -> task<void> {
    scope s;
    spawn_fiber(
        s,
        [&] {
          char c;
          first = ::read(p.a, &c, 1);  // stopped: EINTR
          e_first = errno;
          ::write(p.b, "x", 1);
          errno = untouched;
          ready = ::read(p.a, &c, 1);  // data there: no wait
          e_ready = errno;
          wrote = ::write(p.a, "y", 1);
        },
        hook_stack);
    (void)co_await sleep_for(10ms);
    s.request_stop();
    co_await s.join();
  }(p, first, e_first, ready, e_ready, wrote));
  EXPECT_EQ(first, -1);
  EXPECT_EQ(e_first, EINTR);
  EXPECT_EQ(ready, 1);
  EXPECT_EQ(e_ready, untouched);
  EXPECT_EQ(wrote, 1);
}

// Runs the loop of `ctx` for about `d`.
void run_for(io_context& ctx, std::chrono::milliseconds d) {
  ctx.spawn([](io_context& ctx, std::chrono::milliseconds d) -> task<void> {
    (void)co_await sleep_for(d);
    ctx.stop();
  }(ctx, d));
  ctx.run();
}

// ---- the loop going away ----

TEST_P(FiberHooksAttack, DestroyingTheContextInterruptsHookedCallsOfDetachedFibers) {
  fd_pair p;
  pipe_pair pp;
  ASSERT_GE(p.a, 0);
  std::atomic<int> ended{0};
  ssize_t r1 = -2, r2 = -2;
  int e1 = 0, e2 = 0;
  int sl = -2;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    spawn_fiber(
        ctx,
        [&] {
          char c;
          r1 = ::read(p.a, &c, 1);
          e1 = errno;
          ++ended;
        },
        hook_stack);
    spawn_fiber(
        ctx,
        [&] {
          char c;
          r2 = ::read(pp.r, &c, 1);
          e2 = errno;
          ++ended;
        },
        hook_stack);
    spawn_fiber(
        ctx,
        [&] {
          sl = static_cast<int>(::sleep(100));
          ++ended;
        },
        hook_stack);
    run_for(ctx, 20ms);
  }
  EXPECT_EQ(ended.load(), 3);
  EXPECT_EQ(r1, -1);
  EXPECT_EQ(e1, EINTR);
  EXPECT_EQ(r2, -1);
  EXPECT_EQ(e2, EINTR);
  EXPECT_GT(sl, 0);
  EXPECT_EQ(::fcntl(pp.r, F_GETFL) & O_NONBLOCK, 0);
}

// A hooked call made from a fiber that runs while the context is being destroyed.
TEST_P(FiberHooksAttack, HookedCallsDuringShutdownFailAtOnce) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r1 = -2, r2 = -2;
  int e1 = 0, e2 = 0;
  std::chrono::steady_clock::duration took{};
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    spawn_fiber(
        ctx,
        [&] {
          char c;
          r1 = ::read(p.a, &c, 1);
          e1 = errno;
          const auto t0 = std::chrono::steady_clock::now();
          r2 = ::read(p.a, &c, 1);  // during shutdown: must not wait
          e2 = errno;
          ::usleep(5000000);
          took = std::chrono::steady_clock::now() - t0;
        },
        hook_stack);
    run_for(ctx, 10ms);
  }
  EXPECT_EQ(r1, -1);
  EXPECT_EQ(e1, EINTR);
  EXPECT_EQ(r2, -1);
  EXPECT_EQ(e2, ECANCELED);
  EXPECT_LT(took, 4s);
}

// A library that retries after EINTR (as hiredis and libpq do) ends during the
// context's destruction: after the first EINTR, calls that would wait fail with
// ECANCELED.
TEST_P(FiberHooksAttack, RetryAfterEintrEndsWhenTheContextIsDestroyed) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  int tries = 0;
  ssize_t r = -2;
  int err = 0;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    spawn_fiber(
        ctx,
        [&] {
          char c;
          do {
            r = ::read(p.a, &c, 1);
            err = errno;
          } while (r == -1 && err == EINTR && ++tries < 1000);
        },
        hook_stack);
    run_for(ctx, 10ms);
  }
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, ECANCELED) << std::strerror(err);
  EXPECT_LT(tries, 1000) << "read kept failing with EINTR: a retrying library spins";
}

// A read of 0 bytes from an empty stream returns 0 at once, as libc's does.
TEST_P(FiberHooksAttack, ReadOfZeroBytesReturnsAtOnce) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2, rr = -2;
  int err = 0;
  std::chrono::steady_clock::duration took{};
  in_fiber(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        char c;
        r = ::read(p.a, &c, 0);
        err = errno;
        rr = ::recv(p.a, &c, 0, 0);
        took = std::chrono::steady_clock::now() - t0;
      },
      3s);
  EXPECT_EQ(r, 0) << std::strerror(err);
  EXPECT_EQ(rr, 0);
  EXPECT_LT(took, 2s);
}

// A blocking write of 1 MiB to a pipe writes all of it while a peer fiber reads.
TEST_P(FiberHooksAttack, LargePipeWriteCompletes) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  ssize_t written = -2;
  std::size_t received = 0;
  in_two_fibers(
      [&] {
        std::string s(1 << 20, 'p');
        written = ::write(p.w, s.data(), s.size());
        ::close(p.w);
        p.w = -1;
      },
      [&] {
        std::vector<char> buf(5000);
        for (;;) {
          const ssize_t n = ::read(p.r, buf.data(), buf.size());
          if (n <= 0) break;
          received += static_cast<std::size_t>(n);
        }
      });
  EXPECT_EQ(written, 1 << 20);
  EXPECT_EQ(received, 1u << 20);
}

// A descriptor that is duplicated and then closed while a fiber waits on it: the
// waiter fails with EBADF, the duplicate still works, and a new descriptor on the old
// number waits and reads normally.
TEST_P(FiberHooksAttack, DupThenCloseOfAWaitedDescriptor) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r_old = -2, r_dup = -2, r_new = -2;
  int e_old = 0, e_dup = 0, e_new = 0;
  int number = p.a;
  in_two_fibers(
      [&] {
        char c;
        r_old = ::read(number, &c, 1);
        e_old = errno;
      },
      [&] {
        ::usleep(10000);
        const int d = ::dup(p.a);
        ::close(p.a);
        p.a = -1;
        std::thread t([&] {
          std::this_thread::sleep_for(20ms);
          ::write(p.b, "d", 1);
        });
        char c;
        r_dup = ::read(d, &c, 1);
        e_dup = errno;
        t.join();
        // A new socket on the old number.
        int fds[2];
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
        ::dup2(fds[0], number);
        if (fds[0] != number) ::close(fds[0]);
        std::thread t2([&] {
          std::this_thread::sleep_for(20ms);
          ::write(fds[1], "n", 1);
          std::this_thread::sleep_for(20ms);
          ::write(p.b, "x", 1);  // readiness of the old file, now only behind d
        });
        r_new = ::read(number, &c, 1);
        e_new = errno;
        t2.join();
        ::close(number);
        ::close(fds[1]);
        ::close(d);
      });
  EXPECT_EQ(r_old, -1);
  EXPECT_EQ(e_old, EBADF);
  EXPECT_EQ(r_dup, 1) << std::strerror(e_dup);
  EXPECT_EQ(r_new, 1) << std::strerror(e_new);
}

// SO_RCVTIMEO is honoured by every receiving call.
TEST_P(FiberHooksAttack, ReceiveTimeoutForEveryReceivingCall) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  timeval tv{0, 30 * 1000};
  ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  struct row {
    const char* name;
    long ret;
    int err;
    std::chrono::steady_clock::duration took;
  };
  std::vector<row> rows;
  in_fiber([&] {
    char buf[4];
    iovec iov{buf, sizeof buf};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    const auto one = [&](const char* name, const std::function<long()>& call) {
      const auto t0 = std::chrono::steady_clock::now();
      const long r = call();
      const int e = errno;
      rows.push_back({name, r, e, std::chrono::steady_clock::now() - t0});
    };
    one("read", [&] { return static_cast<long>(::read(p.a, buf, sizeof buf)); });
    one("readv", [&] { return static_cast<long>(::readv(p.a, &iov, 1)); });
    one("recvfrom", [&] { return static_cast<long>(::recvfrom(p.a, buf, sizeof buf, 0, nullptr, nullptr)); });
    one("recvmsg", [&] { return static_cast<long>(::recvmsg(p.a, &m, 0)); });
    one("recv MSG_WAITALL", [&] { return static_cast<long>(::recv(p.a, buf, sizeof buf, MSG_WAITALL)); });
  });
  for (const auto& r : rows) {
    EXPECT_EQ(r.ret, -1) << r.name;
    EXPECT_EQ(r.err, EAGAIN) << r.name << ": " << std::strerror(r.err);
    EXPECT_GE(r.took, 25ms) << r.name;
  }
}

// A fiber blocked reading a socket and another blocked writing the same socket.
TEST_P(FiberHooksAttack, ReaderAndWriterBlockedOnOneSocket) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ::fcntl(p.a, F_SETFL, O_NONBLOCK);
  std::vector<char> big(1 << 20, 'x');
  std::size_t prefilled = 0;
  for (;;) {
    const ssize_t n = ::write(p.a, big.data(), big.size());
    if (n <= 0) break;
    prefilled += static_cast<std::size_t>(n);
  }
  ::fcntl(p.a, F_SETFL, 0);
  ssize_t r = -2, w = -2;
  std::thread peer([&] {
    std::this_thread::sleep_for(20ms);
    ::write(p.b, "r", 1);
    std::this_thread::sleep_for(20ms);
    std::vector<char> buf(1 << 16);
    std::size_t got = 0;
    while (got < prefilled + 1000) {
      const ssize_t n = ::read(p.b, buf.data(), buf.size());
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
  });
  in_two_fibers(
      [&] {
        char c;
        r = ::read(p.a, &c, 1);
      },
      [&] { w = ::write(p.a, big.data(), 1000); });
  peer.join();
  EXPECT_EQ(r, 1);
  EXPECT_EQ(w, 1000);
}

// A non-blocking connect that is refused, then waited for with poll: POLLOUT with
// POLLERR/POLLHUP and SO_ERROR ECONNREFUSED, as libc reports.
TEST_P(FiberHooksAttack, NonBlockingConnectThenPoll) {
  const sockaddr_in a = refused_address();
  tcp_listener l;
  int rc_refused = -2, err_refused = 0, so_error = -1, pr = -2;
  short revents = 0;
  int rc_ok = -2, so_ok = -1;
  in_fiber([&] {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    rc_refused = ::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    err_refused = errno;
    pollfd pf{c, POLLOUT, 0};
    pr = ::poll(&pf, 1, 5000);
    revents = pf.revents;
    socklen_t len = sizeof so_error;
    ::getsockopt(c, SOL_SOCKET, SO_ERROR, &so_error, &len);
    ::close(c);
    const int c2 = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    rc_ok = ::connect(c2, l.sa(), sizeof l.addr);
    pollfd pf2{c2, POLLOUT, 0};
    ::poll(&pf2, 1, 5000);
    len = sizeof so_ok;
    ::getsockopt(c2, SOL_SOCKET, SO_ERROR, &so_ok, &len);
    ::close(c2);
  });
  if (rc_refused == -1 && err_refused == EINPROGRESS) {
    EXPECT_EQ(pr, 1);
    EXPECT_NE(revents & (POLLERR | POLLHUP), 0) << revents;
    EXPECT_EQ(so_error, ECONNREFUSED);
  } else {
    EXPECT_EQ(rc_refused, -1);
    EXPECT_EQ(err_refused, ECONNREFUSED);
  }
  EXPECT_TRUE(rc_ok == 0 || rc_ok == -1);
  EXPECT_EQ(so_ok, 0);
}

// poll of a listening socket waits for a connection.
TEST_P(FiberHooksAttack, PollOfAListenerWaitsForAConnection) {
  tcp_listener l;
  int pr = -2;
  short revents = 0;
  int accepted = -2;
  in_two_fibers(
      [&] {
        pollfd pf{l.fd, POLLIN, 0};
        pr = ::poll(&pf, 1, 5000);
        revents = pf.revents;
        accepted = ::accept(l.fd, nullptr, nullptr);
        if (accepted >= 0) ::close(accepted);
      },
      [&] {
        ::usleep(10000);
        const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ::connect(c, l.sa(), sizeof l.addr);
        ::usleep(10000);
        ::close(c);
      });
  EXPECT_EQ(pr, 1);
  EXPECT_EQ(revents, POLLIN);
  EXPECT_GE(accepted, 0);
}

// A connected loopback TCP pair.
struct tcp_pair {
  int a = -1, b = -1;
  tcp_pair() {
    tcp_listener l;
    a = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ::connect(a, l.sa(), sizeof l.addr);
    b = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ~tcp_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

// A listener closed by another fiber while a fiber waits in accept: EBADF.
TEST_P(FiberHooksAttack, CloseOfAListenerAFiberAcceptsOn) {
  tcp_listener l;
  int r = -2, err = 0;
  in_two_fibers(
      [&] {
        r = ::accept(l.fd, nullptr, nullptr);
        err = errno;
      },
      [&] {
        ::usleep(10000);
        ::close(l.fd);
        l.fd = -1;
      });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF) << std::strerror(err);
}

// poll for POLLPRI waits for urgent data; poll for POLLRDHUP waits for the peer's
// shutdown.
TEST_P(FiberHooksAttack, PollForUrgentDataAndForPeerShutdown) {
  tcp_pair t;
  ASSERT_GE(t.b, 0);
  int pr1 = -2, pr2 = -2;
  short re1 = 0, re2 = 0;
  in_two_fibers(
      [&] {
        pollfd pf{t.a, POLLPRI, 0};
        pr1 = ::poll(&pf, 1, 3000);
        re1 = pf.revents;
        char c;
        ::recv(t.a, &c, 1, MSG_OOB);
        pollfd pf2{t.a, POLLRDHUP, 0};
        pr2 = ::poll(&pf2, 1, 3000);
        re2 = pf2.revents;
      },
      [&] {
        ::usleep(10000);
        ::send(t.b, "u", 1, MSG_OOB);
        ::usleep(20000);
        ::shutdown(t.b, SHUT_WR);
      });
  EXPECT_EQ(pr1, 1);
  EXPECT_EQ(re1, POLLPRI);
  EXPECT_EQ(pr2, 1);
  EXPECT_EQ(re2, POLLRDHUP);
}

// A receive waiting when the peer resets the connection fails with ECONNRESET.
TEST_P(FiberHooksAttack, ResetWhileWaitingGivesEconnreset) {
  tcp_pair t;
  ASSERT_GE(t.b, 0);
  ssize_t r = -2;
  int err = 0;
  in_two_fibers(
      [&] {
        char c;
        r = ::recv(t.a, &c, 1, 0);
        err = errno;
      },
      [&] {
        ::usleep(10000);
        linger lg{1, 0};
        ::setsockopt(t.b, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        ::close(t.b);
        t.b = -1;
      });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, ECONNRESET) << std::strerror(err);
}

// recv(MSG_OOB) without urgent data fails at once with EINVAL, as libc's does.
TEST_P(FiberHooksAttack, OutOfBandReceiveWithoutUrgentData) {
  tcp_pair t;
  ASSERT_GE(t.b, 0);
  char c;
  errno = 0;
  const ssize_t libc_r = ::recv(t.a, &c, 1, MSG_OOB);
  const int libc_err = errno;
  ssize_t r = -2;
  int err = 0;
  in_fiber(
      [&] {
        r = ::recv(t.a, &c, 1, MSG_OOB);
        err = errno;
      },
      3s);
  EXPECT_EQ(r, libc_r);
  EXPECT_EQ(err, libc_err) << std::strerror(err);
}

// A mode the program sets on a pipe while a fiber waits in read on it is the mode the
// pipe has after the read: the hooks never change it for good.
TEST_P(FiberHooksAttack, ModeSetByTheProgramDuringAWaitIsKept) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  ssize_t n = -2;
  int flags_after = -1;
  in_two_fibers(
      [&] {
        char c;
        n = ::read(p.r, &c, 1);
        flags_after = ::fcntl(p.r, F_GETFL);
      },
      [&] {
        ::usleep(10000);
        ::fcntl(p.r, F_SETFL, ::fcntl(p.r, F_GETFL) | O_NONBLOCK);
        ::usleep(10000);
        ::write(p.w, "x", 1);
      });
  EXPECT_EQ(n, 1);
  EXPECT_NE(flags_after & O_NONBLOCK, 0) << "the program set O_NONBLOCK while the read waited; it was cleared";
  EXPECT_NE(::fcntl(p.r, F_GETFL) & O_NONBLOCK, 0);
}

// Reads of an eventfd and of a pseudo-terminal wait through the loop.
TEST_P(FiberHooksAttack, EventfdAndPtyReadsWait) {
  const int efd = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  int slave = -1;
  if (master >= 0 && ::grantpt(master) == 0 && ::unlockpt(master) == 0) {
    const char* name = ::ptsname(master);
    if (name != nullptr) slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  }
  ssize_t en = -2, pn = -2;
  std::uint64_t value = 0;
  in_two_fibers(
      [&] {
        en = ::read(efd, &value, sizeof value);
        if (master >= 0) {
          char buf[16];
          pn = ::read(master, buf, sizeof buf);
        }
      },
      [&] {
        ::usleep(10000);
        const std::uint64_t one = 5;
        ::write(efd, &one, sizeof one);
        ::usleep(10000);
        if (slave >= 0) ::write(slave, "tty\n", 4);
      });
  EXPECT_EQ(en, 8);
  EXPECT_EQ(value, 5u);
  if (slave >= 0) {
    EXPECT_GT(pn, 0);
  }
  ::close(efd);
  if (slave >= 0) ::close(slave);
  if (master >= 0) ::close(master);
}

// A Unix listener in a temporary directory whose backlog is full: a blocking connect
// to `addr` waits (there is no readiness to wait for; the hooks look again every
// millisecond).
struct full_unix_backlog {
  char dir[32] = "/tmp/ringio-hook-attack-XXXXXX";
  std::string path;
  sockaddr_un addr{};
  int listener = -1;
  std::vector<int> fillers;
  full_unix_backlog() {
    if (::mkdtemp(dir) == nullptr) return;
    path = std::string(dir) + "/s";
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 0) != 0) {
      ::close(listener);
      listener = -1;
      return;
    }
    for (int i = 0; i < 64; ++i) {
      const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(c);
        break;
      }
      fillers.push_back(c);
    }
  }
  ~full_unix_backlog() {
    for (int f : fillers) ::close(f);
    if (listener >= 0) ::close(listener);
    if (!path.empty()) ::unlink(path.c_str());
    ::rmdir(dir);
  }
  full_unix_backlog(const full_unix_backlog&) = delete;
  full_unix_backlog& operator=(const full_unix_backlog&) = delete;
  /// A blocking connect from a new socket: its result and errno (and the socket's mode).
  int connect(int& err, int* flags = nullptr) const {
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int r = ::connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    err = errno;
    if (flags != nullptr) *flags = ::fcntl(c, F_GETFL);
    ::close(c);
    return r;
  }
};

// A stop of a fiber waiting in a blocking connect (a Unix listener's backlog is full):
// EINTR.
TEST_P(FiberHooksAttack, StopInterruptsAWaitingConnect) {
  full_unix_backlog full;
  ASSERT_GE(full.listener, 0);
  int r = -2, err = 0;
  int flags = -1;
  stopped_after(20ms, [&] { r = full.connect(err, &flags); });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EINTR) << std::strerror(err);
  EXPECT_EQ(flags & O_NONBLOCK, 0) << "the socket's mode after a stopped connect";
}

// The same many times, the stop timed to land together with one of the connect's
// millisecond retries (both timers expire in one pass of the loop): a stop that comes
// while the call is under way is EINTR whichever of its waits finds it.
TEST_P(FiberHooksAttack, StopLandingWithARetryOfAWaitingConnectIsEintr) {
  full_unix_backlog full;
  ASSERT_GE(full.listener, 0);
  for (int round = 0; round < 40; ++round) {
    int r = -2, err = 0;
    stopped_after(std::chrono::milliseconds(2 + round % 5), [&] { r = full.connect(err); });
    EXPECT_EQ(r, -1) << "round " << round;
    EXPECT_EQ(err, EINTR) << "round " << round << ": " << std::strerror(err);
  }
}

// io_context::stop() (not its destruction) while a fiber waits in a hooked read: the
// read goes on waiting and completes when the loop runs again.
TEST_P(FiberHooksAttack, LoopStoppedAndRunAgainResumesTheHookedCall) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2;
  int err = 0;
  bool done = false;
  {
    io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
    spawn_fiber(
        ctx,
        [&] {
          char c;
          r = ::read(p.a, &c, 1);
          err = errno;
          done = true;
        },
        hook_stack);
    run_for(ctx, 10ms);
    EXPECT_FALSE(done);
    ::write(p.b, "x", 1);
    run_for(ctx, 50ms);
    EXPECT_TRUE(done);
  }
  EXPECT_EQ(r, 1) << std::strerror(err);
}

// Sleeps last at least as long as asked, by every clock and form.
TEST_P(FiberHooksAttack, SleepsLastAtLeastTheirTime) {
  std::vector<std::pair<const char*, std::chrono::steady_clock::duration>> took;
  in_fiber([&] {
    const auto time = [&](const char* name, const std::function<void()>& f) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      took.emplace_back(name, std::chrono::steady_clock::now() - t0);
    };
    time("usleep", [] { ::usleep(30000); });
    time("nanosleep", [] {
      timespec ts{0, 30000000};
      ::nanosleep(&ts, nullptr);
    });
    time("clock_nanosleep realtime absolute", [] {
      timespec now{};
      ::clock_gettime(CLOCK_REALTIME, &now);
      now.tv_nsec += 30000000;
      if (now.tv_nsec >= 1000000000) {
        now.tv_nsec -= 1000000000;
        ++now.tv_sec;
      }
      ::clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &now, nullptr);
    });
    time("clock_nanosleep boottime", [] {
      timespec ts{0, 30000000};
      ::clock_nanosleep(CLOCK_BOOTTIME, 0, &ts, nullptr);
    });
    time("sleep(1)", [] { ::sleep(1); });
    time("poll(NULL, 0, 30)", [] { ::poll(nullptr, 0, 30); });
  });
  ASSERT_EQ(took.size(), 6u);
  for (const auto& [name, d] : took) EXPECT_GE(d, std::string(name) == "sleep(1)" ? 995ms : 29ms) << name;
}

// A partial write to a pipe the program made non-blocking succeeds with a count and
// leaves errno alone, as libc's does.
TEST_P(FiberHooksAttack, PartialWriteToANonBlockingPipeLeavesErrnoAlone) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  ::fcntl(p.w, F_SETFL, O_NONBLOCK);
  std::vector<char> big(1 << 20, 'x');
  while (::write(p.w, big.data(), big.size()) > 0) {
  }
  char drain[8192];
  ASSERT_GT(::read(p.r, drain, sizeof drain), 0);
  ssize_t n = -2;
  int err = 0;
  in_fiber(
      [&] {
        errno = untouched;
        n = ::write(p.w, big.data(), 65536);
        err = errno;
      },
      3s);
  EXPECT_GT(n, 0);
  EXPECT_EQ(err, untouched) << "a successful write set errno to " << std::strerror(err);
}

// MSG_WAITALL on datagram and seqpacket sockets: libc returns one message; it does not
// gather several into the buffer.
TEST_P(FiberHooksAttack, WaitallOnMessageSocketsReturnsOneMessage) {
  for (int type : {SOCK_DGRAM, SOCK_SEQPACKET}) {
    SCOPED_TRACE(type == SOCK_DGRAM ? "SOCK_DGRAM" : "SOCK_SEQPACKET");
    fd_pair p(type);
    ASSERT_GE(p.a, 0);
    ssize_t n = -2;
    std::string got;
    in_two_fibers(
        [&] {
          char buf[10];
          n = ::recv(p.a, buf, sizeof buf, MSG_WAITALL);
          if (n > 0) got.assign(buf, static_cast<std::size_t>(n));
        },
        [&] {
          ::usleep(10000);
          ::send(p.b, "ab", 2, 0);
          ::usleep(10000);
          ::send(p.b, "cd", 2, 0);
        },
        3s);
    EXPECT_EQ(n, 2);
    EXPECT_EQ(got, "ab");
  }
}

// MSG_WAITALL|MSG_PEEK waits until the whole buffer is there and leaves it there.
TEST_P(FiberHooksAttack, WaitallPeekPeeksTheWholeBuffer) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t n = -2, m = -2;
  std::string peeked, got;
  in_two_fibers(
      [&] {
        char buf[3];
        n = ::recv(p.a, buf, sizeof buf, MSG_WAITALL | MSG_PEEK);
        if (n > 0) peeked.assign(buf, static_cast<std::size_t>(n));
        char all[8];
        m = ::recv(p.a, all, sizeof all, MSG_DONTWAIT);
        if (m > 0) got.assign(all, static_cast<std::size_t>(m));
      },
      [&] {
        ::usleep(10000);
        ::write(p.b, "a", 1);
        ::usleep(10000);
        ::write(p.b, "bc", 2);
      });
  EXPECT_EQ(n, 3);
  EXPECT_EQ(peeked, "abc");
  EXPECT_EQ(got, "abc") << "the peeked bytes stay in the socket";
}

// A blocking send of one datagram that has to wait for room: one datagram, whole.
TEST_P(FiberHooksAttack, DatagramSendThatWaitsSendsOneDatagram) {
  fd_pair p(SOCK_DGRAM);
  ASSERT_GE(p.a, 0);
  int queued = 0;
  while (::send(p.a, "q", 1, MSG_DONTWAIT) == 1) ++queued;
  ssize_t n = -2;
  int err = 0;
  std::vector<ssize_t> sizes;
  in_two_fibers(
      [&] {
        std::string d(1000, 'd');
        n = ::send(p.a, d.data(), d.size(), 0);
        err = errno;
      },
      [&] {
        ::usleep(10000);
        char buf[2000];
        for (int i = 0; i < queued + 1; ++i) {
          const ssize_t r = ::recv(p.b, buf, sizeof buf, 0);
          if (r <= 0) break;
          if (r != 1) sizes.push_back(r);
        }
      });
  EXPECT_EQ(n, 1000) << std::strerror(err);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0], 1000);
}

// The losing branch of when_any is a fiber in a hooked read: the read fails with
// EINTR and when_any completes.
TEST_P(FiberHooksAttack, LosingWhenAnyBranchInterruptsTheHookedCall) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2;
  int err = 0;
  run([](fd_pair& p, ssize_t& r, int& err) -> task<void> {
    auto reader = [&] {
      char c;
      r = ::read(p.a, &c, 1);
      err = errno;
    };
    auto timer = []() -> task<void> { (void)co_await sleep_for(20ms); };
    (void)co_await when_any(fiber(reader, hook_stack), timer());
  }(p, r, err));
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EINTR) << std::strerror(err);
}

// A stop of a MSG_WAITALL receive that already got bytes returns them, as a signal does.
TEST_P(FiberHooksAttack, StoppedWaitallReceiveReturnsTheBytesReceived) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ::write(p.b, "ab", 2);
  ssize_t n = -2;
  int err = 0;
  stopped_after(20ms, [&] {
    char buf[10];
    n = ::recv(p.a, buf, sizeof buf, MSG_WAITALL);
    err = errno;
  });
  EXPECT_EQ(n, 2) << std::strerror(err);
}

// SO_RCVTIMEO bounds a MSG_WAITALL receive as a whole while bytes keep trickling in.
TEST_P(FiberHooksAttack, ReceiveTimeoutBoundsATricklingWaitallReceive) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  timeval tv{0, 60 * 1000};
  ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  ssize_t n = -2;
  std::chrono::steady_clock::duration took{};
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    for (int i = 0; i < 100 && !done.load(); ++i) {
      std::this_thread::sleep_for(15ms);
      ::write(p.b, "t", 1);
    }
  });
  in_fiber([&] {
    char buf[100];
    const auto t0 = std::chrono::steady_clock::now();
    n = ::recv(p.a, buf, sizeof buf, MSG_WAITALL);
    took = std::chrono::steady_clock::now() - t0;
  });
  done = true;
  trickle.join();
  EXPECT_GT(n, 0);
  EXPECT_LT(n, 100);
  EXPECT_LT(took, 1s) << "the deadline of the whole call is 60 ms";
}

// ---- scale ----

TEST_P(FiberHooksAttack, ThousandFibersPingPongOnSocketpairs) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 4200) {
    rlimit raised = rl;
    raised.rlim_cur = std::min<rlim_t>(rl.rlim_max, 8192);
    ::setrlimit(RLIMIT_NOFILE, &raised);
  }
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  if (now.rlim_cur < 2200) GTEST_SKIP() << "RLIMIT_NOFILE " << now.rlim_cur << " is below 2,200 descriptors";
#if defined(__SANITIZE_THREAD__)
  const int fibers = 200;
#else
  const int fibers = 1000;
#endif
  std::vector<std::unique_ptr<fd_pair>> pairs;
  for (int i = 0; i < fibers; ++i) pairs.push_back(std::make_unique<fd_pair>());
  std::atomic<int> ok{0};
  run([](std::vector<std::unique_ptr<fd_pair>>& pairs, std::atomic<int>& ok) -> task<void> {
    scope s;
    const fiber_options small{.stack_size = 64 * 1024 * stack_scale};
    for (auto& pp : pairs) {
      fd_pair* p = pp.get();
      spawn_fiber(
          s,
          [p, &ok] {
            char buf[32];
            int good = 0;
            for (int i = 0; i < 10; ++i) {
              if (::recv(p->b, buf, 4, MSG_WAITALL) != 4) break;
              if (::send(p->b, buf, 4, 0) != 4) break;
              ++good;
            }
            if (good == 10) ++ok;
          },
          small);
      spawn_fiber(
          s,
          [p, &ok] {
            char buf[32];
            int good = 0;
            for (int i = 0; i < 10; ++i) {
              if (::write(p->a, "ping", 4) != 4) break;
              if (::read(p->a, buf, 4) != 4) break;
              if (std::memcmp(buf, "ping", 4) != 0) break;
              ++good;
            }
            if (good == 10) ++ok;
          },
          small);
    }
    co_await s.join();
  }(pairs, ok));
  EXPECT_EQ(ok.load(), 2 * fibers);
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

// ---- signals ----

// A signal delivered to the loop's thread while a fiber waits in a hooked read: the
// loop survives, and the read either fails with EINTR (the handler has no SA_RESTART)
// or returns the data that comes later; it never fails otherwise or loses the byte.
TEST_P(FiberHooksAttack, SignalDuringAHookedWait) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = count_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGUSR1, &sa, &old);
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2;
  int err = 0;
  ssize_t after = -2;
  const pthread_t loop_thread = ::pthread_self();
  std::thread signaller([&] {
    std::this_thread::sleep_for(20ms);
    ::pthread_kill(loop_thread, SIGUSR1);
    std::this_thread::sleep_for(20ms);
    ::write(p.b, "x", 1);
  });
  in_fiber([&] {
    char c;
    r = ::read(p.a, &c, 1);
    err = errno;
    if (r == -1 && err == EINTR) after = ::read(p.a, &c, 1);
  });
  signaller.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(r == 1 || (r == -1 && err == EINTR && after == 1)) << r << " " << std::strerror(err) << " " << after;
  EXPECT_GE(sigusr1s.load(), 1);
}

// ---- threads ----

// Plain threads making hooked calls at the same moment, from the first call of the
// process on: libc's results.
TEST(FiberHooksAttackThreads, PlainThreadsRacingTheFirstHookedCalls) {
  constexpr int threads = 8;
  std::atomic<int> go{0};
  std::atomic<int> good{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&] {
      fd_pair p;
      go.fetch_add(1);
      while (go.load() < threads) {
      }
      char c = 0;
      pollfd pf{p.b, POLLIN, 0};
      timespec ts0{0, 1000};
      if (::write(p.a, "x", 1) == 1 && ::poll(&pf, 1, 1000) == 1 && ::read(p.b, &c, 1) == 1 && c == 'x' &&
          ::send(p.b, "y", 1, 0) == 1 && ::recv(p.a, &c, 1, 0) == 1 && c == 'y' && ::nanosleep(&ts0, nullptr) == 0)
        good.fetch_add(1);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(good.load(), threads);
}

// Fibers on two loops of two threads, each pinging a plain thread, at once.
TEST(FiberHooksAttackThreads, FibersOnTwoLoopsAndPlainThreadsAtOnce) {
  if (!hooks_present()) GTEST_SKIP() << "the hooks are neither linked in nor preloaded";
  constexpr int loops = 2;
  constexpr int per_loop = 20;
  std::atomic<int> good{0};
  std::vector<std::thread> ts;
  std::vector<std::unique_ptr<fd_pair>> pairs;
  for (int i = 0; i < loops * per_loop; ++i) pairs.push_back(std::make_unique<fd_pair>());
  // Plain threads answering the fibers with blocking calls.
  for (int l = 0; l < loops; ++l)
    ts.emplace_back([&, l] {
      for (int round = 0; round < 20; ++round)
        for (int i = 0; i < per_loop; ++i) {
          fd_pair& p = *pairs[static_cast<std::size_t>(l * per_loop + i)];
          char c;
          if (::read(p.b, &c, 1) == 1) ::write(p.b, &c, 1);
        }
    });
  for (int l = 0; l < loops; ++l)
    ts.emplace_back([&, l] {
      io_context ctx(io_context_options{.quiet = true});
      sync_wait(ctx, [](std::vector<std::unique_ptr<fd_pair>>& pairs, int l, std::atomic<int>& good) -> task<void> {
        scope s;
        for (int i = 0; i < per_loop; ++i) {
          fd_pair* p = pairs[static_cast<std::size_t>(l * per_loop + i)].get();
          spawn_fiber(
              s,
              [p, &good] {
                int ok = 0;
                for (int round = 0; round < 20; ++round) {
                  char c = 'a';
                  if (::write(p->a, &c, 1) != 1) break;
                  if (::read(p->a, &c, 1) != 1) break;
                  ++ok;
                }
                if (ok == 20) ++good;
              },
              hook_stack);
        }
        co_await s.join();
      }(pairs, l, good));
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(good.load(), loops * per_loop);
}

// A task (not a fiber) on the loop's thread calling a hooked name gets libc's call.
TEST_P(FiberHooksAttack, TaskOnTheLoopThreadGetsLibc) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ::write(p.b, "abc", 3);
  ssize_t n = -2;
  int e = 0;
  run([](fd_pair& p, ssize_t& n, int& e) -> task<void> {
    char buf[8];
    errno = untouched;
    n = ::read(p.a, buf, sizeof buf);
    e = errno;
    co_return;
  }(p, n, e));
  EXPECT_EQ(n, 3);
  EXPECT_EQ(e, untouched);
}

// ---- vectors ----

TEST_P(FiberHooksAttack, WritevOfManyIovecsToASlowReaderSendsEverything) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  constexpr int count = 1024;
  constexpr std::size_t each = 4096;
  ssize_t written = -2;
  std::size_t received = 0;
  bool in_order = true;
  in_two_fibers(
      [&] {
        std::vector<std::string> parts;
        std::vector<iovec> iov;
        for (int i = 0; i < count; ++i) parts.emplace_back(each, static_cast<char>('a' + i % 26));
        for (auto& s : parts) iov.push_back({s.data(), s.size()});
        written = ::writev(p.a, iov.data(), count);
        ::shutdown(p.a, SHUT_WR);
      },
      [&] {
        std::vector<char> buf(3000);
        for (;;) {
          const ssize_t n = ::read(p.b, buf.data(), buf.size());
          if (n <= 0) break;
          for (ssize_t i = 0; i < n; ++i)
            if (buf[static_cast<std::size_t>(i)] != static_cast<char>('a' + ((received + i) / each) % 26))
              in_order = false;
          received += static_cast<std::size_t>(n);
        }
      });
  EXPECT_EQ(written, static_cast<ssize_t>(count * each)) << "a blocking writev sends everything";
  EXPECT_EQ(received, static_cast<std::size_t>(written > 0 ? written : 0));
  EXPECT_TRUE(in_order);
}

TEST_P(FiberHooksAttack, WritevOnAPipeWithManyIovecs) {
  pipe_pair p;
  ASSERT_GE(p.r, 0);
  constexpr int count = 300;
  constexpr std::size_t each = 1000;
  ssize_t written = -2;
  std::size_t received = 0;
  in_two_fibers(
      [&] {
        std::string s(each * count, 'q');
        std::vector<iovec> iov;
        for (int i = 0; i < count; ++i) iov.push_back({s.data() + i * each, each});
        written = ::writev(p.w, iov.data(), count);
        ::close(p.w);
        p.w = -1;
      },
      [&] {
        std::vector<char> buf(777);
        std::vector<iovec> iov;
        for (std::size_t i = 0; i < buf.size(); ++i) iov.push_back({&buf[i], 1});
        for (;;) {
          const ssize_t n = ::readv(p.r, iov.data(), static_cast<int>(iov.size()));
          if (n <= 0) break;
          received += static_cast<std::size_t>(n);
        }
      });
  EXPECT_EQ(written, static_cast<ssize_t>(count * each));
  EXPECT_EQ(received, count * each);
}

// A descriptor received with SCM_RIGHTS in a recvmsg that had to wait.
TEST_P(FiberHooksAttack, RecvmsgWaitsForADescriptor) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t n = -2;
  std::uint64_t value = 0;
  int flags = -1;
  in_two_fibers(
      [&] {
        char y = 0;
        iovec riov{&y, 1};
        alignas(cmsghdr) char rctl[CMSG_SPACE(sizeof(int))] = {};
        msghdr rm{};
        rm.msg_iov = &riov;
        rm.msg_iovlen = 1;
        rm.msg_control = rctl;
        rm.msg_controllen = sizeof rctl;
        n = ::recvmsg(p.a, &rm, 0);
        flags = rm.msg_flags;
        cmsghdr* rc = CMSG_FIRSTHDR(&rm);
        if (rc != nullptr && rc->cmsg_type == SCM_RIGHTS) {
          int got = -1;
          std::memcpy(&got, CMSG_DATA(rc), sizeof got);
          if (::read(got, &value, sizeof value) != sizeof value) value = 0;
          ::close(got);
        }
      },
      [&] {
        ::usleep(10000);
        int passed = ::eventfd(9, EFD_CLOEXEC);
        char x = 'x';
        iovec iov{&x, 1};
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
        ::sendmsg(p.b, &m, 0);
        ::close(passed);
      });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(flags, 0);
  EXPECT_EQ(value, 9u);
}

// A datagram socket: a recv that waits gets one whole datagram, MSG_TRUNC its length.
TEST_P(FiberHooksAttack, DatagramReceiveThatWaitsKeepsBoundaries) {
  fd_pair p(SOCK_DGRAM);
  ASSERT_GE(p.a, 0);
  ssize_t n1 = -2, n2 = -2;
  in_two_fibers(
      [&] {
        char buf[4];
        n1 = ::recv(p.a, buf, sizeof buf, MSG_TRUNC);
        n2 = ::recv(p.a, buf, sizeof buf, 0);
      },
      [&] {
        ::usleep(10000);
        ::send(p.b, "0123456789", 10, 0);
        ::send(p.b, "ab", 2, 0);
      });
  EXPECT_EQ(n1, 10);
  EXPECT_EQ(n2, 2);
}

RINGIO_ALL_BACKENDS(FiberHooksAttack);

}  // namespace
