// SPDX-License-Identifier: Apache-2.0
// The system-call hooks held to their promises where a blocking receive or accept
// waits: on the io_uring backend such a call is one io_uring request (the kernel waits
// and copies), elsewhere a readiness wait. On every backend: no byte and no connection
// is lost when a stop, a timeout or a close races the data's arrival; a closed
// descriptor is really closed (its peer sees the end, its port is free) and its number
// can be reused at once; a call that failed never writes into its buffer later;
// accept4's flags and the peer's address are applied as libc applies them; the loop's
// destruction leaks no descriptor.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
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

#if defined(__SANITIZE_THREAD__)
constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#else
constexpr bool under_tsan = false;
#endif

constexpr int untouched = 4242;

unsigned seed_from_env(const char* what) {
  const char* s = std::getenv("RINGIO_TEST_SEED");
  const unsigned seed = s != nullptr ? static_cast<unsigned>(std::strtoul(s, nullptr, 10)) : std::random_device{}();
  std::printf("%s: seed %u (RINGIO_TEST_SEED=%u repeats it)\n", what, seed, seed);
  return seed;
}

// The number of open descriptors of this process.
int open_descriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory's own descriptor
}

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
  fd_pair(const fd_pair&) = delete;
  fd_pair& operator=(const fd_pair&) = delete;
};

// A loopback TCP listener on a free port.
struct tcp_listener {
  int fd = -1;
  sockaddr_in addr{};
  explicit tcp_listener(int backlog = 16, std::uint32_t host = INADDR_LOOPBACK) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(host);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, backlog);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  }
  ~tcp_listener() {
    if (fd >= 0) ::close(fd);
  }
  tcp_listener(const tcp_listener&) = delete;
  tcp_listener& operator=(const tcp_listener&) = delete;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

// A blocking loopback connection to `l` (libc's connect when called outside a fiber).
int connect_to(const tcp_listener& l) {
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(c, l.sa(), sizeof l.addr) != 0) {
    ::close(c);
    return -1;
  }
  return c;
}

// A connection waiting in the queue of listener `l`, or -1 (EAGAIN) at once.
int accept_queued(int l) {
  const int flags = ::fcntl(l, F_GETFL);
  ::fcntl(l, F_SETFL, flags | O_NONBLOCK);
  const int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  const int err = errno;
  ::fcntl(l, F_SETFL, flags);
  errno = err;
  return c;
}

// A connected loopback TCP pair.
struct tcp_pair {
  int a = -1, b = -1;
  tcp_pair() {
    tcp_listener l;
    a = connect_to(l);
    b = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ~tcp_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
  tcp_pair(const tcp_pair&) = delete;
  tcp_pair& operator=(const tcp_pair&) = delete;
};

// Runs `fn` on a plain thread after `delay` (libc's calls there); joined when destroyed.
struct later {
  std::thread t;
  later(std::chrono::milliseconds delay, std::function<void()> fn)
      : t([delay, fn = std::move(fn)] {
          std::this_thread::sleep_for(delay);
          fn();
        }) {}
  ~later() { t.join(); }
  later(const later&) = delete;
  later& operator=(const later&) = delete;
};

// An accept's result without the descriptor's number (which differs between runs).
std::string fd_text(long r, int e) {
  if (r >= 0) return std::string("a descriptor, errno ") + (e == untouched ? "untouched" : std::strerror(e));
  return "ret " + std::to_string(r) + " errno " + (e == untouched ? std::string("untouched") : std::strerror(e));
}

std::string err_text(long r, int e) {
  return "ret " + std::to_string(r) + " errno " + (e == untouched ? std::string("untouched") : std::strerror(e));
}

bool drain_until(int fd, std::string& got, std::size_t want, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (got.size() < want && std::chrono::steady_clock::now() < end) {
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    else if (n == 0) break;
    else std::this_thread::sleep_for(1ms);
  }
  return got.size() >= want;
}

class FiberHooksRingAttack : public hooks_attack_test {
 protected:
  // Runs `victim` as a fiber of a scope of its own and `stopper` as a fiber of another;
  // `stopper` gets the victim's scope to stop.
  void victim_and_stopper(const std::function<void()>& victim, const std::function<void(scope&)>& stopper) {
    run([](const std::function<void()>& victim, const std::function<void(scope&)>& stopper) -> task<void> {
      scope v;
      scope st;
      spawn_fiber(
          v, [&victim] { victim(); }, hook_stack);
      spawn_fiber(
          st, [&stopper, &v] { stopper(v); }, hook_stack);
      scope w;
      w.spawn([](scope& v, scope& st) -> task<void> {
        auto slept = co_await sleep_for(10s);
        if (slept) {
          ADD_FAILURE() << "the fibers still waited after 10 s: stopped";
          v.request_stop();
          st.request_stop();
        }
      }(v, st));
      co_await st.join();
      co_await v.join();
      w.request_stop();
      co_await w.join();
    }(victim, stopper));
  }
};

// ---- a stop racing the data's arrival ----

// The stop comes in the same turn as the data: the peer's bytes are written and the
// reader's scope stopped by another fiber without the loop running in between. The
// stopped call returns the bytes or fails with EINTR; whatever it did not return is
// still in the socket, and its buffer is not written after it returned.
TEST_P(FiberHooksRingAttack, StopInTheTurnTheDataArrivesLosesNoBytes) {
  for (int round = 0; round < 20; ++round) {
    fd_pair p;
    ASSERT_GE(p.a, 0);
    char buf[8];
    std::memset(buf, 'Z', sizeof buf);
    ssize_t r = -2;
    int err = 0;
    victim_and_stopper(
        [&] {
          r = ::recv(p.a, buf, sizeof buf, 0);
          err = errno;
        },
        [&](scope& v) {
          ::usleep(2000);
          ::write(p.b, "abcd", 4);
          v.request_stop();
        });
    std::this_thread::sleep_for(5ms);
    std::string got;
    if (r > 0) got.assign(buf, static_cast<std::size_t>(r));
    if (r < 0) {
      EXPECT_EQ(err, EINTR) << std::strerror(err);
      EXPECT_EQ(std::string(buf, sizeof buf), std::string(8, 'Z')) << "the failed call's buffer was written";
    }
    drain_until(p.a, got, 4, 1s);
    EXPECT_EQ(got, "abcd") << "round " << round << ": the stopped recv gave " << err_text(r, err);
    if (got != "abcd") break;
  }
}

// The same race with the bytes written by a plain thread while another fiber of the
// loop stops the reader when its own byte arrives: the two arrivals are seconds of
// microseconds apart, in a seeded random order.
TEST_P(FiberHooksRingAttack, StopRacingArrivingDataFromAnotherThreadLosesNoBytes) {
  std::mt19937 rng(seed_from_env("StopRacingArrivingDataFromAnotherThreadLosesNoBytes"));
  const int rounds = under_tsan ? 40 : 150;
  int lost = 0, returned = 0, interrupted = 0;
  std::string first_loss;
  for (int round = 0; round < rounds && lost == 0; ++round) {
    fd_pair p, q;
    ASSERT_GE(p.a, 0);
    ASSERT_GE(q.a, 0);
    const bool data_first = (rng() & 1) != 0;
    const int gap_us = static_cast<int>(rng() % 60);
    char buf[8];
    std::memset(buf, 'Z', sizeof buf);
    ssize_t r = -2;
    int err = 0;
    std::atomic<bool> go{false};
    std::thread peer([&] {
      while (!go.load()) std::this_thread::sleep_for(100us);
      std::this_thread::sleep_for(1ms);
      const auto spin = [](int us) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
        while (std::chrono::steady_clock::now() < end) {
        }
      };
      if (data_first) {
        ::write(p.b, "abcd", 4);
        spin(gap_us);
        ::write(q.b, "s", 1);
      } else {
        ::write(q.b, "s", 1);
        spin(gap_us);
        ::write(p.b, "abcd", 4);
      }
    });
    victim_and_stopper(
        [&] {
          r = ::recv(p.a, buf, sizeof buf, 0);
          err = errno;
        },
        [&](scope& v) {
          go = true;
          char c;
          (void)::read(q.a, &c, 1);
          v.request_stop();
        });
    peer.join();
    std::this_thread::sleep_for(2ms);
    std::string got;
    if (r > 0) {
      got.assign(buf, static_cast<std::size_t>(r));
      ++returned;
    } else {
      ++interrupted;
      if (std::string(buf, sizeof buf) != std::string(8, 'Z')) {
        ++lost;
        first_loss = "round " + std::to_string(round) + ": the failed call's buffer was written";
      }
    }
    drain_until(p.a, got, 4, 1s);
    if (got != "abcd" && lost == 0) {
      ++lost;
      first_loss = "round " + std::to_string(round) + ": the stopped recv gave " + err_text(r, err) +
                   ", then the socket held \"" + got + "\"";
    }
  }
  EXPECT_EQ(lost, 0) << first_loss;
  std::printf("returned the bytes %d times, interrupted %d times\n", returned, interrupted);
}

// An accept stopped in the turn a connection arrives: the connection is not lost (the
// stopped call returns it, or the next accept gets it) and no descriptor is left open.
TEST_P(FiberHooksRingAttack, StopInTheTurnAConnectionArrivesLosesNoConnection) {
  const int before = open_descriptors();
  for (int round = 0; round < 20; ++round) {
    tcp_listener l;
    ASSERT_GE(l.fd, 0);
    int r = -2, err = 0, client = -1;
    victim_and_stopper(
        [&] {
          r = ::accept(l.fd, nullptr, nullptr);
          err = errno;
        },
        [&](scope& v) {
          ::usleep(2000);
          // A non-blocking connect to loopback: the handshake completes inside the call.
          client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
          (void)::connect(client, l.sa(), sizeof l.addr);
          v.request_stop();
        });
    if (r < 0) {
      EXPECT_EQ(err, EINTR) << std::strerror(err);
    }
    const int again = accept_queued(l.fd);
    const int again_err = errno;
    EXPECT_EQ((r >= 0 ? 1 : 0) + (again >= 0 ? 1 : 0), 1)
        << "round " << round << ": the stopped accept gave " << err_text(r, err) << ", the next accept "
        << err_text(again, again_err);
    if (r >= 0) ::close(r);
    if (again >= 0) ::close(again);
    ::close(client);
    if (HasFailure()) break;
  }
  EXPECT_EQ(open_descriptors(), before) << "descriptors left open";
}

// The same with the connection made by a plain thread, racing the stop in a seeded
// random order.
TEST_P(FiberHooksRingAttack, StopRacingAConnectionFromAnotherThreadLosesNoConnection) {
  std::mt19937 rng(seed_from_env("StopRacingAConnectionFromAnotherThreadLosesNoConnection"));
  const int rounds = under_tsan ? 40 : 150;
  const int before = open_descriptors();
  std::string first_loss;
  for (int round = 0; round < rounds && first_loss.empty(); ++round) {
    tcp_listener l;
    fd_pair q;
    ASSERT_GE(l.fd, 0);
    const bool conn_first = (rng() & 1) != 0;
    const int gap_us = static_cast<int>(rng() % 60);
    int r = -2, err = 0, client = -1;
    std::atomic<bool> go{false};
    std::thread peer([&] {
      while (!go.load()) std::this_thread::sleep_for(100us);
      std::this_thread::sleep_for(1ms);
      const auto spin = [](int us) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
        while (std::chrono::steady_clock::now() < end) {
        }
      };
      if (!conn_first) {
        ::write(q.b, "s", 1);
        spin(gap_us);
      }
      client = connect_to(l);
      if (conn_first) {
        spin(gap_us);
        ::write(q.b, "s", 1);
      }
    });
    victim_and_stopper(
        [&] {
          r = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
          err = errno;
        },
        [&](scope& v) {
          go = true;
          char c;
          (void)::read(q.a, &c, 1);
          v.request_stop();
        });
    peer.join();
    const int again = accept_queued(l.fd);
    const int again_err = errno;
    if ((r >= 0 ? 1 : 0) + (again >= 0 ? 1 : 0) != 1)
      first_loss = "round " + std::to_string(round) + ": the stopped accept gave " + err_text(r, err) +
                   ", the next accept " + err_text(again, again_err);
    if (r >= 0) ::close(r);
    if (again >= 0) ::close(again);
    if (client >= 0) ::close(client);
  }
  EXPECT_EQ(first_loss, "");
  EXPECT_EQ(open_descriptors(), before) << "descriptors left open";
}

// A call stopped or timed out with nothing received: bytes that come afterwards are
// not written into its buffer, and the next read gets them.
TEST_P(FiberHooksRingAttack, FailedReceiveNeverWritesItsBufferLater) {
  for (const bool by_timeout : {false, true}) {
    fd_pair p;
    ASSERT_GE(p.a, 0);
    if (by_timeout) {
      timeval tv{0, 20 * 1000};
      ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    }
    auto buf = std::make_unique<char[]>(16);
    std::memset(buf.get(), 'Z', 16);
    ssize_t r = -2;
    int err = 0;
    victim_and_stopper(
        [&] {
          r = ::read(p.a, buf.get(), 16);
          err = errno;
        },
        [&](scope& v) {
          ::usleep(by_timeout ? 60000 : 20000);
          if (!by_timeout) v.request_stop();
        });
    EXPECT_EQ(r, -1);
    EXPECT_EQ(err, by_timeout ? EAGAIN : EINTR) << std::strerror(err);
    ::write(p.b, "late", 4);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(std::string(buf.get(), 16), std::string(16, 'Z'))
        << (by_timeout ? "timed-out" : "stopped") << " read: its buffer was written after it failed";
    std::string got;
    drain_until(p.a, got, 4, 1s);
    EXPECT_EQ(got, "late") << (by_timeout ? "timed-out" : "stopped") << " read consumed later bytes";
  }
}

// An accept stopped or timed out with no connection: a connection that comes
// afterwards is not written into its address, and the next accept gets it.
TEST_P(FiberHooksRingAttack, FailedAcceptNeverWritesItsAddressLater) {
  const int before = open_descriptors();
  for (const bool by_timeout : {false, true}) {
    tcp_listener l;
    ASSERT_GE(l.fd, 0);
    if (by_timeout) {
      timeval tv{0, 20 * 1000};
      ASSERT_EQ(::setsockopt(l.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    }
    auto addr = std::make_unique<sockaddr_storage>();
    std::memset(addr.get(), 0xAB, sizeof *addr);
    auto len = std::make_unique<socklen_t>(sizeof(sockaddr_storage));
    int r = -2, err = 0;
    victim_and_stopper(
        [&] {
          r = ::accept4(l.fd, reinterpret_cast<sockaddr*>(addr.get()), len.get(), SOCK_CLOEXEC);
          err = errno;
        },
        [&](scope& v) {
          ::usleep(by_timeout ? 60000 : 20000);
          if (!by_timeout) v.request_stop();
        });
    EXPECT_EQ(r, -1);
    EXPECT_EQ(err, by_timeout ? EAGAIN : EINTR) << std::strerror(err);
    const int client = connect_to(l);
    std::this_thread::sleep_for(20ms);
    const auto* raw = reinterpret_cast<const unsigned char*>(addr.get());
    EXPECT_TRUE(std::all_of(raw, raw + sizeof(sockaddr_storage), [](unsigned char b) { return b == 0xAB; }))
        << (by_timeout ? "timed-out" : "stopped") << " accept: its address was written after it failed";
    EXPECT_EQ(*len, sizeof(sockaddr_storage));
    const int queued = accept_queued(l.fd);
    EXPECT_GE(queued, 0) << (by_timeout ? "timed-out" : "stopped") << " accept: the later connection was taken";
    if (queued >= 0) ::close(queued);
    ::close(client);
  }
  EXPECT_EQ(open_descriptors(), before);
}

// ---- SO_RCVTIMEO racing the arrival ----

// Data written by a plain thread at about the receive timeout's deadline: the call
// returns it or fails with EAGAIN, and then the bytes are still in the socket.
TEST_P(FiberHooksRingAttack, ReceiveTimeoutRacingArrivingDataLosesNoBytes) {
  std::mt19937 rng(seed_from_env("ReceiveTimeoutRacingArrivingDataLosesNoBytes"));
  const int rounds = under_tsan ? 30 : 100;
  std::string first_loss;
  int returned = 0, timed_out = 0;
  for (int round = 0; round < rounds && first_loss.empty(); ++round) {
    fd_pair p;
    ASSERT_GE(p.a, 0);
    timeval tv{0, 3000};
    ASSERT_EQ(::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    const auto delay = std::chrono::microseconds(2500 + static_cast<int>(rng() % 1500));
    char buf[8];
    std::memset(buf, 'Z', sizeof buf);
    ssize_t r = -2;
    int err = 0;
    std::atomic<bool> go{false};
    std::thread peer([&] {
      while (!go.load()) {
      }
      std::this_thread::sleep_for(delay);
      ::write(p.b, "abcd", 4);
    });
    in_fiber([&] {
      go = true;
      r = ::recv(p.a, buf, sizeof buf, 0);
      err = errno;
    });
    peer.join();
    std::this_thread::sleep_for(2ms);
    std::string got;
    if (r > 0) {
      ++returned;
      got.assign(buf, static_cast<std::size_t>(r));
    } else {
      ++timed_out;
      if (err != EAGAIN) first_loss = "round " + std::to_string(round) + ": " + err_text(r, err);
      if (std::string(buf, sizeof buf) != std::string(8, 'Z'))
        first_loss = "round " + std::to_string(round) + ": the timed-out call's buffer was written";
    }
    drain_until(p.a, got, 4, 1s);
    if (got != "abcd" && first_loss.empty())
      first_loss = "round " + std::to_string(round) + ": the recv gave " + err_text(r, err) +
                   ", then the socket held \"" + got + "\"";
  }
  EXPECT_EQ(first_loss, "");
  std::printf("returned the bytes %d times, timed out %d times\n", returned, timed_out);
}

// A connection made at about the listener's receive timeout: it is accepted, or the
// accept fails with EAGAIN and the next accept gets it; no descriptor is left open.
TEST_P(FiberHooksRingAttack, AcceptTimeoutRacingAnArrivingConnectionLosesNoConnection) {
  std::mt19937 rng(seed_from_env("AcceptTimeoutRacingAnArrivingConnectionLosesNoConnection"));
  const int rounds = under_tsan ? 30 : 100;
  const int before = open_descriptors();
  std::string first_loss;
  for (int round = 0; round < rounds && first_loss.empty(); ++round) {
    tcp_listener l;
    ASSERT_GE(l.fd, 0);
    timeval tv{0, 3000};
    ASSERT_EQ(::setsockopt(l.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    const auto delay = std::chrono::microseconds(2500 + static_cast<int>(rng() % 1500));
    int r = -2, err = 0, client = -1;
    std::atomic<bool> go{false};
    std::thread peer([&] {
      while (!go.load()) {
      }
      std::this_thread::sleep_for(delay);
      client = connect_to(l);
    });
    in_fiber([&] {
      go = true;
      r = ::accept(l.fd, nullptr, nullptr);
      err = errno;
    });
    peer.join();
    if (r < 0 && err != EAGAIN) first_loss = "round " + std::to_string(round) + ": " + err_text(r, err);
    const int again = accept_queued(l.fd);
    const int again_err = errno;
    if ((r >= 0 ? 1 : 0) + (again >= 0 ? 1 : 0) != 1 && first_loss.empty())
      first_loss = "round " + std::to_string(round) + ": the accept gave " + err_text(r, err) + ", the next accept " +
                   err_text(again, again_err);
    if (r >= 0) ::close(r);
    if (again >= 0) ::close(again);
    if (client >= 0) ::close(client);
  }
  EXPECT_EQ(first_loss, "");
  EXPECT_EQ(open_descriptors(), before) << "descriptors left open";
}

// ---- close while the call waits ----

// A socket closed by another fiber while a fiber receives on it: the receive fails
// with EBADF and the socket is really closed: its peer sees the end of the stream at
// once and cannot send.
TEST_P(FiberHooksRingAttack, CloseDuringAReceiveReallyClosesTheSocket) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  char buf[8];
  std::memset(buf, 'Z', sizeof buf);
  ssize_t r = -2, eof = -2, sent = -2;
  int err = 0, sent_err = 0, polled = -2;
  short revents = 0;
  in_fibers({[&] {
               r = ::recv(p.a, buf, sizeof buf, 0);
               err = errno;
             },
             [&] {
               ::usleep(10000);
               ::close(p.a);
               p.a = -1;
               // Outside the loop's help: the peer's state right now.
               pollfd pf{p.b, POLLIN, 0};
               polled = ::poll(&pf, 1, 0);
               revents = pf.revents;
             }});
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF) << std::strerror(err);
  {
    pollfd pf{p.b, POLLIN, 0};
    const int n = ::poll(&pf, 1, 1000);
    EXPECT_EQ(n, 1) << "the peer of the closed socket does not see the end";
    char c;
    eof = ::recv(p.b, &c, 1, MSG_DONTWAIT);
    EXPECT_EQ(eof, 0) << "the peer of the closed socket reads " << err_text(eof, errno);
  }
  sent = ::send(p.b, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  sent_err = errno;
  EXPECT_EQ(sent, -1) << "the peer could still send to the closed socket";
  EXPECT_EQ(sent_err, EPIPE) << std::strerror(sent_err);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(std::string(buf, sizeof buf), std::string(8, 'Z'));
  std::printf("peer right after the close: poll %d revents %#x\n", polled, static_cast<unsigned>(revents));
}

// A listener closed by another fiber while a fiber accepts on it: the accept fails
// with EBADF, and the listener is really gone: a connection to its port is refused,
// and the port can be bound again.
TEST_P(FiberHooksRingAttack, CloseDuringAnAcceptReallyClosesTheListener) {
  const int before = open_descriptors();
  auto l = std::make_unique<tcp_listener>();
  ASSERT_GE(l->fd, 0);
  const sockaddr_in addr = l->addr;
  int r = -2, err = 0;
  in_fibers({[&] {
               r = ::accept(l->fd, nullptr, nullptr);
               err = errno;
             },
             [&] {
               ::usleep(10000);
               ::close(l->fd);
               l->fd = -1;
             }});
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF) << std::strerror(err);
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int rc = ::connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int cerr = errno;
  EXPECT_EQ(rc, -1) << "a connection to the closed listener's port was accepted by the kernel";
  EXPECT_EQ(cerr, ECONNREFUSED) << std::strerror(cerr);
  ::close(c);
  const int again = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(again, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  EXPECT_EQ(::bind(again, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0)
      << "the closed listener's port is still taken: " << std::strerror(errno);
  ::close(again);
  l.reset();
  EXPECT_EQ(open_descriptors(), before);
}

// The number of a socket closed during a receive is taken at once (no turn of the
// loop in between) by a new socket whose peer sends at once: the old call fails with
// EBADF, and the new socket's bytes are read by the next read of that number.
TEST_P(FiberHooksRingAttack, NumberTakenAtOnceByANewSocketKeepsItsBytes) {
  auto p = std::make_unique<fd_pair>();
  ASSERT_GE(p->a, 0);
  const int number = p->a;
  ssize_t r = -2, next = -2;
  int err = 0, next_err = 0;
  char nb[8] = {};
  int fresh_peer = -1;
  in_fibers({[&] {
               char buf[8];
               r = ::recv(number, buf, sizeof buf, 0);
               err = errno;
               next = ::read(number, nb, sizeof nb);
               next_err = errno;
             },
             [&] {
               ::usleep(10000);
               ::close(p->a);
               p->a = -1;
               int fds[2];
               ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
               if (fds[0] != number) {
                 ::dup2(fds[0], number);
                 ::close(fds[0]);
               }
               fresh_peer = fds[1];
               ::write(fresh_peer, "new", 3);
             }});
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF) << std::strerror(err);
  EXPECT_EQ(next, 3) << err_text(next, next_err);
  EXPECT_EQ(std::string(nb, next > 0 ? static_cast<std::size_t>(next) : 0), "new");
  ::close(number);
  ::close(fresh_peer);
}

// The same for a listener's number taken at once by a new listener: the old accept
// fails with EBADF; a connection to the new listener is accepted by the next accept of
// that number.
TEST_P(FiberHooksRingAttack, ListenerNumberTakenAtOnceKeepsItsConnections) {
  const int before = open_descriptors();
  auto l = std::make_unique<tcp_listener>();
  ASSERT_GE(l->fd, 0);
  const int number = l->fd;
  int r = -2, next = -2, err = 0, next_err = 0, client = -1, fresh = -1;
  sockaddr_in fresh_addr{};
  in_fibers({[&] {
               r = ::accept(number, nullptr, nullptr);
               err = errno;
               next = ::accept(number, nullptr, nullptr);
               next_err = errno;
             },
             [&] {
               ::usleep(10000);
               ::close(l->fd);
               l->fd = -1;
               fresh = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
               fresh_addr.sin_family = AF_INET;
               fresh_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
               ::bind(fresh, reinterpret_cast<sockaddr*>(&fresh_addr), sizeof fresh_addr);
               ::listen(fresh, 4);
               socklen_t len = sizeof fresh_addr;
               ::getsockname(fresh, reinterpret_cast<sockaddr*>(&fresh_addr), &len);
               if (fresh != number) {
                 ::dup2(fresh, number);
                 ::close(fresh);
               }
               client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
               (void)::connect(client, reinterpret_cast<sockaddr*>(&fresh_addr), sizeof fresh_addr);
             }});
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EBADF) << std::strerror(err);
  EXPECT_GE(next, 0) << err_text(next, next_err);
  if (next >= 0) ::close(next);
  ::close(number);
  ::close(client);
  l.reset();
  EXPECT_EQ(open_descriptors(), before);
}

// A wait that ended (by a stop, by a timeout, with data, with a connection) leaves
// nothing behind for a later close of its number: a fiber started afterwards (on the
// ended fiber's recycled stack) waits on another socket, and closing the first number
// does not wake it; it gets its own bytes.
TEST_P(FiberHooksRingAttack, EndedWaitsLeaveNothingForALaterCloseOfTheirNumber) {
  const fiber_options same{.stack_size = 128 * 1024 * stack_scale};
  enum class end { stop, timeout, data, connection };
  for (const end how : {end::stop, end::timeout, end::data, end::connection}) {
    const char* name = how == end::stop      ? "stopped"
                       : how == end::timeout ? "timed out"
                       : how == end::data    ? "data"
                                             : "accepted";
    fd_pair first, second;
    tcp_listener l;
    ASSERT_GE(first.a, 0);
    const int number = how == end::connection ? l.fd : first.a;
    if (how == end::timeout) {
      timeval tv{0, 5000};
      ::setsockopt(number, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    int client = -1;
    long r1 = -2;
    int e1 = 0;
    run([](end how, int number, const fiber_options& same, long& r1, int& e1, int& client, const tcp_listener& l,
           fd_pair& first) -> task<void> {
      scope s;
      spawn_fiber(
          s,
          [how, number, &r1, &e1] {
            if (how == end::connection) {
              r1 = ::accept(number, nullptr, nullptr);
            } else {
              char buf[8];
              r1 = ::recv(number, buf, sizeof buf, 0);
            }
            e1 = errno;
            if (how == end::connection && r1 >= 0) ::close(static_cast<int>(r1));
          },
          same);
      (void)co_await sleep_for(10ms);
      if (how == end::stop) s.request_stop();
      if (how == end::data) ::write(first.b, "x", 1);
      if (how == end::connection) client = connect_to(l);
      co_await s.join();
    }(how, number, same, r1, e1, client, l, first));
    long r2 = -2;
    int e2 = 0;
    int closed = -2;
    run([](int number, const fiber_options& same, long& r2, int& e2, int& closed, fd_pair& second) -> task<void> {
      scope s;
      spawn_fiber(
          s,
          [&second, &r2, &e2] {
            char buf[8];
            r2 = ::recv(second.a, buf, sizeof buf, 0);
            e2 = errno;
          },
          same);
      spawn_fiber(
          s,
          [number, &closed, &second] {
            ::usleep(5000);
            closed = ::close(number);
            ::usleep(10000);
            ::write(second.b, "y", 1);
          },
          same);
      co_await s.join();
    }(number, same, r2, e2, closed, second));
    if (how == end::connection) l.fd = -1;
    else first.a = -1;
    EXPECT_EQ(closed, 0) << name;
    EXPECT_EQ(r2, 1) << name
                     << ": a close of the number of an ended wait woke another fiber's receive: " << err_text(r2, e2)
                     << " (first call: " << err_text(r1, e1) << ")";
    if (client >= 0) ::close(client);
  }
}

// 1,000 fibers each receiving on a socket of its own, closed by another fiber one at a
// time in a seeded random order: each close wakes exactly the fiber that waits on that
// number (EBADF), and every peer sees its socket closed.
TEST_P(FiberHooksRingAttack, ThousandReceivesClosedInRandomOrder) {
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
  const int fibers = under_tsan ? 200 : 1000;
  std::mt19937 rng(seed_from_env("ThousandReceivesClosedInRandomOrder"));
  std::vector<std::unique_ptr<fd_pair>> pairs;
  for (int i = 0; i < fibers; ++i) pairs.push_back(std::make_unique<fd_pair>());
  std::vector<int> order(static_cast<std::size_t>(fibers));
  for (int i = 0; i < fibers; ++i) order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<long> results(static_cast<std::size_t>(fibers), -2);
  std::vector<int> errs(static_cast<std::size_t>(fibers), 0);
  std::vector<int> woken;  // the fibers in the order they returned
  std::string wrong;
  run([](std::vector<std::unique_ptr<fd_pair>>& pairs, const std::vector<int>& order, std::vector<long>& results,
         std::vector<int>& errs, std::vector<int>& woken, std::string& wrong) -> task<void> {
    scope s;
    const fiber_options small{.stack_size = 64 * 1024 * stack_scale};
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      spawn_fiber(
          s,
          [&pairs, &results, &errs, &woken, i] {
            char buf[8];
            results[i] = ::recv(pairs[i]->a, buf, sizeof buf, 0);
            errs[i] = errno;
            woken.push_back(static_cast<int>(i));
          },
          small);
    }
    spawn_fiber(
        s,
        [&pairs, &order, &woken, &wrong] {
          for (std::size_t k = 0; k < order.size(); ++k) {
            const auto i = static_cast<std::size_t>(order[k]);
            ::close(pairs[i]->a);
            pairs[i]->a = -1;
            for (int spin = 0; spin < 10000 && woken.size() < k + 1; ++spin) {
              if (spin < 100) this_fiber::yield();
              else ::usleep(100);
            }
            if (wrong.empty() && (woken.size() != k + 1 || woken.back() != static_cast<int>(i)))
              wrong = "after closing the socket of fiber " + std::to_string(i) + " (close " + std::to_string(k) +
                      "), " + std::to_string(woken.size()) + " fibers had returned, the last " +
                      (woken.empty() ? std::string("none") : std::to_string(woken.back()));
          }
        },
        hook_stack);
    co_await s.join();
  }(pairs, order, results, errs, woken, wrong));
  EXPECT_EQ(wrong, "");
  int ebadf = 0;
  for (int i = 0; i < fibers; ++i)
    if (results[static_cast<std::size_t>(i)] == -1 && errs[static_cast<std::size_t>(i)] == EBADF) ++ebadf;
  EXPECT_EQ(ebadf, fibers);
  int peers_at_end = 0;
  for (auto& p : pairs) {
    pollfd pf{p->b, POLLIN, 0};
    char c;
    if (::poll(&pf, 1, 1000) == 1 && ::recv(p->b, &c, 1, MSG_DONTWAIT) == 0) ++peers_at_end;
  }
  EXPECT_EQ(peers_at_end, fibers) << "peers of closed sockets that do not see the end";
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

// 2,000 fibers wait in receives (1,000 under TSan); another fiber then writes to every
// peer without the loop running in between, and closes a third of the waited sockets,
// in one turn: every call ends with its bytes or with EBADF.
TEST_P(FiberHooksRingAttack, ThousandsOfReceivesEndInOneTurn) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 8400) {
    rlimit raised = rl;
    raised.rlim_cur = std::min<rlim_t>(rl.rlim_max, 16384);
    ::setrlimit(RLIMIT_NOFILE, &raised);
  }
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  const int fibers = under_tsan ? 1000 : 2000;
  if (now.rlim_cur < static_cast<rlim_t>(2 * fibers + 200))
    GTEST_SKIP() << "RLIMIT_NOFILE " << now.rlim_cur << " is below " << 2 * fibers + 200 << " descriptors";
  std::vector<std::unique_ptr<fd_pair>> pairs;
  for (int i = 0; i < fibers; ++i) pairs.push_back(std::make_unique<fd_pair>());
  std::vector<long> results(static_cast<std::size_t>(fibers), -2);
  std::vector<int> errs(static_cast<std::size_t>(fibers), 0);
  std::vector<std::string> got(static_cast<std::size_t>(fibers));
  run([](std::vector<std::unique_ptr<fd_pair>>& pairs, std::vector<long>& results, std::vector<int>& errs,
         std::vector<std::string>& got) -> task<void> {
    scope s;
    const fiber_options small{.stack_size = 64 * 1024 * stack_scale};
    for (std::size_t i = 0; i < pairs.size(); ++i)
      spawn_fiber(
          s,
          [&pairs, &results, &errs, &got, i] {
            char buf[16];
            results[i] = ::recv(pairs[i]->a, buf, sizeof buf, 0);
            errs[i] = errno;
            if (results[i] > 0) got[i].assign(buf, static_cast<std::size_t>(results[i]));
          },
          small);
    spawn_fiber(
        s,
        [&pairs] {
          ::usleep(20000);
          for (std::size_t i = 0; i < pairs.size(); ++i) {
            if (i % 3 == 0) {
              ::close(pairs[i]->a);
              pairs[i]->a = -1;
            } else {
              ::write(pairs[i]->b, "0123456789", 10);
            }
          }
        },
        hook_stack);
    co_await s.join();
  }(pairs, results, errs, got));
  int ok = 0;
  std::string first_bad;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const bool good = i % 3 == 0 ? (results[i] == -1 && errs[i] == EBADF) : got[i] == "0123456789";
    if (good) ++ok;
    else if (first_bad.empty())
      first_bad = "fiber " + std::to_string(i) + ": " + err_text(results[i], errs[i]) + " \"" + got[i] + "\"";
  }
  EXPECT_EQ(ok, fibers) << first_bad;
  ::setrlimit(RLIMIT_NOFILE, &rl);
}

// ---- O_NONBLOCK set while the call waits ----

// O_NONBLOCK set on a socket by another fiber while a fiber receives on it: the waiting
// call gets the bytes (or EAGAIN, the bytes staying in the socket); the program's flag
// stays; the next receive is libc's at once (EAGAIN).
TEST_P(FiberHooksRingAttack, NonBlockingSetOnASocketDuringAReceive) {
  fd_pair p;
  ASSERT_GE(p.a, 0);
  ssize_t r = -2, again = -2;
  int err = 0, again_err = 0, flags = 0;
  std::string got;
  std::chrono::steady_clock::duration took{};
  in_fibers({[&] {
               char buf[8];
               r = ::recv(p.a, buf, sizeof buf, 0);
               err = errno;
               if (r > 0) got.assign(buf, static_cast<std::size_t>(r));
               flags = ::fcntl(p.a, F_GETFL);
               if (r > 0) {
                 const auto t0 = std::chrono::steady_clock::now();
                 again = ::recv(p.a, buf, sizeof buf, 0);
                 again_err = errno;
                 took = std::chrono::steady_clock::now() - t0;
               }
             },
             [&] {
               ::usleep(10000);
               ::fcntl(p.a, F_SETFL, ::fcntl(p.a, F_GETFL) | O_NONBLOCK);
               ::usleep(10000);
               ::write(p.b, "ab", 2);
             }});
  if (r < 0) {
    EXPECT_EQ(err, EAGAIN) << std::strerror(err);
    drain_until(p.a, got, 2, 1s);
  } else {
    EXPECT_EQ(again, -1);
    EXPECT_EQ(again_err, EAGAIN) << std::strerror(again_err);
    EXPECT_LT(took, 1s);
  }
  EXPECT_EQ(got, "ab");
  EXPECT_NE(flags & O_NONBLOCK, 0) << "the program's O_NONBLOCK was cleared";
}

// The same for a listener and accept.
TEST_P(FiberHooksRingAttack, NonBlockingSetOnAListenerDuringAnAccept) {
  tcp_listener l;
  ASSERT_GE(l.fd, 0);
  int r = -2, again = -2, err = 0, again_err = 0, flags = 0, client = -1;
  std::chrono::steady_clock::duration took{};
  in_fibers({[&] {
               r = ::accept(l.fd, nullptr, nullptr);
               err = errno;
               flags = ::fcntl(l.fd, F_GETFL);
               if (r >= 0) {
                 const auto t0 = std::chrono::steady_clock::now();
                 again = ::accept(l.fd, nullptr, nullptr);
                 again_err = errno;
                 took = std::chrono::steady_clock::now() - t0;
               }
             },
             [&] {
               ::usleep(10000);
               ::fcntl(l.fd, F_SETFL, ::fcntl(l.fd, F_GETFL) | O_NONBLOCK);
               ::usleep(10000);
               client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
               (void)::connect(client, l.sa(), sizeof l.addr);
             }});
  if (r < 0) {
    EXPECT_EQ(err, EAGAIN) << std::strerror(err);
    const int queued = ::accept(l.fd, nullptr, nullptr);
    EXPECT_GE(queued, 0) << "the connection was lost";
    if (queued >= 0) ::close(queued);
  } else {
    EXPECT_EQ(again, -1);
    EXPECT_EQ(again_err, EAGAIN) << std::strerror(again_err);
    EXPECT_LT(took, 1s);
    ::close(r);
  }
  EXPECT_NE(flags & O_NONBLOCK, 0) << "the program's O_NONBLOCK was cleared";
  ::close(client);
}

// ---- results of calls that waited, compared with libc's on a plain thread ----

// Each scenario makes its descriptors, arranges for a plain thread to act after 20 ms,
// makes one call that has to wait for that, and describes what it got. In a fiber the
// description must be the one libc's calls give on a plain thread.
struct waited_scenario {
  const char* name;
  std::function<std::string()> run;
};

std::string flags_of(int fd) {
  return std::string("nonblock ") + ((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0 ? "1" : "0") + " cloexec " +
         ((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0 ? "1" : "0");
}

std::string accept_with_flags(int flags) {
  tcp_listener l;
  int client = -1;
  int r;
  int err;
  {
    later peer(20ms, [&] { client = connect_to(l); });
    errno = untouched;
    r = flags < 0 ? ::accept(l.fd, nullptr, nullptr) : ::accept4(l.fd, nullptr, nullptr, flags);
    err = errno;
  }
  std::string out = fd_text(r, err);
  if (r >= 0) {
    out += " " + flags_of(r);
    timeval tv{1, 0};
    ::setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    errno = untouched;
    const auto t0 = std::chrono::steady_clock::now();
    const ssize_t n = ::read(r, &c, 1);
    const int e = errno;
    // A read that waited would only end by the receive timeout set below.
    out += "; read " + err_text(n, e) + (std::chrono::steady_clock::now() - t0 > 500ms ? " after waiting" : "");
    ::close(r);
  }
  if (client >= 0) ::close(client);
  return out;
}

// 4 GiB + `extra`, out of the compiler's sight.
std::size_t huge_count(std::size_t extra) {
  volatile std::size_t n = (std::size_t{1} << 32) + extra;
  return n;
}

std::vector<waited_scenario> waited_scenarios() {
  std::vector<waited_scenario> v;
  // The socket accepted by a blocking accept4 with SOCK_NONBLOCK: a read on it fails
  // at once with EAGAIN (a wrong mode shows as a wait of a second).
  v.push_back({"accept4 SOCK_NONBLOCK|SOCK_CLOEXEC, then read",
               [] { return accept_with_flags(SOCK_NONBLOCK | SOCK_CLOEXEC); }});
  v.push_back({"accept4 SOCK_NONBLOCK, then read", [] { return accept_with_flags(SOCK_NONBLOCK); }});
  v.push_back({"accept4 SOCK_CLOEXEC (flags only)", [] {
                 tcp_listener l;
                 int client = -1, r, err;
                 {
                   later peer(20ms, [&] { client = connect_to(l); });
                   errno = untouched;
                   r = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
                   err = errno;
                 }
                 std::string out = fd_text(r, err);
                 if (r >= 0) out += " " + flags_of(r), ::close(r);
                 if (client >= 0) ::close(client);
                 return out;
               }});
  v.push_back({"accept (flags only)", [] {
                 tcp_listener l;
                 int client = -1, r, err;
                 {
                   later peer(20ms, [&] { client = connect_to(l); });
                   errno = untouched;
                   r = ::accept(l.fd, nullptr, nullptr);
                   err = errno;
                 }
                 std::string out = fd_text(r, err);
                 if (r >= 0) out += " " + flags_of(r), ::close(r);
                 if (client >= 0) ::close(client);
                 return out;
               }});
  // The peer's address and its length, with room to spare, too little room, none.
  for (const socklen_t room : {socklen_t{sizeof(sockaddr_storage)}, socklen_t{4}, socklen_t{0}}) {
    v.push_back({room == 0   ? "accept address, length 0"
                 : room == 4 ? "accept address, length 4"
                             : "accept address",
                 [room] {
                   tcp_listener l;
                   int client = -1, r, err;
                   sockaddr_storage ss;
                   std::memset(&ss, 0xAB, sizeof ss);
                   socklen_t len = room;
                   {
                     later peer(20ms, [&] { client = connect_to(l); });
                     errno = untouched;
                     r = ::accept(l.fd, reinterpret_cast<sockaddr*>(&ss), &len);
                     err = errno;
                   }
                   std::string out = fd_text(r, err) + " len " + std::to_string(len);
                   sockaddr_in local{};
                   socklen_t ll = sizeof local;
                   if (client >= 0) ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &ll);
                   sockaddr_in got{};
                   std::memcpy(&got, &ss, sizeof got);
                   if (room >= sizeof got)
                     out += std::string(" family ok ") + (got.sin_family == AF_INET ? "1" : "0") + " port ok " +
                            (got.sin_port == local.sin_port ? "1" : "0") + " address ok " +
                            (got.sin_addr.s_addr == local.sin_addr.s_addr ? "1" : "0");
                   const auto* raw = reinterpret_cast<const unsigned char*>(&ss);
                   std::size_t written = 0;
                   for (std::size_t i = 0; i < sizeof ss; ++i)
                     if (raw[i] != 0xAB) written = i + 1;
                   out += " bytes written up to " + std::to_string(written);
                   if (r >= 0) ::close(r);
                   if (client >= 0) ::close(client);
                   return out;
                 }});
  }
  v.push_back({"accept4 on a Unix listener, address of an unnamed peer", [] {
                 const std::string path =
                     "/tmp/ringio-ring-attack-" + std::to_string(::getpid()) + "-" +
                     std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
                 ::unlink(path.c_str());
                 sockaddr_un a{};
                 a.sun_family = AF_UNIX;
                 std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
                 const int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a);
                 ::listen(l, 4);
                 int client = -1, r, err;
                 sockaddr_un peer_addr;
                 std::memset(&peer_addr, 0xAB, sizeof peer_addr);
                 socklen_t len = sizeof peer_addr;
                 {
                   later peer(20ms, [&] {
                     client = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                     ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a);
                   });
                   errno = untouched;
                   r = ::accept4(l, reinterpret_cast<sockaddr*>(&peer_addr), &len, SOCK_CLOEXEC);
                   err = errno;
                 }
                 std::string out = fd_text(r, err) + " len " + std::to_string(len) + " family " +
                                   std::to_string(peer_addr.sun_family);
                 if (r >= 0) ::close(r);
                 if (client >= 0) ::close(client);
                 ::close(l);
                 ::unlink(path.c_str());
                 return out;
               }});
  v.push_back({"accept on an IPv6 listener, address", [] {
                 const int l = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
                 sockaddr_in6 a{};
                 a.sin6_family = AF_INET6;
                 a.sin6_addr = in6addr_loopback;
                 if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                   if (l >= 0) ::close(l);
                   return std::string("no IPv6 loopback");
                 }
                 ::listen(l, 4);
                 socklen_t al = sizeof a;
                 ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &al);
                 int client = -1, r, err;
                 sockaddr_storage ss{};
                 socklen_t len = sizeof ss;
                 {
                   later peer(20ms, [&] {
                     client = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
                     ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a);
                   });
                   errno = untouched;
                   r = ::accept(l, reinterpret_cast<sockaddr*>(&ss), &len);
                   err = errno;
                 }
                 std::string out =
                     fd_text(r, err) + " len " + std::to_string(len) + " family " + std::to_string(ss.ss_family);
                 if (r >= 0) ::close(r);
                 if (client >= 0) ::close(client);
                 ::close(l);
                 return out;
               }});
  v.push_back({"accept while the listener is shut down", [] {
                 tcp_listener l;
                 int r, err;
                 {
                   later peer(20ms, [&] { ::shutdown(l.fd, SHUT_RDWR); });
                   errno = untouched;
                   r = ::accept(l.fd, nullptr, nullptr);
                   err = errno;
                 }
                 if (r >= 0) ::close(r);
                 return fd_text(r, err);
               }});
  v.push_back({"recv while the socket's own read side is shut down", [] {
                 tcp_pair t;
                 ssize_t r;
                 int err;
                 char buf[8];
                 {
                   later peer(20ms, [&] { ::shutdown(t.b, SHUT_RD); });
                   errno = untouched;
                   r = ::recv(t.b, buf, sizeof buf, 0);
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  v.push_back({"read while the peer shuts down its write side", [] {
                 tcp_pair t;
                 ssize_t r;
                 int err;
                 char buf[8];
                 {
                   later peer(20ms, [&] { ::shutdown(t.a, SHUT_WR); });
                   errno = untouched;
                   r = ::read(t.b, buf, sizeof buf);
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  v.push_back({"recv of 100 when 3 arrive (partial), then MSG_PEEK of 100 when 3 more arrive", [] {
                 tcp_pair t;
                 char buf[100];
                 std::string out;
                 {
                   later peer(20ms, [&] { ::send(t.a, "abc", 3, 0); });
                   errno = untouched;
                   const ssize_t r = ::recv(t.b, buf, sizeof buf, 0);
                   out = err_text(r, errno) + " \"" + std::string(buf, r > 0 ? static_cast<std::size_t>(r) : 0) + "\"";
                 }
                 {
                   later peer(20ms, [&] { ::send(t.a, "def", 3, 0); });
                   errno = untouched;
                   const ssize_t r = ::recv(t.b, buf, sizeof buf, MSG_PEEK);
                   out += "; peek " + err_text(r, errno);
                   const ssize_t r2 = ::recv(t.b, buf, sizeof buf, MSG_DONTWAIT);
                   out += "; then " + std::to_string(r2) + " \"" +
                          std::string(buf, r2 > 0 ? static_cast<std::size_t>(r2) : 0) + "\"";
                 }
                 return out;
               }});
  v.push_back({"recv MSG_TRUNC on a TCP stream (discards)", [] {
                 tcp_pair t;
                 char buf[8];
                 std::string out;
                 {
                   later peer(20ms, [&] { ::send(t.a, "abcdef", 6, 0); });
                   errno = untouched;
                   const ssize_t r = ::recv(t.b, buf, 2, MSG_TRUNC);
                   out = err_text(r, errno);
                 }
                 const ssize_t r2 = ::recv(t.b, buf, sizeof buf, MSG_DONTWAIT);
                 out += "; then " + std::to_string(r2);
                 return out;
               }});
  v.push_back({"recvfrom with an address on a datagram socket", [] {
                 const int r = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                 const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                 sockaddr_in a{};
                 a.sin_family = AF_INET;
                 a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                 ::bind(r, reinterpret_cast<sockaddr*>(&a), sizeof a);
                 ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
                 socklen_t al = sizeof a;
                 ::getsockname(r, reinterpret_cast<sockaddr*>(&a), &al);
                 sockaddr_in sa{};
                 socklen_t sl = sizeof sa;
                 ::getsockname(s, reinterpret_cast<sockaddr*>(&sa), &sl);
                 sockaddr_in from{};
                 socklen_t fl = sizeof from;
                 char buf[16];
                 ssize_t n;
                 int err;
                 {
                   later peer(20ms, [&] { ::sendto(s, "dgram", 5, 0, reinterpret_cast<sockaddr*>(&a), sizeof a); });
                   errno = untouched;
                   n = ::recvfrom(r, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
                   err = errno;
                 }
                 std::string out = err_text(n, err) + " len " + std::to_string(fl) + " port ok " +
                                   (from.sin_port == sa.sin_port ? "1" : "0");
                 ::close(r);
                 ::close(s);
                 return out;
               }});
  v.push_back({"recvfrom with an address on a Unix stream", [] {
                 fd_pair p;
                 sockaddr_un from;
                 std::memset(&from, 0xAB, sizeof from);
                 socklen_t fl = sizeof from;
                 char buf[16];
                 ssize_t n;
                 int err;
                 {
                   later peer(20ms, [&] { ::write(p.b, "xyz", 3); });
                   errno = untouched;
                   n = ::recvfrom(p.a, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
                   err = errno;
                 }
                 return err_text(n, err) + " len " + std::to_string(fl);
               }});
  v.push_back({"recvfrom with no address but a length", [] {
                 fd_pair p;
                 socklen_t fl = 77;
                 char buf[16];
                 ssize_t n;
                 int err;
                 {
                   later peer(20ms, [&] { ::write(p.b, "xyz", 3); });
                   errno = untouched;
                   n = ::recvfrom(p.a, buf, sizeof buf, 0, nullptr, &fl);
                   err = errno;
                 }
                 return err_text(n, err) + " len " + std::to_string(fl);
               }});
  v.push_back({"read on a stream whose peer sends then closes", [] {
                 fd_pair p;
                 char buf[16];
                 std::string out;
                 {
                   later peer(20ms, [&] {
                     ::write(p.b, "bye", 3);
                     ::close(p.b);
                     p.b = -1;
                   });
                   errno = untouched;
                   const ssize_t n = ::read(p.a, buf, sizeof buf);
                   out = err_text(n, errno);
                 }
                 errno = untouched;
                 const ssize_t n2 = ::read(p.a, buf, sizeof buf);
                 out += "; then " + err_text(n2, errno);
                 return out;
               }});
  v.push_back({"recv on a seqpacket socket into a short buffer", [] {
                 fd_pair p(SOCK_SEQPACKET);
                 char buf[4];
                 std::string out;
                 {
                   later peer(20ms, [&] {
                     ::send(p.b, "0123456789", 10, 0);
                     ::send(p.b, "ab", 2, 0);
                   });
                   errno = untouched;
                   const ssize_t n = ::recv(p.a, buf, sizeof buf, 0);
                   out = err_text(n, errno);
                 }
                 const ssize_t n2 = ::recv(p.a, buf, sizeof buf, 0);
                 out += "; then " + std::to_string(n2);
                 return out;
               }});
  v.push_back({"recv with SO_RCVLOWAT 4 when 2 bytes come, then 2 more", [] {
                 tcp_pair t;
                 const int lowat = 4;
                 ::setsockopt(t.b, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
                 char buf[16];
                 ssize_t r;
                 int err;
                 {
                   later peer(20ms, [&] {
                     ::send(t.a, "ab", 2, 0);
                     std::this_thread::sleep_for(20ms);
                     ::send(t.a, "cd", 2, 0);
                   });
                   errno = untouched;
                   r = ::recv(t.b, buf, sizeof buf, 0);
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  v.push_back({"recv into an unmapped buffer when bytes come, then a good recv", [] {
                 tcp_pair t;
                 ssize_t r;
                 int err;
                 {
                   later peer(20ms, [&] { ::send(t.a, "abc", 3, 0); });
                   errno = untouched;
                   r = ::recv(t.b, reinterpret_cast<void*>(std::uintptr_t{8}), 16, 0);
                   err = errno;
                 }
                 char buf[16];
                 const ssize_t r2 = ::recv(t.b, buf, sizeof buf, MSG_DONTWAIT);
                 return err_text(r, err) + "; then " + std::to_string(r2);
               }});
  return v;
}

TEST_P(FiberHooksRingAttack, WaitedCallsGiveLibcResults) {
  for (const auto& scn : waited_scenarios()) {
    std::string plain;
    std::thread([&] { plain = scn.run(); }).join();
    std::string fibered;
    in_fiber([&] { fibered = scn.run(); });
    EXPECT_EQ(fibered, plain) << scn.name << " (in a fiber vs on a plain thread)";
  }
}

// Counts of 4 GiB and more on a socket: the kernel takes at most 2 GiB - 4 KiB per
// call, so a read whose count is 4 GiB returns the bytes that arrive (libc's read on a
// plain thread does); the buffer is larger than the bytes sent, so only what arrives is
// written.
std::vector<waited_scenario> huge_count_scenarios() {
  std::vector<waited_scenario> v;
  v.push_back({"read with a count of 4 GiB", [] {
                 fd_pair p;
                 char buf[16];
                 ssize_t r;
                 int err;
                 {
                   later peer(20ms, [&] { ::write(p.b, "hello", 5); });
                   errno = untouched;
                   r = ::read(p.a, buf, huge_count(0));
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  v.push_back({"recv with a count of 4 GiB + 3", [] {
                 fd_pair p;
                 char buf[16];
                 ssize_t r;
                 int err;
                 {
                   later peer(20ms, [&] { ::write(p.b, "hello", 5); });
                   errno = untouched;
                   r = ::recv(p.a, buf, huge_count(3), 0);
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  v.push_back({"recvfrom without an address with a count of 4 GiB + 1", [] {
                 fd_pair p;
                 char buf[16];
                 ssize_t r;
                 int err;
                 {
                   later peer(20ms, [&] { ::write(p.b, "hello", 5); });
                   errno = untouched;
                   r = ::recvfrom(p.a, buf, huge_count(1), 0, nullptr, nullptr);
                   err = errno;
                 }
                 return err_text(r, err);
               }});
  return v;
}

TEST_P(FiberHooksRingAttack, WaitedReceivesWithCountsOfFourGibibytesGiveLibcResults) {
  for (const auto& scn : huge_count_scenarios()) {
    std::string plain;
    std::thread([&] { plain = scn.run(); }).join();
    std::string fibered;
    in_fiber([&] { fibered = scn.run(); });
    EXPECT_EQ(fibered, plain) << scn.name << " (in a fiber vs on a plain thread)";
  }
}

// ---- the loop going away ----

// The loop destroyed while fibers wait in receives and accepts, some of them with a
// connection or bytes arriving just before: every call ends (EINTR or its result), no
// descriptor is left open, nothing is written into a buffer afterwards.
TEST_P(FiberHooksRingAttack, LoopDestroyedWithReceivesAndAcceptsInFlightLeaksNothing) {
  for (const bool arrivals : {false, true}) {
    const int before = open_descriptors();
    constexpr int receivers = 20, acceptors = 8;
    std::vector<std::unique_ptr<fd_pair>> pairs;
    std::vector<std::unique_ptr<tcp_listener>> listeners;
    for (int i = 0; i < receivers; ++i) pairs.push_back(std::make_unique<fd_pair>());
    for (int i = 0; i < acceptors; ++i) listeners.push_back(std::make_unique<tcp_listener>());
    std::vector<std::array<char, 8>> bufs(receivers);
    for (auto& b : bufs) b.fill('Z');
    std::vector<long> rr(receivers, -2), ar(acceptors, -2);
    std::vector<int> re(receivers, 0), ae(acceptors, 0);
    std::vector<int> clients;
    std::atomic<int> ended{0};
    {
      io_context ctx(io_context_options{.backend = GetParam(), .quiet = true});
      for (int i = 0; i < receivers; ++i)
        spawn_fiber(
            ctx,
            [&, i] {
              const auto k = static_cast<std::size_t>(i);
              rr[k] = ::recv(pairs[k]->a, bufs[k].data(), 8, 0);
              re[k] = errno;
              ++ended;
            },
            hook_stack);
      for (int i = 0; i < acceptors; ++i)
        spawn_fiber(
            ctx,
            [&, i] {
              const auto k = static_cast<std::size_t>(i);
              ar[k] = ::accept(listeners[k]->fd, nullptr, nullptr);
              ae[k] = errno;
              if (ar[k] >= 0) ::close(static_cast<int>(ar[k]));
              ++ended;
            },
            hook_stack);
      ctx.spawn([](io_context& ctx) -> task<void> {
        (void)co_await sleep_for(20ms);
        ctx.stop();
      }(ctx));
      ctx.run();
      if (arrivals) {
        // Arrivals the loop has not seen yet when it is destroyed.
        for (int i = 0; i < receivers; i += 2) ::write(pairs[static_cast<std::size_t>(i)]->b, "abcd", 4);
        for (int i = 0; i < acceptors; i += 2) clients.push_back(connect_to(*listeners[static_cast<std::size_t>(i)]));
      }
    }
    EXPECT_EQ(ended.load(), receivers + acceptors);
    for (int i = 0; i < receivers; ++i) {
      const auto k = static_cast<std::size_t>(i);
      std::string got;
      if (rr[k] > 0) got.assign(bufs[k].data(), static_cast<std::size_t>(rr[k]));
      if (rr[k] < 0) {
        EXPECT_EQ(re[k], EINTR) << "receiver " << i << ": " << std::strerror(re[k]);
      }
      if (arrivals && i % 2 == 0) {
        drain_until(pairs[k]->a, got, 4, 1s);
        EXPECT_EQ(got, "abcd") << "receiver " << i << " gave " << err_text(rr[k], re[k]);
      }
      if (rr[k] < 0) {
        std::this_thread::sleep_for(1ms);
        EXPECT_EQ(std::string(bufs[k].data(), 8), std::string(8, 'Z')) << "receiver " << i;
      }
    }
    for (int i = 0; i < acceptors; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (ar[k] < 0) {
        EXPECT_EQ(ae[k], EINTR) << "acceptor " << i << ": " << std::strerror(ae[k]);
      }
      const int queued = accept_queued(listeners[k]->fd);
      if (arrivals && i % 2 == 0) {
        EXPECT_EQ((ar[k] >= 0 ? 1 : 0) + (queued >= 0 ? 1 : 0), 1)
            << "acceptor " << i << " gave " << err_text(ar[k], ae[k]) << "; the connection was lost";
      }
      if (queued >= 0) ::close(queued);
    }
    for (int c : clients)
      if (c >= 0) ::close(c);
    pairs.clear();
    listeners.clear();
    EXPECT_EQ(open_descriptors(), before) << (arrivals ? "with arrivals: " : "") << "descriptors left open";
  }
}

// A receive of the error queue never waits (libc's answer at once: EAGAIN when the
// queue is empty), inside a fiber as on a plain thread.
TEST_P(FiberHooksRingAttack, ErrorQueueReceiveNeverWaits) {
  const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(u, 0);
  char buf[16];
  errno = untouched;
  const ssize_t plain = ::recv(u, buf, sizeof buf, MSG_ERRQUEUE);
  const int plain_err = errno;
  ssize_t r = -2;
  int err = 0;
  std::chrono::steady_clock::duration took{};
  in_fiber(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        errno = untouched;
        r = ::recv(u, buf, sizeof buf, MSG_ERRQUEUE);
        err = errno;
        took = std::chrono::steady_clock::now() - t0;
      },
      3s);
  EXPECT_EQ(err_text(r, err), err_text(plain, plain_err));
  EXPECT_LT(took, 1s);
  ::close(u);
}

// A close and a stop of the waiting fiber in one turn: the receive fails (EBADF or
// EINTR), the socket is closed (its peer sees the end), the buffer is not written.
TEST_P(FiberHooksRingAttack, CloseAndStopInOneTurn) {
  for (const bool close_first : {true, false}) {
    fd_pair p;
    ASSERT_GE(p.a, 0);
    char buf[8];
    std::memset(buf, 'Z', sizeof buf);
    ssize_t r = -2;
    int err = 0;
    victim_and_stopper(
        [&] {
          r = ::recv(p.a, buf, sizeof buf, 0);
          err = errno;
        },
        [&](scope& v) {
          ::usleep(5000);
          if (!close_first) v.request_stop();
          ::close(p.a);
          p.a = -1;
          if (close_first) v.request_stop();
        });
    EXPECT_EQ(r, -1);
    EXPECT_TRUE(err == EBADF || err == EINTR) << std::strerror(err);
    pollfd pf{p.b, POLLIN, 0};
    EXPECT_EQ(::poll(&pf, 1, 1000), 1) << "the peer does not see the end";
    char c;
    EXPECT_EQ(::recv(p.b, &c, 1, MSG_DONTWAIT), 0);
    EXPECT_EQ(::send(p.b, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT), -1);
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(std::string(buf, sizeof buf), std::string(8, 'Z'));
  }
}

// 200 fibers each accepting on a listener of its own, the listeners closed by another
// fiber in a seeded random order: every accept fails with EBADF, every port is free.
TEST_P(FiberHooksRingAttack, ManyAcceptsClosedInRandomOrder) {
  constexpr int fibers = 200;
  std::mt19937 rng(seed_from_env("ManyAcceptsClosedInRandomOrder"));
  const int before = open_descriptors();
  // A loopback address of this process's own (127.x.y.1): the ports freed below may be
  // taken at once by other processes' listeners on 127.0.0.1, and would then accept.
  const auto pid = static_cast<std::uint32_t>(::getpid());
  const std::uint32_t host = (127u << 24) | ((pid % 250 + 2) << 16) | (((pid / 250) % 250) << 8) | 1u;
  std::vector<std::unique_ptr<tcp_listener>> ls;
  for (int i = 0; i < fibers; ++i) ls.push_back(std::make_unique<tcp_listener>(16, host));
  std::vector<sockaddr_in> addrs;
  for (auto& l : ls) addrs.push_back(l->addr);
  std::vector<int> order(fibers);
  for (int i = 0; i < fibers; ++i) order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> results(fibers, -2), errs(fibers, 0);
  std::vector<std::function<void()>> fns;
  for (int i = 0; i < fibers; ++i)
    fns.push_back([&, i] {
      const auto k = static_cast<std::size_t>(i);
      results[k] = ::accept(ls[k]->fd, nullptr, nullptr);
      errs[k] = errno;
    });
  fns.push_back([&] {
    for (int i : order) {
      const auto k = static_cast<std::size_t>(i);
      ::close(ls[k]->fd);
      ls[k]->fd = -1;
      if ((rng() & 7) == 0) this_fiber::yield();
    }
  });
  in_fibers(fns);
  int ebadf = 0;
  for (int i = 0; i < fibers; ++i)
    if (results[static_cast<std::size_t>(i)] == -1 && errs[static_cast<std::size_t>(i)] == EBADF) ++ebadf;
  EXPECT_EQ(ebadf, fibers);
  int refused = 0;
  for (const auto& a : addrs) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) == -1 && errno == ECONNREFUSED) ++refused;
    ::close(c);
  }
  EXPECT_EQ(refused, fibers) << "ports of closed listeners still accept connections";
  ls.clear();
  EXPECT_EQ(open_descriptors(), before);
}

// ---- the thread after its loop is gone ----

// A plain blocking receive with SO_RCVTIMEO on a thread whose io_uring loop ended
// (destroyed, or a loop of an earlier round): the kernel's teardown of a ring notifies
// every thread that submitted to it (task work with a signal), and a socket wait with a
// timeout reports that as EINTR (docs/design.md, "A ring's end and a thread's timed
// waits"). The contract kept: nothing is lost, the retried call gets the bytes, and the
// interruptions are one per ring that ended (rings of earlier tests too), not a stream.
std::string plain_receive_rounds(backend_kind kind, bool destroy_first) {
  for (int round = 0; round < 20; ++round) {
    fd_pair waited, plain;
    if (plain.a < 0) return "socketpair failed";
    std::optional<io_context> ctx(std::in_place, io_context_options{.backend = kind, .quiet = true});
    spawn_fiber(
        *ctx,
        [&] {
          char c;
          (void)::read(waited.a, &c, 1);
        },
        hook_stack);
    ctx->spawn([](io_context& ctx) -> task<void> {
      (void)co_await sleep_for(2ms);
      ctx.stop();
    }(*ctx));
    ctx->run();
    if (destroy_first) ctx.reset();
    timeval tv{5, 0};
    ::setsockopt(plain.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[8];
    ssize_t r = -1;
    int interrupted = 0;
    {
      later peer(20ms, [&] { ::write(plain.b, "abcd", 4); });
      std::size_t got = 0;
      while (got < 4) {
        r = ::recv(plain.a, buf + got, 4 - got, MSG_WAITALL);
        if (r > 0) got += static_cast<std::size_t>(r);
        else if (r < 0 && errno == EINTR && ++interrupted <= 50) continue;
        else break;
      }
      r = static_cast<ssize_t>(got);
    }
    if (r != 4 || std::memcmp(buf, "abcd", 4) != 0)
      return "round " + std::to_string(round) + ": got " + std::to_string(r) + " bytes after " +
             std::to_string(interrupted) + " interruptions";
  }
  return "";
}

TEST_P(FiberHooksRingAttack, PlainReceiveAfterTheLoopIsDestroyedLosesNothing) {
  EXPECT_EQ(plain_receive_rounds(GetParam(), true), "")
      << "a plain blocking recv on the thread that destroyed the loop";
}

// The same beside a loop that exists but is not running (between two runs).
TEST_P(FiberHooksRingAttack, PlainReceiveBesideAnIdleLoopLosesNothing) {
  EXPECT_EQ(plain_receive_rounds(GetParam(), false), "") << "a plain blocking recv on a thread whose loop is idle";
}

// ---- another thread ----

// A loop on a thread of its own serves accepts and receives on hooked fibers while the
// test's thread connects, sends and closes with libc's calls; then the loop is stopped
// from the test's thread while some fibers still wait.
TEST_P(FiberHooksRingAttack, HookedServerOnALoopOfAnotherThread) {
  constexpr int listeners_n = 8, rounds = 20;
  std::vector<std::unique_ptr<tcp_listener>> listeners;
  for (int i = 0; i < listeners_n; ++i) listeners.push_back(std::make_unique<tcp_listener>());
  std::atomic<int> echoed{0}, finished{0};
  const backend_kind kind = GetParam();
  std::thread server([&] {
    io_context ctx(io_context_options{.backend = kind, .quiet = true});
    sync_wait(ctx,
              [](std::vector<std::unique_ptr<tcp_listener>>& listeners, std::atomic<int>& echoed,
                 std::atomic<int>& finished) -> task<void> {
                scope s;
                for (auto& lp : listeners) {
                  tcp_listener* l = lp.get();
                  spawn_fiber(
                      s,
                      [l, &echoed, &finished] {
                        for (;;) {
                          const int c = ::accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
                          if (c < 0) break;
                          char buf[64];
                          for (;;) {
                            const ssize_t n = ::read(c, buf, sizeof buf);
                            if (n <= 0) break;
                            if (::write(c, buf, static_cast<std::size_t>(n)) != n) break;
                            echoed.fetch_add(1);
                          }
                          ::close(c);
                        }
                        finished.fetch_add(1);
                      },
                      hook_stack);
                }
                co_await s.join();
              }(listeners, echoed, finished));
  });
  int good = 0;
  std::string first_bad;
  for (int r = 0; r < rounds; ++r)
    for (auto& l : listeners) {
      const int c = connect_to(*l);
      if (c < 0) {
        if (first_bad.empty()) first_bad = "connect: " + std::string(std::strerror(errno));
        continue;
      }
      char buf[8];
      const ssize_t w = ::write(c, "ping", 4);
      const int we = errno;
      pollfd pf{c, POLLIN, 0};
      const ssize_t n = w == 4 && ::poll(&pf, 1, 5000) == 1 ? ::recv(c, buf, 4, MSG_WAITALL) : -2;
      const int ne = errno;
      if (w == 4 && n == 4 && std::memcmp(buf, "ping", 4) == 0) ++good;
      else if (first_bad.empty())
        first_bad = "round " + std::to_string(r) + ": write " + err_text(w, we) + ", recv " + err_text(n, ne);
      ::close(c);
    }
  // Every fiber waits in accept again; the listeners are shut down from this thread,
  // which ends the accepts.
  for (auto& l : listeners) ::shutdown(l->fd, SHUT_RDWR);
  server.join();
  EXPECT_EQ(good, listeners_n * rounds) << first_bad;
  EXPECT_EQ(finished.load(), listeners_n);
}

// Descriptors opened and closed (the hooked close: libc's, and ringio told the number
// is free) on a plain thread while fibers of a loop open sockets, wait on them (until a
// receive timeout), read and close them: each fiber's calls end as its own descriptors
// say; the other thread's closes wake nothing.
TEST_P(FiberHooksRingAttack, PlainThreadClosesWhileFibersWaitAndClose) {
  constexpr int pairs_n = 50, rounds = 20;
  std::atomic<bool> stop_churn{false};
  // The other thread's descriptors take the highest numbers (the fibers' sockets take
  // the lowest free ones), so the two never share a number.
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  const int top = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 65536)) - 1;
  const int base = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(base, 0);
  std::thread churn([&] {
    int k = 0;
    while (!stop_churn.load()) {
      const int n = top - (k++ % 32);
      if (::dup3(base, n, O_CLOEXEC) == n) ::close(n);
    }
  });
  std::atomic<int> good{0};
  std::atomic<int> wrong{0};
  std::vector<std::function<void()>> fns;
  for (int i = 0; i < pairs_n; ++i)
    fns.push_back([&] {
      for (int r = 0; r < rounds; ++r) {
        fd_pair p;
        // A wait that ends by the receive timeout, then one that gets a byte.
        timeval tv{0, 1000};
        ::setsockopt(p.a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char c;
        errno = 0;
        if (::read(p.a, &c, 1) != -1 || errno != EAGAIN) {
          ++wrong;
          return;
        }
        ::write(p.b, "x", 1);
        if (::read(p.a, &c, 1) != 1) {
          ++wrong;
          return;
        }
      }
      ++good;
    });
  in_fibers(fns, 30s);
  stop_churn = true;
  churn.join();
  ::close(base);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(good.load(), pairs_n);
}

RINGIO_ALL_BACKENDS(FiberHooksRingAttack);

}  // namespace
