// SPDX-License-Identifier: Apache-2.0
// ringio/http/resolver.hpp — host-name resolution that does not block the loop:
// getaddrinfo(3) runs on the loop's blocking pool (spawn_blocking), and the answer
// comes back to the loop through its cross-thread inbox.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringio/net/socket_address.hpp"
#include "ringio/result.hpp"
#include "ringio/task.hpp"

namespace ringio::http {

/// The addresses of `host` (a DNS name, or an IPv4 / IPv6 literal) with `port`, in the
/// order getaddrinfo(3) gives them (TCP, both families). A literal is converted on the
/// spot; a name is looked up with spawn_blocking on the current io_context's default
/// blocking pool (io_context_options::blocking: several lookups at once, up to its
/// threads), so a slow DNS server never blocks the loop. On the sim backend the lookup
/// runs on the loop's thread. Errors: client_errc::resolve_failed (unknown name, no
/// address, DNS failure), errc::queue_full (the pool's queue is full). Cancellation: a
/// stop (the task's token, with_timeout) completes it at once with operation_canceled;
/// a lookup not yet started never runs, one already running runs to its end on its
/// thread and its late answer is dropped. Destroying the io_context waits for a lookup
/// in progress (getaddrinfo(3) cannot be interrupted).
[[nodiscard]] task<result<std::vector<socket_address>>> resolve(std::string host, std::uint16_t port);

}  // namespace ringio::http
