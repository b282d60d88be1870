// SPDX-License-Identifier: Apache-2.0
// multishot_recv_state — the armed multishot recv of one multishot_receiver. It is
// heap-allocated so that, when the receiver is destroyed while the kernel still holds
// the request, it can live on (orphaned) until the request's last CQE.
#pragma once

#include <cstddef>
#include <vector>

#include "net/buffer_pool_core.hpp"
#include "ringio/detail/op_base.hpp"
#include "ringio/net/multishot_receiver.hpp"

namespace ringio::detail {

class multishot_recv_state : public op_base {
 public:
  multishot_recv_state(buffer_pool_core& pool, int socket_fd) noexcept;
  ~multishot_recv_state();

  /// Submits the multishot recv unless it is armed (or waiting for buffers).
  void arm(io_context& ctx) noexcept;
  /// Hands a queued chunk (or the sticky end) to `c`; false if there is none.
  bool take_ready(recv_next_op& c) noexcept;
  /// A chunk a cancelled next() had received goes back, to be taken first.
  void requeue(unsigned id, int len) { queue_.push_back({id, 0, len}); }
  /// Takes the oldest queued chunk into `out`; false when none is queued.
  bool take_queued(pooled_buffer& out) noexcept;
  /// `c` waits: remember it and make sure a request is armed.
  void wait(recv_next_op& c) noexcept;
  /// The pool has buffers again (we ran out before).
  void buffers_returned() noexcept;
  /// The receiver is gone: cancel the request; the last CQE frees this object.
  void detach() noexcept;

  // CQE handling
  void on_cqe(int res, unsigned flags) noexcept;
  void on_final() noexcept;
  void consumer_done(recv_next_op& c) noexcept;

  /// A consumer waits and the request is in the kernel.
  [[nodiscard]] bool waits_on_armed_request() const noexcept { return consumer_ != nullptr && armed_ && !orphaned_; }
  /// The socket has something to report that the armed request never posted: cancel
  /// the request; its end re-arms it for the waiting consumer.
  void rearm_after_missed_wakeup() noexcept;

  buffer_pool_core& pool;
  /// Position in the pool's missed_wakeup_sweep list while watched.
  static constexpr std::size_t no_slot = ~std::size_t{0};
  std::size_t sweep_slot = no_slot;

 private:
  struct chunk {
    unsigned id;
    unsigned offset;  // where the bytes start in the buffer (incremental buffers)
    int len;
  };
  bool finish_consumer(int res, unsigned id, unsigned offset) noexcept;
  void pop_front() noexcept {
    if (++head_ == queue_.size()) queue_.clear(), head_ = 0;
  }

  std::vector<chunk> queue_;  // received, not yet taken (grows only under bursts)
  std::size_t head_ = 0;
  bool ended_ = false;  // end of stream (res 0) or an error: sticky
  int end_res_ = 0;
  bool armed_ = false;
  bool starved_ = false;  // stopped with ENOBUFS: re-arm when a buffer returns
  bool orphaned_ = false;
  recv_next_op* consumer_ = nullptr;
  io_context* loop_ = nullptr;
};

}  // namespace ringio::detail
