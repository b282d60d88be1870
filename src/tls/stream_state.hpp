// SPDX-License-Identifier: Apache-2.0
// The state of one tls::stream, kept in one place while operations run, and the
// memory BIO through which OpenSSL reads and writes ciphertext.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>

#include "context_state.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/sync/event.hpp"

namespace ringio::tls::detail {

struct stream_state {
  stream_socket socket;
  SSL* ssl = nullptr;
  std::shared_ptr<context_state> ctx;
  std::string server_name;

  // Ciphertext received, not yet read by OpenSSL: in[in_begin, in_end).
  std::byte* in = nullptr;
  std::size_t in_begin = 0, in_end = 0;
  // Ciphertext written by OpenSSL, not yet sent: out[out_begin, out_end).
  std::byte* out = nullptr;
  std::size_t out_begin = 0, out_end = 0;

  bool peer_eof = false;     // the socket reported the end of the stream
  bool readable = false;     // a peek saw data that no recv has taken yet
  bool reading = false;      // a recv (or the handshake, or shutdown) is in flight
  bool writing = false;      // a send is in flight
  bool flushing = false;     // out is being sent (by one operation): it may grow but not move
  bool established = false;  // the handshake succeeded
  bool kernel_tls = false;   // records go through the kernel
  bool eager_fill = false;   // the recv in flight waits with a record buffer (no peek)
  std::error_code failure;   // a fatal error, reported again by later operations
  // The socket refused a send (broken_pipe, connection_reset): reported by every later
  // send, never by a recv; what is still queued, or written later, is dropped.
  std::error_code write_failure;
  // Set each time a flush ends: a sender that found another flush in progress (the
  // push's) sleeps on it. Made at the first such wait.
  std::unique_ptr<event> flush_ended;
  // The push: a task of the loop that sends output nobody else is sending (the rest of
  // a record whose send was cut, what a recv made OpenSSL write), so that no recv ever
  // waits for the write side. It obeys push_stop (made at the first push), which
  // close() and the destructor request.
  bool pushing = false;
  bool orphaned = false;  // the stream is gone: the push frees this state as it ends
  std::stop_source push_stop{std::nostopstate};
  std::stop_token push_token;

  stream_state() = default;
  stream_state(const stream_state&) = delete;
  stream_state& operator=(const stream_state&) = delete;
  ~stream_state();

  [[nodiscard]] bool has_output() const noexcept { return out_end > out_begin; }
  [[nodiscard]] bool has_input() const noexcept { return in_end > in_begin; }
  /// Returns the record buffers that hold nothing and no operation uses.
  void release_idle_buffers() noexcept;
};

/// A BIO that reads from state.in and writes to state.out (never the socket).
BIO* make_memory_bio(stream_state& state);

}  // namespace ringio::tls::detail
