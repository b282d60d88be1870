// SPDX-License-Identifier: Apache-2.0
// ringio/tls/client_options.hpp — what a client-side TLS context is made from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ringio/tls/protocol_version.hpp"

namespace ringio::tls {

/// Settings of context::client. The defaults verify the server: its chain against the
/// system trust store and its name against the one given to stream::client, over TLS
/// 1.2 or 1.3 with the cipher policy described in server_options.
struct client_options {
  /// Trust the system's CA store (`SSL_CTX_set_default_verify_paths`).
  bool use_system_trust_store = true;
  /// PEM file of further CAs to trust; empty: none. Checked by context::client, which
  /// fails naming what is wrong with it (see tls_errc::ca_file_missing and after).
  std::string ca_file{};
  /// Verify the server's certificate chain (and, with a name, its host name). Turning
  /// it off makes the connection open to interception: for tests only.
  bool verify_peer = true;
  /// Protocols offered in order of preference, e.g. {"http/1.1"}; empty: no ALPN.
  std::vector<std::string> alpn{};
  /// Oldest version accepted.
  protocol_version min_version = protocol_version::tls1_2;
  /// Newest version accepted.
  protocol_version max_version = protocol_version::tls1_3;
  /// OpenSSL cipher list for TLS 1.2; empty: the default policy.
  std::string cipher_list{};
  /// OpenSSL cipher suites for TLS 1.3; empty: OpenSSL's.
  std::string cipher_suites{};
  /// PEM certificate chain to present when the server asks for one; empty: none.
  std::string certificate_chain_file{};
  /// PEM private key of certificate_chain_file.
  std::string private_key_file{};
  /// Keep the last session of each server name and offer it on the next connection.
  bool session_resumption = true;
  /// The deadline of stream::handshake() without an explicit timeout.
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10);
  /// Use kernel TLS after the handshake when the kernel and OpenSSL both offer it.
  bool kernel_tls = true;
};

}  // namespace ringio::tls
