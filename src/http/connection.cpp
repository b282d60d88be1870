// connection — the receiving half of a connection and its request loop: buffers,
// the head and body reads, the handler call, the watchdog. Sending: connection_send.cpp.
#include "connection.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>

#include "ringio/http/status.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http::detail {

using clock = std::chrono::steady_clock;

connection::connection(server_core& core, stream_socket s)
    : core_(core),
      sock_(std::move(s)),
      in_(std::make_unique_for_overwrite<char[]>(initial_input)),
      cap_(initial_input),
      limit_(core.opts.max_header_bytes + core.opts.max_body_bytes + 16 * 1024),
      parser_(core.opts.max_header_bytes) {}

bool connection::make_room(std::size_t min_free) {
  if (cap_ - end_ >= min_free) return true;
  std::size_t used = end_ - start_;
  if (start_ > 0 && cap_ - used >= min_free) {
    // Move the unparsed bytes to the front; views into them move along.
    std::memmove(in_.get(), in_.get() + start_, used);
    req_.rebase(in_.get() + start_, used, in_.get());
  } else {
    if (used + min_free > limit_) return false;
    std::size_t cap = cap_ * 2;
    while (cap < used + min_free) cap *= 2;
    cap = std::min(cap, limit_);
    auto fresh = std::make_unique_for_overwrite<char[]>(cap);
    std::memcpy(fresh.get(), in_.get() + start_, used);
    req_.rebase(in_.get() + start_, used, fresh.get());
    in_ = std::move(fresh);
    cap_ = cap;
  }
  start_ = 0;
  end_ = used;
  return true;
}

void connection::consume(std::size_t n) noexcept {
  start_ += n;
  if (start_ == end_) start_ = end_ = 0;
}

// Timeouts of the hot path (waiting for a request, sending a response) are enforced
// here rather than with a linked timeout per operation, which cost 12-15% of the
// hello-world throughput on io_uring: run() counts progress, and a phase that makes
// none for the timeout is cancelled. A timeout fires up to one tick late.
task<void> connection::watchdog() {
  const server_options& o = core_.opts;
  const auto tick = std::clamp<std::chrono::milliseconds>(std::min(o.idle_timeout, o.send_timeout) / 4,
                                                          std::chrono::milliseconds(10), std::chrono::seconds(1));
  std::uint32_t seen = progress_;
  std::chrono::milliseconds stalled{0};
  for (;;) {
    auto slept = co_await sleep_for(tick);
    if (!slept) co_return;  // the connection has ended
    if (progress_ != seen) {
      seen = progress_;
      stalled = {};
      continue;
    }
    stalled += tick;
    if (phase_ == phase::idle && stalled >= o.idle_timeout) idle_.request_stop();
    if (phase_ == phase::sending && stalled >= o.send_timeout) kill_.request_stop();
  }
}

task<void> connection::run() {
  // Waits for the next request obey idle_ (drain, idle timeout); sends obey kill_
  // (send timeout); both, and everything else, obey this task's own stop token.
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<forward_stop> on_outer(outer, forward_stop{&idle_});
  std::stop_callback<forward_stop> kill_on_outer(outer, forward_stop{&kill_});
  std::stop_callback<forward_stop> on_drain(core_.drain_token(), forward_stop{&idle_});
  const std::stop_token idle_token = idle_.get_token();
  const std::stop_token kill_token = kill_.get_token();
  const server_options& o = core_.opts;
  for (;;) {
    req_.clear();
    parser_.reset();
    clock::time_point head_deadline{};
    parse_result head;
    for (;;) {
      head = parser_.parse(pending(), req_);
      if (head.state != parse_state::incomplete) break;
      if (!out_.empty()) {  // answer every request parsed so far, in one write, before waiting
        enter(phase::sending);
        const std::size_t size = out_.view().size();
        auto sent = co_await sock_.send_all(out_.view()).with_stop(kill_token);
        out_.clear();
        if (!sent || *sent != size) co_return;  // a short count: stopped part-way
      }
      bool idle = start_ == end_;
      if (idle && idle_token.stop_requested()) co_return;
      if (!make_room(min_receive)) {
        co_await fail(431);
        co_return;
      }
      result<std::size_t> n;
      if (idle) {
        enter(phase::idle);
        // Between requests: wait for readiness first, so that 1,000 keep-alive
        // connections are answered in arrival order (see recv_op::poll_first).
        n = co_await sock_.recv(free_space()).poll_first().with_stop(idle_token);
      } else {
        if (head_deadline == clock::time_point{}) head_deadline = clock::now() + o.header_timeout;
        n = co_await with_deadline(sock_.recv(free_space()), head_deadline);
      }
      enter(phase::busy);
      if (!n || *n == 0) {
        if (!idle && !n && n.error() == std::errc::timed_out) co_await fail(408);
        co_return;
      }
      end_ += *n;
    }
    if (head.state == parse_state::error) {
      co_await fail(head.status);
      co_return;
    }

    std::size_t request_size = head.size;
    if (req_.chunked_ || req_.content_length_ > 0) {
      int status = co_await read_body(head.size, request_size);
      if (status != 0) {
        if (status > 0) co_await fail(status);
        co_return;
      }
    }

    response resp;
    bool threw = false;
    try {
      resp = co_await core_.handle(req_);
    } catch (const std::exception& e) {
      threw = true;
      log_handler_error(e.what());
    } catch (...) {
      threw = true;
      log_handler_error("unknown exception");
    }
    if (threw) resp = response::borrowed(500, reason_phrase(500));

    bool keep = req_.keep_alive_ && !resp.close_ && !idle_token.stop_requested();
    bool written = write_fixed(resp, keep);
    if (!written) written = co_await write_special(resp, keep);
    consume(request_size);
    if (!written) co_return;  // the client is gone, or a streamed body failed half way
    if (!keep) {
      // Linger only if the client sent more than we read (pipelined after a close).
      co_await close_gracefully(start_ != end_);
      co_return;
    }
    if (out_.size() >= flush_threshold) {
      auto sent = co_await send_out();
      if (!sent) co_return;
    }
  }
}

task<int> connection::read_body(std::size_t head_size, std::size_t& request_size) {
  const server_options& o = core_.opts;
  if (req_.content_length_ > static_cast<std::int64_t>(o.max_body_bytes)) co_return 413;
  // RFC 9110 10.1.1: an HTTP/1.1 client waiting for 100 Continue gets it before we read.
  if (req_.expect_continue_ && req_.version_minor_ == 1 && end_ - start_ == head_size) {
    out_.append("HTTP/1.1 100 Continue\r\n\r\n");
    auto sent = co_await send_out();
    if (!sent) co_return -1;
  }
  if (req_.chunked_) chunks_ = chunked_decoder(o.max_body_bytes, o.max_header_bytes);
  const std::size_t length = static_cast<std::size_t>(std::max<std::int64_t>(req_.content_length_, 0));
  for (;;) {
    if (req_.chunked_) {
      auto st = chunks_.decode(in_.get() + start_ + head_size, end_ - start_ - head_size);
      if (st == chunked_decoder::status::error) co_return chunks_.error_status();
      if (st == chunked_decoder::status::done) {
        req_.body_ = {in_.get() + start_ + head_size, chunks_.body_size()};
        request_size = head_size + chunks_.consumed();
        co_return 0;
      }
    } else if (end_ - start_ >= head_size + length) {
      req_.body_ = {in_.get() + start_ + head_size, length};
      request_size = head_size + length;
      co_return 0;
    }
    std::size_t missing = req_.chunked_ ? min_receive : head_size + length - (end_ - start_);
    if (!make_room(std::max(missing, min_receive)) && !make_room(missing)) co_return 413;
    auto n = co_await with_timeout(sock_.recv(free_space()), o.idle_timeout);
    if (!n) co_return n.error() == std::errc::timed_out ? 408 : -1;
    if (*n == 0) co_return -1;
    end_ += *n;
  }
}

}  // namespace ringio::http::detail
