// SPDX-License-Identifier: Apache-2.0
// The HTTP server and client in simulated worlds: keep-alive GETs and POSTs through
// slow, lossy-by-reset, short-transferring networks. Each response is either right
// (status and body) or the request fails with an error; nothing hangs, and every
// socket is closed once the server has stopped and the clients are gone.
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <string>

#include "ringio/http/http.hpp"
#include "ringio/ringio.hpp"
#include "ringio/sim.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace std::chrono_literals;

namespace {

// Requests answered right and requests that failed with an error, over all worlds.
struct tally {
  std::size_t answered = 0;
  std::size_t failed = 0;
};
tally totals;

task<http::response> item(http::request& req) {
  co_return http::response::text(200, "item " + std::string(req.param("id")));
}

task<http::response> echo(http::request& req) { co_return http::response::text(200, std::string(req.body())); }

// Three clients, each with its own keep-alive connection pool, send `rounds` requests.
// Returns a description of the first wrong answer, or "".
task<std::string> clients(socket_address at, std::uint64_t seed, int rounds) {
  auto one = [](socket_address at, std::uint64_t seed, int rounds) -> task<std::string> {
    http::client c({.connect_timeout = 5s, .head_timeout = 10s, .body_timeout = 10s});
    std::string base = "http://" + at.to_string();
    for (int i = 0; i < rounds; ++i) {
      if ((seed + static_cast<std::uint64_t>(i)) % 2 == 0) {
        auto r = co_await c.get(base + "/items/" + std::to_string(i));
        ++(r ? totals.answered : totals.failed);
        if (r && (r->status != 200 || r->body != "item " + std::to_string(i)))
          co_return "GET answered " + std::to_string(r->status) + " '" + r->body + "'";
      } else {
        std::string body(1 + (seed * 7919 + static_cast<std::uint64_t>(i) * 104729) % 30000,
                         static_cast<char>('a' + i % 26));
        auto r = co_await c.post(base + "/echo", body, "text/plain");
        ++(r ? totals.answered : totals.failed);
        if (r && (r->status != 200 || r->body != body))
          co_return "POST of " + std::to_string(body.size()) + " bytes answered " + std::to_string(r->status) +
              " with " + std::to_string(r->body.size()) + " bytes";
      }
    }
    co_return "";
  };
  auto [a, b, c] = co_await when_all(one(at, seed, rounds), one(at, seed + 1, rounds), one(at, seed + 2, rounds));
  co_return a + b + c;
}

void http_world(sim::world& w) {
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto l = stream_listener::bind(socket_address::loopback(0));
    if (!l && l.error() == std::errc::too_many_files_open) return;  // a fault of the world
    if (!l) throw std::runtime_error("bind: " + l.error().message());
    auto at = *l->local_address();
    http::router routes;
    routes.get("/items/{id}", item);
    routes.post("/echo", echo);
    http::server server(routes, {.idle_timeout = 30s});
    std::stop_source stop;
    auto outcome = sync_wait(ctx,
                             [](http::server& server, stream_listener& l, std::stop_source& stop, socket_address at,
                                std::uint64_t seed) -> task<std::string> {
                               scope s;
                               s.spawn(server.serve(l, stop.get_token()));
                               auto r = co_await with_timeout(clients(at, seed, 6), 600s);
                               stop.request_stop();
                               co_await s.join();
                               if (!r) co_return "the clients hung";
                               co_return *r;
                             }(server, *l, stop, at, w.seed()));
    if (!outcome.empty()) throw std::runtime_error(outcome);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

}  // namespace

TEST(SimHttp, CalmWorldsAnswerEveryRequest) {
  sim::seeds_options opts;
  opts.count = 50;
  opts.faults = sim::calm();
  totals = {};
  auto s = sim::run_seeds(opts, http_world);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  EXPECT_EQ(totals.failed, 0u);
  EXPECT_EQ(totals.answered, (s.worlds + 1) * 3 * 6) << "each world and the replay of the first: 3 clients, 6 requests";
}

TEST(SimHttp, HostileWorldsNeverAnswerWrongOrHang) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1000);
  opts.faults = sim::hostile();
  totals = {};
  const log_level was = get_log_level();
  set_log_level(log_level::error);  // the server reports the injected EMFILE accepts
  auto s = sim::run_seeds(opts, http_world);
  set_log_level(was);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  // Faults make some requests fail, but most get through.
  EXPECT_GT(totals.failed, 0u);
  EXPECT_GT(totals.answered, totals.failed);
  std::printf("%zu requests answered, %zu failed with an error\n", totals.answered, totals.failed);
  std::printf("%zu worlds, %llu operations, %.1f virtual s, %.2f real s\n", s.worlds,
              static_cast<unsigned long long>(s.operations), std::chrono::duration<double>(s.virtual_time).count(),
              std::chrono::duration<double>(s.real_time).count());
}
