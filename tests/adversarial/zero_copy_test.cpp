// SPDX-License-Identifier: Apache-2.0
// Adversarial: zero-copy sends. Destroying the io_context while a send waits for its
// notification must return promptly even when the socket is not owned by the task (it
// outlives the context), when the send was cut by a deadline, or when it runs as a
// sender; the bytes reported sent arrive intact, even when the buffer is overwritten
// right after a send that a stop cut short.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "ringio/exec.hpp"
#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t threshold = 4096;

std::unique_ptr<io_context> make_ctx() {
  try {
    return std::make_unique<io_context>(
        io_context_options{.backend = backend_kind::uring, .quiet = true, .zero_copy_send_threshold = threshold});
  } catch (const std::system_error&) {
    return nullptr;
  }
}

task<std::pair<stream_socket, stream_socket>> connect_pair(stream_listener& l) {
  auto [c, s] = co_await when_all(stream_socket::connect(address_of(l)), l.accept());
  EXPECT_TRUE(c && s);
  co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
}

// mode 0: socket outside the task; 1: send cut by with_timeout then a new one;
// 2: the send as a sender (exec::send_all) spawned through a task.
void destroy_while_waiting(int mode) {
  auto own = make_ctx();
  if (!own) GTEST_SKIP() << "no uring";
  if (own->describe().find("zero") == std::string::npos) std::printf("describe: %s\n", own->describe().c_str());
  auto l = listen_loopback();
  auto pair = sync_wait(*own, connect_pair(l));
  stream_socket sender = std::move(pair.first);  // outlives the context in mode 0
  const int peer = pair.second.release();
  int small = 4096;
  ASSERT_EQ(::setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  auto block = std::make_shared<std::vector<std::byte>>(64 * 1024, std::byte{1});
  if (mode == 0) {
    own->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> b) -> task<void> {
      for (int i = 0; i < 256; ++i) {
        auto sent = co_await s.send_all(*b);
        if (!sent || *sent != b->size()) co_return;
      }
    }(sender, block));
  } else if (mode == 1) {
    own->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> b) -> task<void> {
      for (int i = 0; i < 256; ++i) (void)co_await with_timeout(s.send_all(*b), 100ms);
    }(sender, block));
  } else {
    own->spawn([](stream_socket& s, std::shared_ptr<std::vector<std::byte>> b) -> task<void> {
      for (int i = 0; i < 256; ++i) {
        auto sent = co_await exec::send_all(s, *b);
        if (!sent) co_return;
      }
    }(sender, block));
  }
  sync_wait(*own, []() -> task<void> { (void)(void)co_await sleep_for(300ms); }());
  std::atomic<bool> destroyed{false};
  bool peer_reset = false;
  std::thread unblock([&] {
    for (int i = 0; i < 500 && !destroyed.load(); ++i) std::this_thread::sleep_for(10ms);
    if (destroyed.load()) return;
    linger reset{1, 0};
    ::setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(peer);
    peer_reset = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  own.reset();
  destroyed.store(true);
  const auto took = std::chrono::steady_clock::now() - t0;
  unblock.join();
  if (!peer_reset) ::close(peer);
  EXPECT_LT(took, 2s) << "mode " << mode << ": ~io_context waited "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  (void)sender.release();  // its loop is gone; leak the descriptor rather than close through it
}

TEST(AdversarialZeroCopy, DestroyWithSocketOutsideTheTask) { destroy_while_waiting(0); }
TEST(AdversarialZeroCopy, DestroyAfterDeadlineCutSends) { destroy_while_waiting(1); }
TEST(AdversarialZeroCopy, DestroyWithSenderForm) { destroy_while_waiting(2); }

// Sends cut short by a stop, buffer overwritten right after each completion: the
// peer's bytes equal, in order, the reported prefix of each send.
TEST(AdversarialZeroCopy, StoppedSendsReportedBytesIntact) {
  auto own = make_ctx();
  if (!own) GTEST_SKIP() << "no uring";
  auto l = listen_loopback();
  auto pair = sync_wait(*own, connect_pair(l));
  std::vector<std::byte> expected;
  std::vector<std::byte> got;
  sync_wait(*own,
            [](stream_socket& a, stream_socket& b, std::vector<std::byte>& expected,
               std::vector<std::byte>& got) -> task<void> {
              bool done = false;
              auto reader = [&]() -> task<void> {
                std::vector<std::byte> buf(1 << 16);
                for (;;) {
                  (void)(void)co_await sleep_for(1ms);  // a slow reader
                  auto r = co_await with_timeout(b.recv(buf), 500ms);
                  if (!r || *r == 0) {
                    if (done) co_return;
                    continue;
                  }
                  got.insert(got.end(), buf.begin(), buf.begin() + *r);
                }
              };
              auto writer = [&]() -> task<void> {
                std::vector<std::byte> buf(256 * 1024);
                for (int round = 0; round < 40; ++round) {
                  for (std::size_t i = 0; i < buf.size(); ++i)
                    buf[i] = std::byte(static_cast<unsigned char>(round * 7 + i / 4096));
                  auto r = co_await with_timeout(a.send_all(buf), std::chrono::milliseconds(1 + round % 5));
                  std::size_t n = r ? *r : 0;
                  expected.insert(expected.end(), buf.begin(), buf.begin() + n);
                  for (auto& x : buf) x = std::byte{0xEE};  // reused at once
                }
                done = true;
              };
              scope s;
              s.spawn(reader());
              s.spawn(writer());
              co_await s.join();
            }(pair.first, pair.second, expected, got));
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "bytes reported sent differ from what arrived";
}

// Zero copy on a direct-descriptor socket: the context destroyed while the send waits
// for its notification returns promptly.
TEST(AdversarialZeroCopy, DestroyWithDirectDescriptorSend) {
  std::unique_ptr<io_context> own;
  try {
    own = std::make_unique<io_context>(io_context_options{.backend = backend_kind::uring,
                                                          .quiet = true,
                                                          .direct_descriptors = 16,
                                                          .zero_copy_send_threshold = threshold});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  if (own->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto pair = sync_wait(*own, connect_pair(l));  // first: client (normal), second: accepted (direct)
  ASSERT_TRUE(pair.second.is_direct());
  const int peer = pair.first.release();
  int small = 4096;
  ASSERT_EQ(::setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  own->spawn([](stream_socket s) -> task<void> {
    std::vector<std::byte> block(64 * 1024, std::byte{1});
    for (int i = 0; i < 256; ++i) {
      auto sent = co_await s.send_all(block);
      if (!sent || *sent != block.size()) co_return;
    }
  }(std::move(pair.second)));
  sync_wait(*own, []() -> task<void> { (void)(void)co_await sleep_for(300ms); }());
  std::atomic<bool> destroyed{false};
  std::thread unblock([&] {
    for (int i = 0; i < 500 && !destroyed.load(); ++i) std::this_thread::sleep_for(10ms);
    if (destroyed.load()) return;
    linger reset{1, 0};
    ::setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::shutdown(peer, SHUT_RDWR);
  });
  const auto t0 = std::chrono::steady_clock::now();
  own.reset();
  destroyed.store(true);
  const auto took = std::chrono::steady_clock::now() - t0;
  unblock.join();
  ::close(peer);
  EXPECT_LT(took, 2s) << "~io_context waited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
}

}  // namespace
