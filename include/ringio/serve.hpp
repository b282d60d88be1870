// SPDX-License-Identifier: Apache-2.0
// ringio/serve.hpp — server scaffolding: an accept loop that survives accept errors,
// limits connections and drains gracefully, and a blocking entry point that runs it
// on every loop thread until SIGINT/SIGTERM.
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/net/stream_listener.hpp"
#include "ringio/net/stream_socket.hpp"
#include "ringio/result.hpp"
#include "ringio/serve_options.hpp"
#include "ringio/task.hpp"

namespace ringio {

class runtime;

/// Serves one accepted connection; runs on the loop thread that accepted it (or was
/// handed it). Its operations obey the stop token of its task, which is requested when
/// the drain deadline passes, or at once when the task awaiting serve is stopped. An
/// exception escaping it is logged (error level, at most one line per second) and the
/// server goes on.
using connection_handler = std::function<task<void>(stream_socket)>;

/// What the blocking ringio::serve did.
struct serve_summary {
  /// The address that was served (the kernel's port when port 0 was asked for).
  socket_address address = {};
  /// SIGINT or SIGTERM when a signal stopped it; 0 when the stop token did.
  int signal_number = 0;
  /// Connections each loop thread served.
  std::vector<std::uint64_t> connections_per_loop = {};
};

/// Accepts connections on `listener` (on the calling task's loop) and runs
/// `handler` for each, concurrently, until `stop` is requested: then it stops
/// accepting, closes the listener, calls options.on_drain, gives open connections
/// options.drain_timeout to finish, requests their stop, and completes once every one
/// has ended. Accept errors for want of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM)
/// back off and log one warning per back-off period; connection-level ones
/// (ECONNABORTED, EPROTO, EPERM, network errors) are skipped. The fields of `options`
/// that belong to the blocking entry point (threads, dispatch, context,
/// handle_signals, loop_setup, on_listening, on_stop) are not used. Call it on a loop
/// thread; the listener must outlive the call.
///
/// Result: success after a graceful stop; the accept error that ended accepting
/// (after draining likewise) for any other accept error. Cancellation: a stop of the
/// awaiting task's own token cancels accepting and every connection at once (no
/// grace period); serve still completes only after every handler has finished.
[[nodiscard]] task<result<void>> serve(stream_listener& listener, connection_handler handler,
                                       serve_options options = {}, std::stop_token stop = {});

/// The blocking entry point of a server program: binds `address` (one SO_REUSEPORT
/// listener per loop thread, or one for the acceptor dispatch), starts a runtime with
/// options.threads loops, serves on each as the task form does, and returns once a
/// graceful stop has finished — on SIGINT/SIGTERM (options.handle_signals) or when
/// `stop` is requested (from any thread, a loop thread included). Call it from a
/// thread that is not a loop, typically main().
///
/// Errors: the bind errors of stream_listener::bind (address_in_use, ...; with several
/// threads the port is first checked with a plain bind, so an address in use is
/// reported rather than shared), the error of a backend that cannot start, or the
/// accept error that ended a loop's accepting. Each is also logged (error level).
/// An exception from options.loop_setup is rethrown after every loop has stopped.
[[nodiscard]] result<serve_summary> serve(const socket_address& address, connection_handler handler,
                                          serve_options options = {}, std::stop_token stop = {});

/// The listeners the address form of the blocking ringio::serve binds, bound now: one
/// SO_REUSEPORT listener per loop thread (options.threads, 0: one per CPU available),
/// one for the acceptor dispatch; options.share_port as there. For a program that
/// keeps their descriptors (to hand them to its successor, see listener_handover.hpp)
/// before serving on them with the listener form below. Errors: those of the address
/// form's binding.
[[nodiscard]] result<std::vector<stream_listener>> serve_listeners(const socket_address& address,
                                                                   const serve_options& options = {});

/// The blocking entry point on listeners already listening: bound by serve_listeners,
/// inherited through socket activation (inherited_listeners.hpp), or handed over by
/// the previous process (listener_handover.hpp). With the reuse_port dispatch each
/// loop accepts on one of them (loop i on listener i modulo their number, on a
/// duplicate descriptor when loops share one); options.threads is raised to their
/// number when it is lower. The acceptor dispatch takes exactly one. When a loop
/// stops accepting it closes its descriptors: a socket that another process also
/// holds goes on listening there. summary.address is the first listener's address.
/// Errors: std::errc::invalid_argument for no listener, several with the acceptor
/// dispatch, or more than the loops (options.threads 0 on fewer CPUs); otherwise
/// those of the address form.
[[nodiscard]] result<serve_summary> serve(std::vector<stream_listener> listeners, connection_handler handler,
                                          serve_options options = {}, std::stop_token stop = {});

/// The same on the loops of `loops` (options.threads and options.context are not used).
/// The runtime's threads must block SIGINT/SIGTERM when options.handle_signals is set:
/// create it after a signal_set, or from a thread that blocks them. The runtime keeps
/// running afterwards.
[[nodiscard]] result<serve_summary> serve(runtime& loops, const socket_address& address, connection_handler handler,
                                          serve_options options = {}, std::stop_token stop = {});

}  // namespace ringio
