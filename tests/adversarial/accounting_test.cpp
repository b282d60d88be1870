// SPDX-License-Identifier: Apache-2.0
// Adversarial: byte accounting under cancel() at random moments. A send_all / gather
// send_all / send_file that stops early reports N: the peer must receive exactly the
// first N bytes (no more, no less). recv_exact / buffered read_exact cancelled at
// random moments, then restarted, must deliver the stream whole and in order.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "ringio/net/buffered_stream.hpp"
#include "ringio/net/send_file.hpp"
#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

struct AdversarialAccounting : ::testing::TestWithParam<std::tuple<backend_kind, bool>> {
  std::optional<io_context> ctx;
  void SetUp() override {
    try {
      io_context_options o{.backend = std::get<0>(GetParam()), .quiet = true};
      if (std::get<1>(GetParam())) o.zero_copy_send_threshold = 4096;
      ctx.emplace(o);
    } catch (const std::system_error& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

task<std::vector<std::byte>> drain(stream_socket& s, std::mt19937& rng) {
  std::vector<std::byte> got;
  std::vector<std::byte> buf(8192);
  for (;;) {
    (void)(void)co_await sleep_for(std::chrono::microseconds(50 + rng() % 250));
    auto r = co_await with_timeout(s.recv(std::span(buf).first(1 + rng() % buf.size())), 3s);
    if (!r || *r == 0) co_return got;
    got.insert(got.end(), buf.begin(), buf.begin() + *r);
  }
}

// kind 0: send_all, 1: gather send_all, 2: send_file
void send_accounting(io_context& ctx, int kind) {
  std::mt19937 rng(1234 + kind);
  auto data = random_bytes(512 * 1024, 99 + kind);
  std::FILE* f = nullptr;
  if (kind == 2) {
    f = std::tmpfile();
    ASSERT_EQ(std::fwrite(data.data(), 1, data.size(), f), data.size());
    std::fflush(f);
  }
  int partial = 0;
  for (int round = 0; round < 25; ++round) {
    auto l = listen_loopback();
    auto pair = sync_wait(ctx, [](stream_listener& l) -> task<std::pair<stream_socket, stream_socket>> {
      auto [c, s] = co_await when_all(stream_socket::connect(address_of(l)), l.accept());
      co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
    }(l));
    int sz = 16384;
    ::setsockopt(pair.first.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    std::size_t reported = 0;
    std::error_code err;
    std::vector<std::byte> got;
    const auto cancel_after = std::chrono::microseconds(rng() % 4000);
    sync_wait(ctx,
              [](int kind, stream_socket& a, stream_socket& b, const std::vector<std::byte>& data, std::FILE* f,
                 std::chrono::microseconds cancel_after, std::mt19937& rng, std::size_t& reported, std::error_code& err,
                 std::vector<std::byte>& got) -> task<void> {
                auto sender = [&]() -> task<void> {
                  if (kind == 0) {
                    auto r = co_await a.send_all(data);
                    if (r) reported = *r;
                    else err = r.error();
                  } else if (kind == 1) {
                    std::vector<const_buffer> bufs;
                    for (std::size_t off = 0; off < data.size(); off += 1000)
                      bufs.push_back(const_buffer(data.data() + off, std::min<std::size_t>(1000, data.size() - off)));
                    auto r = co_await a.send_all(std::span<const const_buffer>(bufs));
                    if (r) reported = *r;
                    else err = r.error();
                  } else {
                    auto r = co_await send_file(a, ::fileno(f), 0, data.size());
                    if (r) reported = *r;
                    else err = r.error();
                  }
                  (void)co_await a.shutdown(SHUT_WR);
                };
                auto canceller = [&]() -> task<void> {
                  (void)(void)co_await sleep_for(cancel_after);
                  a.cancel();
                };
                auto reader = [&]() -> task<void> { got = co_await drain(b, rng); };
                scope s;
                s.spawn(sender());
                s.spawn(canceller());
                s.spawn(reader());
                co_await s.join();
              }(kind, pair.first, pair.second, data, f, cancel_after, rng, reported, err, got));
    ASSERT_EQ(got.size(), reported) << "kind " << kind << " round " << round << " (cancel after "
                                    << cancel_after.count() << " us, error " << err.message() << ")";
    ASSERT_TRUE(std::equal(got.begin(), got.end(), data.begin())) << "kind " << kind << " round " << round;
    if (reported < data.size()) ++partial;
  }
  std::printf("kind %d: %d of 25 rounds stopped early\n", kind, partial);
  if (f) std::fclose(f);
}

TEST_P(AdversarialAccounting, SendAllReportsExactlyWhatThePeerGets) { send_accounting(*ctx, 0); }
TEST_P(AdversarialAccounting, GatherSendAllReportsExactlyWhatThePeerGets) { send_accounting(*ctx, 1); }
TEST_P(AdversarialAccounting, SendFileReportsExactlyWhatThePeerGets) {
  if (std::get<1>(GetParam())) GTEST_SKIP() << "zero copy not relevant";
  send_accounting(*ctx, 2);
}

// The writer trickles a known stream; the reader reads with recv_exact (or a buffered
// read_exact) and gets cancel()led at random moments; restarting, it must get the
// whole stream in order.
void recv_accounting(io_context& ctx, bool buffered) {
  std::mt19937 rng(77 + buffered);
  auto data = random_bytes(200 * 1000, 5 + buffered);
  for (int round = 0; round < 10; ++round) {
    socket_pair p;
    std::vector<std::byte> got;
    bool ok = sync_wait(ctx,
                        [](socket_pair& p, const std::vector<std::byte>& data, std::vector<std::byte>& got,
                           std::mt19937& rng, bool buffered) -> task<bool> {
                          bool writer_done = false;
                          bool reader_done = false;
                          int short_reads = 0, cancels = 0;
                          auto writer = [&]() -> task<void> {
                            std::size_t off = 0;
                            while (off < data.size()) {
                              std::size_t n = std::min<std::size_t>(1 + rng() % 3000, data.size() - off);
                              auto r = co_await p.b.send_all(std::span(data).subspan(off, n));
                              if (!r) break;
                              off += *r;
                              if (rng() % 3 == 0) (void)co_await sleep_for(std::chrono::microseconds(rng() % 200));
                            }
                            writer_done = true;
                          };
                          auto canceller = [&]() -> task<void> {
                            while (!reader_done) {
                              (void)(void)co_await sleep_for(std::chrono::microseconds(50 + rng() % 400));
                              p.a.cancel();
                            }
                          };
                          auto reader = [&]() -> task<void> {
                            buffered_stream bs(p.a, 4096);
                            std::vector<std::byte> buf(7000);
                            while (got.size() < data.size()) {
                              std::size_t want = std::min(buf.size(), data.size() - got.size());
                              result<std::size_t> r = buffered ? co_await bs.read_exact(std::span(buf).first(want))
                                                               : co_await p.a.recv_exact(std::span(buf).first(want));
                              if (r && *r < want) ++short_reads;
                              if (r) got.insert(got.end(), buf.begin(), buf.begin() + *r);
                              else if (r.error() == std::errc::operation_canceled) ++cancels;
                              else if (r.error() != std::errc::operation_canceled) break;
                            }
                            reader_done = true;
                          };
                          scope s;
                          s.spawn(writer());
                          s.spawn(canceller());
                          s.spawn(reader());
                          for (int i = 0; i < 500 && s.size() > 0; ++i) (void)co_await sleep_for(10ms);
                          const bool in_time = s.size() == 0;
                          s.request_stop();
                          co_await s.join();
                          if (rng() % 5 == 0)
                            std::printf("round: %d short reads, %d cancelled reads\n", short_reads, cancels);
                          co_return in_time&& writer_done;
                        }(p, data, got, rng, buffered));
    ASSERT_TRUE(ok) << "round " << round << ": stalled";
    ASSERT_EQ(got.size(), data.size()) << "round " << round;
    ASSERT_TRUE(got == data) << "round " << round << ": stream corrupted";
  }
}

TEST_P(AdversarialAccounting, RecvExactCancelledAtRandomLosesNothing) { recv_accounting(*ctx, false); }
TEST_P(AdversarialAccounting, BufferedReadExactCancelledAtRandomLosesNothing) { recv_accounting(*ctx, true); }

INSTANTIATE_TEST_SUITE_P(, AdversarialAccounting,
                         ::testing::Combine(::testing::Values(backend_kind::uring, backend_kind::epoll,
                                                              backend_kind::uring_poll),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string s(to_string(std::get<0>(info.param)));
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s + (std::get<1>(info.param) ? "_zc" : "");
                         });

}  // namespace
