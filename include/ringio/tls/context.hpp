// SPDX-License-Identifier: Apache-2.0
// ringio/tls/context.hpp — tls::context: the shared settings (certificates, trust,
// versions, ALPN, session cache) that streams are made with.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ringio/result.hpp"
#include "ringio/tls/client_options.hpp"
#include "ringio/tls/server_options.hpp"

using SSL_CTX = struct ssl_ctx_st;

namespace ringio::tls {

/// @cond INTERNAL
namespace detail {
struct context_state;
}
/// @endcond

/// A TLS configuration for one role, shared by the streams made with it (copies are
/// cheap and refer to the same configuration). Thread-safe: streams on several loops
/// may use one context. Built once, before the streams: add_server_name is not
/// thread-safe with handshakes in progress.
class context {
 public:
  /// An empty context (valid() is false); assign one made by server() or client().
  context() noexcept = default;

  /// A server context. Errors: tls_category codes with OpenSSL's reason, e.g. a
  /// missing file ("No such file or directory" as a system error), a key that does not
  /// match the certificate, an invalid cipher list (tls_errc::configuration).
  [[nodiscard]] static result<context> server(const server_options& options);
  /// A client context. Errors as for server(): a bad ca_file (tls_errc::ca_file_missing,
  /// ca_file_unreadable, ca_file_not_pem, ca_file_without_certificate, or OpenSSL's
  /// reason for a certificate it rejects), a bad certificate or key, a bad cipher list.
  [[nodiscard]] static result<context> client(const client_options& options = {});

  /// Server: a ClientHello whose server name (SNI) is `name` is served with `other`'s
  /// certificate and settings. `name` is matched case-insensitively; "*.example.com"
  /// matches one label. Names without a match use this context. `other` must be a
  /// server context.
  void add_server_name(std::string name, context other);

  /// Whether it holds a configuration.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Whether it is a server context.
  [[nodiscard]] bool is_server() const noexcept;
  /// The deadline stream::handshake() uses when given none.
  [[nodiscard]] std::chrono::nanoseconds handshake_timeout() const noexcept;
  /// OpenSSL's `SSL_CTX`, for settings this API does not cover (still owned by the
  /// context; change it before the first stream).
  [[nodiscard]] SSL_CTX* native_handle() const noexcept;

  /// @cond INTERNAL
  [[nodiscard]] const std::shared_ptr<detail::context_state>& state() const noexcept { return state_; }
  /// @endcond

 private:
  explicit context(std::shared_ptr<detail::context_state> s) noexcept : state_(std::move(s)) {}
  std::shared_ptr<detail::context_state> state_;
};

}  // namespace ringio::tls
