#include "common/serve.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ringio/channel.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/multishot_acceptor.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/runtime.hpp"
#include "ringio/scope.hpp"
#include "ringio/signal_set.hpp"
#include "ringio/sync_wait.hpp"
#include "ringio/time/sleep.hpp"

namespace apps {
namespace {

using namespace std::chrono_literals;

bool transient_accept_error(std::error_code ec) {
  // Out of descriptors or memory, or a connection reset before we took it: the
  // listener is fine, accepting again later succeeds.
  return ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system ||
         ec == std::errc::no_buffer_space || ec == std::errc::not_enough_memory ||
         ec == std::errc::connection_aborted || ec == std::errc::protocol_error;
}

// Cancels the connections of `conns` once `deadline` passes, unless stopped first.
ringio::task<void> drain_deadline(ringio::scope& conns, std::chrono::milliseconds deadline) {
  auto fired = co_await ringio::sleep_for(deadline);  // not inside the if: see docs/toolchain.md
  if (fired) conns.request_stop();
}

// One loop thread's share of the connections (acceptor mode): an inbox of accepted
// descriptors and a count of live connections for the least-loaded choice.
struct loop_slot {
  ringio::channel<int> inbox{4096};
  std::atomic<int> live{0};
};

// Connections each loop thread has served (printed at exit).
std::vector<std::atomic<long>>* served_per_loop = nullptr;



ringio::task<void> counted(std::atomic<int>& live, ringio::task<void> handler, unsigned loop) {
  (*served_per_loop)[loop].fetch_add(1, std::memory_order_relaxed);
  live.fetch_add(1, std::memory_order_relaxed);
  try {
    co_await std::move(handler);
  } catch (...) {
    live.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
  live.fetch_sub(1, std::memory_order_relaxed);
}

// After accepting stopped: open connections get cfg.drain_timeout to finish.
ringio::task<void> drain(ringio::scope& conns, const server_config& cfg) {
  ringio::scope timer;
  timer.spawn(drain_deadline(conns, cfg.drain_timeout));
  co_await conns.join();
  timer.request_stop();
  co_await timer.join();
}

// Acceptor mode: the loop with the fewest live connections (ties: the lowest index).
std::size_t least_loaded(std::vector<std::unique_ptr<loop_slot>>& slots) {
  std::size_t best = 0;
  int best_live = slots[0]->live.load(std::memory_order_relaxed);
  for (std::size_t i = 1; i < slots.size(); ++i) {
    int l = slots[i]->live.load(std::memory_order_relaxed);
    if (l < best_live) {
      best = i;
      best_live = l;
    }
  }
  return best;
}

// Accepts until `stop`. `slots` is empty in reuse-port mode (serve everything here);
// in acceptor mode this is loop 0, which hands sockets to the least-loaded loop.
ringio::task<void> accept_loop(ringio::stream_listener& listener, const server_config& cfg,
                               const connection_handler& handler, std::stop_token stop,
                               std::vector<std::unique_ptr<loop_slot>>& slots, std::atomic<int>& live,
                               unsigned loop) {
  ringio::scope conns;
  std::optional<ringio::multishot_acceptor> acceptor;
  if (cfg.multishot_accept) acceptor.emplace(listener);
  auto last_report = std::chrono::steady_clock::now() - 1h;
  for (;;) {
    // (Two statements: GCC 12 mis-destroys temporaries of co_await inside ?:.)
    ringio::result<ringio::stream_socket> s;
    if (acceptor)
      s = co_await acceptor->next().with_stop(stop);
    else
      s = co_await listener.accept().with_stop(stop);
    if (s) {
      std::size_t target = slots.empty() ? 0 : least_loaded(slots);
      if (target != 0) {
        int fd = s->release();
        if (slots[target]->inbox.try_send(fd)) continue;
        *s = ringio::stream_socket(ringio::detail::fd_handle(fd));  // inbox full: serve it here
      }
      conns.spawn(counted(live, handler(std::move(*s)), loop));
      continue;
    }
    if (s.error() == std::errc::operation_canceled) break;
    if (!transient_accept_error(s.error())) {
      std::fprintf(stderr, "%s: accept: %s; no longer accepting on this thread\n", cfg.name.c_str(),
                   s.error().message().c_str());
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_report > 1s) {
      std::fprintf(stderr, "%s: accept: %s (connections wait until descriptors are free)\n",
                   cfg.name.c_str(), s.error().message().c_str());
      last_report = now;
    }
    (void)co_await ringio::sleep_for(10ms).with_stop(stop);
  }
  acceptor.reset();
  listener.close();  // refuse new connections while the open ones finish
  co_await drain(conns, cfg);
}

// Acceptor mode, loops 1..N-1: serve the sockets loop 0 hands over.
ringio::task<void> receive_loop(loop_slot& slot, const server_config& cfg, const connection_handler& handler,
                                std::stop_token stop, unsigned loop) {
  ringio::scope conns;
  for (;;) {
    auto fd = co_await slot.inbox.receive(stop);
    if (!fd) break;
    ringio::stream_socket s{ringio::detail::fd_handle(*fd)};
    conns.spawn(counted(slot.live, handler(std::move(s)), loop));
  }
  while (auto fd = slot.inbox.try_receive()) ringio::detail::fd_handle close_it(*fd);
  co_await drain(conns, cfg);
}

// Keeps the loop's resources (cfg.loop_setup) alive until its serving task is done.
ringio::task<void> with_loop_resources(std::shared_ptr<void> resources, ringio::task<void> body) {
  co_await std::move(body);
  resources.reset();
}

}  // namespace

std::set<std::string> server_flags(std::set<std::string> extra) {
  extra.insert({"single-accept", "sqpoll", "no-defer-taskrun"});
  return extra;
}

void read_server_options(cli& args, server_config& cfg) {
  auto port = static_cast<std::uint16_t>(args.required_integer("port", 0, 65535));
  auto threads = static_cast<unsigned>(args.integer("threads", 1, 1, 1024));
  read_server_options(args, cfg, port, threads);
}

void read_server_options(cli& args, server_config& cfg, std::uint16_t port, unsigned threads) {
  auto host = args.text("host", "127.0.0.1");
  auto addr = ringio::socket_address::from_host(host, port);
  if (!addr) args.fail("invalid --host '" + host + "': " + addr.error().message());
  cfg.address = *addr;
  cfg.threads = threads;
  cfg.backend = args.backend();
  cfg.drain_timeout =
      std::chrono::milliseconds(static_cast<long long>(args.seconds("drain-timeout", 5, 0, 3600) * 1000));
  cfg.multishot_accept = !args.flag("single-accept");
  cfg.sqpoll = args.flag("sqpoll");
  cfg.defer_taskrun = !args.flag("no-defer-taskrun");
  auto dispatch = args.text("dispatch", "reuseport");
  if (dispatch == "acceptor")
    cfg.dispatch = dispatch_mode::acceptor;
  else if (dispatch != "reuseport")
    args.fail("--dispatch must be reuseport or acceptor, got '" + dispatch + "'");
}

int serve(const server_config& cfg, const connection_handler& handler) {
  raise_fd_limit();
  // Block the signals before any thread starts, so every thread inherits the mask.
  ringio::signal_set signals({SIGINT, SIGTERM});

  // Several listeners share the port with SO_REUSEPORT, which would also let a second
  // server join silently: check first that the port is free with a plain bind.
  if (cfg.threads > 1 && cfg.address.port() != 0) {
    auto probe = ringio::stream_listener::bind(cfg.address);
    if (!probe) {
      std::fprintf(stderr, "%s: cannot listen on %s: %s\n", cfg.name.c_str(), cfg.address.to_string().c_str(),
                   probe.error().message().c_str());
      return 1;
    }
  }
  const bool acceptor_mode = cfg.dispatch == dispatch_mode::acceptor && cfg.threads > 1;
  const unsigned listener_count = acceptor_mode ? 1 : cfg.threads;
  std::vector<ringio::stream_listener> listeners;
  ringio::socket_address bound = cfg.address;
  for (unsigned i = 0; i < listener_count; ++i) {
    auto l = ringio::stream_listener::bind(bound, {.reuse_port = listener_count > 1});
    if (!l) {
      std::fprintf(stderr, "%s: cannot listen on %s: %s\n", cfg.name.c_str(), bound.to_string().c_str(),
                   l.error().message().c_str());
      return 1;
    }
    if (i == 0) bound = l->local_address().value_or(bound);  // port 0: all threads share the chosen one
    listeners.push_back(std::move(*l));
  }

  std::unique_ptr<ringio::runtime> rt;
  try {
    ringio::runtime_options ro;
    ro.threads = cfg.threads;
    ro.context = context_options(cfg.backend);
    ro.context.sqpoll = cfg.sqpoll;
    ro.context.defer_taskrun = cfg.defer_taskrun;
    rt = std::make_unique<ringio::runtime>(ro);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", cfg.name.c_str(), e.what());
    return 1;
  }
  std::printf("%s: listening on %s, %u thread%s (%s)%s%s, backend %s\n", cfg.name.c_str(),
              bound.to_string().c_str(), cfg.threads, cfg.threads == 1 ? "" : "s",
              acceptor_mode ? "one acceptor" : "SO_REUSEPORT per thread", cfg.banner.empty() ? "" : ", ",
              cfg.banner.c_str(), rt->context(0).describe().c_str());
  std::fflush(stdout);

  std::stop_source stop;
  std::exception_ptr failure;
  std::vector<std::unique_ptr<loop_slot>> slots, no_slots;
  if (acceptor_mode)
    for (unsigned i = 0; i < cfg.threads; ++i) slots.push_back(std::make_unique<loop_slot>());
  std::atomic<int> local_live{0};  // reuse-port mode keeps no per-loop counts
  std::vector<std::atomic<long>> served(cfg.threads);
  served_per_loop = &served;
  std::thread waiter([&] {
    try {
      rt->run_on_each([&](ringio::io_context& ctx, unsigned i) -> ringio::task<void> {
        std::shared_ptr<void> resources = cfg.loop_setup ? cfg.loop_setup(ctx) : nullptr;
        ringio::task<void> body;
        if (!acceptor_mode)
          body = accept_loop(listeners[i], cfg, handler, stop.get_token(), no_slots, local_live, i);
        else if (i == 0)
          body = accept_loop(listeners[0], cfg, handler, stop.get_token(), slots, slots[0]->live, 0);
        else
          body = receive_loop(*slots[i], cfg, handler, stop.get_token(), i);
        return with_loop_resources(std::move(resources), std::move(body));
      });
    } catch (...) {
      failure = std::current_exception();
    }
  });

  // The main thread waits for the signal on a context of its own.
  ringio::io_context main_ctx(context_options(cfg.backend));
  // (cfg.done, requested from a loop thread, cancels this wait: the remote cancel path.)
  int signo = ringio::sync_wait(main_ctx, [](ringio::signal_set& s, std::stop_token done) -> ringio::task<int> {
    auto r = co_await s.wait().with_stop(done);
    co_return r ? *r : 0;
  }(signals, cfg.done));
  if (signo != 0)
    std::fprintf(stderr, "%s: %s received, finishing open connections (up to %lld ms)\n", cfg.name.c_str(),
                 signo == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(cfg.drain_timeout.count()));
  stop.request_stop();
  if (cfg.on_stop) cfg.on_stop(signo);
  waiter.join();
  rt->stop();
  std::string per_loop;
  for (auto& n : served) per_loop += " " + std::to_string(n.load());
  std::fprintf(stderr, "%s: connections served per thread:%s\n", cfg.name.c_str(), per_loop.c_str());
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", cfg.name.c_str(), e.what());
    }
    return 1;
  }
  return 0;
}

}  // namespace apps
