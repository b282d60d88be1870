// SPDX-License-Identifier: Apache-2.0
// response_stream: reads a response body in its framing (Content-Length, chunked, until
// close) out of the connection's buffer first, then from the socket.
#include "ringio/http/response_stream.hpp"

#include <algorithm>
#include <cstring>

#include "client_connection.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/http/client.hpp"

namespace ringio::http {

response_stream::response_stream() noexcept = default;
response_stream::response_stream(response_stream&&) noexcept = default;
response_stream& response_stream::operator=(response_stream&&) noexcept = default;

response_stream::~response_stream() {
  if (conn_ && done_ && head_.keep_alive && owner_ != nullptr) owner_->release(std::move(conn_));
}

response_stream::response_stream(client& owner, detail::connection_ptr conn, const response_head& head,
                                 std::size_t body_begin)
    : owner_(&owner), conn_(std::move(conn)), head_(head), body_begin_(body_begin), done_(false) {
  conn_->begin = body_begin;
  remaining_ = head_.content_length;
  if (head_.framing == body_framing::none) done_ = true;
}

void response_stream::fail() noexcept {
  conn_.reset();  // its state is unknown: it is closed, never pooled
  done_ = false;
}

task<result<std::size_t>> response_stream::receive(mutable_buffer buf) {
  auto n = co_await detail::receive_some(*conn_, buf, ringio::detail::deadline_after(owner_->options().body_timeout));
  if (!n && n.error() == std::errc::timed_out) co_return unexpected(make_error_code(client_errc::body_timeout));
  co_return n;
}

namespace {
// A TLS connection that ended without close_notify ended the body early.
std::error_code body_error(const std::error_code& ec) noexcept {
  return ec == tls::tls_errc::truncated ? make_error_code(client_errc::truncated_body) : ec;
}
}  // namespace

task<result<std::size_t>> response_stream::read(mutable_buffer buf) {
  if (done_) co_return std::size_t{0};
  if (!conn_) co_return unexpected(make_error_code(client_errc::connection_closed));
  if (buf.size() == 0) co_return std::size_t{0};
  detail::client_connection& c = *conn_;
  const std::uint64_t max_body = owner_->options().max_body;
  if (head_.framing == body_framing::content_length && head_.content_length > max_body) {
    fail();
    co_return unexpected(make_error_code(client_errc::body_too_large));
  }
  if (head_.framing != body_framing::chunked) {
    std::size_t want = buf.size();
    if (head_.framing == body_framing::content_length)
      want = static_cast<std::size_t>(std::min<std::uint64_t>(want, remaining_));
    std::size_t n = 0;
    if (c.end > c.begin) {
      n = std::min(want, c.end - c.begin);
      std::memcpy(buf.data(), c.buffer.get() + c.begin, n);
      c.begin += n;
    } else {
      auto got = co_await receive(buf.first(want));
      // Over TLS only close_notify ends a body delimited by the close: without it, the
      // end may be anyone's (RFC 9112 section 9.8), unless the caller opted in.
      if (!got && head_.framing == body_framing::until_close && got.error() == tls::tls_errc::truncated &&
          owner_->options().accept_tls_truncation)
        got = std::size_t{0};
      if (!got) {
        fail();
        co_return unexpected(body_error(got.error()));
      }
      if (*got == 0) {
        if (head_.framing == body_framing::until_close) {
          done_ = true;
          co_return std::size_t{0};
        }
        fail();
        co_return unexpected(make_error_code(client_errc::truncated_body));
      }
      n = *got;
    }
    received_ += n;
    if (received_ > max_body) {
      fail();
      co_return unexpected(make_error_code(client_errc::body_too_large));
    }
    if (head_.framing == body_framing::content_length) {
      remaining_ -= n;
      if (remaining_ == 0) done_ = true;
    }
    co_return n;
  }
  for (;;) {
    if (c.end > c.begin) {
      std::size_t produced = 0;
      auto used = chunks_.decode(std::string_view(c.buffer.get() + c.begin, c.end - c.begin),
                                 std::span<char>(reinterpret_cast<char*>(buf.data()), buf.size()), produced);
      if (!used) {
        fail();
        co_return unexpected(used.error());
      }
      c.begin += *used;
      received_ += produced;
      if (received_ > max_body) {
        fail();
        co_return unexpected(make_error_code(client_errc::body_too_large));
      }
      if (chunks_.done()) done_ = true;
      if (produced > 0 || done_) co_return produced;
    }
    // Everything buffered was framing: receive more after the head.
    c.begin = c.end = body_begin_;
    auto got = co_await receive(mutable_buffer(c.buffer.get() + c.end, c.capacity - c.end));
    if (!got) {
      fail();
      co_return unexpected(body_error(got.error()));
    }
    if (*got == 0) {
      fail();
      co_return unexpected(make_error_code(client_errc::truncated_body));
    }
    c.end += *got;
  }
}

task<result<void>> response_stream::read_all(std::string& out) {
  std::array<char, 16 * 1024> piece;
  for (;;) {
    auto n = co_await read(mutable_buffer(piece.data(), piece.size()));
    if (!n) co_return unexpected(n.error());
    if (*n == 0) co_return result<void>{};
    out.append(piece.data(), *n);
  }
}

}  // namespace ringio::http
