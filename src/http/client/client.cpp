// SPDX-License-Identifier: Apache-2.0
// http::client: request serialization, the connection pool, the stale-connection
// retry and redirects. Responses are framed by response_stream.
#include "ringio/http/client.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "client_connection.hpp"
#include "core/sys.hpp"
#include "ringio/detail/clock.hpp"
#include "ringio/http/resolver.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/timeout.hpp"

namespace ringio::http {
namespace detail {
void client_connection_deleter::operator()(client_connection* c) const noexcept { delete c; }
}  // namespace detail

namespace {

bool idempotent(method m) noexcept {
  switch (m) {
    case method::get:
    case method::head:
    case method::put:
    case method::delete_:
    case method::options:
    case method::trace:
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool is_field_value(std::string_view s) noexcept {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// Errors a pooled connection that the server had already closed produces.
bool stale_error(const std::error_code& ec) noexcept {
  return ec == std::errc::connection_reset || ec == std::errc::broken_pipe || ec == std::errc::connection_aborted ||
         ec == client_errc::connection_closed || ec == tls::tls_errc::truncated;
}

std::error_code phase_error(const std::error_code& ec, client_errc timeout) noexcept {
  if (ec == std::errc::timed_out) return make_error_code(timeout);
  return ec;
}

// Whether a pooled connection still looks usable: nothing to read and not closed.
// Anything waiting (a close_notify before the FIN, an unsolicited response, a TLS
// record) means the connection is not in the state a new request needs.
bool looks_alive(const detail::client_connection& c) noexcept {
  if (c.secure && c.secure->has_buffered_input()) return false;
  char b;
  for (;;) {
    const ssize_t n = ::ringio::detail::sys::recv(c.secure ? c.secure->native_handle() : c.socket.native_handle(), &b,
                                                  1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

void append_number(std::string& out, std::uint64_t v) {
  char digits[24];
  auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append(": ");
  out.append(value);
  out.append("\r\n");
}

// Fields not sent to another origin than the request's first one.
bool is_credential(std::string_view name) noexcept {
  return iequals(name, "authorization") || iequals(name, "proxy-authorization") || iequals(name, "cookie");
}

// The caller's fields and Content-Type, checked before anything is sent.
bool valid_fields(const request_spec& spec) noexcept {
  for (const header& h : spec.headers) {
    if (!is_token(h.name) || !is_field_value(h.value)) return false;
    if (iequals(h.name, "host") || iequals(h.name, "content-length") || iequals(h.name, "transfer-encoding"))
      return false;
  }
  return is_field_value(spec.content_type);
}

result<void> build_head(detail::client_connection& c, const url& t, method m, const request_spec& spec,
                        bool cross_origin, bool with_body, const client_options& opts) {
  std::string& out = c.out;
  out.clear();
  out.append(to_string(m));
  out += ' ';
  if (t.target.empty() || t.target.front() == '?') out += '/';
  out.append(t.target);
  out.append(" HTTP/1.1\r\nHost: ");
  if (t.ipv6_literal) out += '[';
  out.append(t.host);
  if (t.ipv6_literal) out += ']';
  if (t.port != t.default_port()) {
    out += ':';
    append_number(out, t.port);
  }
  out.append("\r\n");
  bool user_agent = false;
  for (const header& h : spec.headers) {
    if (!is_token(h.name) || !is_field_value(h.value))
      return unexpected(make_error_code(client_errc::bad_request_header));
    if (iequals(h.name, "host") || iequals(h.name, "content-length") || iequals(h.name, "transfer-encoding"))
      return unexpected(make_error_code(client_errc::bad_request_header));
    if (cross_origin && is_credential(h.name)) continue;
    if (!with_body && iequals(h.name, "content-type")) continue;
    if (iequals(h.name, "user-agent")) user_agent = true;
    append_field(out, h.name, h.value);
  }
  if (!user_agent && !opts.user_agent.empty()) append_field(out, "User-Agent", opts.user_agent);
  if (with_body) {
    if (!is_field_value(spec.content_type)) return unexpected(make_error_code(client_errc::bad_request_header));
    if (!spec.content_type.empty()) append_field(out, "Content-Type", spec.content_type);
    if (spec.source) {
      append_field(out, "Transfer-Encoding", "chunked");
    } else if (!spec.body.empty() || m == method::post || m == method::put || m == method::patch) {
      out.append("Content-Length: ");
      append_number(out, spec.body.size());
      out.append("\r\n");
    }
  }
  out.append("\r\n");
  return {};
}

bool is_redirect(int status) noexcept {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

std::string_view client_response::header(std::string_view name) const noexcept {
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) return v;
  return {};
}

client::client(client_options opts) : opts_(std::move(opts)) {}

client::~client() = default;

void client::close_idle() noexcept { idle_.clear(); }

detail::connection_ptr client::checkout(const url& target) noexcept {
  const std::int64_t now = ringio::detail::monotonic_ns();
  const std::int64_t max_idle = std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.idle_timeout).count();
  for (std::size_t i = idle_.size(); i-- > 0;) {
    detail::client_connection& c = *idle_[i];
    if (now - c.idle_since_ns > max_idle) {
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (c.tls != target.tls || c.port != target.port || !iequals(c.host, target.host)) continue;
    detail::connection_ptr conn = std::move(idle_[i]);
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    if (looks_alive(*conn)) return conn;
  }
  return {};
}

void client::release(detail::connection_ptr conn) noexcept {
  if (!conn || opts_.max_idle_per_host == 0 || conn->begin != conn->end) return;
  std::size_t same = 0;
  std::size_t oldest = idle_.size();
  for (std::size_t i = 0; i < idle_.size(); ++i) {
    const detail::client_connection& c = *idle_[i];
    if (c.tls == conn->tls && c.port == conn->port && iequals(c.host, conn->host)) {
      if (oldest == idle_.size()) oldest = i;
      ++same;
    }
  }
  if (same >= opts_.max_idle_per_host) idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(oldest));
  conn->begin = conn->end = 0;
  conn->idle_since_ns = ringio::detail::monotonic_ns();
  try {
    idle_.push_back(std::move(conn));
  } catch (...) {  // no room to pool it: it closes
  }
}

std::error_code client::make_tls_context() {
  if (tls_context_) return {};
  tls::client_options o = opts_.tls;
  if (o.alpn.empty()) o.alpn.emplace_back("http/1.1");
  auto made = tls::context::client(o);
  if (!made) return made.error();
  tls_context_ = std::make_unique<tls::context>(std::move(*made));
  return {};
}

task<result<tls::stream>> client::handshake(const url& target, stream_socket socket) {
  auto s = tls::stream::client(*tls_context_, std::move(socket), target.host);
  if (!s) co_return unexpected(s.error());
  auto done = co_await s->handshake(opts_.tls_handshake_timeout);
  if (!done) co_return unexpected(phase_error(done.error(), client_errc::tls_handshake_timeout));
  co_return std::move(*s);
}

task<result<detail::connection_ptr>> client::connect(const url& target) {
  // A TLS setting that cannot work (a bad CA file) fails before any connection opens.
  if (target.tls) {
    if (auto ec = make_tls_context()) co_return unexpected(ec);
  }
  const std::int64_t deadline = ringio::detail::deadline_after(opts_.connect_timeout);
  auto addresses = co_await with_timeout(resolve(std::string(target.host), target.port), opts_.connect_timeout);
  if (!addresses) co_return unexpected(phase_error(addresses.error(), client_errc::connect_timeout));
  for (const socket_address& a : *addresses) {
    auto op = stream_socket::connect(a);
    op.set_deadline(deadline);
    auto s = co_await op;
    if (s) {
      detail::connection_ptr conn(
          new detail::client_connection(target.tls, target.host, target.port, opts_.max_head_bytes + 16 * 1024));
      ++stats_.connections_opened;
      if (target.tls) {
        auto secured = co_await handshake(target, std::move(*s));
        if (!secured) co_return unexpected(secured.error());
        conn->secure.emplace(std::move(*secured));
      } else {
        conn->socket = std::move(*s);
      }
      co_return conn;
    }
    if (s.error() == std::errc::timed_out) co_return unexpected(make_error_code(client_errc::connect_timeout));
    if (s.error() == std::errc::operation_canceled) co_return unexpected(s.error());
  }
  co_return unexpected(make_error_code(client_errc::connect_failed));
}

task<result<response_stream>> client::exchange(const url& target, method m, const request_spec& spec, bool cross_origin,
                                               bool with_body) {
  const bool streamed = with_body && static_cast<bool>(spec.source);
  for (int attempt = 0;; ++attempt) {
    // A retry after a stale pooled connection goes out on a new one: the other pooled
    // connections are as old as the one that failed.
    detail::connection_ptr conn = attempt == 0 ? checkout(target) : detail::connection_ptr{};
    const bool reused = conn != nullptr;
    if (reused) {
      ++stats_.connections_reused;
    } else {
      auto fresh = co_await connect(target);
      if (!fresh) co_return unexpected(fresh.error());
      conn = std::move(*fresh);
    }
    const bool may_retry = reused && idempotent(m) && !streamed;
    auto built = build_head(*conn, target, m, spec, cross_origin, with_body, opts_);
    if (!built) co_return unexpected(built.error());
    std::int64_t head_deadline = ringio::detail::deadline_after(opts_.head_timeout);

    // A send that fails with the connection's error (not the deadline, not a stop) may
    // be a server that answered early and closed: its answer is read below.
    std::error_code send_failure;
    {
      const std::string_view body = with_body && !streamed ? spec.body : std::string_view{};
      const std::array<const_buffer, 2> parts{const_buffer(conn->out.data(), conn->out.size()),
                                              const_buffer(body.data(), body.size())};
      auto sent = co_await detail::send_parts(*conn, parts, head_deadline);
      if (!sent) send_failure = sent.error();
    }
    if (send_failure == std::errc::timed_out || send_failure == std::errc::operation_canceled)
      co_return unexpected(phase_error(send_failure, client_errc::head_timeout));

    if (streamed && !send_failure) {
      char* area = conn->buffer.get();
      const std::size_t area_size = conn->capacity;
      for (;;) {
        auto produced = co_await spec.source(std::span<char>(area, area_size));
        if (!produced) {
          if (produced.error() == std::errc::operation_canceled) co_return unexpected(produced.error());
          co_return unexpected(make_error_code(client_errc::body_source_failed));
        }
        const std::size_t n = std::min(*produced, area_size);
        char size_line[24];
        auto r = std::to_chars(size_line, size_line + 16, n, 16);
        *r.ptr++ = '\r';
        *r.ptr++ = '\n';
        const std::string_view tail("\r\n");  // ends the chunk, or the body after "0\r\n"
        const std::array<const_buffer, 3> parts{const_buffer(size_line, static_cast<std::size_t>(r.ptr - size_line)),
                                                const_buffer(area, n), const_buffer(tail.data(), tail.size())};
        auto sent = co_await detail::send_parts(*conn, parts, ringio::detail::deadline_after(opts_.body_timeout));
        if (!sent) {
          if (sent.error() == std::errc::timed_out || sent.error() == std::errc::operation_canceled)
            co_return unexpected(phase_error(sent.error(), client_errc::body_timeout));
          send_failure = sent.error();
          break;
        }
        if (n == 0) break;
      }
      // However long the upload took, the server gets head_timeout to answer.
      head_deadline = ringio::detail::deadline_after(opts_.head_timeout);
    }

    // The response head, 1xx interim responses skipped. Their heads count towards
    // max_head_bytes with the final one, so that a flood of them ends.
    conn->begin = conn->end = 0;
    response_head head;
    std::size_t head_len = 0;
    std::size_t interim = 0;
    bool retry = false;
    for (;;) {
      if (interim >= opts_.max_head_bytes) co_return unexpected(make_error_code(client_errc::head_too_large));
      auto parsed = parse_response_head(std::string_view(conn->buffer.get() + conn->begin, conn->end - conn->begin),
                                        m == method::head, head, opts_.max_head_bytes - interim);
      if (!parsed) co_return unexpected(parsed.error());
      if (*parsed > 0) {
        if (head.status >= 100 && head.status < 200 && head.status != 101) {
          conn->begin += *parsed;
          interim += *parsed;
          continue;
        }
        head_len = *parsed;
        break;
      }
      if (conn->begin > 0) {
        std::memmove(conn->buffer.get(), conn->buffer.get() + conn->begin, conn->end - conn->begin);
        conn->end -= conn->begin;
        conn->begin = 0;
      }
      if (conn->end == conn->capacity) co_return unexpected(make_error_code(client_errc::head_too_large));
      auto n = co_await detail::receive_some(
          *conn, mutable_buffer(conn->buffer.get() + conn->end, conn->capacity - conn->end), head_deadline);
      if (!n || *n == 0) {
        std::error_code ec = !n ? n.error() : make_error_code(client_errc::connection_closed);
        // Nothing came back after a failed send: the send's error is the one to report.
        if (send_failure && ec != std::errc::operation_canceled) ec = send_failure;
        if (may_retry && conn->end == 0 && interim == 0 && stale_error(ec)) {
          retry = true;
          break;
        }
        co_return unexpected(phase_error(ec, client_errc::head_timeout));
      }
      conn->end += *n;
    }
    if (retry) {
      ++stats_.stale_retries;
      continue;
    }
    if (head.status == 101 || send_failure) head.keep_alive = false;
    // The head stays where it is (its views point there); the body follows it.
    const std::size_t body_begin = conn->begin + head_len;
    co_return response_stream(*this, std::move(conn), head, body_begin);
  }
}

task<result<response_stream>> client::stream_request(const request_spec& spec) {
  auto first = parse_url(spec.url);
  if (!first) co_return unexpected(first.error());
  if (!valid_fields(spec)) co_return unexpected(make_error_code(client_errc::bad_request_header));
  const url origin = *first;
  std::string location;  // owns the URL after a redirect
  std::string_view current = spec.url;
  method m = spec.method;
  bool with_body = true;
  bool cross_origin = false;  // once set, stays set (a redirect back does not undo it)
  for (unsigned redirects = 0;; ++redirects) {
    auto target = parse_url(current);
    if (!target) co_return unexpected(target.error());
    if (!origin.same_origin(*target)) cross_origin = true;
    auto rs = co_await exchange(*target, m, spec, cross_origin, with_body);
    if (!rs) co_return rs;
    const int status = rs->status();
    if (!opts_.follow_redirects || !is_redirect(status) || rs->header("location").empty()) co_return rs;
    if (status >= 307 && with_body && spec.source) co_return rs;  // a streamed body cannot be sent again
    if (redirects == opts_.max_redirects) co_return unexpected(make_error_code(client_errc::too_many_redirects));
    auto next = resolve_location(*target, rs->header("location"));
    if (!next) co_return unexpected(next.error());
    if (status <= 303 && m != method::head) {
      m = method::get;
      with_body = false;
    }
    // Read and drop the redirect's body so that its connection can be reused.
    std::array<char, 4096> sink;
    for (;;) {
      auto n = co_await rs->read(mutable_buffer(sink.data(), sink.size()));
      if (!n || *n == 0) break;
    }
    location = std::move(*next);
    current = location;
  }
}

task<result<client_response>> client::request(const request_spec& spec) {
  auto rs = co_await stream_request(spec);
  if (!rs) co_return unexpected(rs.error());
  client_response out;
  out.status = rs->status();
  out.reason = std::string(rs->reason());
  out.headers.reserve(rs->headers().size());
  for (const header& h : rs->headers()) out.headers.emplace_back(std::string(h.name), std::string(h.value));
  auto body = co_await rs->read_all(out.body);
  if (!body) co_return unexpected(body.error());
  co_return out;
}

task<result<client_response>> client::get(std::string_view url) {
  request_spec spec;
  spec.url = url;
  auto r = co_await request(spec);
  co_return r;
}

task<result<client_response>> client::post(std::string_view url, std::string_view body, std::string_view content_type) {
  request_spec spec;
  spec.method = method::post;
  spec.url = url;
  spec.body = body;
  spec.content_type = content_type;
  auto r = co_await request(spec);
  co_return r;
}

}  // namespace ringio::http
