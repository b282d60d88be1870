// SPDX-License-Identifier: Apache-2.0
// churn_bench — connection churn against an echo server: C concurrent slots, each
// repeatedly connecting, exchanging M 8-byte messages (send 8, receive the 8 back),
// closing, and starting the next session, until T sessions are done in total.
// Reports sessions/s and the session latency (connect to close).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/latency_histogram.hpp"
#include "common/loadgen.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/runtime.hpp"
#include "ringio/scope.hpp"
#include "ringio/stop.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"

namespace {

constexpr const char* usage =
    "usage: churn_bench --port P [--host ADDR] --concurrency C [--sessions T] [--messages M]\n"
    "                   [--threads N] [--timeout S] [--backend uring|epoll|uring-poll] [--verify]\n"
    "Connection churn against an echo server at ADDR:P (default 127.0.0.1): C concurrent\n"
    "slots over N loop threads (default 1); each slot connects, exchanges M (default 3)\n"
    "8-byte messages (send 8 bytes, receive the 8 back), closes, and starts the next\n"
    "session, until T (default 50000) sessions are done. Prints sessions/s, the session\n"
    "latency (connect to close) and failed sessions, then a `RESULT {json}` line. The\n"
    "run stops after S seconds (default 300) even if sessions remain. --verify checks the\n"
    "echoed bytes.\n"
    "Exit status: 0 after a run (failures are counted in `failed`), 1 when the server\n"
    "cannot be reached at all, 2 for a usage error.\n";

constexpr std::size_t message_size = 8;

struct config {
  ringio::socket_address address;
  unsigned threads = 1;
  std::int64_t concurrency = 1;
  std::int64_t sessions = 50000;
  std::int64_t messages = 3;
  double timeout_s = 300;
  bool verify = false;
};

struct alignas(64) thread_state {
  apps::latency_histogram latency;
  std::uint64_t done = 0;
  std::uint64_t failed = 0;
  std::uint64_t bad_replies = 0;
  std::string first_error;
  void note_error(const char* what, const std::string& why) {
    if (first_error.empty()) first_error = std::string(what) + ": " + why;
  }
};

std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One slot: sessions one after another, each taking a ticket from the shared count.
// The frame and the two 8-byte buffers live as long as the slot, not one session.
ringio::task<void> slot(const config& cfg, std::atomic<std::int64_t>& tickets, thread_state& st) {
  std::array<std::byte, message_size> out{}, in{};
  for (;;) {
    const std::int64_t ticket = tickets.fetch_add(1, std::memory_order_relaxed);
    if (ticket >= cfg.sessions) break;
    const std::int64_t t0 = now_ns();
    bool ok = true, canceled = false;
    {
      auto conn = co_await ringio::stream_socket::connect(cfg.address);
      if (!conn) {
        ok = false;
        canceled = conn.error() == std::errc::operation_canceled;
        if (!canceled) st.note_error("connect", conn.error().message());
      } else {
        for (std::int64_t m = 0; m < cfg.messages; ++m) {
          const std::uint64_t stamp = (static_cast<std::uint64_t>(ticket) << 16) | static_cast<std::uint64_t>(m);
          std::memcpy(out.data(), &stamp, sizeof stamp);
          auto sent = co_await conn->send_all(out);
          if (!sent || *sent != out.size()) {  // a short count: stopped part-way
            ok = false;
            canceled = !sent ? sent.error() == std::errc::operation_canceled : true;
            if (!canceled) st.note_error("send", sent.error().message());
            break;
          }
          auto got = co_await conn->recv_exact(in);
          if (!got) {
            ok = false;
            canceled = got.error() == std::errc::operation_canceled;
            if (!canceled) st.note_error("recv", got.error().message());
            break;
          }
          if (*got != message_size) {
            ok = false;
            std::stop_token stop = co_await ringio::current_stop_token();
            canceled = stop.stop_requested();  // stopped part-way: not the server's doing
            if (canceled) break;
            st.note_error("recv", "the server closed the connection");
            break;
          }
          if (cfg.verify && in != out) {
            ok = false;
            ++st.bad_replies;
            st.note_error("verify", "a reply differs from its message");
            break;
          }
        }
      }
    }                     // the socket closes here: the client side holds the TIME_WAIT
    if (canceled) break;  // the run's time is up: this session counts as unfinished
    if (!ok) {
      ++st.failed;
      continue;
    }
    ++st.done;
    st.latency.record(static_cast<std::uint64_t>(now_ns() - t0));
  }
}

ringio::task<void> stop_at(ringio::scope& slots, std::int64_t deadline_ns) {
  auto fired = co_await ringio::sleep_for(std::chrono::nanoseconds(deadline_ns - now_ns()));  // bound first
  if (fired) slots.request_stop();
}

ringio::task<void> run_slots(const config& cfg, std::int64_t slots_here, std::atomic<std::int64_t>& tickets,
                             thread_state& st, std::int64_t deadline_ns) {
  ringio::scope slots;
  for (std::int64_t i = 0; i < slots_here; ++i) slots.spawn(slot(cfg, tickets, st));
  ringio::scope timer;
  timer.spawn(stop_at(slots, deadline_ns));
  co_await slots.join();
  timer.request_stop();
  co_await timer.join();
}

// One connection before the run, so that a server that is not there is one clear
// message rather than T failed sessions.
ringio::task<ringio::result<void>> probe(const ringio::socket_address& address) {
  auto conn = co_await ringio::with_timeout(ringio::stream_socket::connect(address), std::chrono::seconds(10));
  if (!conn) co_return ringio::unexpected(conn.error());
  co_return ringio::result<void>{};
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"verify"});
  config cfg;
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 1, 65535));
  auto host = args.text("host", "127.0.0.1");
  cfg.concurrency = args.required_integer("concurrency", 1, 1'000'000);
  cfg.sessions = args.integer("sessions", 50000, 1, 1'000'000'000'000);
  cfg.messages = args.integer("messages", 3, 0, 1'000'000);
  cfg.threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  cfg.timeout_s = args.seconds("timeout", 300, 0.001, 86400);
  auto backend = args.backend();
  cfg.verify = args.flag("verify");
  args.done();
  cfg.address = apps::target_address(args, host, port);
  apps::raise_fd_limit();

  {
    ringio::io_context ctx(apps::context_options(backend));
    auto reachable = ringio::sync_wait(ctx, probe(cfg.address));
    if (!reachable) {
      std::fprintf(stderr, "churn_bench: cannot connect to %s: %s\n", cfg.address.to_string().c_str(),
                   reachable.error().message().c_str());
      return 1;
    }
  }

  std::unique_ptr<ringio::runtime> rt;
  try {
    ringio::runtime_options ro;
    ro.threads = cfg.threads;
    ro.context = apps::context_options(backend);
    rt = std::make_unique<ringio::runtime>(ro);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "churn_bench: %s\n", e.what());
    return 1;
  }
  const std::string backend_name(ringio::to_string(rt->context(0).backend()));
  std::printf("churn_bench: backend %s\n", rt->context(0).describe().c_str());
  std::fflush(stdout);

  std::vector<std::unique_ptr<thread_state>> states;
  for (unsigned t = 0; t < cfg.threads; ++t) states.push_back(std::make_unique<thread_state>());
  std::atomic<std::int64_t> tickets{0};
  const std::int64_t start = now_ns();
  const std::int64_t deadline = start + static_cast<std::int64_t>(cfg.timeout_s * 1e9);
  const double cpu_start = apps::process_cpu_seconds();
  rt->run_on_each([&](ringio::io_context&, unsigned t) {
    auto here = static_cast<std::int64_t>(apps::share_of(static_cast<std::size_t>(cfg.concurrency), cfg.threads, t));
    return run_slots(cfg, here, tickets, *states[t], deadline);
  });
  const double seconds = static_cast<double>(now_ns() - start) / 1e9;
  const double cpu = apps::process_cpu_seconds() - cpu_start;
  rt->stop();

  apps::latency_histogram h;
  std::uint64_t done = 0, failed = 0, bad = 0;
  std::string first_error;
  for (auto& st : states) {
    h.merge(st->latency);
    done += st->done;
    failed += st->failed;
    bad += st->bad_replies;
    if (first_error.empty()) first_error = st->first_error;
  }
  const std::uint64_t unfinished = static_cast<std::uint64_t>(cfg.sessions) - done - failed;
  const double per_s = seconds > 0 ? static_cast<double>(done) / seconds : 0;

  std::printf("churn_bench: %lld sessions of %lld messages, concurrency %lld on %u thread%s, %s\n",
              static_cast<long long>(cfg.sessions), static_cast<long long>(cfg.messages),
              static_cast<long long>(cfg.concurrency), cfg.threads, cfg.threads == 1 ? "" : "s",
              cfg.address.to_string().c_str());
  std::printf("churn_bench: %.0f sessions/s: %llu sessions in %.3f s, %.3f CPU s\n", per_s,
              static_cast<unsigned long long>(done), seconds, cpu);
  std::printf("churn_bench: session latency us: mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", h.mean() / 1000.0,
              apps::to_us(h.percentile(50)), apps::to_us(h.percentile(99)), apps::to_us(h.max()));
  std::printf("churn_bench: %llu failed session%s, %llu unfinished at the %.0f s timeout%s\n",
              static_cast<unsigned long long>(failed), failed == 1 ? "" : "s",
              static_cast<unsigned long long>(unfinished), cfg.timeout_s,
              cfg.verify ? (", " + std::to_string(bad) + " bad replies").c_str() : "");
  if (!first_error.empty()) std::printf("churn_bench: first error: %s\n", first_error.c_str());
  apps::result_json("churn_bench")
      .add("sessions_per_s", per_s, 1)
      .add("mean_us", h.mean() / 1000.0, 1)
      .add("p50_us", apps::to_us(h.percentile(50)), 1)
      .add("p99_us", apps::to_us(h.percentile(99)), 1)
      .add("max_us", apps::to_us(h.max()), 1)
      .add("failed", failed)
      .add("unfinished", unfinished)
      .add("sessions", done)
      .add("sessions_requested", cfg.sessions)
      .add("seconds", seconds, 4)
      .add("concurrency", cfg.concurrency)
      .add("messages", cfg.messages)
      .add("threads", cfg.threads)
      .add("cpu_s", cpu, 3)
      .add("verify", cfg.verify)
      .add("backend", backend_name)
      .print();
  return 0;
}
