// SPDX-License-Identifier: Apache-2.0
// ringio/net/batching_writer.hpp — a connection's writer: messages queue while a send is
// in flight, and one sending loop sends everything queued so far in one gathered send
// per pass, within a bound, with a chosen policy for a message that does not fit.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
#include <system_error>
#include <utility>
#include <vector>

#include "ringio/buffer.hpp"
#include "ringio/detail/gather_send_op.hpp"
#include "ringio/detail/send_bundle_ring.hpp"
#include "ringio/error.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/batching_writer_options.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"
#include "ringio/sync/detail/queued_op.hpp"
#include "ringio/task.hpp"

namespace ringio {

/// What a batching_writer sends: bytes it owns (std::string, std::vector<std::byte>), a
/// view of bytes that outlive it (std::string_view), or a non-null pointer to bytes
/// (std::shared_ptr<const std::string>: one copy of a message shared by every
/// connection it goes to).
template <class M>
concept writer_message =
    std::movable<M> && std::default_initializable<M> &&
    (std::constructible_from<const_buffer, const M&> || requires(const M& m) { const_buffer(*m); });

namespace detail {
/// The bytes of a writer_message.
template <class M>
const_buffer message_bytes(const M& m) noexcept {
  if constexpr (std::constructible_from<const_buffer, const M&>) return const_buffer(m);
  else return const_buffer(*m);
}
}  // namespace detail

/// A per-connection writer that batches. Producers queue whole messages with
/// try_write() (never waits) or write() (waits for room under overflow_policy::wait);
/// run(), the one sending loop, takes everything queued so far, up to 64 messages and
/// max_bytes, and sends it with one gathered send (sendmsg, or with
/// io_context_options::send_bundles one send bundle from a ring of the writer's own
/// that points at the messages), then takes what queued meanwhile. A reader that drains its socket gets a burst in a
/// few large sends instead of one send per message. The bound and the policy for a message that does not fit are in
/// batching_writer_options. Messages are never split or interleaved: the peer gets each whole message, in the order
/// they were queued, minus those a policy dropped.
///
/// One loop: the writer, its producers and run() live on one io_context's thread (no
/// locks, no atomics). Nothing is allocated per message once the queue has grown to its
/// working size (the queue is a ring that only grows, up to max_messages), and run()
/// allocates once (its stop source), twice with send bundles (its ring's page, which
/// it registers with the kernel when it starts and removes when it ends).
///
/// The writer does not own the socket, which must outlive run(); reads go to the socket
/// directly. One run() at a time. How it ends:
/// - close(): writes fail with errc::closed from now on; run() sends what is queued and
///   returns success (it does not shut the socket down: do that after it returns).
/// - The peer resets, or a send fails: run() returns the error (connection_reset,
///   broken_pipe, ...); queued messages are discarded; writes fail with that error.
/// - A stalled peer (it stops reading): the send in flight waits while messages queue
///   up to the bound, then the policy decides: drop_oldest drops, wait holds the
///   producers back, fail ends the writer (run() returns no_buffer_space once the
///   cancelled send has completed; the peer may have part of a message). The writer
///   has no timer: bound run() with with_timeout or stop it to cut a stalled peer off
///   in time.
/// - Cancellation: a stop of run()'s task cancels the send or wait in flight; run()
///   returns operation_canceled, queued messages are discarded and writes fail with
///   operation_canceled. The peer may have received part of a message: a stopped writer
///   cannot be resumed. A stopped write() queues nothing.
/// - Destruction while run() is in flight: what the kernel reads (the messages being
///   sent and their iovecs) lives in run()'s coroutine frame, not in the writer, so it
///   stays valid until the send completes. The destructor cancels the send in flight;
///   run() then returns operation_canceled without touching the writer, and the
///   messages it held are released when its task finishes. A write() waiting for room
///   returns operation_canceled.
template <writer_message Message>
class batching_writer {
 public:
  /// Makes the message sent where drop_oldest discarded `missed` messages (e.g.
  /// "* you missed 12 messages\n"); it goes out before the messages that follow the gap.
  /// It runs inside run(): if it throws, the writer ends (a message may be half sent),
  /// writes fail with std::errc::state_not_recoverable, and run() rethrows.
  using gap_notice = std::function<Message(std::uint64_t missed)>;

  /// A writer for `socket` (not owned) with `options`; `notice` (optional) reports drops.
  explicit batching_writer(stream_socket& socket, batching_writer_options options = {}, gap_notice notice = {})
      : socket_(&socket), options_(options), notice_(std::move(notice)) {
    options_.max_messages = std::max<std::size_t>(options_.max_messages, 1);
  }
  batching_writer(const batching_writer&) = delete;
  batching_writer& operator=(const batching_writer&) = delete;
  ~batching_writer() {
    if (running_ != nullptr) {
      running_->owner = nullptr;
      running_->stop.request_stop();
    }
    work_.grant_all();
    wake_room_waiters(make_error_code(std::errc::operation_canceled));
  }

  /// Queues `m` without waiting. When it does not fit: drop_oldest discards the oldest
  /// queued messages until it does (success); wait refuses it with
  /// std::errc::resource_unavailable_try_again; fail ends the writer and returns
  /// std::errc::no_buffer_space. After close(): errc::closed; after run() ended: its
  /// error (errc::closed after a close). A refused message is destroyed.
  [[nodiscard]] result<void> try_write(Message m) {
    if (state_ != state::open) return unexpected(ended_error());
    const std::size_t size = detail::message_bytes(m).size();
    if (!room_.empty()) admit_waiters();  // the line may have moved (a stopped write left it)
    if (!fits(size) || (options_.when_full == overflow_policy::wait && !room_.empty())) {
      switch (options_.when_full) {
        case overflow_policy::drop_oldest:
          while (!fits(size)) drop_oldest();
          break;
        case overflow_policy::wait:
          return unexpected(make_error_code(std::errc::resource_unavailable_try_again));
        case overflow_policy::fail:
          end(make_error_code(std::errc::no_buffer_space));
          return unexpected(error_);
      }
    }
    push(std::move(m), size);
    work_.grant_all();
    return {};
  }

  /// Queues `m`; under overflow_policy::wait, first waits until it fits (back-pressure),
  /// otherwise as try_write(). Waiting writes are served first come, first served: a
  /// message queues in the order its write() began, a small one never passes a large
  /// one that waits, and try_write() refuses while any write() waits. A stop of the
  /// awaiting task while it waits: operation_canceled, nothing queued (a stop that
  /// arrives after the message was queued changes nothing: success). Costs a task frame
  /// (from the loop's frame cache); fan-out code that must not wait uses try_write().
  [[nodiscard]] task<result<void>> write(Message m) {
    if (options_.when_full != overflow_policy::wait) co_return try_write(std::move(m));
    co_return co_await room_wait(*this, m);
  }

  /// No more messages: writes fail with errc::closed; run() sends what is queued and
  /// returns success.
  void close() noexcept {
    if (state_ != state::open) return;
    state_ = state::closing;
    work_.grant_all();
    wake_room_waiters(make_error_code(errc::closed));
  }

  /// The sending loop: until close() and everything queued is sent (success), an error
  /// of the socket, the fail policy (no_buffer_space), a stop (operation_canceled) or the
  /// writer's destruction (operation_canceled). Each pass sends what has queued in one
  /// gathered send; with send bundles (io_context_options::send_bundles) that send is
  /// one request that the kernel keeps in flight until every byte of the pass is out,
  /// where a sendmsg may return short and the next pass adds what queued meanwhile. A
  /// stop, an error or the end cut it as they cut a sendmsg. A second run() while one runs fails at once with
  /// std::errc::device_or_resource_busy; a run() after the end returns how it ended.
  [[nodiscard]] task<result<void>> run() {
    if (running_ != nullptr) co_return unexpected(make_error_code(std::errc::device_or_resource_busy));
    batch b;
    b.owner = this;
    running_ = &b;
    b.ring.open(io_context::current());  // stays off unless the loop offers send bundles
    for (;;) {
      if (state_ == state::ended) break;
      fill(b);
      if (b.owner == nullptr) co_return unexpected(make_error_code(std::errc::operation_canceled));
      if (b.count == 0) {
        if (state_ != state::open) break;  // closed and everything sent
        auto woken = co_await work_wait(*this).with_stop(b.stop.get_token());
        if (b.owner == nullptr) co_return unexpected(make_error_code(std::errc::operation_canceled));
        if (!woken) end(woken.error());
        continue;
      }
      result<std::size_t> sent = std::size_t{0};
      const bool bundle = b.ring.active();
      if (!bundle) {
        sent = co_await socket_->send(b.pieces()).with_stop(b.stop.get_token());
      } else if (b.ring.load(b.pieces()) > 0) {
        sent = co_await b.ring.send(*socket_).with_stop(b.stop.get_token());
      }
      if (b.owner == nullptr) co_return unexpected(make_error_code(std::errc::operation_canceled));
      if (state_ == state::ended) break;  // ended meanwhile (the fail policy)
      if (bundle && !sent && refused_bundle(sent.error())) {
        b.ring.close();  // this socket or kernel takes no bundles: sendmsg from now on
        continue;
      }
      if (!sent) {
        end(sent.error());
        break;
      }
      if (bundle && !b.ring.consumed(*sent)) {
        // Short: the kernel reports the bytes of a bundle that the socket's cancel() cut
        // (not the cancel), which ends the writer as a cancelled sendmsg would. Otherwise
        // it failed (the next send says why) or came back short: a fresh ring goes on.
        if (b.ring.cancelled(*socket_)) {
          end(make_error_code(std::errc::operation_canceled));
          break;
        }
        b.ring.renew();
      }
      ++sends_;
      b.consume(*sent);
    }
    running_ = nullptr;
    end(make_error_code(errc::closed));  // after a close: drained; otherwise already ended
    if (error_ == errc::closed) co_return result<void>{};
    co_return unexpected(error_);
  }

  /// Messages queued, not counting those in flight.
  [[nodiscard]] std::size_t queued() const noexcept { return count_; }
  /// Bytes queued, not counting those in flight.
  [[nodiscard]] std::size_t queued_bytes() const noexcept { return bytes_; }
  /// Messages discarded by drop_oldest so far.
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }
  /// Gathered sends made so far: one per pass (a pass of empty messages only counts
  /// too, though it needs no sendmsg call).
  [[nodiscard]] std::uint64_t sends() const noexcept { return sends_; }
  /// Whether writes are accepted (not closed, not ended).
  [[nodiscard]] bool is_open() const noexcept { return state_ == state::open; }

 private:
  enum class state : unsigned char { open, closing, ended };
  static constexpr std::size_t batch_size = detail::max_gather_buffers;

  // One run()'s state, kept in its coroutine frame: the messages being sent and the
  // buffers the kernel reads stay valid until the send completes, even when the writer
  // is destroyed first.
  struct batch {
    batching_writer* owner = nullptr;  // null once the writer is destroyed
    std::stop_source stop;             // cancels the send or wait in flight
    std::array<Message, batch_size> items{};
    std::array<const_buffer, batch_size> buffers{};
    std::size_t count = 0;   // messages in the batch
    std::size_t offset = 0;  // bytes of items[0] already sent
    std::size_t bytes = 0;   // bytes of the messages, whole
    // io_context_options::send_bundles: the ring whose entries point at the messages;
    // declared last, so it leaves the kernel before the messages go.
    detail::send_bundle_ring ring;

    batch() = default;
    batch(const batch&) = delete;
    batch& operator=(const batch&) = delete;
    ~batch() {
      if (owner != nullptr) owner->running_ = nullptr;  // also when run() ends by an exception
    }

    std::span<const const_buffer> pieces() noexcept {
      for (std::size_t i = 0; i < count; ++i) buffers[i] = detail::message_bytes(items[i]);
      buffers[0] = buffers[0].skip(offset);
      return {buffers.data(), count};
    }
    // Drops the messages that `n` more sent bytes completed.
    void consume(std::size_t n) noexcept {
      std::size_t done = 0;
      offset += n;
      while (done < count) {
        const std::size_t size = detail::message_bytes(items[done]).size();
        if (offset < size) break;
        offset -= size;
        bytes -= size;
        ++done;
      }
      if (done == 0) return;  // the send ended inside items[0] (a self-move would empty it)
      std::move(items.begin() + static_cast<std::ptrdiff_t>(done), items.begin() + static_cast<std::ptrdiff_t>(count),
                items.begin());
      for (std::size_t i = count - done; i < count; ++i) items[i] = Message{};  // releases them now
      count -= done;
    }
  };

  // run() waits here for work: a message, a close, the end.
  class work_wait : public detail::queued_op<work_wait> {
   public:
    explicit work_wait(batching_writer& w) noexcept : w_(&w) {}
    bool try_now() noexcept { return w_->count_ > 0 || w_->state_ != state::open; }
    detail::waiter_list& queue() noexcept { return w_->work_; }
    result<void> get_result() noexcept { return detail::grant_result(this->granted(), *this); }

   private:
    batching_writer* w_;
  };

  // write() waits here, in line, until the writer queues its message (a grant with no
  // error) or ends (a grant with the reason). The message stays in write()'s frame
  // until the writer moves it into the queue.
  class room_wait : public detail::queued_op<room_wait> {
   public:
    room_wait(batching_writer& w, Message& m) noexcept : w_(&w), message_(&m), size_(detail::message_bytes(m).size()) {}
    bool try_now() {
      if (w_->state_ != state::open) {
        outcome_ = w_->ended_error();
        return true;
      }
      if (!w_->room_.empty() || !w_->fits(size_)) return false;
      w_->push(std::move(*message_), size_);
      w_->work_.grant_all();
      return true;
    }
    detail::waiter_list& queue() noexcept { return w_->room_; }
    // Granted: queued (success) or refused by the end, and nothing of the writer is
    // read (it may be gone). Not granted (stopped, timed out) while still in line: the
    // writer lives (its destructor empties the line), and the writes behind may fit now.
    result<void> get_result() {
      const bool in_line = this->node_.queued;
      if (!this->granted()) {
        if (in_line) w_->admit_waiters();
        return unexpected(detail::op_error(*this));
      }
      if (outcome_) return unexpected(outcome_);
      return {};
    }

   private:
    friend class batching_writer;
    batching_writer* w_;
    Message* message_;
    std::size_t size_;
    std::error_code outcome_;
  };

  // A send bundle the kernel or the socket does not take (nothing was sent).
  static bool refused_bundle(std::error_code ec) noexcept {
    return ec == std::errc::operation_not_supported || ec == std::errc::invalid_argument;
  }

  static room_wait& waiter_of(detail::waiter_node& n) noexcept { return *static_cast<room_wait*>(n.op); }

  // Queues the messages of waiting writes, oldest first, while the head fits. A write
  // that was stopped or timed out leaves the line at once, though its task resumes later.
  void admit_waiters() {
    while (detail::waiter_node* n = room_.front()) {
      if (n->op->state != detail::op_state::in_flight) {
        room_.remove(*n);
        continue;
      }
      room_wait& w = waiter_of(*n);
      if (!fits(w.size_)) return;
      if (count_ == ring_.size()) grow();  // before the grant: a granted message is queued
      // A waiter already completing (stopped) keeps its message: nothing queued.
      if (room_.grant_front()) push(std::move(*w.message_), w.size_);
    }
  }

  // Wakes every waiting write with `why`: its message is not queued.
  void wake_room_waiters(std::error_code why) noexcept {
    while (detail::waiter_node* n = room_.front()) {
      waiter_of(*n).outcome_ = why;
      (void)room_.grant_front();
    }
  }

  [[nodiscard]] bool fits(std::size_t size) const noexcept {
    return count_ == 0 || (count_ < options_.max_messages && bytes_ + size <= options_.max_bytes);
  }
  [[nodiscard]] std::error_code ended_error() const noexcept {
    return state_ == state::closing ? make_error_code(errc::closed) : error_;
  }

  void push(Message m, std::size_t size) {
    if (count_ == ring_.size()) grow();
    ring_[(head_ + count_) % ring_.size()] = std::move(m);
    ++count_;
    bytes_ += size;
  }
  Message pop() noexcept {
    Message m = std::move(ring_[head_]);
    ring_[head_] = Message{};
    head_ = (head_ + 1) % ring_.size();
    --count_;
    bytes_ -= detail::message_bytes(m).size();
    return m;
  }
  void drop_oldest() noexcept {
    (void)pop();
    ++dropped_;
    if (notice_) ++unreported_;
  }
  void grow() {
    std::vector<Message> bigger(std::min(std::max<std::size_t>(16, ring_.size() * 2), options_.max_messages));
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }

  // Tops the batch up: the gap notice first, then queued messages, within the bounds.
  void fill(batch& b) {
    if (unreported_ > 0) {
      if (b.count == batch_size) return;  // what queued follows the gap: after the notice
      const std::uint64_t missed = unreported_;
      unreported_ = 0;
      const gap_notice notice = notice_;  // the call may destroy the writer (and notice_)
      Message m;
      try {
        m = notice(missed);
      } catch (...) {
        // A message may be half sent: the writer cannot go on without splitting it.
        if (b.owner != nullptr) end(make_error_code(std::errc::state_not_recoverable));
        throw;
      }
      b.bytes += detail::message_bytes(m).size();
      b.items[b.count++] = std::move(m);
      if (b.owner == nullptr) return;  // destroyed by the notice: touch nothing more
    }
    bool moved = false;
    while (count_ > 0 && b.count < batch_size) {
      const std::size_t size = detail::message_bytes(ring_[head_]).size();
      if (b.count > 0 && b.bytes + size > options_.max_bytes) break;
      b.items[b.count++] = pop();
      b.bytes += size;
      moved = true;
    }
    if (moved) admit_waiters();
  }

  // Ends the writer with `ec`: the queue is discarded, run() and waiting writes wake.
  void end(std::error_code ec) noexcept {
    if (state_ == state::ended) return;
    state_ = state::ended;
    error_ = ec;
    while (count_ > 0) (void)pop();
    unreported_ = 0;
    if (running_ != nullptr) running_->stop.request_stop();
    work_.grant_all();
    wake_room_waiters(ec);
  }

  stream_socket* socket_;
  batching_writer_options options_;
  gap_notice notice_;
  std::vector<Message> ring_;  // the queue: count_ messages from head_, wrapping
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t unreported_ = 0;  // dropped since the last gap notice
  std::uint64_t sends_ = 0;
  state state_ = state::open;
  std::error_code error_;
  batch* running_ = nullptr;  // run()'s state while it runs
  detail::waiter_list work_;  // run() waiting for messages
  detail::waiter_list room_;  // write()s waiting for room
};

}  // namespace ringio
