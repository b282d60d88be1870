// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/server.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <string>

#include "connection.hpp"
#include "ringio/log.hpp"
#include "ringio/serve.hpp"
#include "server_core.hpp"

namespace ringio::http {
namespace detail {

namespace {
std::atomic<std::uint64_t> next_core_id{1};
}  // namespace

server_core::server_core(handler h, server_options o)
    : handle(std::move(h)), opts(std::move(o)), id_(next_core_id.fetch_add(1, std::memory_order_relaxed)) {}

server_counters& server_core::counters() {
  struct cached {
    std::uint64_t id = 0;
    server_counters* counters = nullptr;
  };
  thread_local std::array<cached, 4> cache{};
  thread_local std::size_t next_slot = 0;
  for (const cached& c : cache)
    if (c.id == id_) return *c.counters;
  server_counters* mine = nullptr;
  {
    std::lock_guard lk(shards_mu_);
    const std::thread::id self = std::this_thread::get_id();
    for (auto& [owner, shard] : shards_)
      if (owner == self) mine = shard.get();
    if (mine == nullptr) {
      auto made = std::make_unique<server_counters>();
      made->relay_drain(drain_token_);
      mine = shards_.emplace_back(self, std::move(made)).second.get();
    }
  }
  cache[next_slot] = {id_, mine};
  next_slot = (next_slot + 1) % cache.size();
  return *mine;
}

server_metrics server_core::metrics() const {
  server_metrics m;
  {
    std::lock_guard lk(shards_mu_);
    for (const auto& entry : shards_) entry.second->add_to(m);
  }
  m.connections_active = active();
  return m;
}

void server_core::log(std::string_view line) const {
  if (opts.log) {
    opts.log(line);
    return;
  }
  log_line(log_level::warning, line);
}

void server_core::log_limited(std::atomic<std::int64_t>& last, std::string_view line) const {
  std::int64_t now = std::time(nullptr);
  std::int64_t prev = last.load(std::memory_order_relaxed);
  if (prev == now || !last.compare_exchange_strong(prev, now, std::memory_order_relaxed)) return;
  log(line);
}

}  // namespace detail

server::server(handler h, server_options opts)
    : core_(std::make_unique<detail::server_core>(std::move(h), std::move(opts))) {}

server::server(const router& routes, server_options opts)
    : server(handler([&routes](request& r) { return routes(r); }), std::move(opts)) {
  core_->routes = &routes;
}

server::~server() = default;

void server::drain() noexcept { core_->drain(); }

void server::drain(std::chrono::milliseconds idle_grace) noexcept { core_->drain_gently(idle_grace); }

std::size_t server::connections() const noexcept { return core_->active(); }

server_metrics server::metrics() const { return core_->metrics(); }

task<void> server::serve_connection(stream_socket s) {
  detail::server_core& core = *core_;
  if (!core.admit()) return detail::connection::refuse(core, std::move(s));
  // The task holds the admission from here: released when it ends (or is destroyed).
  return detail::connection::serve(core, std::move(s), detail::admission_release(&core));
}

task<void> server::serve(stream_listener& listener, std::stop_token stop) {
  // No drain deadline: requests in progress finish (idle connections close at once).
  serve_options options{.drain_timeout = std::chrono::milliseconds::max(), .on_drain = [this] { drain(); }};
  auto served = co_await ringio::serve(
      listener, [this](stream_socket s) { return serve_connection(std::move(s)); }, std::move(options),
      std::move(stop));
  (void)served;  // an accept error that ended accepting has been logged by ringio::serve
}

}  // namespace ringio::http
