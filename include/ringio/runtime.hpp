// SPDX-License-Identifier: Apache-2.0
// ringio/runtime.hpp — thread per core: N threads, each with its own io_context (its
// own ring; nothing shared on the hot path).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ringio/io_context.hpp"
#include "ringio/task.hpp"

namespace ringio {

/// How a runtime starts its threads. Every field has a default.
struct runtime_options {
  /// Number of loop threads (0: one per CPU available to the process).
  unsigned threads = 1;
  /// Pin thread i to the i-th CPU of the process's affinity mask.
  bool pin_threads = false;
  /// Options of every context. With io_uring, contexts after the first share the first
  /// one's kernel worker pool (IORING_SETUP_ATTACH_WQ) unless attach_wq is false.
  io_context_options context{};
  /// With io_uring, rings 1..N-1 share ring 0's kernel worker pool (ATTACH_WQ).
  bool attach_wq = true;
};

/// Starts the threads and their contexts at construction; the loops run until stop()
/// or destruction, not one by one: io_context::stop() on one of them returns its run(),
/// and the runtime runs it again. At stop() each loop cancels what it has in flight and
/// ends on its own schedule, its context destroyed with it: a task resumed by that
/// cancellation (io_context::shutting_down() is then true on its loop) must not post()
/// or spawn_on() to another loop of the runtime, which may be gone. Construction throws
/// if a context cannot start.
class runtime {
 public:
  /// Starts the threads; see the class.
  explicit runtime(runtime_options opts = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Runs fn(ctx, index) as a task on every loop and waits until all of them have
  /// finished; rethrows the first exception. Call from a thread that is not a loop.
  void run_on_each(const std::function<task<void>(io_context&, unsigned)>& fn);

  /// Stops every loop and joins the threads (idempotent, any non-loop thread).
  void stop();

  /// The number of loop threads.
  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }
  /// The context of loop `i` (0 <= i < size()); use it from its own thread, or with
  /// post() and spawn_on() from others, until stop() (or the destructor) begins. Its
  /// metrics from another thread: metrics_of(i), which stays safe while the loops end.
  [[nodiscard]] io_context& context(unsigned i) noexcept { return *contexts_[i]; }

  /// The metrics of loop `i` (0 <= i < size()), from any thread at any time, stop()
  /// included: while the loop runs, io_context::metrics(); once it has ended, the
  /// counts it ended with, the cancellations of what was in flight at its end included
  /// (counters never go down), and no tasks or fibers alive.
  [[nodiscard]] loop_metrics metrics_of(unsigned i);

  /// The metrics of every loop, summed (metrics_of() of each); from any thread at any
  /// time. After stop(), the counts the loops ended with.
  [[nodiscard]] loop_metrics metrics();

 private:
  void thread_main(unsigned index, const runtime_options& opts);
  // Loop i's metrics, live or its last ones; with mu_ held.
  [[nodiscard]] loop_metrics metrics_locked(unsigned i) const;

  std::vector<std::thread> threads_;
  std::vector<io_context*> contexts_;
  // Guards contexts_ and last_ against a loop's end: a loop that ends stores its last
  // figures and clears its entry under mu_ before its context is destroyed.
  std::vector<loop_metrics> last_;
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned started_ = 0;
  std::exception_ptr start_error_;
  bool stopped_ = false;
};

}  // namespace ringio
