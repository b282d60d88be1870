// SPDX-License-Identifier: Apache-2.0
#include "ringio/runtime.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <stdexcept>

#include "ringio/post.hpp"

namespace ringio {
namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

runtime::runtime(runtime_options opts) {
  unsigned n = opts.threads;
  if (n == 0) n = static_cast<unsigned>(allowed_cpus().size());
  if (n == 0) n = 1;
  contexts_.assign(n, nullptr);
  last_.assign(n, loop_metrics{});
  threads_.reserve(n);
  // Contexts are created one after another on their own threads: a context may attach
  // to the first one's worker pool, which must exist by then.
  for (unsigned i = 0; i < n; ++i) {
    threads_.emplace_back([this, i, opts] { thread_main(i, opts); });
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return started_ == i + 1 || start_error_; });
    if (start_error_) {
      lk.unlock();
      stop();
      std::rethrow_exception(start_error_);
    }
  }
}

runtime::~runtime() { stop(); }

void runtime::thread_main(unsigned index, const runtime_options& opts) {
  if (opts.pin_threads) {
    std::vector<int> cpus = allowed_cpus();
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[index % cpus.size()], &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
  }
  io_context_options o = opts.context;
  if (opts.attach_wq && index > 0) {
    std::lock_guard lk(mu_);  // (loop 0 may already have ended: a failed start stops it)
    if (contexts_[0] != nullptr && contexts_[0]->ring_fd() >= 0) o.attach_wq_of = contexts_[0];
  }
  std::unique_ptr<io_context> ctx;
  try {
    ctx = std::make_unique<io_context>(o);
  } catch (...) {
    std::lock_guard lk(mu_);
    start_error_ = std::current_exception();
    cv_.notify_all();
    return;
  }
  {
    std::lock_guard lk(mu_);
    contexts_[index] = ctx.get();
    ++started_;
    cv_.notify_all();
  }
  for (;;) {
    ctx->run();
    // The loops end only at stop(): io_context::stop() on this one alone returns run(),
    // and the loop runs again (context(i) stays valid, posts still run).
    std::lock_guard lk(mu_);
    if (stopped_) break;
  }
  // The cancellations of what is still in flight, counted before the last metrics.
  ctx->shutdown();
  {
    // From now on metrics readers see the last counts, not the context; tasks that never
    // stopped yielding go with the context below.
    loop_metrics last = ctx->metrics();
    last.tasks_alive = 0;
    last.fibers_alive = 0;
    std::lock_guard lk(mu_);
    last_[index] = last;
    contexts_[index] = nullptr;
  }
  // The context is destroyed here, on its own thread, as its ring requires.
}

void runtime::run_on_each(const std::function<task<void>(io_context&, unsigned)>& fn) {
  struct shared_state {
    std::mutex mu;
    std::condition_variable cv;
    unsigned remaining;
    std::exception_ptr error;
  } st;
  st.remaining = size();
  for (unsigned i = 0; i < size(); ++i) {
    io_context& ctx = *contexts_[i];
    post(ctx, [&st, &fn, &ctx, i] {
      auto body = [](shared_state& st, task<void> t) -> task<void> {
        std::exception_ptr err;
        try {
          co_await std::move(t);
        } catch (...) {
          err = std::current_exception();
        }
        std::lock_guard lk(st.mu);
        if (err && !st.error) st.error = err;
        if (--st.remaining == 0) st.cv.notify_all();
      };
      ctx.spawn(body(st, fn(ctx, i)));
    });
  }
  std::unique_lock lk(st.mu);
  st.cv.wait(lk, [&] { return st.remaining == 0; });
  if (st.error) std::rethrow_exception(st.error);
}

loop_metrics runtime::metrics_locked(unsigned i) const {
  return contexts_[i] != nullptr ? contexts_[i]->metrics() : last_[i];
}

loop_metrics runtime::metrics_of(unsigned i) {
  std::lock_guard lk(mu_);  // the loop cannot end (and its context go) meanwhile
  return metrics_locked(i);
}

loop_metrics runtime::metrics() {
  loop_metrics sum;
  std::lock_guard lk(mu_);
  for (unsigned i = 0; i < contexts_.size(); ++i) sum += metrics_locked(i);
  return sum;
}

void runtime::stop() {
  {
    // Under mu_: a loop that ends clears its entry before its context goes.
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (io_context* c : contexts_)
      if (c != nullptr) c->stop();
  }
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

}  // namespace ringio
