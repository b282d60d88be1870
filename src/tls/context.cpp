// SPDX-License-Identifier: Apache-2.0
#include "ringio/tls/context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <strings.h>

#include <memory>
#include <string_view>

#include "ca_file.hpp"
#include "context_state.hpp"
#include "ringio/log.hpp"
#include "ringio/tls/error.hpp"
#include "stream_state.hpp"

namespace ringio::tls {
namespace detail {

context_state::~context_state() {
  for (auto& [name, s] : sessions) SSL_SESSION_free(s);
  SSL_CTX_free(ctx);
}

SSL_SESSION* context_state::session_for(const std::string& name) {
  std::lock_guard lock(sessions_mutex);
  auto it = sessions.find(name);
  if (it == sessions.end()) return nullptr;
  // A single-use TLS 1.3 ticket is dropped once offered.
  SSL_SESSION* s = it->second;
  if (SSL_SESSION_get_protocol_version(s) == TLS1_3_VERSION) {
    sessions.erase(it);
    return s;
  }
  SSL_SESSION_up_ref(s);
  return s;
}

void context_state::keep_session(const std::string& name, SSL_SESSION* s) {
  std::lock_guard lock(sessions_mutex);
  auto [it, inserted] = sessions.try_emplace(name, s);
  if (!inserted) {
    SSL_SESSION_free(it->second);
    it->second = s;
  }
}

}  // namespace detail

namespace {

// Forward-secret AEAD suites only; TLS 1.3 suites are OpenSSL's defaults.
constexpr const char* default_cipher_list =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

int version_number(protocol_version v) noexcept {
  return v == protocol_version::tls1_2 ? TLS1_2_VERSION : TLS1_3_VERSION;
}

// The first error queued is the cause (a missing file); later ones say what failed.
std::error_code last_error(std::error_code fallback) noexcept {
  unsigned long e = ERR_peek_error();
  ERR_clear_error();
  return e != 0 ? detail::openssl_error(e) : fallback;
}

std::string alpn_wire(const std::vector<std::string>& protocols) {
  std::string wire;
  for (const auto& p : protocols) {
    if (p.empty() || p.size() > 255) continue;
    wire.push_back(static_cast<char>(p.size()));
    wire += p;
  }
  return wire;
}

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen,
                void* arg) {
  auto* st = static_cast<detail::context_state*>(arg);
  unsigned char* chosen = nullptr;
  int r = SSL_select_next_proto(&chosen, outlen, reinterpret_cast<const unsigned char*>(st->alpn_wire.data()),
                                static_cast<unsigned>(st->alpn_wire.size()), in, inlen);
  // RFC 7301 3.2: a client offering ALPN with nothing in common gets a fatal
  // no_application_protocol alert (OpenSSL sends it for ALERT_FATAL here).
  if (r != OPENSSL_NPN_NEGOTIATED) return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

bool name_matches(std::string_view pattern, std::string_view name) {
  if (pattern.size() > 2 && pattern.starts_with("*.")) {
    auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0) return false;
    name.remove_prefix(dot);
    pattern.remove_prefix(1);
  }
  return pattern.size() == name.size() && ::strncasecmp(pattern.data(), name.data(), name.size()) == 0;
}

int select_server_name(SSL* ssl, int*, void* arg) {
  auto* st = static_cast<detail::context_state*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return SSL_TLSEXT_ERR_OK;
  for (const auto& [pattern, ctx] : st->server_names) {
    if (name_matches(pattern, name)) {
      SSL_set_SSL_CTX(ssl, ctx.native_handle());
      break;
    }
  }
  return SSL_TLSEXT_ERR_OK;
}

int new_client_session(SSL* ssl, SSL_SESSION* session) {
  auto* stream = static_cast<detail::stream_state*>(SSL_get_app_data(ssl));
  auto* st = static_cast<detail::context_state*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (stream == nullptr || st == nullptr || stream->server_name.empty()) return 0;
  st->keep_session(stream->server_name, session);
  return 1;  // the reference is ours now
}

// Settings both roles share. Returns an empty code or the error.
std::error_code configure_common(detail::context_state& st, protocol_version min, protocol_version max,
                                 const std::string& ciphers, const std::string& suites,
                                 const std::vector<std::string>& alpn) {
  SSL_CTX* ctx = st.ctx;
  SSL_CTX_set_app_data(ctx, &st);
  if (!SSL_CTX_set_min_proto_version(ctx, version_number(min)) ||
      !SSL_CTX_set_max_proto_version(ctx, version_number(max)) || min > max) {
    log(log_level::error, "tls: invalid protocol version range");
    return make_error_code(tls_errc::configuration);
  }
  if (!SSL_CTX_set_cipher_list(ctx, ciphers.empty() ? default_cipher_list : ciphers.c_str())) {
    log(log_level::error, "tls: cipher list rejected: %s", ciphers.c_str());
    return last_error(make_error_code(tls_errc::configuration));
  }
  if (!suites.empty() && !SSL_CTX_set_ciphersuites(ctx, suites.c_str())) {
    log(log_level::error, "tls: cipher suites rejected: %s", suites.c_str());
    return last_error(make_error_code(tls_errc::configuration));
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // Record buffers are freed between records; writes may be partial (one record per
  // call) and retried from a moved buffer.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  st.alpn_wire = alpn_wire(alpn);
  return {};
}

std::error_code load_certificate(SSL_CTX* ctx, const std::string& chain, const std::string& key) {
  if (SSL_CTX_use_certificate_chain_file(ctx, chain.c_str()) != 1) {
    log(log_level::error, "tls: cannot load the certificate chain %s", chain.c_str());
    return last_error(make_error_code(tls_errc::configuration));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    log(log_level::error, "tls: cannot load the private key %s", key.c_str());
    return last_error(make_error_code(tls_errc::configuration));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    log(log_level::error, "tls: the key %s does not match the certificate %s", key.c_str(), chain.c_str());
    return last_error(make_error_code(tls_errc::configuration));
  }
  return {};
}

}  // namespace

result<context> context::server(const server_options& o) {
  auto st = std::make_shared<detail::context_state>();
  st->ctx = SSL_CTX_new(TLS_server_method());
  if (st->ctx == nullptr) return unexpected(last_error(make_error_code(tls_errc::configuration)));
  st->server = true;
  st->handshake_timeout = o.handshake_timeout;
  st->kernel_tls = o.kernel_tls;
  if (auto ec = configure_common(*st, o.min_version, o.max_version, o.cipher_list, o.cipher_suites, o.alpn))
    return unexpected(ec);
  if (auto ec = load_certificate(st->ctx, o.certificate_chain_file, o.private_key_file)) return unexpected(ec);
  if (!o.client_ca_file.empty()) {
    if (auto ec = detail::load_ca_file(st->ctx, o.client_ca_file)) return unexpected(ec);
    int mode = SSL_VERIFY_PEER | (o.require_client_certificate ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
    SSL_CTX_set_verify(st->ctx, mode, nullptr);
  }
  static const unsigned char session_context[] = "ringio";
  SSL_CTX_set_session_id_context(st->ctx, session_context, sizeof session_context - 1);
  if (!o.session_tickets) {
    SSL_CTX_set_options(st->ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(st->ctx, 0);
  }
  if (!st->alpn_wire.empty()) SSL_CTX_set_alpn_select_cb(st->ctx, select_alpn, st.get());
  SSL_CTX_set_tlsext_servername_callback(st->ctx, select_server_name);
  SSL_CTX_set_tlsext_servername_arg(st->ctx, st.get());
  return context(std::move(st));
}

result<context> context::client(const client_options& o) {
  auto st = std::make_shared<detail::context_state>();
  st->ctx = SSL_CTX_new(TLS_client_method());
  if (st->ctx == nullptr) return unexpected(last_error(make_error_code(tls_errc::configuration)));
  st->handshake_timeout = o.handshake_timeout;
  st->kernel_tls = o.kernel_tls;
  st->verify_peer = o.verify_peer;
  st->resumption = o.session_resumption;
  if (auto ec = configure_common(*st, o.min_version, o.max_version, o.cipher_list, o.cipher_suites, o.alpn))
    return unexpected(ec);
  if (o.use_system_trust_store && SSL_CTX_set_default_verify_paths(st->ctx) != 1)
    log(log_level::warning, "tls: the system trust store could not be loaded");
  if (!o.ca_file.empty()) {
    if (auto ec = detail::load_ca_file(st->ctx, o.ca_file)) return unexpected(ec);
  }
  if (!o.certificate_chain_file.empty()) {
    if (auto ec = load_certificate(st->ctx, o.certificate_chain_file, o.private_key_file)) return unexpected(ec);
  }
  SSL_CTX_set_verify(st->ctx, o.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (o.session_resumption) {
    SSL_CTX_set_session_cache_mode(st->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(st->ctx, new_client_session);
  }
  if (!st->alpn_wire.empty() &&
      SSL_CTX_set_alpn_protos(st->ctx, reinterpret_cast<const unsigned char*>(st->alpn_wire.data()),
                              static_cast<unsigned>(st->alpn_wire.size())) != 0)
    return unexpected(make_error_code(tls_errc::configuration));
  return context(std::move(st));
}

void context::add_server_name(std::string name, context other) {
  if (state_ && other.state_) state_->server_names.emplace_back(std::move(name), std::move(other));
}

bool context::is_server() const noexcept { return state_ && state_->server; }

std::chrono::nanoseconds context::handshake_timeout() const noexcept {
  return state_ ? state_->handshake_timeout : std::chrono::nanoseconds{};
}

SSL_CTX* context::native_handle() const noexcept { return state_ ? state_->ctx : nullptr; }

}  // namespace ringio::tls
