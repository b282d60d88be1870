// SPDX-License-Identifier: Apache-2.0
// ringio/detail/blocking_job.hpp — one function handed to a blocking_pool by
// spawn_blocking: queued in the pool, run on a pool thread, then posted back to its
// home loop as its own inbox item (no allocation on the way back). It lives on the
// heap so that an awaiter that was stopped while it ran may leave without it.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "ringio/detail/blocking_home.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/detail/remote_item.hpp"
#include "ringio/result.hpp"

namespace ringio {
class blocking_pool;
}

namespace ringio::detail {

struct blocking_job {
  remote_item item;              ///< posted to the home loop when the function returned
  blocking_job* next = nullptr;  ///< the pool's queue (under the pool's mutex)
  blocking_job* prev = nullptr;
  void (*invoke)(blocking_job& self) noexcept = nullptr;   ///< runs the function
  void (*destroy)(blocking_job& self) noexcept = nullptr;  ///< deletes the job
  std::shared_ptr<blocking_home> home;
  blocking_pool* pool = nullptr;  ///< null: run inline on the loop (sim backend)
  op_base* waiter = nullptr;      ///< loop thread only; null once the awaiter left
  bool queued = false;            ///< in the pool's queue, not started (pool's mutex)
  bool pool_cancelled = false;    ///< the pool was destroyed before it started
  bool arrived = false;           ///< loop thread only: back on the loop
};

/// A job whose function returns R: keeps the value or the exception.
template <class R>
struct blocking_result_job : blocking_job {
  using stored = std::conditional_t<std::is_void_v<R>, bool, R>;
  std::optional<stored> value;
  std::exception_ptr error;

  /// The value as a result (loop thread, after the job arrived); rethrows what the
  /// function threw.
  result<R> take() {
    if (error) std::rethrow_exception(error);
    if constexpr (std::is_void_v<R>) return {};
    else return std::move(*value);
  }
};

template <class F, class R>
struct blocking_fn_job final : blocking_result_job<R> {
  explicit blocking_fn_job(F&& f) : fn(std::move(f)) {
    this->invoke = [](blocking_job& self) noexcept {
      auto& j = static_cast<blocking_fn_job&>(self);
      try {
        if constexpr (std::is_void_v<R>) {
          j.fn();
          j.value.emplace(true);
        } else {
          j.value.emplace(j.fn());
        }
      } catch (...) {
        j.error = std::current_exception();
      }
    };
    this->destroy = [](blocking_job& self) noexcept { delete static_cast<blocking_fn_job*>(&self); };
  }
  F fn;
};

/// Hands `job` (awaited by `op`, started on the current loop) to `pool` (null: the
/// loop's default pool), or, on the sim backend, to the loop itself. Returns false
/// when the pool's queue is full (the job is untouched).
bool submit_blocking(op_base& op, blocking_job& job, blocking_pool* pool);

/// The awaiter of a submitted `job` finished without its value (a stop, a deadline):
/// takes the job out of the queue when it has not started, else leaves it to be freed
/// when it comes back (loop thread).
void abandon_blocking(blocking_job& job) noexcept;

}  // namespace ringio::detail
