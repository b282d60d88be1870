// SPDX-License-Identifier: Apache-2.0
// ringio::serve: the accept loop on a listener (many clients, handler exceptions, the
// connection limit, the drain and its deadline, EMFILE with back-off and one log line
// per period, a seeded randomized run) on every backend, and the blocking entry point
// stopped by SIGTERM in a forked child.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/fd_count.hpp"
#include "support/loopback.hpp"
#include "support/sanitizer.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

class Serve : public backend_test {};

// Every log line while alive; the default handler comes back at the end.
class captured_log {
 public:
  captured_log() {
    set_log_handler([this](log_level, std::string_view text) {
      std::lock_guard lk(mu_);
      lines_.emplace_back(text);
    });
  }
  ~captured_log() { set_log_handler({}); }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;
  // Lines containing `part`.
  std::size_t count(std::string_view part) {
    std::lock_guard lk(mu_);
    return static_cast<std::size_t>(std::count_if(
        lines_.begin(), lines_.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; }));
  }
  std::string all() {
    std::lock_guard lk(mu_);
    std::string s;
    for (auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

struct server_stats {
  int started = 0;
  int finished = 0;
  int open = 0;
  int max_open = 0;
  int saw_stop = 0;
};

// Echoes until EOF; counts itself in `st` (all on the test's loop thread).
task<void> echo_counted(stream_socket s, server_stats& st) {
  ++st.started;
  st.max_open = std::max(st.max_open, ++st.open);
  std::array<std::byte, 1024> buf;
  for (;;) {
    auto n = co_await s.recv(buf);
    if (!n) {
      if (n.error() == std::errc::operation_canceled) ++st.saw_stop;
      break;
    }
    if (*n == 0) break;
    auto w = co_await s.send_all(std::span(buf).first(*n));
    if (!w) break;
  }
  --st.open;
  ++st.finished;
}

connection_handler echo_handler(server_stats& st) {
  return [&st](stream_socket s) { return echo_counted(std::move(s), st); };
}

// Runs serve on `l` and stores its outcome.
task<void> run_server(stream_listener& l, connection_handler h, serve_options o, std::stop_token stop, bool& ok) {
  auto r = co_await serve(l, std::move(h), std::move(o), std::move(stop));
  if (!r) ADD_FAILURE() << "serve: " << r.error().message();
  ok = static_cast<bool>(r);
}

// Connects, sends `text`, and expects it back.
task<bool> echo_once(socket_address at, std::string text) {
  auto s = co_await stream_socket::connect(at);
  if (!s) co_return false;
  auto w = co_await s->send_all(std::string_view(text));
  std::string back(text.size(), '\0');
  auto r = co_await with_timeout(s->recv_exact(mutable_buffer(back.data(), back.size())), 5s);
  co_return w&& r&&* r == text.size() && back == text;
}

task<void> count_echo(socket_address at, std::string text, int& good) {
  auto ok = co_await echo_once(at, std::move(text));
  if (ok) ++good;
}

task<void> stop_after(std::stop_source& stop, std::chrono::milliseconds delay) {
  auto slept = co_await sleep_for(delay);
  EXPECT_TRUE(slept);
  stop.request_stop();
}

// Waits (polling the loop) until `done()` or `limit` passes.
template <class F>
task<bool> eventually(F done, std::chrono::milliseconds limit = 5s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) co_return false;
    auto slept = co_await sleep_for(2ms);
    (void)slept;
  }
  co_return true;
}

TEST_P(Serve, ServesManyClientsThenStopsGracefully) {
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  int good = run([](stream_listener& l, socket_address at, server_stats& st, bool& ok) -> task<int> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, echo_handler(st), serve_options{}, stop.get_token(), ok));
    int good = 0;
    scope clients;
    for (int i = 0; i < 200; ++i) clients.spawn(count_echo(at, "client " + std::to_string(i), good));
    co_await clients.join();
    stop.request_stop();
    co_await server.join();
    co_return good;
  }(l, at, st, ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(good, 200);
  EXPECT_EQ(st.started, 200);
  EXPECT_EQ(st.finished, 200);
  EXPECT_FALSE(l.is_open()) << "serve closes the listener when it stops accepting";
}

task<void> throw_after_reading(stream_socket s) {
  std::array<std::byte, 16> buf;
  auto n = co_await s.recv(buf);
  (void)n;
  throw std::runtime_error("handler failure on purpose");
}

TEST_P(Serve, HandlerExceptionsAreLoggedAndServingGoesOn) {
  captured_log logs;
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  int calls = 0;
  // The first connection's handler throws before making a task, the next four inside
  // the task; the rest echo.
  connection_handler h = [&st, &calls](stream_socket s) -> task<void> {
    ++calls;
    if (calls == 1) throw std::runtime_error("no task for you");
    if (calls <= 5) return throw_after_reading(std::move(s));
    return echo_counted(std::move(s), st);
  };
  int good = run([](stream_listener& l, socket_address at, connection_handler h, bool& ok) -> task<int> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, std::move(h), serve_options{}, stop.get_token(), ok));
    int failed = 0;
    for (int i = 0; i < 5; ++i) {  // one at a time: calls are numbered in order
      auto echoed = co_await echo_once(at, "x");
      if (!echoed) ++failed;
    }
    EXPECT_EQ(failed, 5) << "a failing handler's connection closes";
    int good = 0;
    for (int i = 0; i < 5; ++i) co_await count_echo(at, "still here " + std::to_string(i), good);
    stop.request_stop();
    co_await server.join();
    co_return good;
  }(l, at, std::move(h), ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(good, 5);
  EXPECT_EQ(calls, 10);
  // Five failures within a second: one line (rate-limited), naming the first.
  EXPECT_EQ(logs.count("threw"), 1u) << logs.all();
  EXPECT_EQ(logs.count("no task for you"), 1u) << logs.all();
}

TEST_P(Serve, TheConnectionLimitHoldsAndTheNextClientWaitsForAFreeSlot) {
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, echo_handler(st), serve_options{.max_connections = 2}, stop.get_token(), ok));
    std::vector<stream_socket> clients;
    for (int i = 0; i < 3; ++i) {
      auto c = co_await stream_socket::connect(at);  // the kernel completes all three
      EXPECT_TRUE(c);
      if (c) clients.push_back(std::move(*c));
    }
    auto two = co_await eventually([&] { return st.started == 2; });
    EXPECT_TRUE(two);
    auto slept = co_await sleep_for(50ms);
    (void)slept;
    EXPECT_EQ(st.started, 2) << "the third connection must wait";
    if (clients.size() == 3) {
      auto w = co_await clients[2].send_all(std::string_view("late"));
      EXPECT_TRUE(w);
      std::array<std::byte, 4> back{};
      auto early = co_await with_timeout(clients[2].recv_exact(back), 50ms);
      EXPECT_FALSE(early) << "no handler serves the third connection yet";
      clients[0] = stream_socket{};  // closes: a slot frees up
      auto late = co_await with_timeout(clients[2].recv_exact(back), 5s);
      EXPECT_TRUE(late && *late == 4) << "the waiting connection is served once one closes";
    }
    EXPECT_EQ(st.max_open, 2);
    clients.clear();
    auto drained = co_await eventually([&] { return st.open == 0; });
    EXPECT_TRUE(drained);
    stop.request_stop();
    co_await server.join();
  }(l, at, st, ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(st.started, 3);
  EXPECT_EQ(st.max_open, 2);
}

TEST_P(Serve, AStopWhileAtTheLimitDrainsWithoutStartingTheWaitingConnection) {
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  auto began = std::chrono::steady_clock::now();
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, echo_handler(st), serve_options{.max_connections = 1, .drain_timeout = 30ms},
                            stop.get_token(), ok));
    auto first = co_await stream_socket::connect(at);
    auto second = co_await stream_socket::connect(at);
    EXPECT_TRUE(first && second);
    auto one = co_await eventually([&] { return st.started == 1; });
    EXPECT_TRUE(one);
    stop.request_stop();  // serve waits for a slot right now
    co_await server.join();
  }(l, at, st, ok));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
  EXPECT_TRUE(ok);
  EXPECT_EQ(st.started, 1);
  EXPECT_EQ(st.finished, 1);
  EXPECT_EQ(st.saw_stop, 1) << "the open connection is stopped at the drain deadline";
}

// First byte 'q': answer after 30 ms; 's': wait 10 s (or until stopped).
task<void> quick_or_slow(stream_socket s, server_stats& st) {
  ++st.started;
  std::array<std::byte, 1> kind{};
  auto got = co_await s.recv_exact(kind);
  if (got && *got == 1) {
    const bool quick = kind[0] == std::byte{'q'};
    auto slept = co_await sleep_for(quick ? 30ms : 10s);
    if (!slept && slept.error() == std::errc::operation_canceled) ++st.saw_stop;
    if (slept) {
      auto w = co_await s.send_all(std::string_view("done"));
      (void)w;
    }
  }
  ++st.finished;
}

TEST_P(Serve, TheDrainLetsQuickHandlersFinishAndStopsSlowOnesAtTheDeadline) {
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  std::chrono::steady_clock::duration drain_took{};
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok,
         std::chrono::steady_clock::duration& took) -> task<void> {
    std::stop_source stop;
    scope server;
    connection_handler h = [&st](stream_socket s) { return quick_or_slow(std::move(s), st); };
    server.spawn(run_server(l, std::move(h), serve_options{.drain_timeout = 300ms}, stop.get_token(), ok));
    auto quick = co_await stream_socket::connect(at);
    auto slow = co_await stream_socket::connect(at);
    EXPECT_TRUE(quick && slow);
    if (!quick || !slow) co_return;
    auto w1 = co_await quick->send_all(std::string_view("q"));
    auto w2 = co_await slow->send_all(std::string_view("s"));
    EXPECT_TRUE(w1 && w2);
    auto both = co_await eventually([&] { return st.started == 2; });
    EXPECT_TRUE(both);
    auto t0 = std::chrono::steady_clock::now();
    stop.request_stop();
    co_await server.join();
    took = std::chrono::steady_clock::now() - t0;
    std::array<std::byte, 4> back{};
    auto answer = co_await quick->recv_exact(back);
    EXPECT_TRUE(answer && *answer == 4) << "a handler within the deadline finishes its work";
  }(l, at, st, ok, drain_took));
  EXPECT_TRUE(ok);
  EXPECT_EQ(st.finished, 2);
  EXPECT_EQ(st.saw_stop, 1) << "only the slow handler is stopped";
  EXPECT_GE(drain_took, 250ms);
  EXPECT_LT(drain_took, 3s);
}

TEST_P(Serve, StoppingTheAwaitingTaskCancelsConnectionsAtOnce) {
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  auto began = std::chrono::steady_clock::now();
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok) -> task<void> {
    scope server;
    server.spawn(run_server(l, echo_handler(st), serve_options{.drain_timeout = 60s}, {}, ok));
    auto c = co_await stream_socket::connect(at);
    EXPECT_TRUE(c);
    auto one = co_await eventually([&] { return st.started == 1; });
    EXPECT_TRUE(one);
    server.request_stop();  // no grace: the connection is cancelled now
    co_await server.join();
  }(l, at, st, ok));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s);
  EXPECT_TRUE(ok);
  EXPECT_EQ(st.finished, 1);
  EXPECT_EQ(st.saw_stop, 1);
}

TEST_P(Serve, AnUnusableListenerEndsServeWithTheAcceptError) {
  captured_log logs;
  for (bool multishot : {false, true}) {
    stream_listener closed;  // no descriptor: accept fails with EBADF
    auto r = run([](stream_listener& l, bool multishot) -> task<result<void>> {
      server_stats st;
      auto served = co_await serve(l, echo_handler(st), serve_options{.multishot_accept = multishot});
      co_return served;
    }(closed, multishot));
    EXPECT_FALSE(r) << "multishot " << multishot;
    if (!r) {
      EXPECT_EQ(r.error(), std::errc::bad_file_descriptor) << r.error().message();
    }
  }
  EXPECT_EQ(logs.count("no longer accepts"), 2u) << logs.all();
}

// Lowers RLIMIT_NOFILE to just above the descriptors in use and fills the gaps below
// it, so that the next descriptor anything allocates fails with EMFILE.
class descriptor_famine {
 public:
  descriptor_famine() {
    EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    int highest = 0;
    for (int fd = 0; fd < 65536 && fd < static_cast<int>(saved_.rlim_cur); ++fd)
      if (::fcntl(fd, F_GETFD) != -1) highest = fd;
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(highest + 1);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
    for (;;) {
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fillers_.push_back(fd);
    }
  }
  ~descriptor_famine() { end(); }
  descriptor_famine(const descriptor_famine&) = delete;
  descriptor_famine& operator=(const descriptor_famine&) = delete;
  void end() {
    if (ended_) return;
    ended_ = true;
    ::setrlimit(RLIMIT_NOFILE, &saved_);
    for (int fd : fillers_) ::close(fd);
  }

 private:
  rlimit saved_{};
  std::vector<int> fillers_;
  bool ended_ = false;
};

TEST_P(Serve, OutOfDescriptorsAcceptsBackOffLogOncePerPeriodAndRecover) {
  if (under_sanitizer) GTEST_SKIP() << "the sanitizer runtime needs descriptors of its own";
  captured_log logs;
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok, captured_log& logs) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, echo_handler(st), serve_options{.accept_backoff_max = 1s}, stop.get_token(), ok));
    // Descriptors for the clients first: connecting needs none, accepting does.
    std::vector<int> raw;
    for (int i = 0; i < 3; ++i) raw.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    {
      descriptor_famine famine;
      for (int fd : raw) EXPECT_EQ(::connect(fd, at.native(), at.size()), 0);
      auto slept = co_await sleep_for(400ms);  // some failed accepts, backing off
      (void)slept;
      EXPECT_EQ(st.started, 0);
      EXPECT_EQ(logs.count("accept:"), 1u) << "one line per back-off period:\n" << logs.all();
      EXPECT_EQ(logs.count("Too many open files"), 1u) << logs.all();
      famine.end();
    }
    auto served = co_await eventually([&] { return st.started == 3; }, 5s);
    EXPECT_TRUE(served) << "accepting resumes once descriptors are free";
    for (int fd : raw) {
      EXPECT_EQ(::write(fd, "ping", 4), 4);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      std::array<std::byte, 4> back{};
      stream_socket s{detail::fd_handle(fd)};
      auto echoed = co_await with_timeout(s.recv_exact(back), 5s);
      EXPECT_TRUE(echoed && *echoed == 4);
    }
    stop.request_stop();
    co_await server.join();
  }(l, at, st, ok, logs));
  EXPECT_TRUE(ok) << "the server survives EMFILE";
  EXPECT_EQ(st.finished, 3);
}

TEST_P(Serve, ALongFamineLogsAtMostOneLinePerBackOffPeriod) {
  if (under_sanitizer) GTEST_SKIP() << "the sanitizer runtime needs descriptors of its own";
  captured_log logs;
  auto l = listen_loopback();
  auto at = address_of(l);
  server_stats st;
  bool ok = false;
  std::chrono::steady_clock::duration famine_took{};
  run([](stream_listener& l, socket_address at, server_stats& st, bool& ok,
         std::chrono::steady_clock::duration& took) -> task<void> {
    std::stop_source stop;
    scope server;
    server.spawn(run_server(l, echo_handler(st),
                            serve_options{.accept_backoff_initial = 5ms, .accept_backoff_max = 100ms}, stop.get_token(),
                            ok));
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto t0 = std::chrono::steady_clock::now();
    {
      descriptor_famine famine;
      EXPECT_EQ(::connect(fd, at.native(), at.size()), 0);
      auto slept = co_await sleep_for(550ms);
      (void)slept;
      took = std::chrono::steady_clock::now() - t0;
    }
    auto served = co_await eventually([&] { return st.started == 1; }, 5s);
    EXPECT_TRUE(served);
    ::close(fd);
    stop.request_stop();
    co_await server.join();
  }(l, at, st, ok, famine_took));
  EXPECT_TRUE(ok);
  const auto periods = famine_took / 100ms;
  const auto lines = static_cast<long>(logs.count("accept:"));
  EXPECT_GE(lines, 2) << logs.all();
  EXPECT_LE(lines, periods + 1) << logs.all();
}

// Random clients (echo some rounds, close at once, reset, or send half and leave),
// a random connection limit, stop time and drain: every handler that started must
// have finished, serve must succeed, and no descriptor may leak.
task<void> chaos_client(socket_address at, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto c = co_await stream_socket::connect(at);
  if (!c) co_return;
  switch (rng() % 4) {
    case 0: {
      int rounds = static_cast<int>(rng() % 5);
      for (int i = 0; i < rounds; ++i) {
        auto w = co_await c->send_all(std::string_view("abc"));
        std::array<std::byte, 3> back{};
        auto r = co_await with_timeout(c->recv_exact(back), 3s);
        if (!w || !r) break;
      }
      break;
    }
    case 1:
      break;
    case 2: {
      linger lg{1, 0};  // close sends RST
      ::setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      break;
    }
    default: {
      auto w = co_await c->send_all(std::string_view("half"));
      (void)w;
      auto slept = co_await sleep_for(std::chrono::milliseconds(rng() % 20));
      (void)slept;
      break;
    }
  }
}

TEST_P(Serve, RandomClientsStopsAndLimitsKeepTheInvariants) {
  // RINGIO_CHAOS_SEED replays a run (the seed is printed).
  auto seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("RINGIO_CHAOS_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("serve chaos seed: %llu (RINGIO_CHAOS_SEED replays it)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::size_t fds_before = open_fd_count();
  for (int round = 0; round < 5; ++round) {
    auto l = listen_loopback();
    auto at = address_of(l);
    server_stats st;
    bool ok = false;
    const std::size_t limits[] = {1, 3, 16, unlimited_connections};
    serve_options o{.max_connections = limits[rng() % 4],
                    .drain_timeout = std::chrono::milliseconds(rng() % 30),
                    .multishot_accept = rng() % 2 == 0};
    const auto stop_at = std::chrono::milliseconds(rng() % 60);
    const std::uint64_t client_seed = rng();
    run([](stream_listener& l, socket_address at, server_stats& st, bool& ok, serve_options o,
           std::chrono::milliseconds stop_at, std::uint64_t client_seed) -> task<void> {
      std::stop_source stop;
      scope server;
      server.spawn(run_server(l, echo_handler(st), std::move(o), stop.get_token(), ok));
      scope clients;
      clients.spawn(stop_after(stop, stop_at));
      for (int i = 0; i < 40; ++i) clients.spawn(chaos_client(at, client_seed + static_cast<std::uint64_t>(i)));
      co_await clients.join();
      co_await server.join();
    }(l, at, st, ok, o, stop_at, client_seed));
    EXPECT_TRUE(ok) << "seed " << seed << " round " << round;
    EXPECT_EQ(st.started, st.finished) << "seed " << seed << " round " << round;
    EXPECT_EQ(st.open, 0);
    if (o.max_connections != unlimited_connections) {
      EXPECT_LE(static_cast<std::size_t>(st.max_open), o.max_connections) << "seed " << seed;
    }
  }
  EXPECT_EQ(open_fd_count(), fds_before) << "seed " << seed;
}

// A loop destroyed while serve() still runs: shutting down cancels every operation and
// refuses new ones, so serve must end instead of re-arming its accept (or its wait for
// room under max_connections) forever. In a child, so that a hang fails instead of
// blocking the suite; 10 (or 11, 12) is the case that went wrong before the watchdog.
int shut_down_while_serving(backend_kind kind) {
  struct serve_case {
    serve_options options;
    bool fill;  // one client connected, so that a limit of one is reached
  };
  std::vector<serve_case> cases;
  cases.push_back({serve_options{}, false});
  cases.push_back({serve_options{.multishot_accept = false}, false});
  cases.push_back({serve_options{.max_connections = 1}, true});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto l = listen_loopback();
    auto at = address_of(l);
    server_stats st;
    std::optional<stream_socket> client;
    {
      io_context ctx(io_context_options{.backend = kind, .quiet = true});
      ctx.spawn([](stream_listener& l, server_stats& st, serve_options o) -> task<void> {
        auto r = co_await serve(l, echo_handler(st), std::move(o));
        (void)r;
      }(l, st, cases[i].options));
      sync_wait(ctx,
                [](socket_address at, bool fill, server_stats& st, std::optional<stream_socket>& client) -> task<void> {
                  if (fill) {
                    auto c = co_await stream_socket::connect(at);
                    if (c) client.emplace(std::move(*c));
                    auto started = co_await eventually([&] { return st.started == 1; });
                    (void)started;
                  }
                  auto slept = co_await sleep_for(10ms);
                  (void)slept;
                }(at, cases[i].fill, st, client));
    }  // ~io_context with serve still accepting (or waiting for room)
    if (cases[i].fill && st.started != 1) return 20 + static_cast<int>(i);
  }
  return 0;
}

TEST_P(Serve, DestroyingTheLoopWhileServingEnds) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(shut_down_while_serving(GetParam()));
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  pid_t w = 0;
  while ((w = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) ::usleep(5000);
  if (w == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "~io_context did not return within 10 s with serve() running";
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "20 + i: case i never reached its connection limit";
}

RINGIO_ALL_BACKENDS(Serve);

// The blocking entry point, in a forked child (it blocks signals and starts threads):
// two loop threads, three echo clients, then the child sends itself SIGTERM; it must
// drain and return a summary naming SIGTERM with three connections served.
class ServeProgram : public ::testing::TestWithParam<serve_dispatch> {};

int child_main(int port_pipe, serve_dispatch dispatch) {
  std::atomic<int> served{0};
  connection_handler h = [&served](stream_socket s) -> task<void> {
    return [](stream_socket s, std::atomic<int>& served) -> task<void> {
      std::array<std::byte, 64> buf;
      for (;;) {
        auto n = co_await s.recv(buf);
        if (!n || *n == 0) break;
        auto w = co_await s.send_all(std::span(buf).first(*n));
        if (!w) break;
      }
      if (served.fetch_add(1) + 1 == 3) ::kill(::getpid(), SIGTERM);
    }(std::move(s), served);
  };
  serve_options o{.threads = 2,
                  .dispatch = dispatch,
                  .context = {.backend = std::nullopt, .quiet = true},
                  .on_listening = [port_pipe](const socket_address& bound, runtime&) {
                    std::uint16_t port = bound.port();
                    (void)!::write(port_pipe, &port, sizeof port);
                  }};
  auto r = serve(socket_address::loopback(0), h, o);
  if (!r) return 10;
  if (r->signal_number != SIGTERM) return 11;
  if (r->connections_per_loop.size() != 2) return 12;
  std::uint64_t total = 0;
  for (auto n : r->connections_per_loop) total += n;
  if (total != 3) return 13;
  return 0;
}

TEST_P(ServeProgram, SigtermStopsTheBlockingEntryPointGracefully) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(p[0]);
    ::_exit(child_main(p[1], GetParam()));  // no destructors of the parent's objects
  }
  ::close(p[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(::read(p[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  ::close(p[0]);
  io_context ctx(io_context_options{.quiet = true});
  int good = sync_wait(ctx, [](socket_address at) -> task<int> {
    int good = 0;
    for (int i = 0; i < 3; ++i) co_await count_echo(at, "hello " + std::to_string(i), good);
    co_return good;
  }(socket_address::loopback(port)));
  EXPECT_EQ(good, 3);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  pid_t w = 0;
  while ((w = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) ::usleep(5000);
  if (w == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the child did not stop after SIGTERM";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: serve failed, 11: wrong signal, 12/13: wrong counts";
}

INSTANTIATE_TEST_SUITE_P(, ServeProgram, ::testing::Values(serve_dispatch::reuse_port, serve_dispatch::acceptor),
                         [](const auto& info) {
                           return std::string(info.param == serve_dispatch::reuse_port ? "reuse_port" : "acceptor");
                         });

}  // namespace
