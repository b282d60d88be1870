// SPDX-License-Identifier: Apache-2.0
// ringio/serve_options.hpp — how ringio::serve accepts, limits and drains connections,
// and (for the blocking entry point) how many loop threads it runs and what it calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>

#include "ringio/io_context.hpp"
#include "ringio/net/socket_address.hpp"

namespace ringio {

class runtime;

/// How accepted connections reach the loop threads of the blocking ringio::serve.
enum class serve_dispatch {
  /// One SO_REUSEPORT listener per loop thread: the kernel spreads connections.
  reuse_port,
  /// Loop 0 accepts on one listener and hands each connection to the loop with the
  /// fewest open connections.
  acceptor,
};

/// max_connections value meaning "no limit".
inline constexpr std::size_t unlimited_connections = std::numeric_limits<std::size_t>::max();

/// Options of ringio::serve. Every field has a default, so designated initializers
/// name only what they change: `serve_options{.threads = 4}`.
struct serve_options {
  // ---- the blocking entry point only ----
  /// Loop threads to start (0: one per CPU available to the process). Ignored when a
  /// runtime is passed in.
  unsigned threads = 1;
  /// How connections reach the loops (with one thread both are the same).
  serve_dispatch dispatch = serve_dispatch::reuse_port;
  /// Bind with SO_REUSEPORT even with one listener, and without first checking that
  /// the port is free: the listeners join those another process (typically the
  /// previous version of this server) has on the port, and the kernel spreads new
  /// connections over all of them. Connections waiting in a listener's backlog when it
  /// closes are reset unless net.ipv4.tcp_migrate_req is 1: a listener handed over
  /// (listener_handover.hpp) loses none. Only for serve_listeners and the
  /// address forms of the blocking entry point.
  bool share_port = false;
  /// Options of every loop's io_context (backend, sqpoll, ...). Ignored when a runtime
  /// is passed in.
  io_context_options context = {};
  /// Wait for SIGINT and SIGTERM and stop gracefully on them. The signals are blocked
  /// in the calling thread before the loop threads start (they inherit the mask).
  bool handle_signals = true;
  /// Runs on each loop thread before it serves; what it returns lives until that loop
  /// has drained its connections (per-loop resources, e.g. a buffer_pool). An
  /// exception thrown here ends serving and is rethrown by ringio::serve.
  std::function<std::shared_ptr<void>(io_context&, unsigned loop_index)> loop_setup = {};
  /// Called on the calling thread once every listener is bound and the loops run,
  /// with the bound address (the real port when port 0 was asked for).
  std::function<void(const socket_address& bound, runtime& loops)> on_listening = {};
  /// Called on the calling thread when the graceful stop begins, with the signal
  /// number, or 0 for a stop through the stop token.
  std::function<void(int signal_number)> on_stop = {};

  // ---- every accept loop ----
  /// Connections one accept loop serves at once. At the limit it stops accepting
  /// until one of them closes: further clients wait in the kernel's backlog (they are
  /// neither accepted nor refused). A finite limit makes the loop accept one
  /// connection at a time (no multishot accept, which would keep accepting). With the
  /// acceptor dispatch the limit applies to each loop's share.
  std::size_t max_connections = unlimited_connections;
  /// After a stop, how long open connections may run on before their stop tokens are
  /// requested (they are then awaited, however long they take to finish).
  std::chrono::milliseconds drain_timeout{5000};
  /// Accept with one multishot IORING_OP_ACCEPT (io_uring; readiness backends accept
  /// one at a time anyway).
  bool multishot_accept = true;
  /// Accept connections as direct descriptors (listen_options::direct_descriptors):
  /// slots of the loop's io_uring file table, which spare the kernel a file lookup and
  /// reference per operation. Off by default: measured on echo (docs/performance.md,
  /// "Direct descriptors"), server CPU per request was unchanged within the noise
  /// (e.g. 4.38 vs 4.38 µs at 50 connections, 5.41 vs 5.46 µs at 1,000). The blocking entry point
  /// gives each loop a table of context.direct_descriptors slots, 65,536 when that is 0
  /// (capped at RLIMIT_NOFILE); the task form needs a loop created with one. A full
  /// table refuses nothing: further connections get normal descriptors. Handlers
  /// that need a real descriptor get one from stream_socket::install_fd() (or
  /// native_handle(), which installs). Ignored (normal descriptors) on the epoll and
  /// uring-poll backends, on kernels before 6.8, and with the acceptor dispatch (a
  /// direct descriptor cannot move to another loop's ring).
  bool direct_descriptors = false;
  /// After an accept fails for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
  /// ENOMEM), the loop waits this long before trying again, doubling the wait on each
  /// further failure up to accept_backoff_max; a success resets it.
  std::chrono::milliseconds accept_backoff_initial{10};
  /// The longest back-off; also the shortest interval between two log lines about
  /// failing accepts.
  std::chrono::milliseconds accept_backoff_max{1000};
  /// Called on the loop thread when that accept loop stops accepting (stop requested,
  /// or a fatal accept error), before the drain begins.
  std::function<void()> on_drain = {};
};

}  // namespace ringio
