// SPDX-License-Identifier: Apache-2.0
#include "ringio/http/body_writer.hpp"

#include "output_buffer.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/stream.hpp"

namespace ringio::http {
namespace {
constexpr std::size_t gather_limit = 16 * 1024;  // parts smaller than this are copied and gathered
}

task<result<void>> body_writer::put(std::string_view data, bool send_now) {
  if (failed_) co_return unexpected(std::errc::broken_pipe);
  if (data.empty()) {  // an empty chunk would end the body
    if (!send_now) co_return result<void>{};
    auto sent = co_await send_buffered();
    co_return sent;
  }
  written_ += data.size();
  if (chunked_) {
    out_.append_hex(data.size());
    out_.append("\r\n");
  }
  if (data.size() < gather_limit) {
    out_.append(data);
    if (chunked_) out_.append("\r\n");
    if (!send_now && out_.size() < gather_limit) co_return result<void>{};
    auto sent = co_await send_buffered();
    co_return sent;
  }
  auto sent = co_await send_buffered();  // the chunk header and earlier parts
  if (!sent) co_return sent;
  result<std::size_t> w;  // bounded by the send timeout (over TLS, a deadline on its operations)
  if (tls_ != nullptr) {
    auto op = tls_->send_all(data, ::ringio::detail::steady_now() + timeout_);
    w = co_await op;
  } else {
    w = co_await with_timeout(socket_->send_all(data), timeout_);
  }
  if (!w || *w != data.size()) {  // a short count: stopped part-way
    failed_ = true;
    co_return unexpected(w ? std::make_error_code(std::errc::timed_out) : w.error());
  }
  if (chunked_) out_.append("\r\n");
  if (!send_now) co_return result<void>{};
  auto tail = co_await send_buffered();  // a chunk is complete only with its CRLF
  co_return tail;
}

task<result<void>> body_writer::flush() {
  auto sent = co_await send_buffered();
  co_return sent;
}

void body_writer::finish() {
  if (chunked_) out_.append("0\r\n\r\n");
}

task<result<void>> body_writer::send_buffered() {
  if (out_.empty()) co_return result<void>{};
  const std::size_t size = out_.view().size();
  result<std::size_t> w;
  if (tls_ != nullptr) {
    auto op = tls_->send_all(out_.view(), ::ringio::detail::steady_now() + timeout_);
    w = co_await op;
  } else {
    w = co_await with_timeout(socket_->send_all(out_.view()), timeout_);
  }
  out_.clear();
  if (!w || *w != size) {  // a short count: stopped part-way
    failed_ = true;
    co_return unexpected(w ? std::make_error_code(std::errc::timed_out) : w.error());
  }
  co_return result<void>{};
}

}  // namespace ringio::http
