// SPDX-License-Identifier: Apache-2.0
// connection — the receiving half of a connection and its request loop: buffers,
// the head and body reads, the handler call, the watchdog. Sending: connection_send.cpp.
#include "connection.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <type_traits>

#include "ringio/http/status.hpp"
#include "ringio/io_context.hpp"
#include "ringio/net/pooled_receive.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http::detail {

using clock = std::chrono::steady_clock;

connection::connection(server_core& core, stream_socket& s, tls::stream* secure)
    : core_(core), loop_(io_context::current()->service<loop_resources>()), stats_(core.counters()) {
  if (secure != nullptr) {
    io_.secure = secure;
    secure_ = true;
  } else {
    io_.plain = &s;
  }
  loop_.connection_opened();
  const server_options& o = core.opts;
  const auto tick = std::clamp<std::chrono::milliseconds>(std::min(o.idle_timeout, o.send_timeout) / 4,
                                                          std::chrono::milliseconds(10), std::chrono::seconds(1));
  loop_.watch(*this, tick.count());
}

connection::~connection() {
  if (phase_ == phase::idle) --stats_.connections_idle;
  loop_.unwatch(*this);
  if (w_ != nullptr) loop_.release(w_);
  loop_.give_back(kill_);
  loop_.connection_closed();
}

request_state& connection::work() {
  if (w_ == nullptr) w_ = loop_.acquire(core_.opts.max_header_bytes);
  return *w_;
}

void connection::put_work_back() noexcept {
  if (w_ != nullptr && w_->start == w_->end && w_->out.empty()) loop_.release(std::exchange(w_, nullptr));
}

bool connection::make_room(std::size_t min_free) {
  if (w_->cap - w_->end >= min_free) return true;
  std::size_t used = w_->end - w_->start;
  if (w_->start > 0 && w_->cap - used >= min_free) {
    // Move the unparsed bytes to the front; views into them move along.
    std::memmove(w_->in.get(), w_->in.get() + w_->start, used);
    w_->req.rebase(w_->in.get() + w_->start, used, w_->in.get());
  } else {
    const std::size_t limit = input_limit();
    if (used + min_free > limit) return false;
    std::size_t cap = w_->cap * 2;
    while (cap < used + min_free) cap *= 2;
    cap = std::min(cap, limit);
    auto fresh = std::make_unique_for_overwrite<char[]>(cap);
    std::memcpy(fresh.get(), w_->in.get() + w_->start, used);
    w_->req.rebase(w_->in.get() + w_->start, used, fresh.get());
    w_->in = std::move(fresh);
    w_->cap = cap;
  }
  w_->start = 0;
  w_->end = used;
  return true;
}

void connection::consume(std::size_t n) noexcept {
  w_->start += n;
  if (w_->start == w_->end) w_->start = w_->end = 0;
}

// Timeouts of the hot path (waiting for a request, sending a response) are enforced
// here rather than with a linked timeout per operation, which cost 12-15% of the
// hello-world throughput on io_uring: serve() counts progress, and a phase that makes
// none for the timeout is cancelled. The loop's sweep calls this every tick (one timer
// for all the connections of a loop); a timeout fires up to one tick late.
void connection::on_tick(std::chrono::milliseconds elapsed) noexcept {
  const server_options& o = core_.opts;
  if (progressed_) {
    progressed_ = false;
    stalled_ms_ = 0;
    return;
  }
  // Saturates (after 49 days): a longer timeout never fires.
  stalled_ms_ = static_cast<std::uint32_t>(
      std::min<std::int64_t>(std::int64_t{stalled_ms_} + elapsed.count(), std::numeric_limits<std::uint32_t>::max()));
  const std::chrono::milliseconds stalled(stalled_ms_);
  if (const std::int64_t grace = core_.closing_grace_ms();
      grace >= 0 && phase_ == phase::idle && stalled.count() >= grace && !idle_ended_) {
    end_idle_wait();  // a gentle drain: idle for its grace period
    return;
  }
  if (phase_ == phase::idle && stalled >= o.idle_timeout && !idle_ended_) {
    ++stats_.idle_timeouts;
    end_idle_wait();
  }
  if (phase_ == phase::sending && stalled >= o.send_timeout && !kill_.stop_requested()) {
    ++stats_.send_timeouts;
    kill_.request_stop();
  }
}

void connection::end_idle_wait() noexcept {
  idle_ended_ = true;
  // On the loop's thread, as the stop callback of the receive would do.
  if (waiting_ != nullptr) waiting_->ctx->cancel(*waiting_);
}

void connection_tick(sweep_hook& h, std::chrono::milliseconds elapsed) noexcept {
  static_cast<connection&>(h).on_tick(elapsed);
}

// Between requests the connection waits here with no buffer of its own: the kernel (or
// the readiness backend) puts the first bytes into a buffer of the loop's pool, they are
// copied into a borrowed request_state, and serve_requests() (whose frame is free while
// the connection is idle) answers until everything received is answered. Arrivals are
// served in order (the receive waits for readiness first, as recv_op::poll_first).
// The connection object lives in this coroutine's frame, so that an idle connection
// holds one frame (see docs/http.md, "Memory per connection").
namespace {
stream_socket& socket_of(stream_socket& s) noexcept { return s; }
stream_socket& socket_of(tls::stream* t) noexcept { return t->socket(); }
tls::stream* tls_of(const stream_socket&) noexcept { return nullptr; }
tls::stream* tls_of(tls::stream* t) noexcept { return t; }
server_core& core_of(const admission_release& a) noexcept { return *a.core; }
server_core& core_of(server_core* core) noexcept { return *core; }
}  // namespace

// Plain HTTP (`Transport` a stream_socket) and HTTPS (a tls::stream*) are two
// instantiations, so that the plain frame holds nothing of TLS.
// `owner`: the admission (plain HTTP, admitted here) or the server_core (HTTPS, admitted
// by the caller); no more than these two parameters, so that the frame stays small.
template <class Transport, class Owner>
task<void> connection::serve_loop(Transport transport, Owner owner) {
  constexpr bool secure = std::is_pointer_v<Transport>;
  connection self(core_of(owner), socket_of(transport), tls_of(transport));
  // The wait for the next request ends on a drain (this thread's relay of it) and on
  // this task's own stop (tokens of the receive itself: no stop callback in this frame
  // while idle), and on the idle timeout, which cancels the receive directly
  // (end_idle_wait).
  for (;;) {
    if (self.idle_ended_ || self.core_.drain_token().stop_requested()) break;
    self.enter(phase::idle);
    arrival got = arrival::receive_first;
    if (secure && self.io_.secure->has_buffered_input()) {  // pipelined records, or the peer's end
      self.enter(phase::busy);
      self.work();
    } else {
      // One operation object in the frame (a .with_stop() temporary would be a second);
      // its result is read in place (take_arrival), so the frame holds no copy of it.
      // Over TLS the pool buffer receives ciphertext, handed to the stream to decrypt.
      auto wait = receive_pooled(self.raw_socket(), self.loop_.pool());
      wait.set_stop_token(self.stats_.drain_token());  // this thread's relay
      self.waiting_ = &wait;
      co_await await_in_place<ringio::detail::pooled_recv_op>{wait};
      self.waiting_ = nullptr;
      self.enter(phase::busy);
      got = self.take_arrival(wait);
      if (got == arrival::end) break;
    }
    bool more = co_await self.serve_requests(got == arrival::receive_first);
    if (!more) break;
    self.loop_.give_back(self.kill_);  // idle: the next request takes one again
  }
  // HTTPS, after Connection: close, the idle timeout, a drain, the client's
  // close_notify: close_notify (not after a send timeout or a stop).
  if constexpr (secure) co_await self.send_close_notify();
}

task<void> connection::serve(server_core& core, stream_socket s, admission_release admitted) {
  (void)core;  // the admission's
  return serve_loop(std::move(s), std::move(admitted));
}

task<void> connection::serve(server_core& core, tls::stream& secure) { return serve_loop(&secure, &core); }

task<void> connection::refuse(server_core& core, stream_socket s) {
  connection self(core, s);
  co_await self.refuse();
}

connection::arrival connection::take_arrival(ringio::detail::pooled_recv_op& wait) {
  auto chunk = wait.get_result();
  if (chunk) {
    if (chunk->empty()) return arrival::end;  // the client closed
    request_state& w = work();
    if (secure_) {
      auto fed = io_.secure->feed(chunk->bytes());
      chunk->release();
      return fed ? arrival::receive_first : arrival::end;
    }
    static_assert(loop_resources::pool_buffer_size <= request_state::initial_input);
    std::memcpy(w.in.get(), chunk->data(), chunk->size());
    w.end = chunk->size();
    chunk->release();
    return arrival::received;
  }
  if (chunk.error() == std::errc::no_buffer_space) {
    work();  // every pool buffer was taken at once: receive into our own
    return arrival::receive_first;
  }
  return arrival::end;
}

task<bool> connection::serve_requests(bool receive_first) {
  const std::stop_token kill_token = kill().get_token();
  const std::stop_token own_token = co_await current_stop_token();
  const std::stop_token drain_token = stats_.drain_token();  // this thread's relay of the drain
  // Sends obey kill_ (send timeout), waits for more of a request the drain; both obey
  // this task's own stop token. Plain operations obey it besides their own token; over
  // TLS, whose operations obey the given token instead, the task's stop is forwarded to
  // kill_, and it and the drain to `idle` (callbacks held only while requests are served;
  // the idle frame holds neither `idle` nor a callback).
  borrowed_stop_source idle{loop_, secure_ ? loop_.take_stop_source() : std::stop_source(std::nostopstate)};
  std::optional<std::stop_callback<forward_stop_both>> tls_on_outer;
  std::optional<std::stop_callback<forward_stop>> tls_on_drain;
  if (secure_) {
    tls_on_outer.emplace(own_token, forward_stop_both{&idle.source, &kill_});
    tls_on_drain.emplace(drain_token, forward_stop{&idle.source});
  }
  const std::stop_token idle_token = secure_ ? idle.source.get_token() : drain_token;
  // No further request is taken: a drain, the idle timeout, the task's stop.
  auto ending = [&]() noexcept { return idle_ended_ || own_token.stop_requested() || drain_token.stop_requested(); };
  const server_options& o = core_.opts;
  for (;;) {
    w_->req.clear();
    w_->parser.reset();
    clock::time_point head_deadline{};
    parse_result head;
    for (;;) {
      head = w_->parser.parse(pending(), w_->req);
      if (head.state != parse_state::incomplete) break;
      if (!w_->out.empty()) {  // answer every request parsed so far, in one write, before waiting
        enter(phase::sending);
        const std::size_t size = w_->out.view().size();
        result<std::size_t> sent;
        if (secure_) {
          auto op = secure_send(w_->out.view(), kill_token);
          sent = co_await op;
        } else {
          sent = co_await sock().send_all(w_->out.view()).with_stop(kill_token);
        }
        if (sent) stats_.response_bytes.add(*sent);
        w_->out.clear();
        if (!sent || *sent != size) co_return false;  // a short count: stopped part-way
      }
      if (w_->start == w_->end && !receive_first) {  // everything received is answered
        put_work_back();
        co_return true;
      }
      if (!make_room(min_receive)) {
        co_await fail(431);
        co_return false;
      }
      result<std::size_t> n;
      if (secure_) {
        // What arrived may be part of a record only: the head deadline starts now.
        receive_first = false;
        if (head_deadline == clock::time_point{}) head_deadline = clock::now() + o.header_timeout;
        auto op = secure_recv(free_space(), own_token, head_deadline);
        n = co_await op;
      } else if (receive_first) {  // the data is there: no head deadline yet
        receive_first = false;
        n = co_await sock().recv(free_space()).with_stop(idle_token);
      } else {
        if (head_deadline == clock::time_point{}) head_deadline = clock::now() + o.header_timeout;
        n = co_await with_deadline(sock().recv(free_space()), head_deadline);
      }
      if (!n || *n == 0) {
        if (!n && n.error() == std::errc::timed_out) {
          ++stats_.header_timeouts;
          co_await fail(408);
        }
        co_return false;
      }
      w_->end += *n;
    }
    if (head.state == parse_state::error) {
      co_await fail(head.status);
      co_return false;
    }

    const clock::time_point began = clock::now();  // the request latency starts here
    std::size_t request_size = head.size;
    const bool has_body = w_->req.chunked_ || w_->req.content_length_ > 0;
    // No route takes it: answer now, rather than after uploading a body to be thrown away;
    // then read and drop a small body (the connection goes on), or close.
    const bool refused = has_body && core_.routes != nullptr && !core_.routes->has_route(w_->req);
    const std::size_t discard_limit = std::min(o.discard_body_bytes, o.max_body_bytes);
    const bool discard = refused && !w_->req.expect_continue_ && discard_limit > 0 &&
                         (w_->req.chunked_ || w_->req.content_length_ <= static_cast<std::int64_t>(discard_limit));
    if (has_body && !refused) {
      int status = co_await read_body(head.size, request_size, o.max_body_bytes, true);
      if (status != 0) {
        if (status == 408) ++stats_.body_timeouts;
        if (status > 0) co_await fail(status);
        co_return false;
      }
    }

    response resp;
    bool threw = false;
    try {
      resp = co_await core_.handle(w_->req);
    } catch (const std::exception& e) {
      threw = true;
      log_handler_error(e.what());
    } catch (...) {
      threw = true;
      log_handler_error("unknown exception");
    }
    if (threw) resp = response::borrowed(500, reason_phrase(500));
    bool keep = w_->req.keep_alive_ && !resp.close_ && !ending() && !core_.closing() && (!refused || discard);
    // A gentle drain (drain(idle_grace)) still serves requests, upgrades included: the
    // upgraded connection stays until the drain's end like those upgraded before.
    const bool upgrade_ok =
        w_->req.version_minor_ == 1 && w_->req.keep_alive_ && !resp.close_ && !ending() && (!refused || discard);
    if (resp.is_upgrade() && !upgrade_ok) {
      // No 101 to HTTP/1.0 nor with Connection: close: 400. During a hard drain the
      // server is stopping and takes on no new upgraded connection: 503 (with
      // Connection: close, as every answer during a drain), as over the connection limit.
      const bool draining = w_->req.version_minor_ == 1 && w_->req.keep_alive_ && !resp.close_;
      const int status = draining ? 503 : 400;
      resp = response::borrowed(status, reason_phrase(status));
    }
    stats_.note_status(resp.status());

    if (refused && keep) {
      // The router's own small answer: sent now, then the body is read and dropped.
      (void)write_fixed(resp, keep);
      if (!co_await send_out()) co_return false;
      // A drain ends the discard (the answer is out already).
      int status = co_await read_body(head.size, request_size, discard_limit, false, idle_token);
      if (status == 408) ++stats_.body_timeouts;
      if (status != 0) {  // over the bound or malformed: close (the answer is out); gone or stalled: end
        if (status > 0 && status != 408) co_await close_gracefully(true);
        co_return false;
      }
      stats_.request_bytes.add(request_size);
      stats_.note_latency(clock::now() - began);
      consume(request_size);
      continue;
    }
    // Consumed before the response is written: nothing receives into the buffer until
    // it is, and a file body sent by the kernel can then lend the buffers back.
    stats_.request_bytes.add(request_size);
    consume(request_size);
    if (resp.is_upgrade() && upgrade_ok) {
      co_await run_upgrade(resp);
      co_return false;  // the connection belonged to the upgrade handler
    }
    bool written = write_fixed(resp, keep);
    if (!written) written = co_await write_special(resp, keep);
    stats_.note_latency(clock::now() - began);
    work();                         // borrowed again if send_file lent them back
    if (!written) co_return false;  // the client is gone, or a streamed body failed half way
    if (!keep) {
      // Linger only if the client sent more than we read (a refused body, pipelined
      // requests after a close), received or still in the socket.
      co_await close_gracefully(refused || w_->start != w_->end || unread_input());
      co_return false;
    }
    if (w_->out.size() >= flush_threshold) {
      auto sent = co_await send_out();
      if (!sent) co_return false;
    }
  }
}

task<int> connection::read_body(std::size_t head_size, std::size_t& request_size, std::size_t max_body,
                                bool may_continue, std::stop_token stop) {
  const server_options& o = core_.opts;
  if (w_->req.content_length_ > static_cast<std::int64_t>(max_body)) co_return 413;
  // RFC 9110 10.1.1: an HTTP/1.1 client waiting for 100 Continue gets it before we read.
  if (may_continue && w_->req.expect_continue_ && w_->req.version_minor_ == 1 && w_->end - w_->start == head_size) {
    w_->out.append("HTTP/1.1 100 Continue\r\n\r\n");
    auto sent = co_await send_out();
    if (!sent) co_return -1;
  }
  if (w_->req.chunked_) w_->chunks = chunked_decoder(max_body, o.max_header_bytes);
  const std::size_t length = static_cast<std::size_t>(std::max<std::int64_t>(w_->req.content_length_, 0));
  const clock::time_point body_deadline = clock::now() + o.body_timeout;
  for (;;) {
    if (w_->req.chunked_) {
      auto st = w_->chunks.decode(w_->in.get() + w_->start + head_size, w_->end - w_->start - head_size);
      if (st == chunked_decoder::status::error) co_return w_->chunks.error_status();
      if (st == chunked_decoder::status::done) {
        w_->req.body_ = {w_->in.get() + w_->start + head_size, w_->chunks.body_size()};
        request_size = head_size + w_->chunks.consumed();
        co_return 0;
      }
    } else if (w_->end - w_->start >= head_size + length) {
      w_->req.body_ = {w_->in.get() + w_->start + head_size, length};
      request_size = head_size + length;
      co_return 0;
    }
    std::size_t missing = w_->req.chunked_ ? min_receive : head_size + length - (w_->end - w_->start);
    if (!make_room(std::max(missing, min_receive)) && !make_room(missing)) co_return 413;
    // A stall (idle_timeout) or the whole body taking too long (body_timeout): 408.
    const clock::time_point limit = std::min(body_deadline, clock::now() + o.idle_timeout);
    result<std::size_t> n;
    if (secure_ && stop.stop_possible()) {
      auto op = secure_recv(free_space(), stop, limit);  // `stop` stops it as the task's own stop does
      n = co_await op;
    } else if (secure_) {
      auto op = io_.secure->recv(free_space(), limit, tls::recv_wait::with_buffer);
      n = co_await op;
    } else {
      n = co_await with_deadline(sock().recv(free_space()).with_stop(stop), limit);
    }
    if (!n) co_return n.error() == std::errc::timed_out ? 408 : -1;
    if (*n == 0) co_return -1;
    w_->end += *n;
  }
}

}  // namespace ringio::http::detail
