// SPDX-License-Identifier: Apache-2.0
// The shared state behind tls::context: the SSL_CTX and what its callbacks need.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringio/tls/context.hpp"

namespace ringio::tls::detail {

struct context_state {
  SSL_CTX* ctx = nullptr;
  bool server = false;
  bool verify_peer = true;
  bool kernel_tls = true;
  bool resumption = true;
  std::chrono::nanoseconds handshake_timeout{};
  std::string alpn_wire;                                      // ALPN protocols, each prefixed by its length
  std::vector<std::pair<std::string, context>> server_names;  // SNI: name -> context

  // Client session cache: the last session per server name.
  std::mutex sessions_mutex;
  std::unordered_map<std::string, SSL_SESSION*> sessions;

  context_state() = default;
  context_state(const context_state&) = delete;
  context_state& operator=(const context_state&) = delete;
  ~context_state();

  /// A new reference to the session kept for `name`, or null.
  SSL_SESSION* session_for(const std::string& name);
  /// Keeps `s` (taking the reference) as the session for `name`.
  void keep_session(const std::string& name, SSL_SESSION* s);
};

}  // namespace ringio::tls::detail
