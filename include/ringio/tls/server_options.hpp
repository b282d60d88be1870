// SPDX-License-Identifier: Apache-2.0
// ringio/tls/server_options.hpp — what a server-side TLS context is made from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ringio/tls/protocol_version.hpp"

namespace ringio::tls {

/// Settings of context::server. The defaults: TLS 1.2 and 1.3, forward-secret AEAD
/// cipher suites only (ECDHE with AES-GCM or ChaCha20-Poly1305 for TLS 1.2, OpenSSL's
/// TLS 1.3 suites), session tickets on, renegotiation refused, no client certificate.
struct server_options {
  /// PEM file with the certificate, then its intermediates (required).
  std::string certificate_chain_file{};
  /// PEM file with the certificate's private key (required).
  std::string private_key_file{};
  /// Protocols offered in order of preference, e.g. {"h2", "http/1.1"}; empty: no ALPN.
  /// A client whose ALPN list has none of them fails the handshake with the fatal
  /// no_application_protocol alert (RFC 7301 3.2); a client offering no ALPN at all
  /// is served without it.
  std::vector<std::string> alpn{};
  /// Oldest version accepted.
  protocol_version min_version = protocol_version::tls1_2;
  /// Newest version accepted.
  protocol_version max_version = protocol_version::tls1_3;
  /// OpenSSL cipher list for TLS 1.2; empty: the default policy above.
  std::string cipher_list{};
  /// OpenSSL cipher suites for TLS 1.3; empty: OpenSSL's (AES-GCM, ChaCha20-Poly1305).
  std::string cipher_suites{};
  /// Session resumption with tickets (stateless on the server).
  bool session_tickets = true;
  /// PEM file of the CAs that client certificates must chain to; empty: none asked.
  /// Checked as client_options::ca_file is.
  std::string client_ca_file{};
  /// With client_ca_file: fail the handshake when the client sends no certificate.
  bool require_client_certificate = false;
  /// The deadline of stream::handshake() without an explicit timeout.
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10);
  /// Use kernel TLS after the handshake when the kernel and OpenSSL both offer it.
  bool kernel_tls = true;
};

}  // namespace ringio::tls
