#include "connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "http_date.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/http/body_writer.hpp"
#include "ringio/http/status.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http::detail {
namespace {

using clock = std::chrono::steady_clock;

constexpr std::size_t initial_input = 4096;
constexpr std::size_t min_receive = 1024;
constexpr std::size_t flush_threshold = 64 * 1024;  // gathered pipelined responses
constexpr std::size_t inline_body = 64 * 1024;      // larger fixed bodies are sent directly
constexpr std::size_t file_chunk = 64 * 1024;
constexpr auto linger_time = std::chrono::seconds(2);
constexpr std::size_t linger_bytes = 1 << 20;

struct forward_stop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

}  // namespace

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
        auto sent = co_await sock_.send_all(out_.view()).with_stop(kill_token);
        out_.clear();
        if (!sent) co_return;
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
        n = co_await sock_.recv(free_space()).with_stop(idle_token);
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

void connection::write_head(const response& r, framing f, std::uint64_t length, bool keep) {
  char status[3] = {static_cast<char>('0' + r.status_ / 100 % 10), static_cast<char>('0' + r.status_ / 10 % 10),
                    static_cast<char>('0' + r.status_ % 10)};
  out_.append("HTTP/1.1 ");
  out_.append({status, 3});
  out_.append(" ");
  out_.append(reason_phrase(r.status_));
  if (!r.content_type_.empty() && f != framing::none) {
    out_.append("\r\nContent-Type: ");
    out_.append(r.content_type_);
  }
  if (f == framing::length) {
    out_.append("\r\nContent-Length: ");
    out_.append_decimal(length);
  } else if (f == framing::chunked) {
    out_.append("\r\nTransfer-Encoding: chunked");
  }
  out_.append("\r\nDate: ");
  out_.append(current_http_date());
  if (!keep) out_.append("\r\nConnection: close");
  else if (req_.version_minor_ == 0) out_.append("\r\nConnection: keep-alive");
  out_.append("\r\n");
  out_.append(r.fields_);
  out_.append("\r\n");
}

// Fixed bodies small enough to copy: formatted into out_, sent with the next write.
bool connection::write_fixed(const response& r, bool keep) {
  bool no_body = status_has_no_body(r.status_);
  bool head_only = no_body || req_.method_ == method::head;
  if (r.is_stream() || (r.is_file() && !head_only)) return false;
  std::string_view body = r.body();
  if (body.size() > inline_body && !head_only) return false;
  std::uint64_t length = body.size();
  if (const auto* f = std::get_if<file_body>(&r.body_)) length = f->length;
  write_head(r, no_body ? framing::none : framing::length, length, keep);
  if (!head_only) out_.append(body);
  return true;
}

task<bool> connection::write_special(response& r, bool& keep) {
  const bool head_only = req_.method_ == method::head;
  if (auto* f = std::get_if<file_body>(&r.body_)) {
    write_head(r, framing::length, f->length, keep);
    auto ok = co_await send_file(*f);
    co_return ok;
  }
  if (auto* fn = std::get_if<body_stream>(&r.body_)) {
    const bool chunked = req_.version_minor_ == 1;
    if (!chunked) keep = false;  // HTTP/1.0: the end of the connection ends the body
    write_head(r, chunked ? framing::chunked : framing::until_close, 0, keep);
    if (head_only || status_has_no_body(r.status_)) co_return true;
    body_writer writer(sock_, out_, core_.opts.send_timeout, chunked);
    bool threw = false;
    try {
      co_await (*fn)(writer);
    } catch (const std::exception& e) {
      threw = true;
      log_handler_error(e.what());
    }
    if (threw || writer.failed()) co_return false;
    writer.finish();
    co_return true;
  }
  std::string_view body = r.body();  // a large fixed body: sent from where it is
  write_head(r, framing::length, body.size(), keep);
  auto sent = co_await send_out();
  if (!sent) co_return false;
  enter(phase::sending);
  auto w = co_await sock_.send_all(body).with_stop(kill_.get_token());
  enter(phase::busy);
  co_return static_cast<bool>(w);
}

task<bool> connection::send_file(file_body& f) {
  std::uint64_t offset = f.offset, left = f.length;
  while (left > 0) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, file_chunk));
    char* at = out_.reserve(want);
    auto n = co_await ::ringio::detail::read_at_op(f.fd.get(), mutable_buffer(at, want), offset);
    if (!n || *n == 0) co_return false;  // the file shrank: the promised length cannot be kept
    out_.commit(*n);
    offset += *n;
    left -= *n;
    if (out_.size() >= file_chunk) {
      auto sent = co_await send_out();
      if (!sent) co_return false;
    }
  }
  co_return true;
}

task<bool> connection::send_out() {
  enter(phase::sending);
  auto sent = co_await sock_.send_all(out_.view()).with_stop(kill_.get_token());
  enter(phase::busy);
  out_.clear();
  co_return static_cast<bool>(sent);
}

task<void> connection::fail(int status) {
  write_head(response::borrowed(status, reason_phrase(status)), framing::length, reason_phrase(status).size(), false);
  out_.append(reason_phrase(status));
  co_await close_gracefully(true);
}

task<void> connection::refuse() {
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<forward_stop> kill_on_outer(outer, forward_stop{&kill_});
  core_.log_limited(core_.last_limit_log,
                    "http: connection limit reached (" + std::to_string(core_.opts.max_connections) +
                        " open); refusing new connections with 503");
  co_await fail(503);
}

// Sends what is pending. With `linger`, then half-closes and reads what the client
// still sends (the rest of a refused body) for a moment: closing with unread input
// would reset the connection, and the client could lose the response.
task<void> connection::close_gracefully(bool linger) {
  if (!out_.empty()) {
    auto sent = co_await send_out();
    if (!sent) co_return;
  }
  if (!linger) co_return;  // the socket closes with the connection: FIN after the data
  // shutdown(2) never blocks; called directly because the readiness backends park a
  // shutdown operation until the socket is readable, which a silent client never is.
  if (::shutdown(sock_.native_handle(), SHUT_WR) != 0) co_return;
  auto deadline = clock::now() + linger_time;
  std::size_t discarded = 0;
  while (discarded < linger_bytes) {
    auto n = co_await with_deadline(sock_.recv({in_.get(), cap_}), deadline);
    if (!n || *n == 0) break;
    discarded += *n;
  }
}

void connection::log_handler_error(std::string_view what) {
  std::string line = "http: handler for ";
  line.append(req_.method_name_).append(" ").append(req_.target_.substr(0, 200)).append(" failed: ").append(what);
  core_.log_limited(core_.last_error_log, line);
}

}  // namespace ringio::http::detail
