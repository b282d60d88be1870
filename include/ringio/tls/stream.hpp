// SPDX-License-Identifier: Apache-2.0
// ringio/tls/stream.hpp — tls::stream: TLS over a ringio stream_socket, client or
// server, with the operations of stream_socket so that generic code takes either.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "ringio/buffer.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"
#include "ringio/tls/context.hpp"
#include "ringio/tls/error.hpp"
#include "ringio/tls/recv_wait.hpp"

using SSL = struct ssl_st;

namespace ringio::tls {

/// @cond INTERNAL
namespace detail {
struct stream_state;
}
/// @endcond

/// A TLS connection over a stream_socket it owns. OpenSSL works on memory: every byte
/// travels through ringio's own socket operations, so OpenSSL never blocks the loop
/// and never touches the socket. Record buffers are borrowed from a per-thread cache
/// only while an operation needs them: an idle connection holds none.
///
/// As on a stream_socket, one receiving operation (recv, recv_exact) and one sending
/// operation (send, send_all) may be in flight at a time; a second of the same
/// direction fails with tls_errc::busy. handshake() runs alone; shutdown() may run
/// while a recv is in flight, not while a send is.
///
/// Errors are std::error_codes of tls_category (OpenSSL's reason in message(),
/// tls_errc, certificate verification failures) or of the socket (connection_reset,
/// broken_pipe, timed_out, operation_canceled). The two directions are independent: a
/// socket error on sending is reported by that send and every later one, never by a
/// recv, which still delivers what the peer sent before it closed.
///
/// Cancellation: every operation obeys the awaiting task's stop token (and
/// ringio::with_timeout on the task): a stop completes it with operation_canceled.
/// A stopped recv loses nothing: ciphertext already received stays in the stream and
/// is decrypted by the next recv. A send stopped before OpenSSL took the bytes sends
/// nothing; one stopped while the encrypted record is on its way reports the bytes
/// as sent (they are committed to the TLS stream) and the rest of the record goes out
/// before anything else the stream sends: the stream sends it by itself (a task of the
/// loop, which no recv waits for), and a later send first sleeps until it has gone,
/// bounded by its own deadline and stop.
///
/// The stream may be moved while no operation is in flight; the operations refer to
/// its state, which stays where it is.
class stream {
 public:
  /// An empty stream (valid() is false).
  stream() noexcept;
  /// Moves the connection; `other` becomes empty.
  ///@{
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  ///@}
  /// Frees the TLS state and closes the socket (without a close_notify: call shutdown()
  /// first for a clean end). Output the stream is still sending by itself is abandoned:
  /// that send is stopped and the socket shut down, and the state goes with it.
  ~stream();

  /// The client side of a connection over `socket`. `server_name` is sent as SNI and,
  /// unless the context turned verification off, must match the server's certificate
  /// (a host name or an IP address); an empty name sends no SNI and checks the chain
  /// only. A session kept for the name is offered for resumption. Errors:
  /// std::errc::invalid_argument for a server context or an empty socket; OpenSSL's
  /// reason when it cannot make the session.
  [[nodiscard]] static result<stream> client(const context& ctx, stream_socket socket, std::string_view server_name);
  /// The server side of a connection over `socket`. Errors as for client() (a client
  /// context is invalid_argument).
  [[nodiscard]] static result<stream> server(const context& ctx, stream_socket socket);

  /// Runs the handshake, bounded by the context's handshake_timeout (timed_out when it
  /// passes). Errors: a verification failure (is_verification_error; message e.g.
  /// "certificate verify failed: hostname mismatch"), OpenSSL's reason (wrong version
  /// number for garbage, no shared cipher, ...), tls_errc::truncated when the peer
  /// closed, a socket error. The alert telling the peer why is sent before it returns.
  /// Cancellation: operation_canceled; the stream is then unusable.
  [[nodiscard]] task<result<void>> handshake();
  /// Same, bounded by `timeout` instead (0 or less: no bound).
  [[nodiscard]] task<result<void>> handshake(std::chrono::nanoseconds timeout);

  /// Receives up to buf.size() bytes of application data. 0: the peer sent
  /// close_notify (a clean end); tls_errc::truncated: the connection ended without one.
  /// Errors: not_established, busy, OpenSSL's reason, socket errors. Cancellation:
  /// operation_canceled, no data lost (see the class).
  [[nodiscard]] task<result<std::size_t>> recv(mutable_buffer buf);
  /// Receives like recv(buf), bounded by `deadline` (timed_out when it passes first; a
  /// default-constructed time_point: no bound), waiting for the socket as `wait` says.
  /// Errors and cancellation as recv(buf).
  [[nodiscard]] task<result<std::size_t>> recv(mutable_buffer buf, std::chrono::steady_clock::time_point deadline,
                                               recv_wait wait = recv_wait::without_buffer);
  /// Receives until buf is full. A shorter count means the stream ended cleanly or the
  /// operation stopped (stop, timeout, error) after some bytes; the error is reported
  /// only when nothing arrived, and a fatal one again by the next recv.
  [[nodiscard]] task<result<std::size_t>> recv_exact(mutable_buffer buf);
  /// Encrypts and sends some of buf (at most one record, 16 KiB) and returns how many
  /// bytes it took. Errors: not_established, busy, socket errors (broken_pipe,
  /// connection_reset). Cancellation: see the class.
  [[nodiscard]] task<result<std::size_t>> send(const_buffer buf);
  /// Sends all of buf. The result is buf.size(), or a shorter count when it stopped
  /// early (stop, timeout, error) after sending some bytes; the error only when nothing
  /// was sent.
  [[nodiscard]] task<result<std::size_t>> send_all(const_buffer buf);
  /// Sends all of buf like send_all(buf), bounded by `deadline` (a default-constructed
  /// time_point: no bound): when it passes, the result is the bytes sent so far, or
  /// timed_out when none were. Cancellation as send_all(buf).
  [[nodiscard]] task<result<std::size_t>> send_all(const_buffer buf, std::chrono::steady_clock::time_point deadline);
  /// Sends close_notify (and anything still queued before it) without waiting for the
  /// peer's answer, bounded by `timeout` (0 or less: no bound); for a server that closes
  /// the socket next. Errors: timed_out, busy (a send in flight), not_established,
  /// socket errors. Cancellation: operation_canceled; the alert may be partly sent.
  [[nodiscard]] task<result<void>> send_close_notify(std::chrono::nanoseconds timeout);
  /// Sends close_notify and waits up to `timeout` for the peer's (data arriving
  /// meanwhile is discarded). Success: both alerts exchanged (or ours sent while a recv
  /// in flight is left to see the peer's). Errors: tls_errc::truncated when the peer
  /// closed without answering, timed_out, busy (a send in flight), not_established, socket
  /// errors. The socket stays open: close() it afterwards.
  [[nodiscard]] task<result<void>> shutdown(std::chrono::nanoseconds timeout = std::chrono::seconds(5));
  /// Closes the socket through the ring (no close_notify: shutdown() first). Nothing
  /// may be in flight; output the stream still sends by itself is abandoned (the socket
  /// is shut down first). Errors: those of `close(2)`.
  [[nodiscard]] ringio::detail::close_op close() noexcept;

  /// Hands the stream ciphertext that the caller received from its socket (for example
  /// with ringio::receive_pooled, so that a connection waiting for its peer holds no
  /// buffer of its own); the next recv decrypts it before it reads the socket. Copied:
  /// `ciphertext` may be reused at once. Errors: busy (a recv in flight),
  /// std::errc::no_buffer_space (more than the record buffer holds beside what is
  /// buffered already; nothing is taken).
  [[nodiscard]] result<void> feed(const_buffer ciphertext);
  /// Whether a recv would find something without waiting for the socket: ciphertext or
  /// plaintext buffered, data seen by a peek, the peer's close_notify or end of stream.
  /// A caller that waits on the socket itself checks this first.
  [[nodiscard]] bool has_buffered_input() const noexcept;

  /// Whether it holds a connection.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Whether the handshake succeeded (and no fatal error happened since).
  [[nodiscard]] bool is_established() const noexcept;
  /// The socket's descriptor (owned by the stream).
  [[nodiscard]] int native_handle() const noexcept;
  /// The underlying socket (for addresses and options; do not read or write it).
  [[nodiscard]] stream_socket& socket() noexcept;
  /// OpenSSL's `SSL` of the connection, for inspection.
  [[nodiscard]] SSL* native_ssl() const noexcept;
  /// The protocol ALPN chose (e.g. "http/1.1"), or "" when none was.
  [[nodiscard]] std::string_view alpn() const noexcept;
  /// Client: the name given to client(). Server: the name the client sent (SNI), or "".
  [[nodiscard]] std::string_view server_name() const noexcept;
  /// Whether the handshake resumed an earlier session.
  [[nodiscard]] bool is_resumed() const noexcept;
  /// Whether records are encrypted by the kernel (kernel TLS) rather than in user space.
  [[nodiscard]] bool is_kernel_tls() const noexcept;
  /// One line for logs: version, cipher, ALPN, resumption and the record path, e.g.
  /// "TLSv1.3 TLS_AES_256_GCM_SHA384 alpn=http/1.1 resumed=no records=user-space".
  [[nodiscard]] std::string describe() const;

  /// Whether this process can use kernel TLS: OpenSSL was built with it and the kernel
  /// accepts the "tls" upper-layer protocol (`TCP_ULP`). Checked once, at the first call;
  /// `why` (if not null) receives the reason when it cannot.
  [[nodiscard]] static bool kernel_tls_available(std::string* why = nullptr);

 private:
  explicit stream(std::unique_ptr<detail::stream_state> s) noexcept;
  std::unique_ptr<detail::stream_state> state_;
};

}  // namespace ringio::tls
