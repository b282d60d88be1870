// SPDX-License-Identifier: Apache-2.0
#include "ringio/tls/stream.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/sys.hpp"
#include "record_buffer_cache.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/io_context.hpp"
#include "ringio/log.hpp"
#include "ringio/stop.hpp"
#include "ringio/sync/event.hpp"
#include "stream_state.hpp"

namespace ringio::tls {
namespace detail {

stream_state::~stream_state() {
  if (ssl != nullptr) SSL_free(ssl);  // frees the BIO too
  if (in != nullptr) return_record_buffer(in);
  if (out != nullptr) return_record_buffer(out);
}

void stream_state::release_idle_buffers() noexcept {
  if (in != nullptr && !has_input() && !reading) {
    return_record_buffer(std::exchange(in, nullptr));
    in_begin = in_end = 0;
  }
  if (out != nullptr && !has_output() && !flushing) {
    return_record_buffer(std::exchange(out, nullptr));
    out_begin = out_end = 0;
  }
}

namespace {

enum class step { handshake, read, write };

// The largest plaintext of one record.
constexpr std::size_t max_record_data = 16384;

template <class Op>
Op timed(Op op, std::int64_t deadline) noexcept {
  if (deadline != 0) op.set_deadline(deadline);
  return op;
}

bool is_stop(const std::error_code& ec) noexcept {
  return ec == std::errc::operation_canceled || ec == std::errc::timed_out;
}

// The socket refused a send (not a stop): nothing can reach the peer any more. Later
// sends report the error; what is queued is dropped, and so is what OpenSSL writes
// from now on (memory_bio.cpp), so that reading never waits for output.
void fail_writes(stream_state& s, const std::error_code& ec) noexcept {
  if (!s.write_failure) s.write_failure = ec;
  s.out_begin = s.out_end = 0;
}

// Sends out[out_begin, out_end) until it is empty, as the one operation flushing (what
// others append meanwhile goes too), then wakes a sender waiting for this flush to end.
// A stop leaves the rest queued (see flush).
task<result<void>> send_output(stream_state& s, std::int64_t deadline) {
  s.flushing = true;
  result<void> outcome;
  while (s.has_output()) {
    const_buffer pending(s.out + s.out_begin, s.out_end - s.out_begin);
    auto sent = co_await timed(s.socket.send(pending, MSG_NOSIGNAL), deadline);
    if (!sent) {
      outcome = unexpected(sent.error());
      break;
    }
    s.out_begin += *sent;
  }
  if (!s.has_output()) s.out_begin = s.out_end = 0;
  s.flushing = false;
  if (!outcome && !is_stop(outcome.error())) fail_writes(s, outcome.error());
  if (s.flush_ended) s.flush_ended->set();
  co_return outcome;
}

// The push (stream_state::pushing): sends what is queued, unless another operation
// took the flush over before it ran. No operation stops it as it ends: only close(), the
// destructor and the loop's end do. A write error is kept for the next send. An
// orphaned state (the stream is gone) is freed here.
task<void> push_output(stream_state* s) {
  if (!s->flushing && !s->write_failure && !s->push_token.stop_requested()) (void)co_await send_output(*s, 0);
  s->pushing = false;
  if (s->orphaned) {
    delete s;
    co_return;
  }
  if (!s->reading && !s->writing) s->release_idle_buffers();
}

// Starts the push when output is queued and nobody sends it: called by a recv (as it
// starts, and whenever OpenSSL wrote while reading) and after a send cut by its
// deadline or a stop. It runs from the loop's next turn; what it sends goes out before
// anything else, since a sender first waits for it to end.
void start_push(stream_state& s) {
  if (s.pushing || s.flushing || !s.has_output() || s.write_failure || s.orphaned) return;
  io_context* loop = io_context::current();
  if (loop == nullptr) return;
  if (!s.push_stop.stop_possible()) {
    s.push_stop = std::stop_source();
    s.push_token = s.push_stop.get_token();
  }
  if (s.push_token.stop_requested()) return;  // closed
  task<void> push = push_output(&s);
  push.handle().promise().set_stop_token(&s.push_token);
  s.pushing = true;
  loop->spawn(std::move(push));
}

// Sends the queued output for a sending operation (handshake, send, close_notify,
// shutdown) until none is left: itself, or, while the push sends it, by sleeping until
// the push ends (all sent, or a write error). Bounded by `deadline` and the awaiting
// task's stop token; a stop leaves the rest to the push, which takes over at once. A
// write error, once seen, is reported again.
task<result<void>> flush(stream_state& s, std::int64_t deadline) {
  for (;;) {
    if (s.write_failure) co_return unexpected(s.write_failure);
    if (!s.has_output()) co_return result<void>{};
    if (!s.flushing) {
      auto sent = co_await send_output(s, deadline);
      // The rest of a record cut by a stop goes on at once, whatever comes next (a failed
      // handshake leaves the stream unusable: nothing to finish there).
      if (!sent && is_stop(sent.error()) && s.established) start_push(s);
      co_return sent;
    }
    if (!s.flush_ended) s.flush_ended = std::make_unique<event>(event_mode::one_shot);
    s.flush_ended->reset();  // the flush in progress sets it as it ends
    auto ended = co_await timed(s.flush_ended->wait(), deadline);
    if (!ended) co_return unexpected(ended.error());
  }
}

// Waits until the socket has data (or its end) with a one-byte peek: a connection
// waiting for its peer this way holds no record buffer.
task<result<void>> wait_readable(stream_state& s, std::int64_t deadline) {
  if (s.readable || s.peer_eof) co_return result<void>{};
  std::array<std::byte, 1> probe{};
  auto ready = co_await timed(s.socket.recv(mutable_buffer(probe.data(), probe.size()), MSG_PEEK), deadline);
  if (!ready) co_return unexpected(ready.error());
  if (*ready == 0) s.peer_eof = true;
  else s.readable = true;
  co_return result<void>{};
}

// Receives more ciphertext into `in`. While nothing is buffered it first waits for
// data (wait_readable), and borrows the buffer only then.
task<result<void>> fill(stream_state& s, std::int64_t deadline) {
  if (!s.has_input()) {
    if (!s.eager_fill) {
      auto ready = co_await wait_readable(s, deadline);
      if (!ready) co_return unexpected(ready.error());
    }
    if (s.peer_eof) co_return result<void>{};
    if (s.in == nullptr) s.in = borrow_record_buffer();
    s.in_begin = s.in_end = 0;
  } else if (s.in_begin > 0) {
    std::memmove(s.in, s.in + s.in_begin, s.in_end - s.in_begin);
    s.in_end -= s.in_begin;
    s.in_begin = 0;
  }
  mutable_buffer room(s.in + s.in_end, record_buffer_size - s.in_end);
  auto got = co_await timed(s.socket.recv(room), deadline);
  s.readable = false;
  if (!got) co_return unexpected(got.error());
  if (*got == 0) s.peer_eof = true;
  s.in_end += *got;
  co_return result<void>{};
}

// The error of a failed OpenSSL call whose SSL_get_error was `e`.
std::error_code failure_of(stream_state& s, int e) {
  unsigned long err = ERR_peek_error();
  ERR_clear_error();
  if (!s.established) {
    long v = SSL_get_verify_result(s.ssl);
    if (v != X509_V_OK) return verify_error(v);
  }
  if (e == SSL_ERROR_SSL && err != 0) {
    if (ERR_GET_LIB(err) == ERR_LIB_SSL && ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
      return make_error_code(tls_errc::truncated);
    return openssl_error(err);
  }
  if (s.peer_eof) return make_error_code(tls_errc::truncated);
  return err != 0 ? openssl_error(err) : make_error_code(tls_errc::protocol_error);
}

// Calls OpenSSL for `what` until it gives an answer, moving ciphertext between the
// buffers and the socket as it asks. The result: bytes read or written (0 for a
// completed handshake, or for close_notify received on a read). A read never waits
// for output: what it makes OpenSSL write goes out with the push.
task<result<std::size_t>> drive(stream_state& s, step what, void* data, std::size_t len, std::int64_t deadline) {
  for (;;) {
    ERR_clear_error();
    int r = 0;
    if (what == step::handshake) r = SSL_do_handshake(s.ssl);
    else if (what == step::read) r = SSL_read(s.ssl, data, static_cast<int>(std::min<std::size_t>(len, 1 << 30)));
    else r = SSL_write(s.ssl, data, static_cast<int>(std::min(len, max_record_data)));
    if (r > 0) {
      if (what == step::read) {
        start_push(s);  // a KeyUpdate answer, say: it must not cost the data its delivery
      } else if (what == step::handshake && s.has_output()) {  // the last flight
        auto sent = co_await flush(s, deadline);
        if (!sent) co_return unexpected(sent.error());
      }
      co_return what == step::handshake ? 0 : static_cast<std::size_t>(r);
    }
    int e = SSL_get_error(s.ssl, r);
    if (e == SSL_ERROR_WANT_WRITE) {  // out is full
      // A read meets this only while another operation's flush holds out (it cannot be
      // compacted then), and waits for that flush to end.
      if (what == step::read) start_push(s);
      auto sent = co_await flush(s, deadline);
      if (!sent) co_return unexpected(sent.error());
      continue;
    }
    if (e == SSL_ERROR_WANT_READ) {
      if (what == step::read) {
        start_push(s);  // what OpenSSL wrote must reach the peer before it answers
      } else {
        if (s.has_output()) {
          auto sent = co_await flush(s, deadline);
          if (!sent) co_return unexpected(sent.error());
        }
        if (what == step::write && s.reading) co_return unexpected(tls_errc::busy);
      }
      auto got = co_await fill(s, deadline);
      if (!got) co_return unexpected(got.error());
      continue;
    }
    if (e == SSL_ERROR_ZERO_RETURN) co_return std::size_t{0};
    std::error_code ec = failure_of(s, e);
    s.failure = ec;
    s.established = false;
    // The alert saying why: a read sends it as far as it goes before it returns.
    if (what == step::read) start_push(s);
    else if (s.has_output()) (void)co_await flush(s, deadline);
    co_return unexpected(ec);
  }
}

std::int64_t deadline_in(std::chrono::nanoseconds timeout) noexcept {
  return timeout.count() > 0 ? ringio::detail::deadline_after(timeout) : 0;
}

std::error_code not_usable(const stream_state& s) noexcept {
  return s.failure ? s.failure : make_error_code(tls_errc::not_established);
}

task<result<void>> run_handshake(stream_state& s, std::chrono::nanoseconds timeout) {
  if (s.established) co_return result<void>{};
  if (s.failure) co_return unexpected(s.failure);
  if (s.reading || s.writing) co_return unexpected(tls_errc::busy);
  s.reading = s.writing = true;
  auto done = co_await drive(s, step::handshake, nullptr, 0, deadline_in(timeout));
  s.reading = s.writing = false;
  if (done) {
    s.established = true;
    if (SSL_is_server(s.ssl)) {
      const char* name = SSL_get_servername(s.ssl, TLSEXT_NAMETYPE_host_name);
      if (name != nullptr) s.server_name = name;
    }
  } else if (!s.failure) {
    s.failure = done.error();  // a stopped handshake cannot be resumed
  }
  s.release_idle_buffers();
  if (!done) co_return unexpected(done.error());
  // The record path: the first handshake logs (once) why kernel TLS is not used.
  if (s.ctx->kernel_tls) (void)stream::kernel_tls_available();
  if (log_enabled(log_level::debug))
    log(log_level::debug, "tls: %s handshake done: %s, records in user space",
        SSL_is_server(s.ssl) ? "server" : "client", SSL_get_version(s.ssl));
  co_return result<void>{};
}

task<result<std::size_t>> run_recv(stream_state& s, mutable_buffer buf, std::int64_t deadline = 0,
                                   recv_wait wait = recv_wait::without_buffer) {
  if (!s.established) co_return unexpected(not_usable(s));
  if (s.reading) co_return unexpected(tls_errc::busy);
  if (buf.size() == 0) co_return std::size_t{0};
  s.reading = true;
  // The rest of a record whose send was cut goes out first, beside this recv: the peer
  // may wait for the whole record before it says anything.
  start_push(s);
  result<std::size_t> got = std::size_t{0};
  // Nothing buffered here or in OpenSSL, and no close_notify seen: wait before calling
  // it, so that OpenSSL does not hold a read buffer of its own while the peer is silent.
  // A caller expecting data now skips the wait (and its syscall) and receives straight
  // into a borrowed record buffer.
  if (wait == recv_wait::with_buffer) {
    s.eager_fill = true;
  } else if (!s.has_input() && SSL_has_pending(s.ssl) == 0 && (SSL_get_shutdown(s.ssl) & SSL_RECEIVED_SHUTDOWN) == 0) {
    auto ready = co_await wait_readable(s, deadline);
    if (!ready) got = unexpected(ready.error());
  }
  if (got) got = co_await drive(s, step::read, buf.data(), buf.size(), deadline);
  s.eager_fill = false;
  s.reading = false;
  s.release_idle_buffers();
  co_return got;
}

task<result<std::size_t>> run_recv_exact(stream_state& s, mutable_buffer buf) {
  std::size_t done = 0;
  while (done < buf.size()) {
    auto got = co_await run_recv(s, buf.skip(done));
    if (!got) {
      if (done > 0) break;
      co_return unexpected(got.error());
    }
    if (*got == 0) break;
    done += *got;
  }
  co_return done;
}

task<result<std::size_t>> run_send(stream_state& s, const_buffer buf, std::int64_t deadline = 0) {
  if (!s.established) co_return unexpected(not_usable(s));
  if (s.writing) co_return unexpected(tls_errc::busy);
  if (s.write_failure) co_return unexpected(s.write_failure);
  if (buf.size() == 0) co_return std::size_t{0};
  // Stopped before it started: OpenSSL takes nothing, as a plain socket's send sends nothing.
  if ((co_await current_stop_token()).stop_requested()) co_return unexpected(errno_code(-ECANCELED));
  s.writing = true;
  // The rest of a record whose send was interrupted goes first (here, or by the push:
  // then this sleeps until the push ends).
  auto ready = co_await flush(s, deadline);
  if (!ready) {
    s.writing = false;
    s.release_idle_buffers();
    co_return unexpected(ready.error());
  }
  auto taken = co_await drive(s, step::write, const_cast<std::byte*>(buf.data()), buf.size(), deadline);
  if (taken) {
    auto sent = co_await flush(s, deadline);
    if (!sent && !is_stop(sent.error())) {
      s.writing = false;
      s.release_idle_buffers();
      co_return unexpected(sent.error());
    }
  }
  s.writing = false;
  s.release_idle_buffers();
  co_return taken;
}

task<result<std::size_t>> run_send_all(stream_state& s, const_buffer buf, std::int64_t deadline = 0) {
  std::size_t done = 0;
  while (done < buf.size()) {
    auto sent = co_await run_send(s, buf.skip(done), deadline);
    if (!sent) {
      if (done > 0) break;
      co_return unexpected(sent.error());
    }
    done += *sent;
    std::stop_token token = co_await current_stop_token();
    if (token.stop_requested() && done < buf.size()) break;
  }
  co_return done;
}

task<result<void>> run_close_notify(stream_state& s, std::chrono::nanoseconds timeout) {
  if (!s.established) co_return unexpected(not_usable(s));
  if (s.writing) co_return unexpected(tls_errc::busy);
  if (s.write_failure) co_return unexpected(s.write_failure);
  ERR_clear_error();
  // Once sent, a second SSL_shutdown would wait for the peer's: only flush then.
  int r = (SSL_get_shutdown(s.ssl) & SSL_SENT_SHUTDOWN) != 0 ? 0 : SSL_shutdown(s.ssl);
  if (r < 0) {
    std::error_code ec = failure_of(s, SSL_get_error(s.ssl, r));
    s.release_idle_buffers();
    co_return unexpected(ec);
  }
  s.writing = true;
  auto sent = co_await flush(s, deadline_in(timeout));
  s.writing = false;
  s.release_idle_buffers();
  co_return sent;
}

task<result<void>> run_shutdown(stream_state& s, std::chrono::nanoseconds timeout) {
  if (!s.established) co_return unexpected(not_usable(s));
  if (s.writing) co_return unexpected(tls_errc::busy);
  if (s.write_failure) co_return unexpected(s.write_failure);
  const std::int64_t deadline = deadline_in(timeout);
  ERR_clear_error();
  int r = SSL_shutdown(s.ssl);  // 0: ours queued; 1: the peer's had arrived already
  if (r < 0) {
    std::error_code ec = failure_of(s, SSL_get_error(s.ssl, r));
    s.release_idle_buffers();
    co_return unexpected(ec);
  }
  s.writing = true;
  auto sent = co_await flush(s, deadline);
  s.writing = false;
  if (!sent) {
    s.release_idle_buffers();
    co_return unexpected(sent.error());
  }
  if (r == 1 || s.reading) {  // done, or a recv in flight will see the peer's alert
    s.release_idle_buffers();
    co_return result<void>{};
  }
  s.reading = true;
  std::array<std::byte, 512> discard{};
  result<std::size_t> got = std::size_t{1};
  while (got && *got > 0) got = co_await drive(s, step::read, discard.data(), discard.size(), deadline);
  s.reading = false;
  s.release_idle_buffers();
  if (!got) co_return unexpected(got.error());
  co_return result<void>{};
}

// Ends the push of a stream that closes or goes away: it is stopped, and the socket is
// shut down, so that a send waiting for a peer that reads nothing ends at once.
void end_push(stream_state& s) noexcept {
  if (!s.pushing) return;
  s.push_stop.request_stop();
  if (!s.socket.is_direct() && s.socket.native_handle() >= 0)
    ::ringio::detail::sys::shutdown(s.socket.native_handle(), SHUT_RDWR);
}

// Frees the state of a stream, or, while its push runs, leaves it to the push.
void release(std::unique_ptr<stream_state>& s) noexcept {
  if (s && s->pushing) {
    end_push(*s);
    s->orphaned = true;
    (void)s.release();
    return;
  }
  s.reset();
}

result<std::unique_ptr<stream_state>> make_state(const context& ctx, stream_socket socket, bool server) {
  if (!ctx.valid() || ctx.is_server() != server || !socket.is_open()) return unexpected(std::errc::invalid_argument);
  auto s = std::make_unique<stream_state>();
  s->socket = std::move(socket);
  s->ctx = ctx.state();
  s->ssl = SSL_new(ctx.native_handle());
  BIO* bio = s->ssl != nullptr ? make_memory_bio(*s) : nullptr;
  if (bio == nullptr) {
    unsigned long e = ERR_get_error();
    return unexpected(e != 0 ? openssl_error(e) : make_error_code(tls_errc::protocol_error));
  }
  SSL_set_bio(s->ssl, bio, bio);
  SSL_set_app_data(s->ssl, s.get());
  return s;
}

}  // namespace
}  // namespace detail

namespace {
std::int64_t deadline_ns(std::chrono::steady_clock::time_point t) noexcept {
  return t == std::chrono::steady_clock::time_point{} ? 0 : ringio::detail::to_monotonic_ns(t);
}
}  // namespace

stream::stream() noexcept = default;
stream::stream(std::unique_ptr<detail::stream_state> s) noexcept : state_(std::move(s)) {}
stream::stream(stream&&) noexcept = default;
stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    detail::release(state_);
    state_ = std::move(other.state_);
  }
  return *this;
}
stream::~stream() { detail::release(state_); }

result<stream> stream::client(const context& ctx, stream_socket socket, std::string_view server_name) {
  auto made = detail::make_state(ctx, std::move(socket), false);
  if (!made) return unexpected(made.error());
  auto& s = **made;
  s.server_name.assign(server_name);
  SSL_set_connect_state(s.ssl);
  if (!server_name.empty()) {
    unsigned char ip[16];
    bool is_ip =
        ::inet_pton(AF_INET, s.server_name.c_str(), ip) == 1 || ::inet_pton(AF_INET6, s.server_name.c_str(), ip) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(s.ssl, s.server_name.c_str());  // SNI carries no addresses
    if (s.ctx->verify_peer) {
      int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s.ssl), s.server_name.c_str())
                     : SSL_set1_host(s.ssl, s.server_name.c_str());
      if (ok != 1) return unexpected(std::errc::invalid_argument);
    }
    if (s.ctx->resumption) {
      if (SSL_SESSION* kept = s.ctx->session_for(s.server_name)) {
        SSL_set_session(s.ssl, kept);
        SSL_SESSION_free(kept);
      }
    }
  }
  return stream(std::move(*made));
}

result<stream> stream::server(const context& ctx, stream_socket socket) {
  auto made = detail::make_state(ctx, std::move(socket), true);
  if (!made) return unexpected(made.error());
  SSL_set_accept_state((*made)->ssl);
  return stream(std::move(*made));
}

task<result<void>> stream::handshake() { return detail::run_handshake(*state_, state_->ctx->handshake_timeout); }
task<result<void>> stream::handshake(std::chrono::nanoseconds timeout) {
  return detail::run_handshake(*state_, timeout);
}
task<result<std::size_t>> stream::recv(mutable_buffer buf) { return detail::run_recv(*state_, buf); }
task<result<std::size_t>> stream::recv(mutable_buffer buf, std::chrono::steady_clock::time_point deadline,
                                       recv_wait wait) {
  return detail::run_recv(*state_, buf, deadline_ns(deadline), wait);
}
task<result<std::size_t>> stream::recv_exact(mutable_buffer buf) { return detail::run_recv_exact(*state_, buf); }
task<result<std::size_t>> stream::send(const_buffer buf) { return detail::run_send(*state_, buf); }
task<result<std::size_t>> stream::send_all(const_buffer buf) { return detail::run_send_all(*state_, buf); }
task<result<std::size_t>> stream::send_all(const_buffer buf, std::chrono::steady_clock::time_point deadline) {
  return detail::run_send_all(*state_, buf, deadline_ns(deadline));
}
task<result<void>> stream::send_close_notify(std::chrono::nanoseconds timeout) {
  return detail::run_close_notify(*state_, timeout);
}

result<void> stream::feed(const_buffer ciphertext) {
  detail::stream_state& s = *state_;
  if (s.reading) return unexpected(tls_errc::busy);
  if (ciphertext.size() == 0) return result<void>{};
  if (s.in == nullptr) {
    s.in = detail::borrow_record_buffer();
    s.in_begin = s.in_end = 0;
  } else if (s.in_begin > 0) {
    std::memmove(s.in, s.in + s.in_begin, s.in_end - s.in_begin);
    s.in_end -= s.in_begin;
    s.in_begin = 0;
  }
  if (detail::record_buffer_size - s.in_end < ciphertext.size()) {
    s.release_idle_buffers();
    return unexpected(std::errc::no_buffer_space);
  }
  std::memcpy(s.in + s.in_end, ciphertext.data(), ciphertext.size());
  s.in_end += ciphertext.size();
  return result<void>{};
}

bool stream::has_buffered_input() const noexcept {
  if (!state_) return false;
  const detail::stream_state& s = *state_;
  return s.has_input() || s.readable || s.peer_eof || SSL_has_pending(s.ssl) != 0 ||
         (SSL_get_shutdown(s.ssl) & SSL_RECEIVED_SHUTDOWN) != 0;
}
task<result<void>> stream::shutdown(std::chrono::nanoseconds timeout) { return detail::run_shutdown(*state_, timeout); }
ringio::detail::close_op stream::close() noexcept {
  state_->established = false;
  detail::end_push(*state_);
  return state_->socket.close();
}

bool stream::is_established() const noexcept { return state_ && state_->established; }
int stream::native_handle() const noexcept { return state_ ? state_->socket.native_handle() : -1; }
stream_socket& stream::socket() noexcept { return state_->socket; }
SSL* stream::native_ssl() const noexcept { return state_ ? state_->ssl : nullptr; }

std::string_view stream::alpn() const noexcept {
  if (!state_) return {};
  const unsigned char* p = nullptr;
  unsigned n = 0;
  SSL_get0_alpn_selected(state_->ssl, &p, &n);
  return p != nullptr ? std::string_view(reinterpret_cast<const char*>(p), n) : std::string_view{};
}

std::string_view stream::server_name() const noexcept {
  return state_ ? std::string_view(state_->server_name) : std::string_view{};
}

bool stream::is_resumed() const noexcept { return state_ && SSL_session_reused(state_->ssl) == 1; }
bool stream::is_kernel_tls() const noexcept { return state_ && state_->kernel_tls; }

std::string stream::describe() const {
  if (!state_) return "no connection";
  if (!state_->established) return "no session established";
  std::string out = SSL_get_version(state_->ssl);
  out += ' ';
  out += SSL_CIPHER_get_name(SSL_get_current_cipher(state_->ssl));
  std::string_view protocol = alpn();
  out += " alpn=";
  out += protocol.empty() ? std::string_view("none") : protocol;
  out += is_resumed() ? " resumed=yes" : " resumed=no";
  out += state_->kernel_tls ? " records=kernel" : " records=user-space";
  return out;
}

}  // namespace ringio::tls
