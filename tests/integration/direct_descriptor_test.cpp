// SPDX-License-Identifier: Apache-2.0
// Direct descriptors (listen_options::direct_descriptors with a file table from
// io_context_options::direct_descriptors): accepted sockets live in the ring's file
// table on io_uring and every operation on them uses IOSQE_FIXED_FILE; elsewhere the
// option is ignored and the same tests run over normal descriptors.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class DirectDescriptors : public ::testing::TestWithParam<backend_kind> {
 protected:
  // A loop with a file table of `slots` (skips when the backend cannot start).
  bool make(unsigned slots) {
    try {
      ctx_.emplace(io_context_options{.backend = GetParam(), .quiet = true, .direct_descriptors = slots});
    } catch (const std::system_error& e) {
      return false;
    }
    return true;
  }
  void SetUp() override {
    if (!make(64)) GTEST_SKIP() << "backend " << to_string(GetParam()) << " cannot start here";
  }
  io_context& ctx() { return *ctx_; }
  template <class T>
  T run(task<T> t) {
    return sync_wait(*ctx_, std::move(t));
  }
  // Whether accepts on this loop give direct descriptors: io_uring only, and only on
  // kernels with IORING_OP_FIXED_FD_INSTALL (6.8); the report says which.
  bool direct_expected() {
    const std::string d = ctx().describe();
    if (GetParam() != backend_kind::uring) {
      EXPECT_EQ(ctx().direct_table_size(), 0u);
      EXPECT_NE(d.find("direct descriptors off"), std::string::npos) << d;
      return false;
    }
    if (ctx().direct_table_size() == 0) {
      EXPECT_NE(d.find("no IORING_OP_FIXED_FD_INSTALL"), std::string::npos) << d;
      return false;
    }
    EXPECT_NE(d.find("direct descriptors on"), std::string::npos) << d;
    return true;
  }

 private:
  std::optional<io_context> ctx_;
};

stream_listener direct_listener() { return listen_loopback({.direct_descriptors = true}); }

// Connects and returns the connected client and the server's accepted socket.
task<std::pair<stream_socket, stream_socket>> connect_pair(stream_listener& l, socket_address at) {
  auto [c, s] = co_await when_all(stream_socket::connect(at), l.accept());
  EXPECT_TRUE(c && s);
  co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
}

// Sends `text` from `from` and expects it whole on `to`.
task<bool> one_way(stream_socket& from, stream_socket& to, std::string_view text) {
  auto sent = co_await from.send_all(text);
  EXPECT_TRUE(sent && *sent == text.size()) << (sent ? std::to_string(*sent) : sent.error().message());
  std::string got(text.size(), '\0');
  auto r = co_await to.recv_exact(std::as_writable_bytes(std::span(got)));
  EXPECT_TRUE(r && *r == text.size()) << (r ? std::to_string(*r) : r.error().message());
  co_return got == text;
}

TEST_P(DirectDescriptors, EchoWithEveryOperation) {
  const bool direct = direct_expected();
  auto l = direct_listener();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at, bool direct) -> task<void> {
    auto [c, s] = co_await connect_pair(l, at);
    EXPECT_EQ(s.is_direct(), direct);
    EXPECT_FALSE(c.is_direct());
    for (int i = 0; i < 50; ++i) {
      const std::string msg = "message " + std::to_string(i);
      bool ok = co_await one_way(c, s, msg);
      EXPECT_TRUE(ok);
      ok = co_await one_way(s, c, msg);
      EXPECT_TRUE(ok);
    }
    // recv and send (single shots).
    auto sent = co_await c.send(std::string_view("abc"));
    EXPECT_TRUE(sent && *sent == 3u);
    std::array<char, 16> buf{};
    auto got = co_await s.recv(std::as_writable_bytes(std::span(buf)));
    EXPECT_TRUE(got && *got == 3u);
    auto back = co_await s.send(std::string_view("xyz"));
    EXPECT_TRUE(back && *back == 3u);
    got = co_await c.recv(std::as_writable_bytes(std::span(buf)));
    EXPECT_TRUE(got && *got == 3u && std::memcmp(buf.data(), "xyz", 3) == 0);
    // Gather send from the direct socket.
    std::array<const_buffer, 3> parts{const_buffer(std::string_view("ga")), const_buffer(std::string_view("th")),
                                      const_buffer(std::string_view("er"))};
    auto g = co_await s.send_all(std::span<const const_buffer>(parts));
    EXPECT_TRUE(g && *g == 6u);
    std::array<char, 6> six{};
    auto r6 = co_await c.recv_exact(std::as_writable_bytes(std::span(six)));
    EXPECT_TRUE(r6 && *r6 == 6u && std::memcmp(six.data(), "gather", 6) == 0);
    // Pooled and multishot receives on the direct socket.
    buffer_pool pool(*io_context::current(), 4, 256);
    sent = co_await c.send(std::string_view("pooled"));
    EXPECT_TRUE(sent);
    auto chunk = co_await receive_pooled(s, pool);
    EXPECT_TRUE(chunk && chunk->size() == 6u);
    {
      multishot_receiver rx(s, pool);
      sent = co_await c.send(std::string_view("multishot"));
      EXPECT_TRUE(sent);
      std::string all;
      while (all.size() < 9) {
        auto part = co_await rx.next();
        EXPECT_TRUE(part && !part->empty());
        if (!part || part->empty()) break;
        all.append(reinterpret_cast<const char*>(part->bytes().data()), part->size());
      }
      EXPECT_EQ(all, "multishot");
    }
    // Shutdown: the peer sees the end of the stream; then close through the ring.
    auto sh = co_await s.shutdown(SHUT_WR);
    EXPECT_TRUE(sh);
    got = co_await c.recv(std::as_writable_bytes(std::span(buf)));
    EXPECT_TRUE(got && *got == 0u);
    auto closed = co_await s.close();
    EXPECT_TRUE(closed);
    EXPECT_FALSE(s.is_open());
  }(l, at, direct));
  EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size()) << "every slot is free again";
}

TEST_P(DirectDescriptors, InstallGivesAPlainDescriptor) {
  const bool direct = direct_expected();
  auto l = direct_listener();
  auto at = address_of(l);
  const std::size_t fds_before = open_fd_count();
  run([](stream_listener& l, socket_address at, bool direct, std::size_t fds_before) -> task<void> {
    auto [c, s] = co_await connect_pair(l, at);
    // Direct: only the listener's and the client's descriptors are new.
    const std::size_t with_direct = open_fd_count();
    if (direct) {
      EXPECT_EQ(with_direct, fds_before + 1);
    }
    auto installed = s.install_fd();
    EXPECT_TRUE(installed) << installed.error().message();
    EXPECT_FALSE(s.is_direct());
    const int fd = s.native_handle();
    EXPECT_GE(fd, 0);
    EXPECT_EQ(open_fd_count(), with_direct + (direct ? 1 : 0));
    EXPECT_EQ(::send(fd, "plain", 5, MSG_NOSIGNAL), 5);
    std::array<char, 8> buf{};
    auto got = co_await c.recv_exact(std::as_writable_bytes(std::span(buf).first(5)));
    EXPECT_TRUE(got && *got == 5u && std::memcmp(buf.data(), "plain", 5) == 0);
    auto sent = co_await c.send_all(std::string_view("back"));
    EXPECT_TRUE(sent);
    ssize_t n;
    do n = ::recv(fd, buf.data(), 4, MSG_WAITALL);
    while (n < 0 && errno == EINTR);
    EXPECT_EQ(n, 4);
    // The installed socket still works with ringio operations.
    bool ok = co_await one_way(s, c, "after install");
    EXPECT_TRUE(ok);
    // native_handle() installs by itself.
    auto [c2, s2] = co_await connect_pair(l, at);
    EXPECT_EQ(s2.is_direct(), direct);
    EXPECT_GE(s2.native_handle(), 0);
    EXPECT_FALSE(s2.is_direct());
    auto peer = s2.peer_address();
    EXPECT_TRUE(peer);
  }(l, at, direct, fds_before));
  EXPECT_EQ(open_fd_count(), fds_before);
  EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size());
}

// sendfile(2) needs a real descriptor: send_file installs the direct one first.
TEST_P(DirectDescriptors, SendFileInstallsFirst) {
  const bool direct = direct_expected();
  char name[] = "/tmp/ringio-direct-XXXXXX";
  const int file = ::mkstemp(name);
  ASSERT_GE(file, 0);
  ::unlink(name);
  ASSERT_EQ(::write(file, "file contents", 13), 13);
  auto l = direct_listener();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at, bool direct, int file) -> task<void> {
    auto [c, s] = co_await connect_pair(l, at);
    EXPECT_EQ(s.is_direct(), direct);
    auto sent = co_await send_file(s, file, 0, 13);
    EXPECT_TRUE(sent && *sent == 13u);
    EXPECT_FALSE(s.is_direct());
    std::array<char, 13> buf{};
    auto got = co_await c.recv_exact(std::as_writable_bytes(std::span(buf)));
    EXPECT_TRUE(got && *got == 13u && std::memcmp(buf.data(), "file contents", 13) == 0);
  }(l, at, direct, file));
  ::close(file);
  EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size());
}

// A table of 4 slots and 10 connections held open at once: the first 4 are direct,
// the rest fall back to normal descriptors; every one is served; closing them frees
// the slots for later accepts. Single-shot accepts and the multishot acceptor alike.
TEST_P(DirectDescriptors, FullTableFallsBackAndRefills) {
  if (!make(4)) GTEST_SKIP();
  const bool direct = direct_expected();
  for (bool multishot : {false, true}) {
    auto l = direct_listener();
    auto at = address_of(l);
    run([](stream_listener& l, socket_address at, bool direct, bool multishot) -> task<void> {
      std::optional<multishot_acceptor> acc;
      if (multishot) acc.emplace(l);
      for (int round = 0; round < 3; ++round) {
        std::vector<stream_socket> clients, served;
        for (int i = 0; i < 10; ++i) {
          auto c = co_await stream_socket::connect(at);
          EXPECT_TRUE(c);
          result<stream_socket> s;
          if (acc) s = co_await with_timeout(acc->next(), 5s);
          else s = co_await with_timeout(l.accept(), 5s);
          EXPECT_TRUE(s) << (s ? "" : s.error().message());
          if (!c || !s) co_return;
          EXPECT_EQ(s->is_direct(), direct && i < 4) << "round " << round << " connection " << i;
          clients.push_back(std::move(*c));
          served.push_back(std::move(*s));
        }
        for (std::size_t i = 0; i < served.size(); ++i) {
          bool ok = co_await one_way(clients[i], served[i], "ping " + std::to_string(i));
          EXPECT_TRUE(ok);
          ok = co_await one_way(served[i], clients[i], "pong " + std::to_string(i));
          EXPECT_TRUE(ok);
        }
        // Closed three ways: close(), the destructor, install then destructor.
        for (std::size_t i = 0; i < served.size(); ++i) {
          if (i % 3 == 0) {
            auto closed = co_await served[i].close();
            EXPECT_TRUE(closed);
          } else if (i % 3 == 1) {
            auto installed = served[i].install_fd();
            EXPECT_TRUE(installed);
          }
        }
        served.clear();
        // Let the closes reach the ring before the next accepts.
        co_await yield();
      }
    }(l, at, direct, multishot));
    EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size()) << "multishot " << multishot;
  }
}

// A direct descriptor awaited on another loop (whose table holds another connection
// in the same slot) fails with cross_device_link and moves no byte of that connection.
TEST_P(DirectDescriptors, OperationOnAnotherLoopFailsAndTouchesNothing) {
  if (!direct_expected()) GTEST_SKIP() << "no direct descriptors on this backend or kernel";
  auto l = direct_listener();
  auto at = address_of(l);
  auto first = run(connect_pair(l, at));
  ASSERT_TRUE(first.second.is_direct());
  io_context other(io_context_options{.backend = GetParam(), .quiet = true, .direct_descriptors = 64});
  auto l2 = direct_listener();
  auto at2 = address_of(l2);
  sync_wait(other, [](stream_listener& l2, socket_address at2, stream_socket& foreign) -> task<void> {
    auto [c2, s2] = co_await connect_pair(l2, at2);
    EXPECT_TRUE(s2.is_direct());
    EXPECT_TRUE(co_await c2.send_all(std::string_view("other loop's secret")));
    std::array<char, 64> buf{};
    auto got = co_await foreign.recv(std::as_writable_bytes(std::span(buf)));
    EXPECT_FALSE(got) << "read " << got.value_or(0) << " bytes of another connection";
    EXPECT_EQ(got ? std::error_code{} : got.error(), std::errc::cross_device_link);
    auto sent = co_await foreign.send_all(std::string_view("leak"));
    EXPECT_FALSE(sent);
    EXPECT_EQ(sent ? std::error_code{} : sent.error(), std::errc::cross_device_link);
    auto exact = co_await foreign.recv_exact(std::as_writable_bytes(std::span(buf).first(4)));
    EXPECT_FALSE(exact);
    // The other loop's connection still has all its bytes, and got nothing.
    auto mine = co_await s2.recv_exact(std::as_writable_bytes(std::span(buf).first(19)));
    EXPECT_TRUE(mine && *mine == 19u);
    EXPECT_EQ(std::string_view(buf.data(), 19), "other loop's secret");
    char probe;
    EXPECT_EQ(::recv(c2.native_handle(), &probe, 1, MSG_DONTWAIT), -1) << "the other connection received bytes";
  }(l2, at2, first.second));
  // The socket still works on its own loop.
  bool ok = run(one_way(first.first, first.second, "still mine"));
  EXPECT_TRUE(ok);
}

TEST_P(DirectDescriptors, CancelStopAndTimeoutOnADirectRecv) {
  const bool direct = direct_expected();
  auto l = direct_listener();
  auto at = address_of(l);
  run([](stream_listener& l, socket_address at, bool direct) -> task<void> {
    auto [c, s] = co_await connect_pair(l, at);
    EXPECT_EQ(s.is_direct(), direct);
    std::array<std::byte, 64> buf{};
    // cancel(): finds the recv by its direct descriptor.
    {
      scope sc;
      sc.spawn([](stream_socket& s) -> task<void> {
        auto slept = co_await sleep_for(20ms);
        EXPECT_TRUE(slept);
        s.cancel();
      }(s));
      auto r = co_await s.recv(buf);
      EXPECT_FALSE(r);
      if (!r) {
        EXPECT_EQ(r.error(), std::errc::operation_canceled);
      }
      co_await sc.join();
    }
    // A stop token.
    {
      std::stop_source stop;
      scope sc;
      sc.spawn([](std::stop_source& stop) -> task<void> {
        auto slept = co_await sleep_for(20ms);
        EXPECT_TRUE(slept);
        stop.request_stop();
      }(stop));
      auto r = co_await s.recv(buf).with_stop(stop.get_token());
      EXPECT_FALSE(r);
      if (!r) {
        EXPECT_EQ(r.error(), std::errc::operation_canceled);
      }
      co_await sc.join();
    }
    // A linked timeout.
    {
      auto r = co_await with_timeout(s.recv(buf), 20ms);
      EXPECT_FALSE(r);
      if (!r) {
        EXPECT_EQ(r.error(), std::errc::timed_out);
      }
    }
    // cancel() also ends a multishot receiver's wait on the direct socket.
    {
      buffer_pool pool(*io_context::current(), 4, 256);
      multishot_receiver rx(s, pool);
      scope sc;
      sc.spawn([](stream_socket& s) -> task<void> {
        auto slept = co_await sleep_for(20ms);
        EXPECT_TRUE(slept);
        s.cancel();
      }(s));
      auto part = co_await rx.next();
      EXPECT_FALSE(part);
      if (!part) {
        EXPECT_EQ(part.error(), std::errc::operation_canceled);
      }
      co_await sc.join();
    }
    // Nothing was lost: data sent now arrives.
    bool ok = co_await one_way(c, s, "still there");
    EXPECT_TRUE(ok);
  }(l, at, direct));
}

TEST_P(DirectDescriptors, ServeAcceptsDirectDescriptors) {
  const bool direct = direct_expected();
  auto l = listen_loopback();
  auto at = address_of(l);
  static int direct_seen;
  direct_seen = 0;
  run([](stream_listener& l, socket_address at) -> task<void> {
    std::stop_source stop;
    scope sc;
    sc.spawn([](stream_listener& l, std::stop_source& stop) -> task<void> {
      auto r = co_await serve(
          l,
          [](stream_socket s) -> task<void> {
            if (s.is_direct()) ++direct_seen;
            std::array<std::byte, 256> buf;
            for (;;) {
              auto n = co_await s.recv(buf);
              if (!n || *n == 0) co_return;
              auto w = co_await s.send_all(std::span(buf).first(*n));
              if (!w) co_return;
            }
          },
          serve_options{.drain_timeout = 100ms, .direct_descriptors = true}, stop.get_token());
      EXPECT_TRUE(r);
    }(l, stop));
    for (int i = 0; i < 5; ++i) {
      auto c = co_await stream_socket::connect(at);
      EXPECT_TRUE(c);
      if (!c) break;
      auto sent = co_await c->send_all(std::string_view("echo"));
      EXPECT_TRUE(sent);
      std::array<char, 4> buf{};
      auto got = co_await c->recv_exact(std::as_writable_bytes(std::span(buf)));
      EXPECT_TRUE(got && *got == 4u);
    }
    stop.request_stop();
    co_await sc.join();
  }(l, at));
  EXPECT_EQ(direct_seen, direct ? 5 : 0);
  EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size());
}

// Random actions on many connections over a small table: each connection echoes a few
// messages, then the client resets it, shuts it down or closes it, or the server stops
// its receive, at random points. At the end every task has finished, no descriptor is
// left open and every slot of the table is free.
TEST_P(DirectDescriptors, RandomResetsStopsAndShutdowns) {
  if (!make(8)) GTEST_SKIP();
  (void)direct_expected();
  const std::uint64_t seed = test_seed();
  auto l = direct_listener();
  auto at = address_of(l);
  const std::size_t fds_before = open_fd_count();
  struct tally {
    int served = 0;
    int finished = 0;
  } t;
  run([](stream_listener& l, socket_address at, std::uint64_t seed, tally& t) -> task<void> {
    std::mt19937_64 rng(seed);
    scope servers;
    multishot_acceptor acc(l);
    for (int conn = 0; conn < 60; ++conn) {
      auto c = co_await stream_socket::connect(at);
      EXPECT_TRUE(c);
      auto s = co_await with_timeout(acc.next(), 5s);
      EXPECT_TRUE(s);
      if (!c || !s) co_return;
      const int messages = static_cast<int>(rng() % 4);
      const int ending = static_cast<int>(rng() % 4);
      const auto stop_after = std::chrono::milliseconds(rng() % 3);
      ++t.served;
      auto stop = std::make_shared<std::stop_source>();
      const bool close_explicitly = (rng() & 1) != 0;
      servers.spawn(
          [](stream_socket s, std::shared_ptr<std::stop_source> stop, bool close_explicitly, tally& t) -> task<void> {
            std::array<std::byte, 128> buf;
            for (;;) {
              auto n = co_await s.recv(buf).with_stop(stop->get_token());
              if (!n || *n == 0) break;
              auto w = co_await s.send_all(std::span(buf).first(*n));
              if (!w) break;
            }
            if (close_explicitly) {
              auto closed = co_await s.close();
              EXPECT_TRUE(closed);
            }
            ++t.finished;
          }(std::move(*s), stop, close_explicitly, t));
      for (int m = 0; m < messages; ++m) {
        auto sent = co_await c->send_all(std::string_view("0123456789"));
        EXPECT_TRUE(sent);
        std::array<char, 10> buf{};
        auto got = co_await c->recv_exact(std::as_writable_bytes(std::span(buf)));
        EXPECT_TRUE(got && *got == 10u);
      }
      switch (ending) {
        case 0: {  // reset
          linger lg{1, 0};
          ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
          c = stream_socket{};
          break;
        }
        case 1: {  // shutdown, then close
          auto sh = co_await c->shutdown(SHUT_WR);
          EXPECT_TRUE(sh);
          c = stream_socket{};
          break;
        }
        case 2:  // the server stops its receive
          if (stop_after.count() > 0) {
            auto slept = co_await sleep_for(stop_after);
            (void)slept;
          }
          stop->request_stop();
          c = stream_socket{};
          break;
        default:
          c = stream_socket{};
          break;
      }
    }
    co_await servers.join();
  }(l, at, seed, t));
  EXPECT_EQ(t.finished, t.served);
  EXPECT_EQ(t.served, 60);
  EXPECT_EQ(open_fd_count(), fds_before) << "seed " << seed;
  EXPECT_EQ(ctx().direct_free(), ctx().direct_table_size()) << "seed " << seed;
}

RINGIO_ALL_BACKENDS(DirectDescriptors);

}  // namespace
