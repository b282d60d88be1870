// SPDX-License-Identifier: Apache-2.0
// The HTTP example's own handlers (examples/http_app.cpp: a JSON item, a query, a
// streamed countdown) behind http::server in seeded simulated worlds: clients on slow
// links, a client that sends a request and never reads, and in hostile worlds resets
// and short transfers. Each answer is right or the request fails with an error; the
// server drains and stops although a client stopped reading; every socket closes.
#define main http_app_main  // the example's main() is not this test's
#include "../../examples/http_app.cpp"
#undef main

#include <gtest/gtest.h>

#include <string>

#include "ringio/http/client.hpp"
#include "ringio/sim.hpp"
#include "support/sanitizer.hpp"

namespace {

std::size_t answered = 0;  // requests answered right, over all worlds

task<std::string> requests(socket_address at, std::uint64_t seed) {
  http::client c({.connect_timeout = 5s, .head_timeout = 20s, .body_timeout = 20s});
  const std::string base = "http://" + at.to_string();
  for (int i = 0; i < 4; ++i) {
    const std::string id = std::to_string(seed % 1000 + static_cast<std::uint64_t>(i));
    auto r = co_await c.get(base + "/items/" + id);
    if (r && (r->status != 200 || r->body.find("\"id\":\"" + id + "\"") == std::string::npos))
      co_return "GET /items/" + id + " answered " + std::to_string(r->status) + " " + r->body;
    answered += r ? 1 : 0;
    auto q = co_await c.get(base + "/search?q=ring&limit=" + id);
    if (q && (q->status != 200 || q->body.find("\"limit\":\"" + id + "\"") == std::string::npos))
      co_return "GET /search answered " + std::to_string(q->status) + " " + q->body;
  }
  auto cd = co_await c.get(base + "/countdown");
  if (cd && (cd->status != 200 || cd->body != "3...\n2...\n1...\nliftoff\n"))
    co_return "GET /countdown answered " + std::to_string(cd->status) + " '" + cd->body + "'";
  answered += cd ? 1 : 0;
  co_return "";
}

// Sends a request for the countdown and never reads the answer.
task<void> silent_client(socket_address at, event& leave) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return;
  (void)co_await s->send_all(std::string_view("GET /countdown HTTP/1.1\r\nHost: x\r\n\r\n"));
  (void)co_await leave.wait();
}

void http_example_world(sim::world& w) {
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto l = stream_listener::bind(socket_address::loopback(0));
    if (!l) return;  // descriptor exhaustion of the world
    http::router routes;
    routes.get("/items/{id}", item);
    routes.get("/search", search);
    routes.get("/countdown", countdown);
    http::server server(routes, {.idle_timeout = 30s});
    auto problem =
        sync_wait(ctx, [](http::server& server, stream_listener& l, std::uint64_t seed) -> task<std::string> {
          std::stop_source stop;
          event leave;
          scope serving, silent;
          serving.spawn(server.serve(l, stop.get_token()));
          silent.spawn(silent_client(*l.local_address(), leave));
          auto at = *l.local_address();
          auto [a, b] =
              co_await when_all(with_timeout(requests(at, seed), 600s), with_timeout(requests(at, seed + 7), 600s));
          stop.request_stop();  // a graceful stop while a client does not read
          auto began = ringio::now();
          co_await serving.join();
          const bool slow_drain = ringio::now() - began > 60s;  // more than the idle timeout
          leave.set();
          co_await silent.join();
          std::string all = slow_drain ? "the drain took more than a minute; " : "";
          for (auto* r : {&a, &b}) all += *r ? **r : std::string("a client hung; ");
          co_return all;
        }(server, *l, w.seed()));
    if (!problem.empty()) throw std::runtime_error(problem);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

}  // namespace

TEST(SimHttpExample, SlowLinksAndASilentClient) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(500);
  opts.faults.min_latency = 100us;
  opts.faults.max_latency = 20ms;
  opts.faults.buffer_bytes = 1500;
  opts.faults.short_transfer = 0.3;
  answered = 0;
  auto s = sim::run_seeds(opts, http_example_world);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  EXPECT_EQ(answered, (s.worlds + 1) * 2 * 5)
      << "no faults but latency: every GET of /items and /countdown answered (each world and the replay of the first)";
}

TEST(SimHttpExample, HostileWorlds) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(500);
  opts.faults = sim::hostile();
  const log_level was = get_log_level();
  set_log_level(log_level::error);
  auto s = sim::run_seeds(opts, http_example_world);
  set_log_level(was);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
}
