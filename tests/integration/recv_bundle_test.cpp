// SPDX-License-Identifier: Apache-2.0
// buffer_pool_options: receive bundles and incremental buffers. Every test runs on every
// backend with every combination of the options (the readiness backends ignore them):
// bytes arrive whole and in order, buffers go back to the pool, a cancelled next() loses
// nothing, slices of an incremental buffer stay intact while held.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"
#include "support/seed.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class RecvBundle : public backend_test {
 protected:
  static constexpr buffer_pool_options combos[] = {{.bundle = false, .incremental = false},
                                                   {.bundle = true, .incremental = false},
                                                   {.bundle = false, .incremental = true},
                                                   {.bundle = true, .incremental = true}};
  static std::string name(buffer_pool_options o) {
    return std::string("bundle=") + (o.bundle ? "on" : "off") + " incremental=" + (o.incremental ? "on" : "off");
  }
  // Whether the kernel path is taken (the options change what the kernel does).
  bool kernel_path() const { return GetParam() == backend_kind::uring; }
};

// Blocking send of everything on a thread (retrying EINTR), then SHUT_WR.
std::thread send_then_shutdown(int fd, const std::vector<std::byte>& data, std::vector<std::size_t> sizes) {
  return std::thread([fd, &data, sizes = std::move(sizes)] {
    std::size_t off = 0;
    for (std::size_t i = 0; off < data.size(); ++i) {
      std::size_t n = std::min(data.size() - off, i < sizes.size() ? sizes[i] : data.size() - off);
      while (n > 0) {
        ssize_t w = ::send(fd, data.data() + off, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += static_cast<std::size_t>(w);
        n -= static_cast<std::size_t>(w);
      }
    }
    ::shutdown(fd, SHUT_WR);
  });
}

struct drained {
  std::vector<std::byte> got;
  unsigned batched = 0;  // buffers taken by next_ready()
  bool failed = false;
};

// Reads to the end of the stream with next() and next_ready(), holding each batch until
// the next one is taken (so that a pool of a few buffers runs dry now and then).
task<void> drain(multishot_receiver& rx, drained& d) {
  for (;;) {
    auto c = co_await with_timeout(rx.next(), 10s);
    if (!c) {
      ADD_FAILURE() << c.error().message();
      d.failed = true;
      co_return;
    }
    if (c->empty()) co_return;
    d.got.insert(d.got.end(), c->bytes().begin(), c->bytes().end());
    pooled_buffer more;
    while (rx.next_ready(more)) {
      ++d.batched;
      d.got.insert(d.got.end(), more.bytes().begin(), more.bytes().end());
    }
  }
}

// describe() names what the probe found, and a pool uses exactly that.
TEST_P(RecvBundle, DescribeNamesTheProbedFeaturesAndPoolsFollowIt) {
  const std::string d = ctx().describe();
  buffer_pool pool(ctx(), 4, 1024, {.bundle = true, .incremental = true});
  if (GetParam() == backend_kind::uring) {
    EXPECT_NE(d.find(pool.bundles() ? "recv bundles yes" : "recv bundles no"), std::string::npos) << d;
    EXPECT_NE(d.find(pool.incremental() ? "incremental buffers yes" : "incremental buffers no"), std::string::npos)
        << d;
  } else {
    EXPECT_EQ(d.find("recv bundles"), std::string::npos) << d;
    EXPECT_FALSE(pool.bundles());
    EXPECT_FALSE(pool.incremental());
  }
}

TEST_P(RecvBundle, ABurstOfSmallWritesAndALargeWriteArriveWholeAndInOrder) {
  for (buffer_pool_options opts : combos) {
    SCOPED_TRACE(name(opts));
    socket_pair p;
    auto data = random_bytes(200 * 1024, 31);
    std::vector<std::size_t> sizes;
    std::size_t small = 0;
    for (unsigned i = 0; small < 40 * 1024; ++i) sizes.push_back(1 + (i * 53) % 700), small += sizes.back();
    sizes.push_back(data.size());  // the rest in one write
    struct outcome {
      drained d;
      unsigned available = 0, count = 0;
      bool bundles = false, incremental = false;
    };
    auto o = run([](socket_pair& p, buffer_pool_options opts, std::vector<std::byte>& data,
                    std::vector<std::size_t>& sizes) -> task<outcome> {
      outcome o;
      buffer_pool pool(*io_context::current(), 64, 2048, opts);
      o.bundles = pool.bundles();
      o.incremental = pool.incremental();
      std::thread writer = send_then_shutdown(p.b.native_handle(), data, sizes);
      auto slept = co_await sleep_for(30ms);  // the burst waits in the socket
      EXPECT_TRUE(slept);
      {
        multishot_receiver rx(p.a, pool);
        co_await drain(rx, o.d);
      }
      writer.join();
      o.available = pool.available();
      o.count = pool.count();
      co_return o;
    }(p, opts, data, sizes));
    EXPECT_FALSE(o.d.failed);
    EXPECT_EQ(o.d.got.size(), data.size());
    EXPECT_TRUE(o.d.got == data) << "bytes lost or out of order";
    if (kernel_path()) {
      EXPECT_EQ(o.bundles, opts.bundle) << "this kernel offers bundles (6.10+)";
      EXPECT_EQ(o.incremental, opts.incremental) << "this kernel offers incremental rings (6.12+)";
      if (opts.bundle) {
        EXPECT_GT(o.d.batched, 0u) << "no completion carried more than one buffer";
      }
    } else {
      EXPECT_FALSE(o.bundles);
      EXPECT_FALSE(o.incremental);
    }
    // An incremental ring keeps its partly filled head buffer.
    EXPECT_GE(o.available + (o.incremental ? 1u : 0u), o.count) << "buffers were not returned";
  }
}

TEST_P(RecvBundle, APoolRunDryByBundlesResumesWhenBuffersComeBack) {
  for (buffer_pool_options opts : combos) {
    SCOPED_TRACE(name(opts));
    socket_pair p;
    auto data = random_bytes(96 * 1024, 32);
    auto got =
        run([](socket_pair& p, buffer_pool_options opts, std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
          buffer_pool pool(*io_context::current(), 4, 1024, opts);
          std::thread writer = send_then_shutdown(p.b.native_handle(), data, {});
          auto slept = co_await sleep_for(20ms);
          EXPECT_TRUE(slept);
          std::vector<std::byte> got;
          {
            multishot_receiver rx(p.a, pool);
            std::vector<pooled_buffer> held;
            // Hold every buffer the receiver hands out until the pool is empty.
            while (pool.available() > 0 || held.empty()) {
              auto c = co_await with_timeout(rx.next(), 5s);
              if (!c || c->empty()) {
                ADD_FAILURE() << "ended early";
                break;
              }
              held.push_back(std::move(*c));
              pooled_buffer more;
              while (rx.next_ready(more)) held.push_back(std::move(more));
            }
            EXPECT_EQ(pool.available(), 0u);
            auto stalled = co_await with_timeout(rx.next(), 20ms);  // nowhere to put data
            if (stalled) {
              // Only what the last completion still had queued may come.
              EXPECT_FALSE(stalled->empty());
              held.push_back(std::move(*stalled));
            } else if (stalled.error() != std::errc::timed_out) {
              // The readiness backends say so instead of waiting.
              EXPECT_EQ(stalled.error(), std::errc::no_buffer_space);
            }
            for (auto& h : held) got.insert(got.end(), h.bytes().begin(), h.bytes().end());
            held.clear();  // back to the pool: the receiver resumes (ENOBUFS path)
            drained d;
            co_await drain(rx, d);
            got.insert(got.end(), d.got.begin(), d.got.end());
          }
          writer.join();
          co_return got;
        }(p, opts, data));
    EXPECT_TRUE(got == data) << "bytes lost or out of order (" << got.size() << " of " << data.size() << ")";
  }
}

TEST_P(RecvBundle, ACancelledNextWithABundleQueuedLosesNothing) {
  for (buffer_pool_options opts : combos) {
    SCOPED_TRACE(name(opts));
    socket_pair p;
    auto data = random_bytes(40 * 1024, 33);
    auto got =
        run([](socket_pair& p, buffer_pool_options opts, std::vector<std::byte>& data) -> task<std::vector<std::byte>> {
          buffer_pool pool(*io_context::current(), 64, 1024, opts);
          auto w = co_await p.b.send_all(data);  // fits in the socket buffer
          EXPECT_TRUE(w);
          auto slept = co_await sleep_for(10ms);
          EXPECT_TRUE(slept);
          std::vector<std::byte> got;
          multishot_receiver rx(p.a, pool);
          auto first = co_await with_timeout(rx.next(), 5s);  // on io_uring the rest is queued
          EXPECT_TRUE(first && !first->empty());
          if (first) got.insert(got.end(), first->bytes().begin(), first->bytes().end());
          // Stopped before it starts, then stopped while it waits: what was queued stays.
          std::stop_source stopped;
          stopped.request_stop();
          auto r1 = co_await rx.next().with_stop(stopped.get_token());
          if (r1) got.insert(got.end(), r1->bytes().begin(), r1->bytes().end());
          for (int i = 0; i < 20; ++i) {
            auto raced = co_await when_any(rx.next(), sleep_for(0us));
            if (raced.index() == 0) {
              auto& c = std::get<0>(raced);
              if (c && !c->empty()) got.insert(got.end(), c->bytes().begin(), c->bytes().end());
            }
          }
          auto s = co_await p.b.shutdown();
          EXPECT_TRUE(s);
          drained d;
          co_await drain(rx, d);
          got.insert(got.end(), d.got.begin(), d.got.end());
          co_return got;
        }(p, opts, data));
    EXPECT_TRUE(got == data) << "bytes lost or out of order (" << got.size() << " of " << data.size() << ")";
  }
}

// Incremental buffers: small messages take consecutive slices of one buffer; a slice
// keeps its bytes while later messages arrive, and slices may be released in any order.
TEST_P(RecvBundle, IncrementalSlicesHeldAcrossReceivesAndReleasedOutOfOrder) {
  for (buffer_pool_options opts : {buffer_pool_options{.bundle = false, .incremental = true},
                                   buffer_pool_options{.bundle = true, .incremental = true}}) {
    SCOPED_TRACE(name(opts));
    socket_pair p;
    struct outcome {
      bool incremental = false;
      unsigned slices = 0, contiguous = 0, intact = 0;
      unsigned available_held = 0, available_after = 0, count = 0;
    };
    auto o = run([](socket_pair& p, buffer_pool_options opts) -> task<outcome> {
      outcome o;
      buffer_pool pool(*io_context::current(), 64, 4096, opts);  // readiness: a buffer per message
      o.incremental = pool.incremental();
      o.count = pool.count();
      multishot_receiver rx(p.a, pool);
      std::vector<pooled_buffer> held;
      std::vector<std::string> sent;
      // 41 messages of 100 bytes: 40 fill 4000 bytes of the first buffer, the 41st
      // takes its last 96 bytes and the first 4 of the second.
      std::string received;
      for (int i = 0; i < 41; ++i) {
        std::string msg(100, static_cast<char>('A' + i % 26));
        msg[0] = static_cast<char>('0' + i % 10);
        sent.push_back(msg);
        auto w = co_await p.b.send_all(msg);
        EXPECT_TRUE(w);
        std::size_t want = received.size() + msg.size();
        while (received.size() < want) {
          auto c = co_await with_timeout(rx.next(), 5s);
          if (!c || c->empty()) {
            ADD_FAILURE() << "no data";
            co_return o;
          }
          if (!held.empty() && held.back().data() + held.back().size() == c->data()) ++o.contiguous;
          received.append(reinterpret_cast<const char*>(c->data()), c->size());
          held.push_back(std::move(*c));
        }
      }
      o.slices = static_cast<unsigned>(held.size());
      o.available_held = pool.available();
      // Every slice still holds what was sent (nothing overwrote it).
      std::string all;
      for (auto& s : sent) all += s;
      std::string joined;
      for (auto& h : held) joined.append(reinterpret_cast<const char*>(h.data()), h.size());
      o.intact = joined == all ? 1 : 0;
      // Release in a scrambled order.
      std::mt19937 rng(7);
      std::shuffle(held.begin(), held.end(), rng);
      held.clear();
      o.available_after = pool.available();
      co_return o;
    }(p, opts));
    EXPECT_EQ(o.intact, 1u) << "a held slice was overwritten";
    if (kernel_path()) {
      ASSERT_TRUE(o.incremental);
      EXPECT_EQ(o.slices, 42u);  // the 41st message spans two buffers
      EXPECT_GE(o.contiguous, 39u) << "messages did not share the buffer";
      EXPECT_EQ(o.available_held, o.count - 2) << "41 messages took more than two buffers";
      EXPECT_EQ(o.available_after, o.count - 1) << "the filled buffer is back; the kernel keeps the second";
    } else {
      EXPECT_EQ(o.available_after, o.count);
    }
  }
}

// Random write sizes, random batches held and released, random cancellations of next()
// (stopped before the start, racing a yield or a short sleep), then a peer that resets
// the connection: the bytes received are exactly a prefix of those sent (all of them
// before the reset point), and every buffer goes back.
TEST_P(RecvBundle, RandomWritesCancelsAndResetsKeepTheByteStream) {
  const std::uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 6; ++round) {
    const buffer_pool_options opts = combos[rng() % 4];
    const bool reset = rng() % 2 == 0;
    SCOPED_TRACE(name(opts) + " round " + std::to_string(round) + (reset ? " reset" : " eof"));
    auto l = listen_loopback();
    auto at = address_of(l);
    const std::size_t total = 64 * 1024 + rng() % (512 * 1024);
    auto data = random_bytes(total, rng());
    std::vector<std::size_t> sizes;
    for (std::size_t s = 0; s < total;) {
      const std::size_t pick = rng() % 10 < 7 ? 1 + rng() % 600 : 1 + rng() % 40000;
      sizes.push_back(pick);
      s += pick;
    }
    const std::uint64_t reader_seed = rng();
    struct outcome {
      std::vector<std::byte> got;
      unsigned cancelled = 0;
      int end_error = 0;  // 0: end of stream
      unsigned available = 0, count = 0;
      bool incremental = false;
    };
    auto o = run([](stream_listener& l, socket_address at, buffer_pool_options opts, std::vector<std::byte>& data,
                    std::vector<std::size_t>& sizes, bool reset, std::uint64_t seed) -> task<outcome> {
      outcome o;
      buffer_pool pool(*io_context::current(), 8 + static_cast<unsigned>(seed % 24), 512 + seed % 4096, opts);
      o.incremental = pool.incremental();
      // The peer: a blocking socket of its own thread, which ends with FIN or RST.
      std::thread writer([at, &data, &sizes, reset] {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || ::connect(fd, at.native(), at.size()) != 0) {
          if (fd >= 0) ::close(fd);
          return;
        }
        std::size_t off = 0;
        for (std::size_t i = 0; i < sizes.size() && off < data.size(); ++i) {
          std::size_t n = std::min(sizes[i], data.size() - off);
          while (n > 0) {
            ssize_t w = ::send(fd, data.data() + off, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            off += static_cast<std::size_t>(w);
            n -= static_cast<std::size_t>(w);
          }
          if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        if (reset) {
          linger lg{1, 0};  // close() sends RST
          ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        } else {
          ::shutdown(fd, SHUT_WR);
        }
        ::close(fd);
      });
      auto server = co_await l.accept();
      if (!server) {
        ADD_FAILURE() << "no connection";
        writer.join();
        co_return o;
      }
      std::mt19937_64 rng(seed);
      {
        multishot_receiver rx(*server, pool);
        std::vector<pooled_buffer> held;
        const auto give_up = std::chrono::steady_clock::now() + 30s;
        while (std::chrono::steady_clock::now() < give_up) {
          result<pooled_buffer> c = pooled_buffer{};
          const unsigned how = static_cast<unsigned>(rng() % 8);
          if (how == 0) {
            std::stop_source s;
            s.request_stop();
            auto r = co_await rx.next().with_stop(s.get_token());
            c = std::move(r);
          } else if (how <= 2) {
            const auto wait = std::chrono::microseconds(how == 1 ? 0 : rng() % 200);
            auto r = co_await when_any(rx.next(), sleep_for(wait));
            if (r.index() == 1) c = unexpected(std::errc::operation_canceled);
            else c = std::move(std::get<0>(r));
          } else {
            auto r = co_await with_timeout(rx.next(), 10s);
            c = std::move(r);
          }
          if (!c) {
            if (c.error() == std::errc::operation_canceled) {
              ++o.cancelled;
              continue;
            }
            o.end_error = c.error().value();
            break;
          }
          if (c->empty()) break;
          o.got.insert(o.got.end(), c->bytes().begin(), c->bytes().end());
          held.push_back(std::move(*c));
          pooled_buffer more;
          while (rng() % 2 == 0 && rx.next_ready(more)) {
            o.got.insert(o.got.end(), more.bytes().begin(), more.bytes().end());
            held.push_back(std::move(more));
          }
          // Keep a few, release a random one or all.
          if (held.size() > 3 || rng() % 3 == 0) {
            if (rng() % 2 == 0) held.clear();
            else held.erase(held.begin() + static_cast<std::ptrdiff_t>(rng() % held.size()));
          }
        }
      }
      writer.join();
      o.available = pool.available();
      o.count = pool.count();
      co_return o;
    }(l, at, opts, data, sizes, reset, reader_seed));
    ASSERT_LE(o.got.size(), data.size());
    EXPECT_TRUE(std::equal(o.got.begin(), o.got.end(), data.begin())) << "not a prefix of the stream";
    if (!reset) {
      EXPECT_EQ(o.end_error, 0);
      EXPECT_EQ(o.got.size(), data.size());
    } else if (o.end_error != 0) {
      EXPECT_EQ(o.end_error, ECONNRESET);
    }
    EXPECT_GE(o.available + (o.incremental ? 1u : 0u), o.count) << "buffers were lost";
  }
}

RINGIO_ALL_BACKENDS(RecvBundle);

}  // namespace
