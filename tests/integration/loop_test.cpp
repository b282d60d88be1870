// Properties of the loop itself, measured by its counters.
#include <gtest/gtest.h>

#include <span>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;

namespace {

class Loop : public backend_test {};

// Every iteration makes exactly one trip to the kernel: submissions are batched with
// the wait (io_uring_submit_and_wait), never issued one by one.
TEST_P(Loop, OneKernelCallPerIteration) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto before = ctx().stats();
  run([](stream_listener& l, socket_address at) -> task<void> {
    constexpr int connections = 20, round_trips = 200;
    scope s;
    for (int c = 0; c < connections; ++c) {
      s.spawn([](stream_listener& l) -> task<void> {
        auto conn = co_await l.accept();
        std::array<std::byte, 64> buf;
        for (;;) {
          auto n = co_await conn->recv(buf);
          if (!n || *n == 0) co_return;
          auto w = co_await conn->send_all(std::span(buf).first(*n));
          if (!w) co_return;
        }
      }(l));
      s.spawn([](socket_address at) -> task<void> {
        auto conn = co_await stream_socket::connect(at);
        std::array<std::byte, 64> buf{};
        for (int i = 0; i < round_trips; ++i) {
          auto w = co_await conn->send_all(buf);
          auto r = co_await conn->recv_exact(buf);
          if (!w || !r) break;
        }
      }(at));
    }
    co_await s.join();
  }(l, at));
  auto after = ctx().stats();
  auto iterations = after.iterations - before.iterations;
  auto waits = after.kernel_waits - before.kernel_waits;
  EXPECT_GT(iterations, 100u);
  EXPECT_EQ(waits, iterations);
  EXPECT_GT(after.completions - before.completions, 4000u);
}

RINGIO_ALL_BACKENDS(Loop);

}  // namespace
