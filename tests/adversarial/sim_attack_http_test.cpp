// SPDX-License-Identifier: Apache-2.0
// Programs against the sim backend: the HTTP server and client in a world
// (docs/simulation.md: "Every ringio clock reads the world's clock ...: the HTTP
// server's idle and header timeouts, the client's timeouts").
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

#include "ringio/http/client.hpp"
#include "ringio/http/server.hpp"
#include "ringio/ringio.hpp"
#include "ringio/sim.hpp"
#include "ringio/time/now.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

// A connection that never sends a byte is closed by the server's idle (or header)
// timeout, in virtual time: the 30 s cost microseconds.
TEST(SimHttp, IdleConnectionClosedInVirtualTime) {
  sim::world w(1, sim::calm());
  auto real0 = std::chrono::steady_clock::now();
  std::chrono::nanoseconds waited{};
  std::string outcome;
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim});
    http::server srv([](http::request&) -> task<http::response> { co_return http::response::text(200, "hi"); },
                     http::server_options{.header_timeout = 10s, .idle_timeout = 30s});
    sync_wait(ctx, [](http::server& srv, std::chrono::nanoseconds& waited, std::string& outcome) -> task<void> {
      auto l = stream_listener::bind(socket_address::loopback(0));
      std::stop_source stop;
      scope sc;
      sc.spawn(srv.serve(*l, stop.get_token()));
      auto c = co_await stream_socket::connect(*l->local_address());
      if (!c) {
        outcome = "connect: " + c.error().message();
      } else {
        auto t0 = ringio::now();
        char b[64];
        auto r = co_await with_timeout(c->recv(mutable_buffer(b, sizeof b)), 120s);
        waited = ringio::now() - t0;
        outcome = r ? (*r == 0 ? "EOF" : "data") : r.error().message();
      }
      stop.request_stop();
      co_await sc.join();
    }(srv, waited, outcome));
  }
  EXPECT_EQ(outcome, "EOF");
  EXPECT_GE(waited, 9s);
  EXPECT_LE(waited, 31s);
  EXPECT_LT(std::chrono::steady_clock::now() - real0, 5s);
  EXPECT_EQ(w.open_sockets(), 0u);
}

std::pair<std::uint64_t, std::string> http_world(std::uint64_t seed) {
  sim::world w(seed, sim::hostile());
  std::string log;
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim});
    http::server srv(
        [](http::request&) -> task<http::response> { co_return http::response::text(200, std::string(3000, 'h')); });
    sync_wait(ctx, [](http::server& srv, std::string& log) -> task<void> {
      auto l = stream_listener::bind(socket_address::loopback(0));
      std::stop_source stop;
      scope sc;
      sc.spawn(srv.serve(*l, stop.get_token()));
      {
        http::client cl;
        auto url = "http://127.0.0.1:" + std::to_string(l->local_address()->port()) + "/";
        for (int i = 0; i < 6; ++i) {
          auto r = co_await cl.get(url);
          log += r ? std::to_string(r->status) + ":" + std::to_string(r->body.size()) : r.error().message();
          log += " ";
        }
      }
      stop.request_stop();
      co_await sc.join();
    }(srv, log));
  }
  EXPECT_EQ(w.open_sockets(), 0u);
  return {w.trace_hash(), log};
}

// The same seed gives the same run with the HTTP server and client, also when the
// second run starts in another wall-clock second (the Date header).
TEST(SimHttp, SameSeedSameHashAcrossWallClockSeconds) {
  auto a = http_world(11);
  std::this_thread::sleep_for(1100ms);
  auto b = http_world(11);
  EXPECT_EQ(a.second, b.second);
  EXPECT_EQ(a.first, b.first) << a.second;
}

// The client resolves host names on a resolver thread (a real, cross-thread wake-up):
// in a world, "localhost" must still resolve and the request succeed, not lose to a
// virtual timeout that jumped ahead while the resolver thread worked.
TEST(SimHttp, ClientResolvesHostNameInWorld) {
  sim::world w(1, sim::calm());
  std::string out;
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim});
    http::server srv([](http::request&) -> task<http::response> { co_return http::response::text(200, "hi"); });
    out = sync_wait(ctx, [](http::server& srv) -> task<std::string> {
      auto l = stream_listener::bind(socket_address::loopback(0));
      std::stop_source stop;
      scope sc;
      sc.spawn(srv.serve(*l, stop.get_token()));
      std::string o;
      {
        http::client cl;
        auto r = co_await cl.get("http://localhost:" + std::to_string(l->local_address()->port()) + "/");
        o = r ? std::to_string(r->status) + " " + r->body : r.error().message();
      }
      stop.request_stop();
      co_await sc.join();
      co_return o;
    }(srv));
  }
  EXPECT_EQ(out, "200 hi") << "virtual time elapsed: " << std::chrono::duration<double>(w.elapsed()).count() << " s";
}

}  // namespace
