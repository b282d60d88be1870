// SPDX-License-Identifier: Apache-2.0
// connection — one client connection: read, parse, call the handler, write; again
// while keep-alive allows. Between requests it holds no buffer: it waits with a
// receive into its loop's shared pool, and borrows a request_state (buffers, parsed
// request) from the loop only while a request is in progress. Over HTTPS the same
// code reads and writes through a tls::stream: every I/O call site branches on secure_,
// so that the plain path awaits the socket operations as before.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string_view>
#include <utility>

#include "loop_resources.hpp"
#include "request_state.hpp"
#include "ringio/http/response.hpp"
#include "ringio/net/pooled_receive.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/task.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/stream.hpp"
#include "server_core.hpp"

namespace ringio::http::detail {

/// Stops `target` when the stop token it is registered on is stopped.
struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

/// Stops both targets (the task's own stop ends waits and sends alike).
struct forward_stop_both {
  std::stop_source* first;
  std::stop_source* second;
  void operator()() const noexcept {
    first->request_stop();
    second->request_stop();
  }
};

/// A stop source borrowed from the loop (loop_resources::take_stop_source), given back
/// (unless stopped) when it goes out of scope.
struct borrowed_stop_source {
  loop_resources& loop;
  std::stop_source source;
  borrowed_stop_source(loop_resources& l, std::stop_source s) noexcept : loop(l), source(std::move(s)) {}
  borrowed_stop_source(const borrowed_stop_source&) = delete;
  borrowed_stop_source& operator=(const borrowed_stop_source&) = delete;
  ~borrowed_stop_source() { loop.give_back(source); }
};

/// Awaits a task under `token` instead of the awaiting task's own stop token (the
/// TLS counterpart of an operation's .with_stop(token)); `token` must outlive it.
/// Await it as a named local (GCC 12 mishandles awaiting such a temporary).
template <class T>
struct under_token {
  task<T> t;
  const std::stop_token* token;
  ringio::detail::token_awaiter<T> operator co_await() & noexcept { return {t, token}; }
};

/// Releases an admission (server_core::admit) when it ends, unless `core` is null.
/// Movable, so that a task that holds it as a parameter releases it even if the task
/// never runs.
struct admission_release {
  server_core* core;
  explicit admission_release(server_core* c) noexcept : core(c) {}
  admission_release(admission_release&& o) noexcept : core(std::exchange(o.core, nullptr)) {}
  admission_release& operator=(admission_release&&) = delete;
  ~admission_release() {
    if (core != nullptr) core->release();
  }
};

/// Awaits `op` and leaves its result in it, to be read after (op.get_result()): the
/// awaiting coroutine's frame then holds no copy of the result.
template <class Op>
struct await_in_place {
  Op& op;
  bool await_ready() const noexcept { return false; }
  template <class H>
  bool await_suspend(H h) {
    return op.await_suspend(h);
  }
  void await_resume() const noexcept {}
};

class connection : public sweep_hook {
 public:
  /// Over `s`, which must outlive the connection; HTTPS: over `secure` (handshake
  /// done, `s` its socket).
  connection(server_core& core, stream_socket& s, tls::stream* secure = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Serves requests on `s` until the connection ends; the connection lives in the
  /// returned task's frame, which holds `admitted` (admitted.core: `core`; released
  /// with the frame).
  static task<void> serve(server_core& core, stream_socket s, admission_release admitted);
  /// The same over `secure` (handshake done, admitted by the caller), which must outlive
  /// the task; close_notify is sent at the end.
  static task<void> serve(server_core& core, tls::stream& secure);
  /// Answers 503 (connection limit) on `s` and closes.
  static task<void> refuse(server_core& core, stream_socket s);
  /// Enforces the idle and send timeouts of serve(); called by the loop's sweep.
  void on_tick(std::chrono::milliseconds elapsed) noexcept;
  /// Ends the wait for the next request (idle timeout, gentle drain): cancels the
  /// receive, and the connection takes no further request.
  void end_idle_wait() noexcept;
  /// Answers 503 (connection limit) and closes.
  task<void> refuse();
  /// HTTPS port, before any TLS: answers a client that sent something other than a
  /// TLS handshake (plain HTTP) with a plain-text 400 and closes.
  task<void> refuse_plain_http();
  /// HTTPS, after the request loop: sends close_notify (bounded by close_notify_timeout) unless a
  /// send timed out or the connection was stopped; the caller closes the socket.
  task<void> send_close_notify();

 private:
  static constexpr std::size_t min_receive = 1024;
  static constexpr std::size_t flush_threshold = 64 * 1024;  // gathered pipelined responses
  static constexpr std::size_t inline_body = 64 * 1024;      // larger fixed bodies go out directly
  static constexpr std::size_t file_chunk = 64 * 1024;
  // Files up to this size are read into the send buffer and leave with the head in one
  // send; larger ones go by sendfile(2) (no buffer held while the client reads).
  static constexpr std::uint64_t read_through_limit = 16 * 1024;
  static constexpr auto close_notify_timeout = std::chrono::milliseconds(500);

  template <class Transport, class Owner>
  static task<void> serve_loop(Transport transport, Owner owner);
  /// The receive buffer never grows beyond this.
  [[nodiscard]] std::size_t input_limit() const noexcept {
    return core_.opts.max_header_bytes + core_.opts.max_body_bytes + 16 * 1024;
  }

  enum class framing : std::uint8_t { length, chunked, until_close, none };
  // What the wait for the next request brought: the end of the connection, a request's
  // first bytes (copied into the request_state), or bytes to receive first.
  enum class arrival : std::uint8_t { end, received, receive_first };
  /// Takes the result of the finished wait for the next request.
  arrival take_arrival(ringio::detail::pooled_recv_op& wait);
  // What serve() waits for; every change counts as progress for the watchdog.
  enum class phase : std::uint8_t { busy, idle, sending };
  void enter(phase p) noexcept {
    if ((p == phase::idle) != (phase_ == phase::idle)) {
      if (p == phase::idle) {
        ++stats_.connections_idle;
      } else {
        --stats_.connections_idle;
      }
    }
    phase_ = p;
    progressed_ = true;
  }

  [[nodiscard]] std::string_view pending() const noexcept { return {w_->in.get() + w_->start, w_->end - w_->start}; }
  [[nodiscard]] mutable_buffer free_space() const noexcept { return {w_->in.get() + w_->end, w_->cap - w_->end}; }
  bool make_room(std::size_t min_free);
  void consume(std::size_t n) noexcept;
  /// The request_state, borrowed from the loop if the connection holds none.
  request_state& work();
  /// Everything received is answered and sent: give the request_state back.
  void put_work_back() noexcept;
  /// Answers what was received (and what follows it) until everything received is
  /// answered (true: wait for the next request) or the connection ends (false).
  task<bool> serve_requests(bool receive_first);

  /// Reads the request's body (at most `max_body` bytes) after its head; 0, a status to
  /// answer with, or -1 (the client left, or `stop` was stopped: over TLS, a `stop` that
  /// can be stopped replaces the task's own, which must then be forwarded to it).
  task<int> read_body(std::size_t head_size, std::size_t& request_size, std::size_t max_body, bool may_continue,
                      std::stop_token stop = {});
  /// Whether the client sent bytes that were not received yet.
  bool unread_input() noexcept;
  void write_head(const response& r, framing f, std::uint64_t length, bool keep);
  bool write_fixed(const response& r, bool keep);
  task<bool> write_special(response& r, bool& keep);
  /// Sends the 101 head of `r` and runs its upgrade handler on the connection.
  task<void> run_upgrade(response& r);
  task<bool> send_file(file_body& f);
  task<bool> send_out();
  task<void> fail(int status);
  task<void> close_gracefully(bool linger);
  void log_handler_error(std::string_view what);

  /// The stop source of the sends (kill_), taken from the loop if the connection holds
  /// none.
  std::stop_source& kill() {
    if (!kill_.stop_possible()) kill_ = loop_.take_stop_source();
    return kill_;
  }
  /// The socket (under the TLS stream for HTTPS).
  stream_socket& raw_socket() noexcept { return secure_ ? io_.secure->socket() : *io_.plain; }
  /// The socket of plain HTTP (over TLS only the stream uses its socket).
  stream_socket& sock() noexcept { return *io_.plain; }
  /// The TLS stream (HTTPS), else null.
  tls::stream* tls() noexcept { return secure_ ? io_.secure : nullptr; }
  /// TLS: receives plaintext by `deadline` (none: time_point{}) under `token`, the
  /// record buffer held while waiting (the connection expects the data now).
  under_token<result<std::size_t>> secure_recv(mutable_buffer b, const std::stop_token& token,
                                               std::chrono::steady_clock::time_point deadline) {
    return {io_.secure->recv(b, deadline, tls::recv_wait::with_buffer), &token};
  }
  /// TLS: sends all of `b` under `token`.
  under_token<result<std::size_t>> secure_send(const_buffer b, const std::stop_token& token) {
    return {io_.secure->send_all(b), &token};
  }

  server_core& core_;
  loop_resources& loop_;
  // Plain HTTP: the socket; HTTPS (secure_): the TLS stream over it.
  union transport {
    stream_socket* plain;
    tls::stream* secure;
  } io_;
  request_state* w_ = nullptr;                  // while a request is in progress
  ringio::detail::op_base* waiting_ = nullptr;  // the receive waiting for the next request
  // Stops sends: send timeout; over TLS, while serving: our own stop. Taken from the
  // loop by kill() when first needed and given back when the connection goes idle.
  std::stop_source kill_{std::nostopstate};
  std::uint32_t stalled_ms_ = 0;  // without progress, as of the last tick
  phase phase_ = phase::busy;
  bool progressed_ = false;  // a phase began since the last tick
  bool idle_ended_ = false;  // the idle timeout or a gentle drain ended the idle wait
  bool secure_ = false;      // HTTPS: io_.secure
  server_counters& stats_;   // this thread's counters of the server
};

}  // namespace ringio::http::detail
