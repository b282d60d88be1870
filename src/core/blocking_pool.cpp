// SPDX-License-Identifier: Apache-2.0
// blocking_pool: threads started on demand take jobs from one queue (a mutex and a
// condition variable), run them, and post each back to its home loop's inbox. A loop
// that is destroyed marks its home dead first; a job finishing after that frees itself
// on its pool thread.
#include "ringio/blocking/blocking_pool.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "ringio/backend_kind.hpp"
#include "ringio/detail/blocking_job.hpp"
#include "ringio/detail/context_service.hpp"
#include "ringio/detail/offload_job.hpp"
#include "ringio/io_context.hpp"

namespace ringio {
namespace {

// On the home loop: the job is back (its function ran, or the pool dropped it).
void arrive(detail::remote_item& item, io_context& ctx) noexcept {
  auto& job = *static_cast<detail::blocking_job*>(item.arg);
  if (job.pool == nullptr && job.waiter != nullptr) job.invoke(job);  // sim: run inline, now
  job.arrived = true;
  if (job.waiter == nullptr) {
    job.destroy(job);
    return;
  }
  // On success the awaiter resumes inside this call and frees the job: touch nothing after.
  (void)ctx.complete_event(*job.waiter, job.pool_cancelled ? -ECANCELED : 0);
}

// Pool thread: sends the job home, or frees it if its loop is gone.
void deliver(detail::blocking_job& job) noexcept {
  std::shared_ptr<detail::blocking_home> home = job.home;  // the job may be freed once posted
  {
    std::lock_guard lock(home->mu);
    if (home->ctx != nullptr) {
      home->ctx->post_remote(job.item);
      return;
    }
  }
  job.destroy(job);
}

// Per loop: the home its jobs report to.
class home_service final : public detail::context_service {
 public:
  explicit home_service(io_context& ctx) : ctx_(ctx), home_(std::make_shared<detail::blocking_home>()) {
    home_->ctx = &ctx;
  }
  ~home_service() override {
    {
      std::lock_guard lock(home_->mu);
      home_->ctx = nullptr;
    }
    // Jobs posted after the loop's last drain would otherwise never be freed.
    ctx_.drain_posts(&arrive);
  }
  const std::shared_ptr<detail::blocking_home>& home() const noexcept { return home_; }

 private:
  io_context& ctx_;
  std::shared_ptr<detail::blocking_home> home_;
};

class default_pool_service final : public detail::context_service {
 public:
  explicit default_pool_service(io_context& ctx) : pool(ctx.blocking_options()) {}
  blocking_pool pool;
};

}  // namespace

struct blocking_pool::state {
  blocking_pool_options opts;
  mutable std::mutex mu;
  std::condition_variable cv;
  detail::blocking_job* head = nullptr;  // FIFO of queued jobs
  detail::blocking_job* tail = nullptr;
  std::size_t queued = 0;
  std::size_t running = 0;
  std::size_t idle = 0;  // threads waiting for work
  bool stopping = false;
  std::vector<std::thread> threads;

  void unlink(detail::blocking_job& j) noexcept {
    (j.prev != nullptr ? j.prev->next : head) = j.next;
    (j.next != nullptr ? j.next->prev : tail) = j.prev;
    j.next = j.prev = nullptr;
    j.queued = false;
    --queued;
  }

  void work() {
    std::unique_lock lock(mu);
    for (;;) {
      ++idle;
      cv.wait(lock, [this] { return stopping || head != nullptr; });
      --idle;
      if (head == nullptr) return;  // stopping, nothing queued
      detail::blocking_job& job = *head;
      unlink(job);
      ++running;
      lock.unlock();
      job.invoke(job);
      lock.lock();
      --running;
      lock.unlock();
      deliver(job);
      lock.lock();
    }
  }
};

blocking_pool::blocking_pool(blocking_pool_options opts) : s_(std::make_unique<state>()) {
  s_->opts = opts;
  s_->opts.threads = std::max(1u, opts.threads);
  s_->opts.queue_limit = std::max<std::size_t>(1, opts.queue_limit);
}

blocking_pool::~blocking_pool() {
  detail::blocking_job* dropped = nullptr;
  {
    std::lock_guard lock(s_->mu);
    s_->stopping = true;
    dropped = s_->head;
    for (detail::blocking_job* j = dropped; j != nullptr; j = j->next) {
      j->queued = false;
      j->pool_cancelled = true;
    }
    s_->head = s_->tail = nullptr;
    s_->queued = 0;
  }
  s_->cv.notify_all();
  while (dropped != nullptr) {
    detail::blocking_job* next = dropped->next;
    dropped->next = dropped->prev = nullptr;
    deliver(*dropped);
    dropped = next;
  }
  for (std::thread& t : s_->threads) t.join();
}

const blocking_pool_options& blocking_pool::options() const noexcept { return s_->opts; }

std::size_t blocking_pool::queued() const noexcept {
  std::lock_guard lock(s_->mu);
  return s_->queued;
}

std::size_t blocking_pool::running() const noexcept {
  std::lock_guard lock(s_->mu);
  return s_->running;
}

std::size_t blocking_pool::threads() const noexcept {
  std::lock_guard lock(s_->mu);
  return s_->threads.size();
}

blocking_pool& blocking_pool::default_of(io_context& ctx) { return ctx.service<default_pool_service>().pool; }

bool blocking_pool::submit(detail::blocking_job& job) {
  {
    std::lock_guard lock(s_->mu);
    if (s_->stopping || s_->queued >= s_->opts.queue_limit) return false;
    job.next = nullptr;
    job.prev = s_->tail;
    (s_->tail != nullptr ? s_->tail->next : s_->head) = &job;
    s_->tail = &job;
    job.queued = true;
    ++s_->queued;
    // A thread per job beyond the idle ones, up to the bound.
    if (s_->queued > s_->idle && s_->threads.size() < s_->opts.threads) {
      state* s = s_.get();
      try {
        s_->threads.emplace_back([s] { s->work(); });
      } catch (const std::exception&) {
        if (s_->threads.empty()) {  // no thread could ever run it
          s_->unlink(job);
          return false;
        }
      }
    }
  }
  s_->cv.notify_one();
  return true;
}

bool blocking_pool::withdraw(detail::blocking_job& job) noexcept {
  std::lock_guard lock(s_->mu);
  if (!job.queued) return false;
  s_->unlink(job);
  return true;
}

namespace detail {

bool submit_blocking(op_base& op, blocking_job& job, blocking_pool* pool) {
  io_context& ctx = *op.ctx;
  job.home = ctx.service<home_service>().home();
  job.item.run = &arrive;
  job.item.arg = &job;
  job.waiter = &op;
  if (ctx.backend() == backend_kind::sim) {
    job.pool = nullptr;  // deterministic: runs on the loop, from its inbox
    ctx.post_remote(job.item);
    return true;
  }
  job.pool = pool != nullptr ? pool : &blocking_pool::default_of(ctx);
  if (job.pool->submit(job)) return true;
  job.waiter = nullptr;
  return false;
}

bool submit_offload(io_context& ctx, offload_job& job, void (*run)(remote_item&, io_context&) noexcept) {
  job.home = ctx.service<home_service>().home();
  job.item.run = run;
  job.item.arg = &job;
  job.waiter = nullptr;
  job.pool_cancelled = false;
  job.arrived = false;
  job.invoke = [](blocking_job& self) noexcept {
    auto& j = static_cast<offload_job&>(self);
    j.result = j.op->vt->attempt(*j.op);
  };
  // Embedded in its operation, which outlives it: nothing to free, even when the loop
  // is gone (it cannot be: the loop waits for its offloaded operations).
  job.destroy = [](blocking_job&) noexcept {};
  job.pool = &blocking_pool::default_of(ctx);
  return job.pool->submit(job);
}

void abandon_blocking(blocking_job& job) noexcept {
  if (job.arrived || (job.pool != nullptr && job.pool->withdraw(job))) {
    job.destroy(job);  // back already, or never started: nobody else holds it
    return;
  }
  job.waiter = nullptr;  // running or on its way back: arrive() frees it
}

}  // namespace detail
}  // namespace ringio
