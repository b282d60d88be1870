// SPDX-License-Identifier: Apache-2.0
// The chat example's own code (examples/chat_server.cpp, its session()) in seeded
// simulated worlds: slow links, short transfers, small buffers, a member that stops
// reading, and in hostile worlds resets. Invariants: a member that keeps reading gets
// the talker's lines in order, each line either received or counted by a "missed N"
// notice at the place it was dropped; the member that stopped reading holds up nobody;
// the room empties and every socket closes when the members leave.
#define main chat_server_main  // the example's main() is not this test's
#include "../../examples/chat_server.cpp"
#undef main

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "ringio/sim.hpp"
#include "support/sanitizer.hpp"

using namespace std::chrono_literals;

namespace {

// Reads until `lines` talker lines were received or accounted for (then `finished`),
// or until an error or a stop; returns a problem.
task<std::string> reader(socket_address at, int lines, bool& finished) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return "";  // refused or reset by the world: no member, nothing to check
  buffered_stream in(*s, 4096);
  int next = 0;  // the next talker line expected
  for (;;) {
    auto l = co_await in.read_line(2000);
    if (!l) co_return "";  // reset, or stopped at the end of the scenario
    std::string text(*l);
    if (text.rfind("* you missed ", 0) == 0) {
      next += std::stoi(text.substr(13));
      continue;
    }
    auto colon = text.find(": line ");
    if (colon == std::string::npos) continue;  // joins and leaves
    int n = std::stoi(text.substr(colon + 7));
    if (n != next) co_return "expected line " + std::to_string(next) + ", got " + std::to_string(n);
    if (++next == lines) {
      finished = true;
      co_return "";
    }
  }
}

// Connects and never reads (its socket fills up), then leaves when told to.
task<void> sleeper(socket_address at, event& leave) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return;
  (void)co_await leave.wait();
}

task<void> talker(socket_address at, int lines, event& go) {
  (void)co_await go.wait();
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return;
  std::string all;
  for (int i = 0; i < lines; ++i) all += "line " + std::to_string(i) + "\n";
  (void)co_await s->send_all(std::string_view(all));
  (void)co_await sleep_for(60s);  // stay until the readers are done
}

// `lossless`: no resets in this world, so every reader must finish.
void chat_world(sim::world& w, int lines, bool lossless) {
  guests = 0;  // the example's own count: each world names its members from guest1
  {
    io_context ctx(io_context_options{.backend = backend_kind::sim, .quiet = true});
    auto l = stream_listener::bind(socket_address::loopback(0));
    if (!l) return;  // descriptor exhaustion of the world
    auto at = *l->local_address();
    std::string problem =
        sync_wait(ctx, [](stream_listener& l, socket_address at, int lines, bool lossless) -> task<std::string> {
          scope sessions;
          scope clients;
          event go, leave;
          std::vector<std::string> problems(3);
          bool finished[3] = {false, false, false};
          auto accept_all = [](stream_listener& l, scope& sessions) -> task<void> {
            for (;;) {
              auto s = co_await l.accept();
              if (!s && s.error() == std::errc::operation_canceled) co_return;
              if (s) sessions.spawn(session(std::move(*s)));
            }
          };
          sessions.spawn(accept_all(l, sessions));
          for (int i = 0; i < 3; ++i)
            clients.spawn([](socket_address at, int lines, std::string& p, bool& j) -> task<void> {
              p = co_await reader(at, lines, j);
            }(at, lines, problems[static_cast<std::size_t>(i)], finished[i]));
          clients.spawn(sleeper(at, leave));
          (void)co_await sleep_for(50ms);  // the members have joined
          go.set();
          clients.spawn(talker(at, lines, go));
          (void)co_await sleep_for(30s);  // virtual: far more than 600 lines need on these links
          leave.set();
          clients.request_stop();  // readers still waiting (their talker was reset) stop
          co_await clients.join();
          l.cancel();
          co_await sessions.join();
          std::string all;
          for (auto& p : problems) all += p;
          for (int i = 0; i < 3; ++i)
            if (lossless && !finished[i]) all += " reader " + std::to_string(i) + " did not get every line;";
          if (!room.empty()) all += " the room still has " + std::to_string(room.size()) + " members";
          co_return all;
        }(*l, at, lines, lossless));
    if (!problem.empty()) throw std::runtime_error(problem);
  }
  if (w.open_sockets() != 0) throw std::runtime_error(std::to_string(w.open_sockets()) + " sockets left open");
}

sim::fault_model slow_links() {
  sim::fault_model m;
  m.min_latency = 100us;
  m.max_latency = 20ms;
  m.buffer_bytes = 2048;
  m.short_transfer = 0.3;
  return m;
}

}  // namespace

TEST(SimChatExample, SlowLinksAndASilentMemberLoseNoLineUnannounced) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1000);
  opts.faults = slow_links();
  auto s = sim::run_seeds(opts, [](sim::world& w) { chat_world(w, 600, true); });
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
  std::printf("%zu worlds, %llu operations, %.2f real s\n", s.worlds, static_cast<unsigned long long>(s.operations),
              std::chrono::duration<double>(s.real_time).count());
}

TEST(SimChatExample, HostileWorldsKeepOrderAndLeakNothing) {
  sim::seeds_options opts;
  opts.count = ringio_test::sim_worlds(1000);
  opts.faults = sim::hostile();
  const log_level was = get_log_level();
  set_log_level(log_level::error);
  auto s = sim::run_seeds(opts, [](sim::world& w) { chat_world(w, 200, false); });
  set_log_level(was);
  EXPECT_TRUE(s.deterministic);
  EXPECT_FALSE(s.failure) << *s.failure;
}
