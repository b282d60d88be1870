#include "common/serve.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <vector>

#include "common/cli.hpp"
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

ringio::task<void> accept_loop(ringio::stream_listener& listener, const server_config& cfg,
                               const connection_handler& handler, std::stop_token stop) {
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
      conns.spawn(handler(std::move(*s)));
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
  ringio::scope timer;
  timer.spawn(drain_deadline(conns, cfg.drain_timeout));
  co_await conns.join();
  timer.request_stop();
  co_await timer.join();
}

}  // namespace

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
  std::vector<ringio::stream_listener> listeners;
  ringio::socket_address bound = cfg.address;
  for (unsigned i = 0; i < cfg.threads; ++i) {
    auto l = ringio::stream_listener::bind(bound, {.reuse_port = cfg.threads > 1});
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
    rt = std::make_unique<ringio::runtime>(ro);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", cfg.name.c_str(), e.what());
    return 1;
  }
  std::printf("%s: listening on %s, %u thread%s, backend %s\n", cfg.name.c_str(), bound.to_string().c_str(),
              cfg.threads, cfg.threads == 1 ? "" : "s", rt->context(0).describe().c_str());
  std::fflush(stdout);

  std::stop_source stop;
  std::exception_ptr failure;
  std::thread waiter([&] {
    try {
      rt->run_on_each([&](ringio::io_context&, unsigned i) {
        return accept_loop(listeners[i], cfg, handler, stop.get_token());
      });
    } catch (...) {
      failure = std::current_exception();
    }
  });

  // The main thread waits for the signal on a context of its own.
  ringio::io_context main_ctx(context_options(cfg.backend));
  int signo = ringio::sync_wait(main_ctx, [](ringio::signal_set& s) -> ringio::task<int> {
    auto r = co_await s.wait();
    co_return r ? *r : 0;
  }(signals));
  std::fprintf(stderr, "%s: %s received, finishing open connections (up to %lld ms)\n", cfg.name.c_str(),
               signo == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(cfg.drain_timeout.count()));
  stop.request_stop();
  waiter.join();
  rt->stop();
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
