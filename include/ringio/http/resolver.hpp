// SPDX-License-Identifier: Apache-2.0
// ringio/http/resolver.hpp — host-name resolution that does not block the loop:
// getaddrinfo(3) runs on one worker thread per io_context (started on first use), and
// the answer comes back to the loop through its cross-thread inbox.
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
/// spot; a name is looked up on the resolver thread of the current io_context (one
/// thread per loop, started on first use, lookups one at a time in order), so a slow
/// DNS server never blocks the loop. Errors: client_errc::resolve_failed (unknown name,
/// no address, DNS failure). Cancellation: a stop (the task's token, with_timeout)
/// completes it at once with operation_canceled; the lookup itself runs to its end on
/// the resolver thread and its late answer is dropped. Destroying the io_context stops
/// the thread, waiting for a lookup in progress (getaddrinfo(3) cannot be interrupted).
[[nodiscard]] task<result<std::vector<socket_address>>> resolve(std::string host, std::uint16_t port);

}  // namespace ringio::http
