// SPDX-License-Identifier: Apache-2.0
// connection_send — the sending half of a connection: response heads, fixed, file and
// streamed bodies, error responses, and closing.
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>

#include "connection.hpp"
#include "core/sys.hpp"
#include "http_date.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/http/body_writer.hpp"
#include "ringio/http/status.hpp"
#include "ringio/http/upgraded_connection.hpp"
#include "ringio/net/send_file.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http::detail {

using clock = std::chrono::steady_clock;

void connection::write_head(const response& r, framing f, std::uint64_t length, bool keep) {
  char status[3] = {static_cast<char>('0' + r.status_ / 100 % 10), static_cast<char>('0' + r.status_ / 10 % 10),
                    static_cast<char>('0' + r.status_ % 10)};
  w_->out.append("HTTP/1.1 ");
  w_->out.append({status, 3});
  w_->out.append(" ");
  w_->out.append(reason_phrase(r.status_));
  if (!r.content_type().empty() && f != framing::none) {
    w_->out.append("\r\nContent-Type: ");
    w_->out.append(r.content_type());
  }
  if (f == framing::length) {
    w_->out.append("\r\nContent-Length: ");
    w_->out.append_decimal(length);
  } else if (f == framing::chunked) {
    w_->out.append("\r\nTransfer-Encoding: chunked");
  }
  w_->out.append("\r\nDate: ");
  w_->out.append(current_http_date());
  if (!keep) w_->out.append("\r\nConnection: close");
  else if (w_->req.version_minor_ == 0) w_->out.append("\r\nConnection: keep-alive");
  w_->out.append("\r\n");
  w_->out.append(r.extra_headers());
  w_->out.append("\r\n");
}

// Fixed bodies small enough to copy: formatted into w_->out, sent with the next write.
bool connection::write_fixed(const response& r, bool keep) {
  bool no_body = status_has_no_body(r.status_);
  bool head_only = no_body || w_->req.method_ == method::head;
  if (r.is_stream() || (r.is_file() && !head_only)) return false;
  std::string_view body = r.body();
  if (body.size() > inline_body && !head_only) return false;
  std::uint64_t length = body.size();
  if (const auto* f = std::get_if<file_body>(&r.body_)) length = f->length;
  write_head(r, no_body ? framing::none : framing::length, length, keep);
  if (!head_only) w_->out.append(body);
  return true;
}

task<bool> connection::write_special(response& r, bool& keep) {
  const bool head_only = w_->req.method_ == method::head;
  if (auto* f = std::get_if<file_body>(&r.body_)) {
    write_head(r, framing::length, f->length, keep);
    auto ok = co_await send_file(*f);
    co_return ok;
  }
  if (auto* fn = std::get_if<body_stream>(&r.body_)) {
    const bool chunked = w_->req.version_minor_ == 1;
    if (!chunked) keep = false;  // HTTP/1.0: the end of the connection ends the body
    write_head(r, chunked ? framing::chunked : framing::until_close, 0, keep);
    if (head_only || status_has_no_body(r.status_)) co_return true;
    body_writer writer = secure_ ? body_writer(*io_.secure, w_->out, core_.opts.send_timeout, chunked)
                                 : body_writer(sock(), w_->out, core_.opts.send_timeout, chunked);
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
  const std::stop_token kill_token = kill().get_token();
  result<std::size_t> w;
  if (secure_) {
    auto op = secure_send(body, kill_token);
    w = co_await op;
  } else {
    w = co_await sock().send_all(body).with_stop(kill_token);
  }
  if (w) stats_.response_bytes.add(*w);
  enter(phase::busy);
  co_return w&&* w == body.size();
}

task<void> connection::run_upgrade(response& r) {
  write_head(r, framing::none, 0, true);
  auto sent = co_await send_out();
  if (!sent) co_return;
  // What the client sent after its request moves out of the borrowed buffers, which go
  // back to the loop: the connection now holds nothing of the HTTP server's.
  std::string early(pending());
  consume(w_->end - w_->start);
  put_work_back();
  upgraded_connection conn{
      .socket = secure_ ? nullptr : &sock(), .secure = tls(), .received = early, .drain = core_.drain_token()};
  auto& fn = std::get<upgrade_handler>(r.body_);
  try {
    co_await fn(conn);
  } catch (const std::exception& e) {
    work();
    log_handler_error(e.what());
  }
}

task<bool> connection::send_file(file_body& f) {
  // Over TLS the records are made in user space: the file is read in chunks, each
  // encrypted and sent before the next is read (at most file_chunk bytes held).
  if (f.length > read_through_limit && core_.opts.sendfile && !secure_) {
    // In the kernel: no buffer of ours, however slowly the client reads.
    auto head = co_await send_out();
    if (!head) co_return false;
    // A slow reader may take minutes: unless pipelined requests wait in them, the
    // buffers go back to the loop's cache meanwhile (serve_requests borrows again).
    put_work_back();
    enter(phase::sending);
    auto op = ::ringio::send_file(sock(), f.descriptor(), f.offset, f.length);
    op.set_stop_token(kill().get_token());
    auto sent = co_await op;
    if (sent) stats_.response_bytes.add(*sent);
    enter(phase::busy);
    co_return sent&&* sent == f.length;  // a short count: the file shrank or the client left
  }
  std::uint64_t offset = f.offset, left = f.length;
  while (left > 0) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, file_chunk));
    char* at = w_->out.reserve(want);
    ::ringio::detail::read_at_op read(f.descriptor(), mutable_buffer(at, want), offset);
    // A cached file of static_files is never O_DIRECT: the readiness backends may copy
    // what the page cache holds on the loop (RWF_NOWAIT) rather than ask the pool.
    read.cached_first = f.shared.valid();
    auto n = co_await read;
    if (!n || *n == 0) co_return false;  // the file shrank: the promised length cannot be kept
    w_->out.commit(*n);
    offset += *n;
    left -= *n;
    if (w_->out.size() >= file_chunk) {
      auto sent = co_await send_out();
      if (!sent) co_return false;
    }
  }
  co_return true;
}

task<bool> connection::send_out() {
  enter(phase::sending);
  const std::size_t size = w_->out.view().size();
  const std::stop_token kill_token = kill().get_token();
  result<std::size_t> sent;
  if (secure_) {
    auto op = secure_send(w_->out.view(), kill_token);
    sent = co_await op;
  } else {
    sent = co_await sock().send_all(w_->out.view()).with_stop(kill_token);
  }
  if (sent) stats_.response_bytes.add(*sent);
  enter(phase::busy);
  w_->out.clear();
  co_return sent&&* sent == size;
}

task<void> connection::fail(int status) {
  stats_.note_status(status);
  work();
  write_head(response::borrowed(status, reason_phrase(status)), framing::length, reason_phrase(status).size(), false);
  w_->out.append(reason_phrase(status));
  co_await close_gracefully(true);
}

task<void> connection::refuse() {
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<forward_stop> kill_on_outer(outer, forward_stop{&kill()});
  core_.log_limited(core_.last_limit_log, "http: connection limit reached (" +
                                              std::to_string(core_.opts.max_connections) +
                                              " open); refusing new connections with 503");
  co_await fail(503);
}

task<void> connection::refuse_plain_http() {
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<forward_stop> kill_on_outer(outer, forward_stop{&kill()});
  static constexpr std::string_view text = "This port speaks HTTPS: plain HTTP was sent to it.\n";
  stats_.note_status(400);
  work();
  w_->out.append("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ");
  w_->out.append_decimal(text.size());
  w_->out.append("\r\nConnection: close\r\n\r\n");
  w_->out.append(text);
  co_await close_gracefully(true);
}

task<void> connection::send_close_notify() {
  std::stop_token outer = co_await current_stop_token();
  std::stop_callback<forward_stop> kill_on_outer(outer, forward_stop{&kill()});
  if (!secure_ || kill().stop_requested() || !io_.secure->is_established()) co_return;
  const std::stop_token kill_token = kill().get_token();
  under_token<result<void>> op{io_.secure->send_close_notify(close_notify_timeout), &kill_token};
  auto notified = co_await op;
  (void)notified;
}

// Sends what is pending. With `linger`, then half-closes and reads what the client
// still sends (the rest of a refused body) for a moment: closing with unread input
// would reset the connection, and the client could lose the response.
task<void> connection::close_gracefully(bool linger) {
  if (!w_->out.empty()) {
    auto sent = co_await send_out();
    if (!sent) co_return;
  }
  // The socket closes with the connection: FIN after the data (over TLS the close_notify
  // goes first: send_close_notify() after the request loop, unless sent here).
  if (!linger) co_return;
  if (secure_) {
    const std::stop_token kill_token = kill().get_token();
    under_token<result<void>> op{io_.secure->send_close_notify(close_notify_timeout), &kill_token};
    auto notified = co_await op;
    if (!notified) co_return;
  }
  // shutdown(2) never blocks; called directly because the readiness backends park a
  // shutdown operation until the socket is readable, which a silent client never is.
  // Over TLS what still arrives is ciphertext, discarded undecrypted.
  stream_socket& socket = raw_socket();
  if (::ringio::detail::sys::shutdown(socket.native_handle(), SHUT_WR) != 0) co_return;
  auto deadline = clock::now() + core_.opts.linger_timeout;
  std::size_t discarded = 0;
  while (discarded < core_.opts.linger_bytes) {
    auto n = co_await with_deadline(socket.recv({w_->in.get(), w_->cap}), deadline);
    if (!n || *n == 0) break;
    discarded += *n;
  }
}

bool connection::unread_input() noexcept {
  int queued = 0;
  return ::ioctl(raw_socket().native_handle(), FIONREAD, &queued) == 0 && queued > 0;
}

void connection::log_handler_error(std::string_view what) {
  std::string line = "http: handler for ";
  line.append(w_->req.method_name_).append(" ").append(w_->req.target_.substr(0, 200)).append(" failed: ").append(what);
  core_.log_limited(core_.last_error_log, line);
}

}  // namespace ringio::http::detail
