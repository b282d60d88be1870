// SPDX-License-Identifier: Apache-2.0
// batching_writer with io_context_options::send_bundles on and off, on every backend
// (the readiness backends and kernels without bundles take the sendmsg path): a slow
// reader behind small socket buffers gets every message whole and in order, across
// short sends; seeded random sizes (0 and 1 bytes, over 64 KiB); a stop, a close and a
// peer reset while a bundle waits for room; describe() says which path is used.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"
#include "support/send_bundle_fixture.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class SendBundle : public send_bundle_fixture {};

using text = std::shared_ptr<const std::string>;

// Message `i` of `size` bytes: its bytes depend on its number and their position, so a
// message split, cut or sent out of order changes the stream.
text message(std::size_t i, std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t j = 0; j < size; ++j) s[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
  return std::make_shared<const std::string>(std::move(s));
}

// Seeded sizes: 0 and 1 byte, small, and over 64 KiB.
std::vector<std::size_t> random_sizes(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> sizes(n);
  for (auto& s : sizes) {
    const auto kind = rng() % 10;
    if (kind < 2) s = 0;
    else if (kind < 4) s = 1;
    else if (kind < 9) s = 2 + rng() % 4096;
    else s = 65537 + rng() % (192 * 1024);
  }
  return sizes;
}

void small_buffers(stream_socket& s) {
  int bytes = 32 * 1024;
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

// A connected TCP pair over 127.0.0.1 with small buffers on both ends.
struct tcp_pair {
  stream_socket writer, reader;
};
task<std::optional<tcp_pair>> connect_pair() {
  auto l = listen_loopback();
  auto c = co_await stream_socket::connect(address_of(l));
  auto s = co_await l.accept();
  EXPECT_TRUE(c && s);
  if (!c || !s) co_return std::nullopt;
  small_buffers(*c);
  small_buffers(*s);
  co_return tcp_pair{std::move(*s), std::move(*c)};
}

// Reads until the end of the stream (or an error, or 10 s of silence), slowly: a pause
// every few reads keeps the writer's sends short.
task<std::string> read_slowly(stream_socket& s) {
  std::string got;
  std::array<char, 8192> buf;
  for (int reads = 1;; ++reads) {
    auto n = co_await with_timeout(s.recv(buf), 10s);
    if (!n || *n == 0) co_return got;
    got.append(buf.data(), *n);
    if (reads % 16 == 0) (void)co_await sleep_for(1ms);
  }
}

task<void> run_into(batching_writer<text>& w, result<void>& out) { out = co_await w.run(); }

TEST_P(SendBundle, DescribeSaysWhetherSendBundlesAreUsed) {
  const std::string d = ctx().describe();
  if (backend() != backend_kind::uring) {
    EXPECT_EQ(d.find("send bundles"), std::string::npos) << d;
    return;
  }
  if (!bundles()) EXPECT_NE(d.find("send bundles off"), std::string::npos) << d;
  else
    EXPECT_TRUE(d.find("send bundles yes") != std::string::npos ||
                d.find("send bundles unsupported") != std::string::npos)
        << d;
}

// Producers queue faster than a slow reader takes them: sends come back short, in the
// middle of messages, and every message still arrives whole and in order.
TEST_P(SendBundle, ASlowReaderGetsEveryMessageWholeAndInOrder) {
  const std::uint64_t seed = test_seed();
  const auto sizes = random_sizes(seed, 400);
  run([](const std::vector<std::size_t>& sizes) -> task<void> {
    auto p = co_await connect_pair();
    if (!p) co_return;
    batching_writer<text> w(p->writer, {.max_messages = 64, .max_bytes = 128 * 1024});
    result<void> ran = unexpected(std::errc::interrupted);
    std::string all;
    scope sc;
    sc.spawn(run_into(w, ran));
    auto producer = [](batching_writer<text>& w, const std::vector<std::size_t>& sizes,
                       std::string& all) -> task<void> {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        text m = message(i, sizes[i]);
        all += *m;
        auto r = co_await w.write(std::move(m));
        EXPECT_TRUE(r) << r.error().message();
        if (i % 7 == 0) co_await yield();
      }
      w.close();
    };
    sc.spawn(producer(w, sizes, all));
    auto shut = [](result<void>& ran, stream_socket& s) -> task<void> {
      while (!ran && ran.error() == std::errc::interrupted) (void)co_await sleep_for(1ms);
      ::shutdown(s.native_handle(), SHUT_WR);
    };
    sc.spawn(shut(ran, p->writer));
    std::string got = co_await read_slowly(p->reader);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(got.size(), all.size());
    EXPECT_TRUE(got == all) << "the stream differs from the messages in order";
    EXPECT_GT(w.sends(), 1u);
  }(sizes));
}

// Queued while the peer does not read, then stopped: run() ends with
// operation_canceled, and the peer has a prefix of the stream.
TEST_P(SendBundle, AStopMidBundleLeavesAPrefixOfTheStream) {
  const std::uint64_t seed = test_seed();
  const auto sizes = random_sizes(seed, 300);
  run([](const std::vector<std::size_t>& sizes) -> task<void> {
    auto p = co_await connect_pair();
    if (!p) co_return;
    batching_writer<text> w(p->writer, {.max_messages = 1 << 16, .max_bytes = std::size_t{1} << 30});
    result<void> ran = unexpected(std::errc::interrupted);
    std::string all;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      text m = message(i, sizes[i]);
      all += *m;
      EXPECT_TRUE(w.try_write(std::move(m)));
    }
    scope sc;
    sc.spawn(run_into(w, ran));
    (void)co_await sleep_for(20ms);  // a send stalls on the peer (a bundle stays in flight)
    sc.request_stop();
    co_await sc.join();
    EXPECT_EQ(ran.error(), std::errc::operation_canceled);
    EXPECT_FALSE(w.is_open());
    EXPECT_EQ(w.try_write(message(0, 1)).error(), std::errc::operation_canceled);
    ::shutdown(p->writer.native_handle(), SHUT_WR);
    std::string got = co_await read_slowly(p->reader);
    EXPECT_LT(got.size(), all.size());
    EXPECT_TRUE(got == all.substr(0, got.size())) << "not a prefix of the stream";
  }(sizes));
}

// close() while a bundle waits for room: what is queued still goes out, whole.
TEST_P(SendBundle, ACloseMidBundleSendsEverythingQueued) {
  const std::uint64_t seed = test_seed();
  const auto sizes = random_sizes(seed, 200);
  run([](const std::vector<std::size_t>& sizes) -> task<void> {
    auto p = co_await connect_pair();
    if (!p) co_return;
    batching_writer<text> w(p->writer, {.max_messages = 1 << 16, .max_bytes = std::size_t{1} << 30});
    result<void> ran = unexpected(std::errc::interrupted);
    std::string all;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      text m = message(i, sizes[i]);
      all += *m;
      EXPECT_TRUE(w.try_write(std::move(m)));
    }
    scope sc;
    sc.spawn(run_into(w, ran));
    (void)co_await sleep_for(20ms);  // the peer does not read: the send stalls
    w.close();
    EXPECT_EQ(w.try_write(message(0, 1)).error(), errc::closed);
    auto shut = [](result<void>& ran, stream_socket& s) -> task<void> {
      while (!ran && ran.error() == std::errc::interrupted) (void)co_await sleep_for(1ms);
      ::shutdown(s.native_handle(), SHUT_WR);
    };
    sc.spawn(shut(ran, p->writer));
    std::string got = co_await read_slowly(p->reader);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(got.size(), all.size());
    EXPECT_TRUE(got == all);
  }(sizes));
}

// The peer resets while a bundle waits for room: run() returns the reset and writes
// fail with it.
TEST_P(SendBundle, APeerResetMidBundleEndsRunWithTheError) {
  const std::uint64_t seed = test_seed();
  const auto sizes = random_sizes(seed, 200);
  run([](const std::vector<std::size_t>& sizes) -> task<void> {
    auto p = co_await connect_pair();
    if (!p) co_return;
    batching_writer<text> w(p->writer, {.max_messages = 1 << 16, .max_bytes = std::size_t{1} << 30});
    result<void> ran = unexpected(std::errc::interrupted);
    for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(w.try_write(message(i, sizes[i])));
    scope sc;
    sc.spawn(run_into(w, ran));
    (void)co_await sleep_for(20ms);
    ::linger reset{.l_onoff = 1, .l_linger = 0};
    ::setsockopt(p->reader.native_handle(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    { stream_socket gone = std::move(p->reader); }  // unread data, no linger: a reset
    co_await sc.join();
    EXPECT_FALSE(ran);
    if (ran) co_return;
    EXPECT_TRUE(ran.error() == std::errc::connection_reset || ran.error() == std::errc::broken_pipe)
        << ran.error().message();
    EXPECT_EQ(w.try_write(message(0, 1)).error(), ran.error());
    EXPECT_EQ(w.queued(), 0u);
  }(sizes));
}

// Many writers on one loop, one after another and at once: each run() registers a ring
// and removes it when it ends, so buffer groups are used again.
TEST_P(SendBundle, ManyWritersComeAndGo) {
  run([]() -> task<void> {
    for (int round = 0; round < 3; ++round) {
      std::vector<std::unique_ptr<socket_pair>> pairs;
      std::vector<std::unique_ptr<batching_writer<text>>> writers;
      std::vector<result<void>> ran(200, unexpected(std::errc::interrupted));
      scope sc;
      for (int i = 0; i < 200; ++i) {
        pairs.push_back(std::make_unique<socket_pair>());
        writers.push_back(std::make_unique<batching_writer<text>>(pairs.back()->a));
        sc.spawn(run_into(*writers.back(), ran[static_cast<std::size_t>(i)]));
      }
      for (int i = 0; i < 200; ++i) {
        auto& w = *writers[static_cast<std::size_t>(i)];
        EXPECT_TRUE(w.try_write(message(static_cast<std::size_t>(i), 10)));
        EXPECT_TRUE(w.try_write(message(static_cast<std::size_t>(i) + 1, 20)));
        w.close();
      }
      co_await sc.join();
      for (int i = 0; i < 200; ++i) {
        EXPECT_TRUE(ran[static_cast<std::size_t>(i)]);
        std::array<char, 64> buf;
        auto n = co_await pairs[static_cast<std::size_t>(i)]->b.recv_exact(std::span(buf).first(30));
        EXPECT_TRUE(n && *n == 30u);
        EXPECT_EQ(std::string(buf.data(), 30),
                  *message(static_cast<std::size_t>(i), 10) + *message(static_cast<std::size_t>(i) + 1, 20));
      }
    }
  }());
}

// An accepted direct descriptor (io_uring's file table): the bundle goes with
// IOSQE_FIXED_FILE; messages still arrive whole and in order through short sends.
TEST_P(SendBundle, ADirectDescriptorSendsTheSameStream) {
  io_context ctx(
      io_context_options{.backend = backend(), .quiet = true, .direct_descriptors = 64, .send_bundles = bundles()});
  const std::uint64_t seed = test_seed();
  const auto sizes = random_sizes(seed, 150);
  sync_wait(ctx, [](const std::vector<std::size_t>& sizes) -> task<void> {
    auto l = listen_loopback({.direct_descriptors = true});
    auto c = co_await stream_socket::connect(address_of(l));
    auto s = co_await l.accept();
    EXPECT_TRUE(c && s);
    if (!c || !s) co_return;
    small_buffers(*c);
    batching_writer<text> w(*s, {.max_messages = 1 << 16, .max_bytes = std::size_t{1} << 30});
    result<void> ran = unexpected(std::errc::interrupted);
    std::string all;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      text m = message(i, sizes[i]);
      all += *m;
      EXPECT_TRUE(w.try_write(std::move(m)));
    }
    w.close();
    scope sc;
    auto run_then_shut = [](batching_writer<text>& w, stream_socket& s, result<void>& out) -> task<void> {
      out = co_await w.run();
      (void)co_await s.shutdown();
    };
    sc.spawn(run_then_shut(w, *s, ran));
    std::string got = co_await read_slowly(*c);
    co_await sc.join();
    EXPECT_TRUE(ran) << ran.error().message();
    EXPECT_EQ(got.size(), all.size());
    EXPECT_TRUE(got == all);
  }(sizes));
}

INSTANTIATE_TEST_SUITE_P(, SendBundle,
                         ::testing::Combine(::testing::Values(backend_kind::uring, backend_kind::epoll,
                                                              backend_kind::uring_poll),
                                            ::testing::Bool()),
                         send_bundle_param_name);

}  // namespace
