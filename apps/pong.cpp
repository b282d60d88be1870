// pong — the ping/pong server: every connection loops "receive exactly <blocksize>
// bytes, send them back" until the client closes. One run serves one ping run: once
// <sessions> sessions have connected and all of them have closed, pong exits 0.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "common/loadgen.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/multishot_acceptor.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/runtime.hpp"
#include "ringio/scope.hpp"
#include "ringio/signal_set.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"

namespace {

using namespace std::chrono_literals;

constexpr const char* usage =
    "usage: pong <port> <threads> <blocksize> <sessions> [--keep-running] [--host ADDR]\n"
    "            [--backend uring|epoll|uring-poll] [--drain-timeout SECONDS]\n"
    "Listens on ADDR:<port> (default 127.0.0.1) with one SO_REUSEPORT listener per loop\n"
    "thread. Every connection loops \"receive exactly <blocksize> bytes, send them back\"\n"
    "until the client closes. Exits 0 once <sessions> sessions have connected and all\n"
    "have closed (--keep-running: serve until signalled), or on SIGINT/SIGTERM: no new\n"
    "connections, open ones get --drain-timeout (default 5) seconds, then are cancelled.\n";

struct pong_state {
  std::size_t block = 0;
  std::int64_t sessions = 0;
  bool keep_running = false;
  std::chrono::milliseconds drain_timeout{5000};
  std::atomic<std::int64_t> accepted{0};
  std::atomic<std::int64_t> closed{0};
  std::atomic<std::uint64_t> bytes{0};
  std::stop_source accepting;  // stopped: every loop stops accepting and drains
  std::stop_source finished;   // stopped: the sessions are over (wakes the main thread)
};

ringio::task<void> pong_session(ringio::stream_socket s, pong_state& st) {
  auto storage = std::make_unique<std::byte[]>(st.block);  // once per session
  const ringio::mutable_buffer buf(storage.get(), st.block);
  std::uint64_t echoed = 0;
  for (;;) {
    auto got = co_await s.recv_exact(buf);
    if (!got || *got != st.block) break;  // EOF (maybe mid-block), error or cancel
    auto sent = co_await s.send_all(buf);
    if (!sent) break;
    echoed += st.block;
  }
  s = ringio::stream_socket{};
  st.bytes.fetch_add(echoed, std::memory_order_relaxed);
  const std::int64_t closed = st.closed.fetch_add(1) + 1;
  if (!st.keep_running && closed >= st.sessions && closed == st.accepted.load()) st.finished.request_stop();
}

bool transient_accept_error(std::error_code ec) {
  return ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system ||
         ec == std::errc::no_buffer_space || ec == std::errc::not_enough_memory ||
         ec == std::errc::connection_aborted || ec == std::errc::protocol_error;
}

ringio::task<void> drain_deadline(ringio::scope& conns, std::chrono::milliseconds deadline) {
  auto fired = co_await ringio::sleep_for(deadline);  // bound first: docs/toolchain.md
  if (fired) conns.request_stop();
}

ringio::task<void> accept_loop(ringio::stream_listener& listener, pong_state& st) {
  const std::stop_token stop = st.accepting.get_token();
  ringio::scope conns;
  std::optional<ringio::multishot_acceptor> acceptor;
  acceptor.emplace(listener);
  auto last_report = std::chrono::steady_clock::now() - 1h;
  for (;;) {
    auto s = co_await acceptor->next().with_stop(stop);
    if (s) {
      st.accepted.fetch_add(1);
      conns.spawn(pong_session(std::move(*s), st));
      continue;
    }
    if (s.error() == std::errc::operation_canceled) break;
    if (!transient_accept_error(s.error())) {
      std::fprintf(stderr, "pong: accept: %s; no longer accepting on this thread\n", s.error().message().c_str());
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_report > 1s) {
      std::fprintf(stderr, "pong: accept: %s (connections wait until descriptors are free)\n",
                   s.error().message().c_str());
      last_report = now;
    }
    (void)co_await ringio::sleep_for(10ms).with_stop(stop);
  }
  acceptor.reset();
  listener.close();
  ringio::scope timer;
  timer.spawn(drain_deadline(conns, st.drain_timeout));
  co_await conns.join();
  timer.request_stop();
  co_await timer.join();
}

}  // namespace

int main(int argc, char** argv) {
  apps::cli args(argc, argv, usage, {"keep-running"});
  auto port = static_cast<std::uint16_t>(args.positional_integer(0, "port", 0, 65535));
  auto threads = static_cast<unsigned>(args.positional_integer(1, "threads", 1, 1024));
  pong_state st;
  st.block = static_cast<std::size_t>(args.positional_integer(2, "blocksize", 1, 64 << 20));
  st.sessions = args.positional_integer(3, "sessions", 1, 1'000'000'000);
  st.keep_running = args.flag("keep-running");
  auto host = args.text("host", "127.0.0.1");
  auto backend = args.backend();
  st.drain_timeout = std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  args.done(4);
  const ringio::socket_address address = apps::target_address(args, host, port);

  apps::raise_fd_limit();
  // Blocked before any thread starts, so that every thread inherits the mask.
  ringio::signal_set signals({SIGINT, SIGTERM});

  // SO_REUSEPORT would let a second server join the port silently: probe it first.
  if (threads > 1 && port != 0) {
    auto probe = ringio::stream_listener::bind(address);
    if (!probe) {
      std::fprintf(stderr, "pong: cannot listen on %s: %s\n", address.to_string().c_str(),
                   probe.error().message().c_str());
      return 1;
    }
  }
  std::vector<ringio::stream_listener> listeners;
  ringio::socket_address bound = address;
  for (unsigned i = 0; i < threads; ++i) {
    auto l = ringio::stream_listener::bind(bound, {.reuse_port = threads > 1});
    if (!l) {
      std::fprintf(stderr, "pong: cannot listen on %s: %s\n", bound.to_string().c_str(), l.error().message().c_str());
      return 1;
    }
    if (i == 0) bound = l->local_address().value_or(bound);
    listeners.push_back(std::move(*l));
  }

  std::unique_ptr<ringio::runtime> rt;
  try {
    ringio::runtime_options ro;
    ro.threads = threads;
    ro.context = apps::context_options(backend);
    rt = std::make_unique<ringio::runtime>(ro);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pong: %s\n", e.what());
    return 1;
  }
  const std::string backend_name(ringio::to_string(rt->context(0).backend()));
  std::printf("pong: listening on %s, %u thread%s, %zu-byte blocks, %s, backend %s\n", bound.to_string().c_str(),
              threads, threads == 1 ? "" : "s", st.block,
              st.keep_running ? "until signalled" : ("until " + std::to_string(st.sessions) + " sessions end").c_str(),
              rt->context(0).describe().c_str());
  std::fflush(stdout);

  std::exception_ptr failure;
  std::thread loops([&] {
    try {
      rt->run_on_each([&](ringio::io_context&, unsigned i) { return accept_loop(listeners[i], st); });
    } catch (...) {
      failure = std::current_exception();
    }
  });

  // The main thread waits, on a context of its own, for a signal or for the end of the
  // sessions (which cancels the wait from the loop thread that saw the last close).
  ringio::io_context main_ctx(apps::context_options(backend));
  const int signo = ringio::sync_wait(main_ctx, [](ringio::signal_set& s, std::stop_token done) -> ringio::task<int> {
    auto r = co_await s.wait().with_stop(done);
    co_return r ? *r : 0;
  }(signals, st.finished.get_token()));
  if (signo != 0)
    std::fprintf(stderr, "pong: %s received, finishing open connections (up to %lld ms)\n",
                 signo == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(st.drain_timeout.count()));
  st.accepting.request_stop();
  loops.join();
  rt->stop();

  const auto sessions = st.accepted.load();
  const auto bytes = st.bytes.load();
  std::printf("pong: %lld session%s served, %llu bytes echoed, %s\n", static_cast<long long>(sessions),
              sessions == 1 ? "" : "s", static_cast<unsigned long long>(bytes),
              signo != 0 ? "stopped by a signal" : "all sessions ended");
  apps::result_json("pong")
      .add("sessions", sessions)
      .add("bytes", static_cast<std::uint64_t>(bytes))
      .add("threads", threads)
      .add("blocksize", static_cast<std::uint64_t>(st.block))
      .add("signalled", signo != 0)
      .add("backend", backend_name)
      .print();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pong: %s\n", e.what());
    }
    return 1;
  }
  return 0;
}
