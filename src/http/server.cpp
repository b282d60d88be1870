#include "ringio/http/server.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>

#include "connection.hpp"
#include "ringio/scope.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "server_core.hpp"

namespace ringio::http {
namespace detail {

server_core::server_core(handler h, server_options o) : handle(std::move(h)), opts(std::move(o)) {}

void server_core::log(std::string_view line) const {
  if (opts.log) {
    opts.log(line);
    return;
  }
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

void server_core::log_limited(std::atomic<std::int64_t>& last, std::string_view line) const {
  std::int64_t now = std::time(nullptr);
  std::int64_t prev = last.load(std::memory_order_relaxed);
  if (prev == now || !last.compare_exchange_strong(prev, now, std::memory_order_relaxed)) return;
  log(line);
}

namespace {

struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};
struct stop_scope {
  scope* target;
  void operator()() const noexcept { target->request_stop(); }
};

bool transient_accept_error(std::error_code ec) {
  // Out of descriptors or memory, or a connection reset before it was taken: accepting
  // again later works.
  return ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system ||
         ec == std::errc::no_buffer_space || ec == std::errc::not_enough_memory ||
         ec == std::errc::connection_aborted || ec == std::errc::protocol_error;
}

}  // namespace
}  // namespace detail

server::server(handler h, server_options opts)
    : core_(std::make_unique<detail::server_core>(std::move(h), std::move(opts))) {}

server::server(const router& routes, server_options opts)
    : server(handler([&routes](request& r) { return routes(r); }), std::move(opts)) {
  core_->routes = &routes;
}

server::~server() = default;

void server::drain() noexcept { core_->drain(); }

std::size_t server::connections() const noexcept { return core_->active(); }

task<void> server::serve_connection(stream_socket s) {
  detail::server_core& core = *core_;
  detail::connection conn(core, std::move(s));
  if (!core.admit()) {
    co_await conn.refuse();
    co_return;
  }
  detail::admission held(core);
  co_await conn.run();
}

task<void> server::serve(stream_listener& listener, std::stop_token stop) {
  // Accepting ends on `stop` or on a stop of the awaiting task; the latter also cancels
  // the connections at once (a graceful stop is `stop`).
  std::stop_token outer = co_await current_stop_token();
  std::stop_source accepting;
  std::stop_callback<detail::forward_stop> on_stop(stop, detail::forward_stop{&accepting});
  std::stop_callback<detail::forward_stop> on_outer(outer, detail::forward_stop{&accepting});
  scope conns;
  std::stop_callback<detail::stop_scope> cancel_all(outer, detail::stop_scope{&conns});
  const std::stop_token token = accepting.get_token();
  for (;;) {
    auto s = co_await listener.accept().with_stop(token);
    if (s) {
      conns.spawn(serve_connection(std::move(*s)));
      continue;
    }
    if (s.error() == std::errc::operation_canceled) break;
    if (!detail::transient_accept_error(s.error())) {
      core_->log("http: accept: " + s.error().message() + "; no longer accepting");
      break;
    }
    (void)co_await sleep_for(std::chrono::milliseconds(10)).with_stop(token);
  }
  listener.close();  // refuse new connections while the open ones finish
  drain();
  co_await conns.join();
}

}  // namespace ringio::http
