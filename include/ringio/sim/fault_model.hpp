// SPDX-License-Identifier: Apache-2.0
// ringio/sim/fault_model.hpp — what can go wrong in a simulated world, and how often.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ringio::sim {

/// The network and the faults of a sim::world. Probabilities are per decision (one
/// send, one receive, one accept...), drawn from the world's seed.
struct fault_model {
  /// Shortest one-way delay of a segment (each is uniform in [min_latency, max_latency]).
  std::chrono::nanoseconds min_latency = std::chrono::microseconds(20);
  /// Longest one-way delay of a segment.
  std::chrono::nanoseconds max_latency = std::chrono::microseconds(200);
  /// Receive buffer of each end (SO_RCVBUF changes it per socket): what a sender may
  /// have in flight plus unread at its peer before send() meets EAGAIN.
  std::size_t buffer_bytes = 64 * 1024;
  /// Listen backlog cap (listen(2)'s argument is also honoured).
  int max_backlog = 128;
  /// Bytes per second each direction of a connection carries (0: no limit): a segment
  /// leaves once the ones before it have, and arrives after the latency.
  std::uint64_t bandwidth_bytes_per_second = 0;
  /// A send or receive moves fewer bytes than it could.
  double short_transfer = 0;
  /// A send resets its connection instead (the peer sees ECONNRESET).
  double reset = 0;
  /// An accept finds its connection reset by the client (ECONNABORTED).
  double accept_abort = 0;
  /// A connect is refused although someone listens.
  double connect_refused = 0;
  /// socket() or accept() fails with EMFILE.
  double descriptor_exhaustion = 0;
  /// A UDP datagram is lost (the send still succeeds). Datagrams are reordered by the
  /// latency spread alone: each copy travels with its own delay.
  double datagram_loss = 0;
  /// A UDP datagram arrives twice.
  double datagram_duplicate = 0;
  /// Sockets that became ready in one step are served in a seeded order.
  bool shuffle_ready = true;
};

/// Everything off: no latency spread and no faults (still virtual time).
inline fault_model calm() noexcept {
  fault_model m;
  m.min_latency = m.max_latency = std::chrono::microseconds(50);
  m.shuffle_ready = false;
  return m;
}

/// A hostile network: short transfers, resets, refused connects, aborted accepts,
/// lost and duplicated datagrams.
inline fault_model hostile() noexcept {
  fault_model m;
  m.min_latency = std::chrono::microseconds(1);
  m.max_latency = std::chrono::milliseconds(5);
  m.buffer_bytes = 4096;
  m.short_transfer = 0.3;
  m.reset = 0.002;
  m.accept_abort = 0.02;
  m.connect_refused = 0.02;
  m.descriptor_exhaustion = 0.01;
  m.datagram_loss = 0.05;
  m.datagram_duplicate = 0.02;
  return m;
}

}  // namespace ringio::sim
