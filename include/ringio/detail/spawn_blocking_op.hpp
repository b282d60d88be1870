// SPDX-License-Identifier: Apache-2.0
// ringio/detail/spawn_blocking_op.hpp — the awaiter of spawn_blocking: an event
// operation of the loop, completed when its job comes back from the pool.
#pragma once

#include <coroutine>
#include <utility>

#include "ringio/detail/blocking_job.hpp"
#include "ringio/detail/io_operation.hpp"
#include "ringio/error.hpp"

namespace ringio::detail {

inline constexpr op_vtable spawn_blocking_vtable = {
    .prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr, .step = nullptr, .complete = resume_waiter};

template <class R>
class spawn_blocking_op : public io_operation<spawn_blocking_op<R>> {
  using base = io_operation<spawn_blocking_op<R>>;

 public:
  spawn_blocking_op(blocking_pool* pool, blocking_result_job<R>* job) noexcept
      : base(&spawn_blocking_vtable, op_kind::event), pool_(pool), job_(job) {}
  // Movable before it starts (with_timeout takes it by value); the job goes along.
  spawn_blocking_op(spawn_blocking_op&& o) noexcept : base(o), pool_(o.pool_), job_(std::exchange(o.job_, nullptr)) {}
  spawn_blocking_op& operator=(spawn_blocking_op&&) = delete;
  ~spawn_blocking_op() {
    if (job_ != nullptr) job_->destroy(*job_);
  }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (!base::await_suspend(h)) return false;  // stopped before the start
    if (!submit_blocking(*this, *job_, pool_)) {
      queue_full_ = true;
      (void)this->ctx->complete_event_later(*this, -ECANCELED);
      return true;
    }
    submitted_ = true;
    return true;
  }

  result<R> get_result() {
    blocking_result_job<R>* job = std::exchange(job_, nullptr);
    struct release {
      blocking_job* j;
      ~release() {
        if (j != nullptr) j->destroy(*j);
      }
    };
    if (this->res == 0) {
      release r{job};
      return job->take();
    }
    if (submitted_) abandon_blocking(*job);
    else job->destroy(*job);
    if (queue_full_) return unexpected(make_error_code(errc::queue_full));
    return unexpected(op_error(*this));
  }

 private:
  blocking_pool* pool_;
  blocking_result_job<R>* job_;
  bool submitted_ = false;
  bool queue_full_ = false;
};

}  // namespace ringio::detail
