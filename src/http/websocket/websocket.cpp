// SPDX-License-Identifier: Apache-2.0
// websocket — receiving (frames parsed and unmasked in place, fragments joined,
// control frames answered), sending (one whole frame at a time under the write lock),
// and the close handshake.
#include "ringio/http/websocket.hpp"

#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>

#include "client/client_connection.hpp"
#include "core/sys.hpp"
#include "ringio/io_context.hpp"
#include "ringio/stop.hpp"
#include "ringio/time/sleep.hpp"
#include "ringio/time/timeout.hpp"
#include "ringio/tls/error.hpp"
#include "websocket_state.hpp"

namespace ringio::http {

namespace {

using detail::websocket_state;
using detail::ws_opcode;
using clock = std::chrono::steady_clock;

constexpr std::size_t initial_buffer = 4096;
// A server's payloads from this size on are sent where they lie, after their header, in
// one gathered send; smaller ones are cheaper copied behind the header (a plain send).
constexpr std::size_t gather_threshold = 2048;
constexpr std::size_t linger_bytes = 1 << 20;  // read and dropped at most, waiting for the peer's end

// Clears a flag when the operation that set it ends, however it ends.
struct flag_guard {
  bool& flag;
  ~flag_guard() { flag = false; }
};

std::error_code errc(websocket_errc e) noexcept { return make_error_code(e); }

// Codes a close frame may carry (RFC 6455 section 7.4; 1004-1006 and 1015 never travel).
bool valid_close_code(std::uint16_t code) noexcept {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

// Makes room in the receive buffer for `want` bytes from s.begin, and at least one
// byte to receive into.
void reserve_input(websocket_state& s, std::size_t want) {
  if (s.begin == s.end) s.begin = s.end = 0;
  const std::size_t used = s.end - s.begin;
  const std::size_t need = std::max(want, used + 1);
  if (s.capacity - s.begin >= need && s.end < s.capacity) return;
  if (s.capacity >= need) {
    std::memmove(s.in.get(), s.in.get() + s.begin, used);
  } else {
    std::size_t cap = std::max(s.capacity * 2, initial_buffer);
    while (cap < need) cap *= 2;
    auto fresh = std::make_unique_for_overwrite<unsigned char[]>(cap);
    if (used > 0) std::memcpy(fresh.get(), s.in.get() + s.begin, used);
    s.in = std::move(fresh);
    s.capacity = cap;
  }
  s.begin = 0;
  s.end = used;
}

task<result<std::size_t>> read_some(websocket_state& s, clock::time_point deadline) {
  mutable_buffer b(s.in.get() + s.end, s.capacity - s.end);
  if (s.secure != nullptr) {
    auto n = co_await s.secure->recv(b, deadline);
    co_return n;
  }
  if (deadline == clock::time_point{}) {
    auto n = co_await s.socket->recv(b);
    co_return n;
  }
  auto n = co_await with_deadline(s.socket->recv(b), deadline);
  co_return n;
}

// The send watchdog: while a frame is in flight, wakes when it is due (send_began +
// send_timeout) and, if that frame is still going, shuts the sending side of the
// socket down under it (the send fails; the receiving side stays). Ends when it finds
// no send in flight, so an idle websocket holds no timer.
task<void> watch_sends(websocket_state& s) {
  for (;;) {
    if (s.send_began == clock::time_point{} || s.write_failed) co_return;
    const clock::time_point due = s.send_began + s.opts.send_timeout;
    if (clock::now() >= due) {
      s.send_expired = true;
      (void)::ringio::detail::sys::shutdown(s.socket->native_handle(), SHUT_WR);
      co_return;
    }
    auto slept = co_await sleep_until(due);
    if (!slept) co_return;  // stopped: the websocket is going
  }
}

task<void> run_watchdog(std::shared_ptr<websocket_state> s) {
  const std::stop_token token = s->keeper_stop.get_token();
  task<void> t = watch_sends(*s);
  ringio::detail::token_awaiter<void> op{t, &token};
  co_await op;
  s->watchdog_running = false;
}

// Whether the watchdog bounds this send (starting it if none runs); else the send
// carries its own deadline (no loop, or the websocket's tasks are being stopped).
bool watched(websocket_state& s) {
  if (s.watchdog_running) return true;
  io_context* loop = io_context::current();
  if (loop == nullptr || s.keeper_stop.stop_requested() || s.opts.send_timeout.count() <= 0) return false;
  s.watchdog_running = true;
  loop->spawn(run_watchdog(s.shared_from_this()));
  return true;
}

// Marks a frame in flight for the watchdog until the send ends, however it ends.
struct send_in_flight {
  websocket_state& s;
  ~send_in_flight() { s.send_began = clock::time_point{}; }
};

// Sends the frame in s.out (a client's, or any over TLS: one record).
task<result<std::size_t>> write_all(websocket_state& s, std::size_t size, clock::time_point deadline) {
  const_buffer b(s.out.get(), size);
  if (s.secure != nullptr) {
    auto n = co_await s.secure->send_all(b, deadline);
    co_return n;
  }
  if (watched(s)) {
    s.send_began = deadline - s.opts.send_timeout;
    const send_in_flight marked{s};
    auto n = co_await s.socket->send_all(b);
    co_return n;
  }
  auto n = co_await with_deadline(s.socket->send_all(b), deadline);
  co_return n;
}

// Sends a server's frame on a plain socket: its header (in s.head) and the payload,
// where it lies, in one gathered send.
task<result<std::size_t>> write_gathered(websocket_state& s, std::size_t head, std::string_view payload,
                                         clock::time_point deadline) {
  const const_buffer pieces[2] = {const_buffer(s.head, head), const_buffer(payload.data(), payload.size())};
  const std::span<const const_buffer> frame(pieces);
  if (watched(s)) {
    s.send_began = deadline - s.opts.send_timeout;
    const send_in_flight marked{s};
    auto n = co_await s.socket->send_all(frame);
    co_return n;
  }
  auto n = co_await with_deadline(s.socket->send_all(frame), deadline);
  co_return n;
}

// The next random mask key of a client (RFC 6455 section 5.3: a fresh unpredictable
// key for every frame); nullptr when no random bytes could be had.
const unsigned char* next_mask(websocket_state& s) noexcept {
  if (s.mask_used + 4 > sizeof(s.mask_pool)) {
    if (RAND_bytes(s.mask_pool, sizeof(s.mask_pool)) != 1) return nullptr;
    s.mask_used = 0;
  }
  const unsigned char* mask = s.mask_pool + s.mask_used;
  s.mask_used += 4;
  return mask;
}

// Copies one frame into s.out, masked with `mask` (a client's) or not; its size.
std::size_t build_frame(websocket_state& s, ws_opcode op, bool fin, std::string_view payload, bool rsv1,
                        const unsigned char* mask) {
  const std::size_t need = detail::max_frame_header + payload.size();
  if (s.out_capacity < need) {
    s.out_capacity = std::max(need, std::size_t{256});
    s.out = std::make_unique_for_overwrite<unsigned char[]>(s.out_capacity);
  }
  const std::size_t head = detail::encode_frame_header(s.out.get(), op, fin, payload.size(), mask, rsv1);
  const auto* from = reinterpret_cast<const unsigned char*>(payload.data());
  if (mask != nullptr) {
    detail::copy_masked(s.out.get() + head, from, payload.size(), mask);
  } else if (!payload.empty()) {
    std::memcpy(s.out.get() + head, from, payload.size());
  }
  return head + payload.size();
}

// Sends one frame: a server's on a plain socket without copying its payload (the
// caller's bytes, or the deflate codec's) unless it is small; a client's masked into
// s.out; any over TLS built in s.out. The bytes that went out, or the error when none did.
task<result<std::size_t>> send_one_frame(websocket_state& s, ws_opcode op, bool fin, std::string_view payload,
                                         bool rsv1, clock::time_point deadline, std::size_t& size) {
  const unsigned char* mask = nullptr;
  if (s.client) {
    mask = next_mask(s);
    if (mask == nullptr) co_return unexpected(std::make_error_code(std::errc::io_error));  // no random mask key
  }
  if (mask == nullptr && s.secure == nullptr && payload.size() >= gather_threshold) {
    const std::size_t head = detail::encode_frame_header(s.head, op, fin, payload.size(), nullptr, rsv1);
    size = head + payload.size();
    auto n = co_await write_gathered(s, head, payload, deadline);
    co_return n;
  }
  size = build_frame(s, op, fin, payload, rsv1, mask);
  auto n = co_await write_all(s, size, deadline);
  co_return n;
}

// Sends a message or control frame; data messages over max_send_frame_bytes go as
// several frames. Everything of one call goes out before another caller's frames.
task<result<void>> send_frame(websocket_state& s, ws_opcode op, std::string_view payload) {
  auto lock = co_await s.write_lock.lock();
  if (!lock) co_return unexpected(lock.error());
  if (s.keepalive_expired) co_return unexpected(errc(websocket_errc::ping_timeout));
  if (s.close_sent) co_return unexpected(errc(websocket_errc::closed));
  if (s.write_failed) co_return unexpected(std::make_error_code(std::errc::broken_pipe));
  if (op == ws_opcode::close) s.close_sent = true;
  // Compressed under the lock: the peer inflates messages in the order they go out.
  bool compressed = false;
  if (s.deflate && !detail::is_control(op) && s.deflate->can_compress() && payload.size() >= s.opts.deflate.threshold) {
    const std::string_view deflated = s.deflate->compress(payload);
    if (deflated.data() == nullptr) co_return unexpected(std::make_error_code(std::errc::not_enough_memory));
    payload = deflated;
    compressed = true;
  }
  const std::size_t piece = s.opts.max_send_frame_bytes == 0 || detail::is_control(op)
                                ? payload.size()
                                : std::min(payload.size(), s.opts.max_send_frame_bytes);
  std::size_t offset = 0;
  do {
    const std::string_view part = payload.substr(offset, piece);
    const bool fin = offset + part.size() == payload.size();
    const clock::time_point deadline = clock::now() + s.opts.send_timeout;
    std::size_t size = 0;
    auto sent = co_await send_one_frame(s, offset == 0 ? op : ws_opcode::continuation, fin, part,
                                        compressed && offset == 0, deadline, size);
    if (!sent && size == 0) co_return unexpected(sent.error());  // no random mask key: nothing went
    if (!sent || *sent != size) {
      s.write_failed = true;  // a frame cut short: nothing may follow it
      if (s.keepalive_expired) co_return unexpected(errc(websocket_errc::ping_timeout));     // ended under us
      if (s.send_expired) co_return unexpected(std::make_error_code(std::errc::timed_out));  // the watchdog's
      if (!sent) co_return unexpected(sent.error());
      // Part of it went out: say why it stopped (a stop, send_timeout, the peer).
      const std::stop_token stop = co_await current_stop_token();
      if (stop.stop_requested()) co_return unexpected(errno_code(-ECANCELED));
      if (clock::now() >= deadline) co_return unexpected(std::make_error_code(std::errc::timed_out));
      co_return unexpected(std::make_error_code(std::errc::broken_pipe));
    }
    offset += part.size();
    if (offset < payload.size()) {
      // A stop (a drain) between the frames of a message cuts it there: the rest never
      // goes, and neither does anything else.
      const std::stop_token stop = co_await current_stop_token();
      if (stop.stop_requested()) {
        s.write_failed = true;
        co_return unexpected(errno_code(-ECANCELED));
      }
    }
  } while (offset < payload.size());
  co_return result<void>{};
}

task<result<void>> send_close_frame(websocket_state& s, std::uint16_t code, std::string_view reason) {
  unsigned char payload[125];
  std::size_t size = 0;
  if (code != websocket::no_status) {
    payload[0] = static_cast<unsigned char>(code >> 8);
    payload[1] = static_cast<unsigned char>(code);
    if (!reason.empty()) std::memcpy(payload + 2, reason.data(), reason.size());
    size = 2 + reason.size();
  }
  auto sent = co_await send_frame(s, ws_opcode::close, {reinterpret_cast<const char*>(payload), size});
  co_return sent;
}

// After the close frames: ends our side of the stream, then reads (and drops) until the
// peer ends its side or `deadline`, so that nothing unread turns our close into a reset
// that could destroy the close frame on its way.
task<void> linger(websocket_state& s, clock::time_point deadline) {
  {
    auto lock = co_await s.write_lock.lock();
    if (!lock || s.write_failed) co_return;
    s.write_failed = true;  // nothing more goes out
    if (s.secure != nullptr) {
      auto notified = co_await s.secure->send_close_notify(std::max(deadline - clock::now(), clock::duration(1)));
      if (!notified) co_return;
    } else if (::ringio::detail::sys::shutdown(s.socket->native_handle(), SHUT_WR) != 0) {
      co_return;
    }
  }
  std::size_t dropped = 0;
  while (dropped < linger_bytes) {
    s.begin = s.end = 0;
    reserve_input(s, initial_buffer);
    auto n = co_await read_some(s, deadline);
    if (!n || *n == 0) break;
    dropped += *n;
  }
  s.begin = s.end = 0;
}

// Fails the connection (RFC 6455 section 7.1.7): a close frame with `code`, then the end.
task<result<websocket_message>> fail(websocket_state& s, std::uint16_t code, websocket_errc why) {
  s.failed = true;
  s.close_code = code;
  if (!s.close_sent) {
    auto sent = co_await send_close_frame(s, code, {});
    (void)sent;
  }
  co_await linger(s, clock::now() + s.opts.close_timeout);
  co_return unexpected(errc(why));
}

task<result<websocket_message>> on_close_frame(websocket_state& s, std::string_view data) {
  std::uint16_t code = websocket::no_status;
  std::string_view reason;
  if (data.size() == 1) co_return co_await fail(s, websocket::protocol_error, websocket_errc::protocol_error);
  if (data.size() >= 2) {
    code = static_cast<std::uint16_t>((static_cast<unsigned char>(data[0]) << 8) | static_cast<unsigned char>(data[1]));
    if (!valid_close_code(code)) co_return co_await fail(s, websocket::protocol_error, websocket_errc::protocol_error);
    reason = data.substr(2);
    if (!detail::is_valid_utf8(reason))
      co_return co_await fail(s, websocket::invalid_payload, websocket_errc::invalid_utf8);
  }
  s.close_received = true;
  s.close_code = code;
  s.close_reason.assign(reason);
  if (!s.close_sent) {  // the reply echoes the code (section 5.5.1)
    auto sent = co_await send_close_frame(s, code, {});
    (void)sent;
  }
  co_await linger(s, clock::now() + s.opts.close_timeout);
  co_return unexpected(errc(websocket_errc::closed));
}

websocket_message::kind kind_of(ws_opcode op) noexcept {
  return op == ws_opcode::text ? websocket_message::kind::text : websocket_message::kind::binary;
}

// A data frame's payload; true when it completes a message (in `out`).
enum class data_step { more, message, protocol_error, too_big, bad_utf8 };

// A frame of a compressed message: inflated into the codec's buffer, never past
// max_message_bytes (a bomb stops there), the new text checked as it comes.
data_step take_compressed_frame(websocket_state& s, const detail::frame_header& h, std::string_view data,
                                websocket_message& out) {
  detail::deflate_codec& z = *s.deflate;
  if (h.opcode != ws_opcode::continuation) {
    s.in_message = true;
    s.message_op = h.opcode;
    s.utf8.reset();
    z.begin_message();
  }
  const std::size_t before = z.inflated().size();
  using st = detail::deflate_codec::inflate_status;
  const st r =
      z.inflate(reinterpret_cast<const unsigned char*>(data.data()), data.size(), h.fin, s.opts.max_message_bytes);
  if (r == st::too_big) return data_step::too_big;
  if (r == st::bad_data) return data_step::protocol_error;
  const std::string_view fresh = z.inflated().substr(before);
  const bool text = s.message_op == ws_opcode::text;
  if (text && !s.utf8.feed(reinterpret_cast<const unsigned char*>(fresh.data()), fresh.size()))
    return data_step::bad_utf8;
  if (!h.fin) return data_step::more;
  if (text && !s.utf8.complete()) return data_step::bad_utf8;
  s.in_message = false;
  z.end_message();
  out = {kind_of(s.message_op), z.inflated()};
  return data_step::message;
}

data_step take_data_frame(websocket_state& s, const detail::frame_header& h, std::string_view data,
                          websocket_message& out) {
  const bool first = h.opcode != ws_opcode::continuation;
  if (first == s.in_message) return data_step::protocol_error;  // a new message inside one, or a stray continuation
  if (first) s.message_compressed = h.rsv1;
  if (s.message_compressed) return take_compressed_frame(s, h, data, out);
  if (first && h.fin) {  // a whole message in one frame: delivered from the receive buffer
    if (data.size() > s.opts.max_message_bytes) return data_step::too_big;
    if (h.opcode == ws_opcode::text && !detail::is_valid_utf8(data)) return data_step::bad_utf8;
    out = {kind_of(h.opcode), data};
    return data_step::message;
  }
  if (first) {
    s.in_message = true;
    s.message_op = h.opcode;
    s.message.clear();
    s.utf8.reset();
  }
  if (s.message.size() + data.size() > s.opts.max_message_bytes) return data_step::too_big;
  s.message.append(data);
  const bool text = s.message_op == ws_opcode::text;
  if (text && !s.utf8.feed(reinterpret_cast<const unsigned char*>(data.data()), data.size()))
    return data_step::bad_utf8;
  if (!h.fin) return data_step::more;
  if (text && !s.utf8.complete()) return data_step::bad_utf8;
  s.in_message = false;
  s.message_delivered = true;
  out = {kind_of(s.message_op), s.message};
  return data_step::message;
}

// Receives the next message, answering control frames; `hard_deadline` (none: {})
// bounds it (timed_out).
task<result<websocket_message>> receive_until(websocket_state& s, clock::time_point hard_deadline) {
  if (s.keepalive_expired) co_return unexpected(errc(websocket_errc::ping_timeout));
  if (s.close_received || s.failed) co_return unexpected(errc(websocket_errc::closed));
  if (s.receiving) co_return unexpected(errc(websocket_errc::busy));
  s.receiving = true;
  flag_guard receiving{s.receiving};
  if (s.message_delivered) {
    s.message.clear();
    s.message_delivered = false;
  }
  for (;;) {
    detail::frame_header h;
    // A frame longer than a whole message may be is refused before its payload arrives.
    const std::size_t limit = std::min(s.opts.max_frame_bytes, s.opts.max_message_bytes);
    const detail::frame_check check =
        detail::parse_frame_header(s.in.get() + s.begin, s.end - s.begin, !s.client, limit, h, s.deflate != nullptr);
    if (check == detail::frame_check::protocol_error)
      co_return co_await fail(s, websocket::protocol_error, websocket_errc::protocol_error);
    if (check == detail::frame_check::too_big)
      co_return co_await fail(s, websocket::message_too_big, websocket_errc::message_too_big);
    if (check == detail::frame_check::complete && s.end - s.begin >= h.header_size + h.payload_length) {
      unsigned char* payload = s.in.get() + s.begin + h.header_size;
      const auto size = static_cast<std::size_t>(h.payload_length);
      if (h.masked) detail::apply_mask(payload, size, h.mask);
      s.begin += h.header_size + size;
      const std::string_view data(reinterpret_cast<const char*>(payload), size);
      if (h.opcode == ws_opcode::ping) {
        if (!s.close_sent) {
          auto sent = co_await send_frame(s, ws_opcode::pong, data);
          if (!sent && s.write_failed) {  // no answer can go out any more: the connection is lost
            s.failed = true;
            s.close_code = websocket::abnormal_closure;
            co_return unexpected(sent.error());
          }
          if (!sent) co_return unexpected(sent.error());  // stopped while waiting to write
        }
        continue;
      }
      if (h.opcode == ws_opcode::pong) {
        s.ping_outstanding = false;
        continue;
      }
      if (h.opcode == ws_opcode::close) co_return co_await on_close_frame(s, data);
      websocket_message m;
      switch (take_data_frame(s, h, data, m)) {
        case data_step::more:
          continue;
        case data_step::message:
          co_return m;
        case data_step::protocol_error:
          co_return co_await fail(s, websocket::protocol_error, websocket_errc::protocol_error);
        case data_step::too_big:
          co_return co_await fail(s, websocket::message_too_big, websocket_errc::message_too_big);
        case data_step::bad_utf8:
          co_return co_await fail(s, websocket::invalid_payload, websocket_errc::invalid_utf8);
      }
    }
    const std::size_t want = check == detail::frame_check::complete
                                 ? static_cast<std::size_t>(h.header_size + h.payload_length)
                                 : detail::max_frame_header;
    reserve_input(s, want);
    clock::time_point deadline = hard_deadline;
    bool close_due = false;
    if (s.close_deadline != clock::time_point{} && (deadline == clock::time_point{} || s.close_deadline < deadline)) {
      deadline = s.close_deadline;
      close_due = true;
    }
    bool keep_alive_due = false;
    if (s.opts.ping_interval.count() > 0) {
      const clock::time_point due =
          s.ping_outstanding ? s.ping_sent + s.opts.ping_timeout : s.last_input + s.opts.ping_interval;
      if (deadline == clock::time_point{} || due < deadline) {
        deadline = due;
        keep_alive_due = true;
        close_due = false;
      }
    }
    auto n = co_await read_some(s, deadline);
    if (s.keepalive_expired) co_return unexpected(errc(websocket_errc::ping_timeout));  // ended under us
    if (!n) {
      const std::stop_token stop = co_await current_stop_token();
      if (n.error() == std::errc::timed_out && (keep_alive_due || close_due) && stop.stop_requested())
        co_return unexpected(errno_code(-ECANCELED));        // our caller's stop, not ours
      if (n.error() == std::errc::timed_out && close_due) {  // the peer never answered close()
        s.failed = true;
        s.close_code = websocket::abnormal_closure;
        co_return unexpected(errc(websocket_errc::closed));
      }
      if (n.error() == std::errc::timed_out && keep_alive_due) {
        if (s.ping_outstanding) {
          s.failed = true;
          s.close_code = websocket::abnormal_closure;
          co_return unexpected(errc(websocket_errc::ping_timeout));
        }
        const clock::time_point sent_at = clock::now();
        auto sent = co_await send_frame(s, ws_opcode::ping, {});
        if (!sent && s.write_failed) {
          s.failed = true;
          s.close_code = websocket::abnormal_closure;
          co_return unexpected(sent.error());
        }
        if (!sent) co_return unexpected(sent.error());  // stopped while waiting to write
        s.ping_outstanding = true;                      // only a ping that went out is waited for
        s.ping_sent = sent_at;
        continue;
      }
      if (n.error() == tls::tls_errc::truncated) {
        s.failed = true;
        s.close_code = websocket::abnormal_closure;
        co_return unexpected(errc(websocket_errc::connection_lost));
      }
      if (n.error() != std::errc::operation_canceled && n.error() != std::errc::timed_out) {
        s.failed = true;
        s.close_code = websocket::abnormal_closure;
      }
      co_return unexpected(n.error());
    }
    if (*n == 0) {
      s.failed = true;
      s.close_code = websocket::abnormal_closure;
      co_return unexpected(errc(websocket_errc::connection_lost));
    }
    s.end += *n;
    s.last_input = clock::now();
    s.ping_outstanding = false;
  }
}

// How many bytes the kernel has received from the peer (TCP_INFO), read by the websocket
// or not; nothing when it cannot tell (not TCP).
std::optional<std::uint64_t> kernel_bytes_received(websocket_state& s) noexcept {
  const stream_socket& tcp = s.secure != nullptr ? s.secure->socket() : *s.socket;
  tcp_info info{};
  socklen_t size = sizeof(info);
  if (::getsockopt(tcp.native_handle(), IPPROTO_TCP, TCP_INFO, &info, &size) != 0 ||
      size < offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received))
    return std::nullopt;
  return info.tcpi_bytes_received;
}

// Keep-alive while no receive() waits (receive() does it itself meanwhile): a ping
// after ping_interval without input, and the peer given up when nothing arrives within
// ping_timeout after it. Input is what the kernel received (its byte count grew),
// read or not, so a session that only sends needs no receive() for pongs to count.
// Where the kernel cannot tell (not TCP), keep-alive runs only within receive().
task<void> keep_alive(websocket_state& s) {
  const std::optional<std::uint64_t> first = kernel_bytes_received(s);
  if (!first) co_return;
  std::uint64_t seen = *first;
  clock::time_point heard = clock::now();
  for (;;) {
    if (s.close_sent || s.close_received || s.failed || s.write_failed) co_return;
    const clock::time_point now = clock::now();
    const std::uint64_t bytes = kernel_bytes_received(s).value_or(seen);
    if (bytes != seen) {  // the peer sent something since we last looked
      seen = bytes;
      heard = now;
      s.ping_outstanding = false;
    }
    heard = std::max(heard, s.last_input);
    const clock::time_point due = s.ping_outstanding ? s.ping_sent + s.opts.ping_timeout : heard + s.opts.ping_interval;
    if (s.receiving || now < due) {
      auto slept = co_await sleep_until(s.receiving ? now + s.opts.ping_interval : due);
      if (!slept) co_return;  // stopped: the websocket is going
      continue;
    }
    if (s.ping_outstanding) {  // silent since the ping: the connection ends under any operation
      s.keepalive_expired = true;
      s.failed = true;
      s.close_code = websocket::abnormal_closure;
      const stream_socket& tcp = s.secure != nullptr ? s.secure->socket() : *s.socket;
      (void)::ringio::detail::sys::shutdown(tcp.native_handle(), SHUT_RDWR);
      co_return;
    }
    auto sent = co_await send_frame(s, ws_opcode::ping, {});
    if (!sent) co_return;
    s.ping_outstanding = true;
    s.ping_sent = now;
  }
}

task<void> run_keeper(std::shared_ptr<websocket_state> s) {
  const std::stop_token token = s->keeper_stop.get_token();
  task<void> t = keep_alive(*s);
  ringio::detail::token_awaiter<void> op{t, &token};
  co_await op;
  s->keeper_running = false;
}

task<void> wait_for_keeper(websocket_state& s) {
  while (s.keeper_running || s.watchdog_running) (void)co_await sleep_for(std::chrono::milliseconds(1));
}

std::shared_ptr<websocket_state> make_state(bool client, std::string_view received, websocket_options opts,
                                            std::string subprotocol, const detail::deflate_agreement& deflate) {
  auto s = std::make_shared<websocket_state>();
  if (deflate.enabled) s->deflate = std::make_unique<detail::deflate_codec>(deflate, opts.deflate.level);
  s->client = client;
  s->opts = opts;
  s->subprotocol = std::move(subprotocol);
  s->last_input = clock::now();
  reserve_input(*s, std::max(received.size(), initial_buffer));
  if (!received.empty()) std::memcpy(s->in.get(), received.data(), received.size());
  s->end = received.size();
  return s;
}

}  // namespace

websocket::websocket() noexcept = default;
websocket::websocket(std::shared_ptr<detail::websocket_state> s) noexcept : s_(std::move(s)) {}
websocket::websocket(websocket&& other) noexcept = default;

websocket& websocket::operator=(websocket&& other) noexcept {
  if (this != &other) {
    release();
    s_ = std::move(other.s_);
  }
  return *this;
}

websocket::~websocket() { release(); }

void websocket::release() noexcept {
  if (s_) s_->keeper_stop.request_stop();  // the keeper ends on the loop, dropping its share
  s_.reset();
}

void websocket::start_keep_alive() {
  io_context* loop = io_context::current();
  if (!s_ || s_->opts.ping_interval.count() <= 0 || s_->keeper_running || loop == nullptr) return;
  s_->keeper_running = true;
  loop->spawn(run_keeper(s_));
}

task<void> websocket::stop_keep_alive() {
  if (!s_) co_return;
  s_->keeper_stop.request_stop();
  const std::stop_token never;  // waits whatever the caller's stop: the keeper uses the stream
  task<void> wait = wait_for_keeper(*s_);
  ringio::detail::token_awaiter<void> op{wait, &never};
  co_await op;
}

websocket websocket::server(upgraded_connection& conn, websocket_options opts, std::string subprotocol) {
  return server(conn, opts, std::move(subprotocol), detail::deflate_agreement{});
}

websocket websocket::server(upgraded_connection& conn, websocket_options opts, std::string subprotocol,
                            const detail::deflate_agreement& deflate) {
  auto s = make_state(false, conn.received, opts, std::move(subprotocol), deflate);
  s->socket = conn.socket;
  s->secure = conn.secure;
  return websocket(std::move(s));
}

websocket websocket::client(detail::connection_ptr conn, std::string_view received, websocket_options opts,
                            std::string subprotocol, const detail::deflate_agreement& deflate) {
  auto s = make_state(true, received, opts, std::move(subprotocol), deflate);
  if (conn->secure) {
    s->secure = &*conn->secure;
  } else {
    s->socket = &conn->socket;
  }
  s->owned = std::move(conn);
  return websocket(std::move(s));
}

task<result<websocket_message>> websocket::receive() {
  if (!s_) co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  auto m = co_await receive_until(*s_, {});
  co_return m;
}

task<result<void>> websocket::send_text(std::string_view text) {
  if (!s_ || !detail::is_valid_utf8(text)) co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  auto sent = co_await send_frame(*s_, ws_opcode::text, text);
  co_return sent;
}

task<result<void>> websocket::send_binary(std::string_view data) {
  if (!s_) co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  auto sent = co_await send_frame(*s_, ws_opcode::binary, data);
  co_return sent;
}

task<result<void>> websocket::ping(std::string_view payload) {
  if (!s_ || payload.size() > 125) co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  auto sent = co_await send_frame(*s_, ws_opcode::ping, payload);
  co_return sent;
}

task<result<void>> websocket::close(std::uint16_t code, std::string_view reason) {
  if (!s_ || !valid_close_code(code) || reason.size() > 123 || !detail::is_valid_utf8(reason))
    co_return unexpected(std::make_error_code(std::errc::invalid_argument));
  websocket_state& s = *s_;
  if (s.close_received || s.failed) co_return unexpected(errc(websocket_errc::closed));
  auto sent = co_await send_close_frame(s, code, reason);
  if (!sent) co_return sent;
  if (s.receiving) {
    // That receive sees the answer. Its read may have no deadline to shorten: if it
    // still waits after close_timeout, the connection is ended under it.
    s.close_deadline = clock::now() + s.opts.close_timeout;
    while (s.receiving && clock::now() < s.close_deadline) {
      auto slept = co_await sleep_for(std::chrono::milliseconds(10));
      if (!slept) co_return unexpected(slept.error());
    }
    if (s.receiving) {
      stream_socket& tcp = s.secure != nullptr ? s.secure->socket() : *s.socket;
      (void)::ringio::detail::sys::shutdown(tcp.native_handle(), SHUT_RDWR);
    }
    co_return result<void>{};
  }
  const clock::time_point deadline = clock::now() + s.opts.close_timeout;
  for (;;) {
    auto m = co_await receive_until(s, deadline);
    if (m) continue;  // a message sent before the peer saw our close: dropped
    if (m.error() == websocket_errc::closed) co_return result<void>{};
    co_return unexpected(m.error());
  }
}

bool websocket::is_open() const noexcept {
  return s_ != nullptr && !s_->close_sent && !s_->close_received && !s_->failed && !s_->write_failed;
}

std::uint16_t websocket::close_code() const noexcept { return s_ != nullptr ? s_->close_code : 0; }

std::string_view websocket::close_reason() const noexcept {
  return s_ != nullptr ? std::string_view(s_->close_reason) : std::string_view();
}

bool websocket::compressed() const noexcept { return s_ != nullptr && s_->deflate != nullptr; }

std::string_view websocket::subprotocol() const noexcept {
  return s_ != nullptr ? std::string_view(s_->subprotocol) : std::string_view();
}

const websocket_options& websocket::options() const noexcept { return s_->opts; }

}  // namespace ringio::http
