// SPDX-License-Identifier: Apache-2.0
// The resolver service: one worker thread per io_context running getaddrinfo(3); each
// answer is posted back to the loop as the request's own inbox item (no allocation on
// the way back). A request whose waiter was cancelled is still answered, then freed.
#include "ringio/http/resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "ringio/detail/context_service.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/http/client_error.hpp"
#include "ringio/io_context.hpp"

namespace ringio::http {
namespace {

class resolve_wait_op;
class resolver_service;

struct resolve_request {
  ringio::detail::remote_item item;
  resolver_service* owner = nullptr;
  std::string host;
  std::uint16_t port = 0;
  int gai_error = 0;
  std::vector<socket_address> addresses;
  resolve_wait_op* waiter = nullptr;   // loop thread only; null once abandoned
  std::atomic<bool> abandoned{false};  // read by the worker to skip a lookup
};

const ringio::detail::op_vtable resolve_wait_vtable = {.prepare = nullptr,
                                                       .attempt = nullptr,
                                                       .on_cqe = nullptr,
                                                       .step = nullptr,
                                                       .complete = ringio::detail::resume_waiter};

// Waits, as a loop event, until the service completes it (res 0) or a stop cancels it.
class resolve_wait_op : public ringio::detail::io_operation<resolve_wait_op> {
 public:
  explicit resolve_wait_op(resolve_request* r) noexcept
      : io_operation(&resolve_wait_vtable, ringio::detail::op_kind::event), request(r) {}
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h);
  result<std::vector<socket_address>> get_result() {
    if (res != 0) {
      if (request != nullptr) {
        request->waiter = nullptr;
        request->abandoned.store(true, std::memory_order_relaxed);
      }
      return unexpected(ringio::detail::op_error(*this));
    }
    if (gai_error != 0 || addresses.empty()) return unexpected(make_error_code(client_errc::resolve_failed));
    return std::move(addresses);
  }

  resolve_request* request;
  int gai_error = 0;
  std::vector<socket_address> addresses;
};

class resolver_service final : public ringio::detail::context_service {
 public:
  explicit resolver_service(io_context& ctx) : ctx_(ctx) {}
  ~resolver_service() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  resolve_request* make_request(std::string host, std::uint16_t port) {
    auto r = std::make_unique<resolve_request>();
    r->owner = this;
    r->host = std::move(host);
    r->port = port;
    r->item.run = [](ringio::detail::remote_item& item, io_context& ctx) noexcept {
      auto* req = static_cast<resolve_request*>(item.arg);
      req->owner->answer(*req, ctx);
    };
    r->item.arg = r.get();
    std::lock_guard lock(mu_);
    all_.push_back(std::move(r));
    return all_.back().get();
  }

  void submit(resolve_request* r) {
    ctx_.outside_work_began();  // until answer() runs on the loop
    {
      std::lock_guard lock(mu_);
      queue_.push_back(r);
      if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
    }
    cv_.notify_one();
  }

  // Loop thread: the request was never started (stopped before it began).
  void discard(resolve_request* r) {
    std::lock_guard lock(mu_);
    erase(r);
  }

 private:
  void answer(resolve_request& req, io_context& ctx) noexcept {
    ctx.outside_work_ended();
    if (resolve_wait_op* op = req.waiter; op != nullptr) {
      op->gai_error = req.gai_error;
      op->addresses = std::move(req.addresses);
      op->request = nullptr;
      (void)ctx.complete_event(*op, 0);
    }
    std::lock_guard lock(mu_);
    erase(&req);
  }

  void erase(resolve_request* r) {
    auto it = std::find_if(all_.begin(), all_.end(), [r](const auto& p) { return p.get() == r; });
    if (it != all_.end()) all_.erase(it);
  }

  void work() {
    for (;;) {
      resolve_request* req = nullptr;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        req = queue_.front();
        queue_.pop_front();
      }
      if (!req->abandoned.load(std::memory_order_relaxed)) lookup(*req);
      std::lock_guard lock(mu_);
      if (stopping_) return;
      ctx_.post_remote(req->item);
    }
  }

  static void lookup(resolve_request& req) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo* list = nullptr;
    const std::string service = std::to_string(req.port);
    req.gai_error = ::getaddrinfo(req.host.c_str(), service.c_str(), &hints, &list);
    if (req.gai_error != 0) return;
    for (addrinfo* a = list; a != nullptr; a = a->ai_next)
      if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
        req.addresses.push_back(socket_address::from_native(a->ai_addr, a->ai_addrlen));
    ::freeaddrinfo(list);
  }

  io_context& ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<resolve_request*> queue_;
  std::vector<std::unique_ptr<resolve_request>> all_;
  bool stopping_ = false;
  std::thread worker_;
};

template <class P>
bool resolve_wait_op::await_suspend(std::coroutine_handle<P> h) {
  request->waiter = this;
  const bool suspended = io_operation::await_suspend(h);
  if (suspended) {
    request->owner->submit(request);
  } else {
    request->waiter = nullptr;
    request->owner->discard(request);
    request = nullptr;
  }
  return suspended;
}

// An IPv4 or IPv6 literal, converted without the resolver thread.
bool numeric_address(const std::string& host, std::uint16_t port, socket_address& out) {
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    out = socket_address::from_native(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
    return true;
  }
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    out = socket_address::from_native(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
    return true;
  }
  return false;
}

}  // namespace

task<result<std::vector<socket_address>>> resolve(std::string host, std::uint16_t port) {
  socket_address literal;
  if (numeric_address(host, port, literal)) co_return std::vector<socket_address>{literal};
  io_context* ctx = io_context::current();
  if (ctx == nullptr) co_return unexpected(make_error_code(ringio::errc::no_current_context));
  auto& service = ctx->service<resolver_service>();
  resolve_wait_op op(service.make_request(std::move(host), port));
  auto r = co_await op;
  co_return r;
}

}  // namespace ringio::http
